"""AppTest of the Plan & publish page: closed-form answers at once and equal to dpcore's,
searched answers behind Find with the sentence, the curve's markers, baselines labelled not DP,
and the ε ruler."""

import json
import math
from pathlib import Path

from streamlit.testing.v1 import AppTest

from dpcore import export
from dpcore.data import datasets
from dpcore.data.od import ODMatrix, ZoneSet
from dpcore.evaluation import planner
from dpcore.evaluation import margins
from dpcore.interfaces import ledger, publish, published_domain
from tests.app_pages import open_page, shown_table
from tests.plotly_spec import figure, traces, values
from ui.components import state
from ui.publish import publishing

PAGE = str(Path(__file__).resolve().parent.parent / "pages" / "6_Plan_and_publish.py")


def plan_page(**query) -> AppTest:
    return open_page(PAGE, **query)


def test_closed_form_answers_at_once_and_match_dpcore():
    at = plan_page(mech=["laplace", "grr", "suppression"], pp="base", target="rmse")
    assert not [b for b in at.button if b.key == "plan_find"]
    sentence = at.markdown[0].value
    expected = planner.closed_form("laplace", {"neighbours": "substitution"},
                                   datasets.load("ireland_county").to_dense(),
                                   planner.Target("rmse", 5.0)).epsilon
    assert f"{expected:.3g}".replace(".", "\\.") in sentence
    assert "not DP" in sentence
    table = shown_table(at.table[0])
    row = table.set_index("Mechanism").loc["Small-cell suppression (not DP)"]
    assert row["Guarantee"] == "not DP" and row["ε needed"] == "— (not DP)"
    fig = figure(at, "against ε")
    (laplace,) = traces(fig, "Laplace")
    stars = [t for t in fig["data"] if t.get("marker", {}).get("symbol") == "star"]
    assert len(stars) == 2  # Laplace and GRR; the baseline has no ε
    assert math.isclose(float(values(stars[0]["x"])[0]), expected, rel_tol=1e-9)
    (baseline,) = traces(fig, "Small-cell suppression (not DP)")
    assert baseline["line"]["dash"] == "dash"


def test_your_epsilon_and_the_target_are_drawn_where_they_are_on_the_log_axes():
    """On a log axis plotly places shapes in data units but annotations in log₁₀ units: the
    label "your ε = 2" was drawn at ε = 100 (issue 21). Lines and labels sit at their values."""
    at = plan_page(mech=["laplace"], pp="base", target="rmse", eps="2")
    fig = figure(at, "against ε")
    assert fig["layout"]["xaxis"]["type"] == "log" and fig["layout"]["yaxis"]["type"] == "log"
    (yours,) = [a for a in fig["layout"]["annotations"] if a["text"] == "your ε = 2"]
    (vertical,) = [s for s in fig["layout"]["shapes"] if s.get("x0") == s.get("x1")]
    assert math.isclose(yours["x"], math.log10(2)) and vertical["x0"] == 2
    (target,) = [a for a in fig["layout"]["annotations"] if a["text"].startswith("target")]
    (horizontal,) = [s for s in fig["layout"]["shapes"] if s.get("y0") == s.get("y1")]
    assert horizontal["y0"] == 5.0 and math.isclose(target["y"], math.log10(5.0))  # RMSE ≤ 5
    ruler = figure(at, "ε ruler")
    (line,) = ruler["layout"]["shapes"]
    assert ruler["layout"]["xaxis"]["type"] == "log" and line["x0"] == 2
    (onthemap,) = [h for t in ruler["data"] for h in (t.get("hovertext") or [])
                   if "OnTheMap" in h]      # its guarantee named, and that it is not DP
    assert "(ε, δ)-probabilistic DP — not DP" in onthemap and "totals published exactly" in onthemap


def test_search_runs_behind_find_and_names_the_answer():
    at = plan_page(mech=["laplace", "cell_key"])
    at.number_input(key="kept_widget_plan_trials").set_value(5).run()
    at.button(key="plan_find").click().run()
    assert not at.exception, at.exception
    sentence = at.markdown[0].value
    assert sentence.startswith("**Laplace needs ε ≈") and "GEH" in sentence
    table = shown_table(at.table[0])
    assert table["How"].tolist() == [planner.SEARCH, planner.NOT_DP_ANY]
    assert "(" in table["Pass rate (95 % CI)"][0]
    beside = shown_table(at.table[1])
    assert len(beside) == 4 and (beside["Guarantee"] == "not DP").all()
    ruler = figure(at, "ε ruler")
    assert any("Census" in str(t.get("hovertext")) for t in ruler["data"])
    # Coming back to the same settings shows the answer without searching again.
    at.run()
    assert at.markdown[0].value == sentence


def test_baseline_caption_in_sidebar():
    at = plan_page(mech=["rounding"])
    assert any("not differentially private" in c.value for c in at.sidebar.caption)


def ledger_tables(at):
    """(entries, totals) shown by the ledger section."""
    (entries,) = [shown_table(d) for d in at.table if "manifest" in d.value.columns]
    (totals,) = [d.value for d in at.dataframe if "composition" in d.value.columns]
    return entries, totals


def test_publish_lands_in_the_ledger_which_outlives_the_session():
    at = plan_page(mech=["laplace"], pp="base", target="rmse", eps="0.5")
    margin = margins.noise_margin(publish.DISCRETE_LAPLACE,
                                  publish.calibrate(publish.DISCRETE_LAPLACE, 0.5).scale)
    assert any(f"will carry its 95 % margin of error: ± {margin:,} commuters" in c.value
               for c in at.caption)
    at.button(key="publish_go").click().run()
    assert not at.exception, at.exception
    assert any("Guarantee: ε-differential privacy with ε = 0.5" in s.value for s in at.success)
    assert any("(ledger entry 1)" in s.value for s in at.success)
    assert any(f"95 % margin of error (column {margins.COLUMN}): ± {margin:,} commuters on "
               "every row" in c.value for c in at.caption)
    assert [b.label for b in at.get("download_button")][-3:] == [
        "release.csv", "manifest.json", "audit-private.json — not for publication"]
    entries, _ = ledger_tables(at)
    assert entries["ε"].tolist() == ["0.5"] and entries["ρ (zCDP)"].tolist() == ["—"]
    at.button(key="publish_go").click().run()
    entries, totals = ledger_tables(at)
    assert len(entries) == 2
    assert totals["epsilon"].iloc[0] == 1.0  # basic composition: 0.5 + 0.5
    assert totals["composition"].tolist() == ["basic (budgets add up)"]  # advanced is worse
    assert any("Keyed chain intact: 2 entries" in c.value for c in at.caption)
    # A new session (as after a server restart) sees the same ledger.
    fresh = plan_page(mech=["laplace"], pp="base", target="rmse", eps="0.5")
    assert len(ledger_tables(fresh)[0]) == 2


def test_an_unwritable_ledger_disables_publishing_with_a_message(tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv("DPCORE_CLASSROOM_DIR", str(blocker))
    at = plan_page(mech=["laplace"], pp="base", target="rmse")
    assert not at.exception, at.exception
    assert any("budget ledger's database cannot be opened" in e.value for e in at.error)
    assert at.button(key="publish_go").disabled


def test_topdown_publish_and_side_by_side_on_an_ed_subset():
    at = plan_page(mech=["laplace"], pp="base", target="rmse", dataset="ireland_ed",
                   areas=["Leitrim"])
    at.radio(key="publish_method").set_value("topdown").run()
    assert not at.exception, at.exception
    (budget,) = [d.value for d in at.dataframe if "share of ρ" in d.value.columns]
    assert budget["share of ρ"].tolist() == [0.5, 0.5]
    at.number_input(key="publish_topdown_weight_1").set_value(3.0).run()
    (budget,) = [d.value for d in at.dataframe if "share of ρ" in d.value.columns]
    assert budget["share of ρ"].tolist() == [0.25, 0.75]
    at.button(key="publish_go").click().run()
    assert not at.exception, at.exception
    published = at.session_state[publishing.LAST]
    assert published.manifest["levels"][1]["share_of_rho"] == 0.75
    assert published.manifest["ledger_entry"]["number"] == 1
    entries, _ = ledger_tables(at)
    assert entries["method"].tolist() == ["topdown (gaussian)"]
    at.number_input(key="publish_compare_trials").set_value(2).run()
    at.button(key="publish_compare_go").click().run()
    assert not at.exception, at.exception
    (side,) = [d.value for d in at.dataframe if "method" in d.value.columns
               and "level" in d.value.columns and "manifest" not in d.value.columns]
    assert set(side["method"]) == {"Flat (one level)", "WLS (two levels)", "TopDown (InfTDA)"}
    assert len(side) == 6  # three methods × two levels
    assert at.get("plotly_chart")


def test_publish_consistent_levels_on_an_ed_subset():
    at = plan_page(mech=["laplace"], pp="base", target="rmse", dataset="ireland_ed",
                   areas=["Leitrim"])
    at.radio(key="publish_method").set_value("wls").run()
    (errors,) = [d.value for d in at.dataframe if "level" in d.value.columns]
    assert len(errors) == 2
    consistent = errors["consistent, split ε (RMSE)"]
    assert consistent.iloc[1] < errors["alone, fine level summed up (RMSE)"].iloc[1]
    at.button(key="publish_go").click().run()
    assert not at.exception, at.exception
    assert any("in total (sequential composition of the 2 levels" in s.value for s in at.success)


def test_upload_plans_and_publishes_in_the_session_with_safe_output():
    """An upload (hostile zone names): the planner answers; publishing waits for a domain, here
    the data's own zones after the acknowledgement; the CSV neutralises formula-like names and
    the manifest says where the domain comes from (no hash of the rows)."""
    zones = ZoneSet.from_ids(["=HYPERLINK(\"http://e.example\")", "Plain", "<b>x</b>"])
    upload = ODMatrix.from_pairs("upload", zones, zones, [0, 0, 1, 2], [1, 2, 0, 2],
                                 [30, 12, 25, 40])
    at = AppTest.from_file(PAGE, default_timeout=240)
    at.query_params["mech"] = ["laplace", "rounding"]
    at.query_params["pp"] = "base"
    at.query_params["target"] = "rmse"
    at.session_state[state.CURRENT_DATASET] = state.UPLOADED
    at.session_state[state.UPLOADED_MATRIX] = upload
    at.session_state[state.UPLOADED_FILENAME] = "flows.csv"
    at.run()
    assert not at.exception, at.exception
    assert "Laplace needs ε ≈" in at.markdown[0].value
    assert not [b for b in at.button if b.key == "publish_go"]
    at.radio(key="publish_domain_source").set_value(published_domain.DATA).run()
    assert any(published_domain.DATA_DERIVED_RISK in w.value for w in at.warning)
    assert not [b for b in at.button if b.key == "publish_go"]
    at.checkbox(key="publish_domain_ack").check().run()
    at.button(key="publish_go").click().run()
    assert not at.exception, at.exception
    published = at.session_state[publishing.LAST]
    assert published.manifest["input"]["label"] == ledger.UNLABELLED  # no label typed
    assert "flows.csv" not in json.dumps(published.manifest)  # the upload's file name
    assert published.manifest["input"]["domain"]["source"] == published_domain.DATA
    assert "sha256" not in json.dumps(published.manifest)
    text = export.safe_csv(published.table).decode()
    assert "'=HYPERLINK" in text and "\n=HYPERLINK" not in text and ",=HYPERLINK" not in text


def upload_page(filename: str) -> AppTest:
    """An upload in a new session, published over its declared zone codes."""
    zones = ZoneSet.from_ids(["A", "B", "C"])
    upload = ODMatrix.from_pairs("upload", zones, zones, [0, 1, 2], [1, 2, 0], [5, 6, 7])
    at = AppTest.from_file(PAGE, default_timeout=240)
    at.query_params["mech"] = ["laplace"]
    at.query_params["pp"] = "base"
    at.query_params["target"] = "rmse"
    at.session_state[state.CURRENT_DATASET] = state.UPLOADED
    at.session_state[state.UPLOADED_MATRIX] = upload
    at.session_state[state.UPLOADED_FILENAME] = filename
    at.run()
    at.radio(key="publish_domain_source").set_value(published_domain.CODES).run()
    at.text_area(key="publish_domain_codes").set_value("A B C").run()
    return at


def test_the_ledger_names_no_upload_and_keeps_unlabelled_uploads_apart():
    """Issue 29: the levels column showed an upload's file name to every session, and every
    session's uploads were added up as one dataset."""
    secret = "acme_staff_home_addresses_2026.csv"
    for _ in range(2):
        at = upload_page(secret)
        at.button(key="publish_go").click().run()
        assert not at.exception, at.exception
    entries, totals = ledger_tables(at)
    assert secret not in entries.to_string() and secret not in totals.to_string()
    assert entries["levels"].str.startswith("fine level: ").all()
    basic = totals[totals["composition"].str.startswith("basic")]
    assert basic["label"].tolist() == ["unlabelled (entry 1)", "unlabelled (entry 2)"]
    store = ledger.LedgerStore()
    assert secret.encode() not in store.path.read_bytes()
    at = upload_page(secret)
    at.text_input(key=f"publish_label_{state.UPLOADED}").set_value("Acme staff 2026").run()
    at.button(key="publish_go").click().run()
    at = upload_page(secret)
    at.text_input(key=f"publish_label_{state.UPLOADED}").set_value("Acme staff 2026").run()
    at.button(key="publish_go").click().run()
    _, totals = ledger_tables(at)
    basic = totals[totals["composition"].str.startswith("basic")].set_index("label")
    assert basic.loc["Acme staff 2026", "publications"] == 2
    assert basic.loc["Acme staff 2026", "epsilon"] == 2.0


def test_a_bidirectional_override_in_a_label_is_refused_and_an_old_one_shown_escaped(
        monkeypatch):
    """Issue 40: a label holding U+202E RIGHT-TO-LEFT OVERRIDE showed raw in the per-label
    totals, reversing the text after it on screen. Typed now, it is refused; one already in the
    ledger (recorded before labels were checked for it) shows escaped in both tables."""
    at = plan_page(mech=["laplace"], pp="base", target="rmse", eps="0.5")
    key = next(t.key for t in at.text_input if t.key.startswith("publish_label_"))
    at.text_input(key=key).set_value("Kildare \u202e6102 sretummoc").run()
    assert any("bidirectional marks" in e.value for e in at.error)
    assert at.button(key="publish_go").disabled
    with monkeypatch.context() as older:                 # as a version before issue 40 did
        older.setattr(ledger, "check_label", lambda text: text)
        ledger.LedgerStore().append("Kildare \u202e6102 sretummoc", "flat (laplace)", [], 0.5,
                                    0.0, None, "0" * 32)
    entries, totals = ledger_tables(plan_page(mech=["laplace"], pp="base", target="rmse"))
    assert totals["label"].tolist() == ["Kildare \\u202e6102 sretummoc"]
    # The entries are Markdown cells (safe.markdown: escaped, then its backslash escaped too).
    assert entries["label"].tolist() == ["Kildare u202e6102 sretummoc"]


def test_tampering_is_reported_on_the_page():
    at = plan_page(mech=["laplace"], pp="base", target="rmse", eps="0.5")
    at.button(key="publish_go").click().run()
    at.button(key="publish_go").click().run()
    store = ledger.LedgerStore()
    import sqlite3
    with sqlite3.connect(store.path) as db:
        db.execute("DROP TRIGGER ledger_no_delete")
        db.execute("DELETE FROM ledger WHERE number = 2")
    fresh = plan_page(mech=["laplace"], pp="base", target="rmse", eps="0.5")
    assert any("tampered with: the ledger lost entry 2" in e.value for e in fresh.error)
    assert not any("Keyed chain intact" in c.value for c in fresh.caption)


def test_the_page_says_tampering_plainly_and_logs_the_key_path_for_the_operator(caplog):
    """Issue 29 follow-up: the page showed the server's key path to every browser session.
    Issue 40: a lost head or key withholds the totals (never an empty, valid ledger)."""
    at = plan_page(mech=["laplace"], pp="base", target="rmse", eps="0.5")
    at.button(key="publish_go").click().run()
    store = ledger.LedgerStore()
    key_path, head_path = store.keys.key_path, store.keys.head_path
    for path in (key_path, head_path):
        path.unlink()
        caplog.clear()
        with caplog.at_level("WARNING", logger=publishing.__name__):
            fresh = plan_page(mech=["laplace"], pp="base", target="rmse", eps="0.5")
        (shown,) = [e.value.replace("\\", "") for e in fresh.error if "checked" in e.value]
        assert "the ledger's key or head is missing — refusing to report totals" in shown
        page = " ".join(str(getattr(element, "value", "")) for element in fresh.main
                        ).replace("\\", "")  # markdown escapes undone
        assert "cannot be checked" in page and str(key_path.parent) not in page  # the folder
        assert str(path) in caplog.text  # for whoever runs the server
        assert fresh.button(key="publish_go").disabled


def test_post_processing_resets_to_the_methods_default():
    """Issue 29: switching Flat → WLS kept Base-Pos although the page advises Base for WLS."""
    at = plan_page(mech=["laplace"], pp="base", target="rmse", dataset="ireland_ed",
                   areas=["Leitrim"])
    assert at.radio(key="publish_postprocess").value == "base_pos"
    at.radio(key="publish_method").set_value("wls").run()
    assert at.radio(key="publish_postprocess").value == "base"
    at.radio(key="publish_postprocess").set_value("base_pos").run()
    at.radio(key="publish_method").set_value("flat").run()
    assert at.radio(key="publish_postprocess").value == "base_pos"
    at.radio(key="publish_method").set_value("wls").run()
    assert at.radio(key="publish_postprocess").value == "base"
    at.button(key="publish_go").click().run()
    assert at.session_state[publishing.LAST].manifest["post_processing"].startswith("none")


def test_topdown_says_the_total_is_published_exactly_where_it_is():
    exact = "TopDown publishes the exact number of commuters"
    at = plan_page(mech=["laplace"], pp="base", target="rmse", dataset="toy_town")
    at.radio(key="publish_method").set_value("topdown").run()
    assert any(exact in i.value and "add/remove" in i.value for i in at.info)
    at = plan_page(mech=["laplace"], pp="base", target="rmse", dataset="toy_town",
                   nb="add_remove")
    at.radio(key="publish_method").set_value("topdown").run()
    assert not any(exact in i.value for i in at.info)
    at = plan_page(mech=["laplace"], pp="base", target="rmse", dataset="ireland_ed",
                   areas=["Leitrim"])  # a subset's n is not public: the top level is noisy
    at.radio(key="publish_method").set_value("topdown").run()
    assert not any(exact in i.value for i in at.info)


def test_a_zones_file_beyond_two_levels_is_explained_on_the_page():
    at = upload_page("flows.csv")
    at.radio(key="publish_domain_source").set_value(published_domain.ZONES_FILE).run()
    at.file_uploader(key="publish_domain_zones").set_value(
        ("zones.csv", b"zone,parent\nA,P\nB,P\nC,\nP,R\n", "text/csv")).run()
    assert not at.exception, at.exception
    shown = [box.value.replace("\\", "") for box in (*at.warning, *at.info)]  # unescaped
    assert any("1 listed zone is also the parent of other listed zones (“P”)" in text
               for text in shown)
    assert any("1 zone has no parent in the zones file (“C”): each was made its own parent"
               in text for text in shown)
    at.button(key="publish_go").click().run()
    assert at.session_state[publishing.LAST].manifest["levels"][0]["cells"] == 9


def test_the_county_data_says_why_wls_is_not_offered_and_the_eds_offer_it():
    """Issue 42: on the county data the methods were Flat and TopDown with no word on WLS."""
    at = plan_page(mech=["laplace"], pp="base", target="rmse", dataset="ireland_county")
    assert not at.exception, at.exception
    assert at.radio(key="publish_method").options == [publish.METHODS[publish.FLAT],
                                                      publish.METHODS[publish.TOPDOWN]]
    why = [c.value.replace("\\", "") for c in at.caption if "WLS is not offered" in c.value]
    assert len(why) == 1 and "has no parent level" in why[0] and "counties" in why[0]
    for query in (dict(level="parent"), dict(areas=["Leitrim"])):   # rolled up: no parent left
        at = plan_page(mech=["laplace"], pp="base", target="rmse", dataset="ireland_ed", **query)
        offered = publish.METHODS[publish.WLS] in at.radio(key="publish_method").options
        told = any("WLS is not offered" in c.value for c in at.caption)
        assert offered != told and offered == ("areas" in query), query


def test_gaussian_publishes_are_totalled_in_zcdp_beside_adding_up():
    """Issue 38: two Gaussian publishes and a discrete Laplace one under one label; the zCDP row
    adds their ρ's (the Laplace one as ε²/2, Bun & Steinke 2016, Prop. 1.4) and states them at
    basic's total δ, with a note saying which total is smaller."""
    at = plan_page(mech=["laplace"], pp="base", target="rmse", eps="0.5")
    at.selectbox(key="publish_mechanism").select(publish.GAUSSIAN).run()
    for _ in range(2):
        at.button(key="publish_go").click().run()
        assert not at.exception, at.exception
    entries, totals = ledger_tables(at)
    rhos = [ledger.LedgerStore().entries()[i].rho for i in (0, 1)]
    assert entries["ρ (zCDP)"].tolist() == [f"{r:.4g}" for r in rhos]
    basic, zcdp = totals.iloc[0], totals.iloc[-1]
    assert zcdp["composition"].startswith("zCDP") and zcdp["delta"] == basic["delta"] > 0
    assert zcdp["rho"] == sum(rhos)
    assert math.isclose(zcdp["epsilon"], sum(rhos) + 2 * math.sqrt(
        sum(rhos) * math.log(1 / basic["delta"])), rel_tol=1e-12)
    notes = [m.value.replace("\\", "") for m in at.markdown if m.value.startswith("- ")]
    zcdp_note = next(n for n in notes if ", zCDP" in n)   # the notes, under the table
    smaller = "smaller than basic" in zcdp_note
    assert smaller == (zcdp["epsilon"] < basic["epsilon"])
    assert any("their ρ's add up exactly" in m.value for m in at.markdown)
    at.selectbox(key="publish_mechanism").select(publish.DISCRETE_LAPLACE).run()
    at.button(key="publish_go").click().run()
    _, totals = ledger_tables(at)
    assert math.isclose(totals.iloc[-1]["rho"], sum(rhos) + 0.5 ** 2 / 2, rel_tol=1e-12)
    assert any("1 pure ε-DP publication(s) counted as ρ = ε²/2" in m.value.replace("\\", "")
               for m in at.markdown)
