"""The thesis's chapter 5 in one command: dpcore.evaluation.thesis (the sweep, every item's data,
the verdicts) and report.thesis_html (one self-contained HTML file), and ``python -m dpcore
reproduce-thesis``."""

import re
import threading
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from dpcore import release
from dpcore.data import datasets, importers, views
from dpcore.evaluation import ranks, thesis
from dpcore.interfaces import cli
from report import log_ticks, thesis_html

EPSILONS = (0.5, 3.0, 5.0)


@pytest.fixture(scope="module")
def county_chapter():
    return thesis.run(datasets.load("ireland_county"), epsilons=EPSILONS, trials=2, seed=3,
                      n_jobs=1, source=datasets.DATASETS["ireland_county"], protocol="written")


def item(chapter, ref):
    [found] = [i for i in chapter.items if i.ref == ref]
    return found


def test_levels_of_ed_data_are_county_ed_and_the_two_equal_domain_subsets():
    od = datasets.load("ireland_ed")
    lv = thesis.levels(od)
    assert [s.label for s in lv.scenarios] == ["County", "ED", "Dublin City (ED)",
                                               "Cavan and Leitrim (ED)"]
    sizes = [views.select(od, s.view).domain_size for s in lv.subsets]
    assert sizes == [162 * 162, 162 * 162]  # the thesis's |X_D| = |X_R| = 26,244
    # Base-Cut (figure 5.10) is scored at county level only
    assert lv.coarse.methods(thesis.POSTPROCESS) == thesis.POSTPROCESS
    assert all(s.methods(thesis.POSTPROCESS) == ("base", "base_pos")
               for s in (lv.fine,) + lv.subsets)


def test_mechanisms_are_the_thesis_s_stability_delta_and_chapter_3_hadamard():
    od = datasets.load("ireland_county")
    specs = dict(thesis.mechanism_specs(od))
    assert specs["stability_histogram"] == {"delta": 1 / (2 * od.n)}
    assert specs["hm"] == {"t": 1}
    assert all(params == {} for key, params in specs.items()
               if key not in ("stability_histogram", "hm"))
    assert thesis.label("hm") == "Hadamard"  # each protocol's section says which


def test_items_follow_the_thesis_order_and_name_what_is_missing(county_chapter):
    assert [i.ref for i in county_chapter.items] == [ref for ref, _ in thesis.ITEMS]
    absent = [i.ref for i in county_chapter.items if isinstance(i, thesis.Absent)]
    assert absent == ["Figure 5.12", "Figure 5.13", "Figure 5.14", "Table 5.3", "Table 5.4",
                      "Figure 5.15", "Figure 5.16", "Figure 5.17"]
    for figure in county_chapter.figures:
        assert len(figure.data) and figure.ref.lower() in figure.caption.lower()
        assert figure.verdict is not None and figure.verdict.word in ("agrees", "differs")
        if figure.kind == "lines":
            assert (figure.data["trials"] == 2).all() and "2 trial(s)" in figure.caption
            assert "error bars" in figure.caption and "band" not in figure.caption
    by_pp = item(county_chapter, "Figure 5.10").data
    assert set(by_pp["postprocess"]) == set(thesis.POSTPROCESS)
    assert set(by_pp["mechanism"]) == set(thesis.LOCAL)


def test_orderings_count_the_zeros_of_each_post_processing(county_chapter):
    hm = item(county_chapter, "Figure 5.11").data
    zeros = hm.groupby("postprocess")["released_zero"].sum()
    # Base-Cut keeps a descending prefix summing just over n: it zeroes at least Base-Pos's
    assert zeros["base_cut"] >= zeros["base_pos"] > 0
    od = datasets.load("ireland_county")
    spec = release.ReleaseSpec("hm", 5.0, {"t": 1}, ("base_cut",), 3, 0)
    cut = release.run(od, spec, score=False).released
    assert zeros["base_cut"] == int((cut < ranks.PRESENT_AT).sum())
    trials = county_chapter.variants.per_trial  # the stated-number trials: trial 0 is this one
    first = trials[(trials["mechanism"] == "hm") & (trials["variant"] == "written")
                   & ~trials["rounded"] & (trials["epsilon"] == 5.0) & (trials["trial"] == 0)]
    assert first["zeros_cut"].item() == zeros["base_cut"]


def test_rank_tables_rank_the_sweeps_trial_zero_release(county_chapter):
    od = datasets.load("ireland_county")
    truth = od.to_dense()
    table = item(county_chapter, "Table 5.2").data  # ε = 5
    assert list(table["True rank"]) == list(range(1, 11))
    # Laplace noise of scale 2/5 cannot reorder county counts hundreds apart (thesis table 5.2).
    assert list(table["Laplace"]) == list(range(1, 11))
    spec = release.ReleaseSpec("grr", 5.0, {}, (thesis.MAIN_POSTPROCESS,), 3, 0)
    released = release.run(od, spec, true_counts=truth, score=False).released
    expected = ranks.rank_pairs(truth, released, 10)["released_rank"]
    assert list(table[thesis.label("grr")]) == list(expected)
    sweep = county_chapter.table
    row = sweep[(sweep["mechanism"] == "grr") & (sweep["epsilon"] == 5.0)
                & (sweep["trial"] == 0) & (sweep["postprocess"] == "base_pos")
                & (sweep["metric"] == "rmse")]
    assert row["value"].item() == pytest.approx(np.sqrt(np.mean((released - truth) ** 2)))


# ------------------------------------------------------------------------------------ verdicts
def test_every_verdict_is_recomputed_from_its_item_s_data(county_chapter):
    for found in county_chapter.items:
        if not isinstance(found, thesis.Absent):
            again = thesis.judge(replace(found, verdict=None)).verdict
            assert (again.agrees, again.ours, again.criterion) == (
                found.verdict.agrees, found.verdict.ours, found.verdict.criterion)


def _lines(values: dict) -> pd.DataFrame:
    """A lines figure's data: {(mechanism, postprocess): [mean at each ε]}."""
    rows = [{"mechanism": m, "postprocess": pp, "scenario": "County", "epsilon": e, "mean": v,
             "low": v, "high": v, "trials": 2}
            for (m, pp), means in values.items() for e, v in zip(EPSILONS, means)]
    return pd.DataFrame(rows)


def test_figure_5_10_verdict_follows_the_order_of_the_curves(county_chapter):
    figure = item(county_chapter, "Figure 5.10")
    thesis_order = {(m, "base"): [100, 60, 30] for m in thesis.LOCAL}
    thesis_order |= {(m, "base_pos"): [80, 55, 29] for m in thesis.LOCAL}
    thesis_order |= {(m, "base_cut"): [50, 45, 28] for m in thesis.LOCAL}
    agrees = thesis.judge(replace(figure, data=_lines(thesis_order))).verdict
    assert agrees.agrees is True and not agrees.reason
    flipped = dict(thesis_order) | {("oue", "base_cut"): [90, 58, 29.5]}  # cut worse than pos
    differs = thesis.judge(replace(figure, data=_lines(flipped))).verdict
    assert differs.agrees is False and "Optimised unary encoding at ε = 0.5" in differs.ours
    assert differs.data_note


def test_figure_5_7_verdict_says_why_when_the_hadamard_mechanism_is_not_similar(county_chapter):
    figure = item(county_chapter, "Figure 5.7")
    similar = {("grr", "base_pos"): [900, 500, 300], ("oue", "base_pos"): [100, 50, 20],
               ("olh", "base_pos"): [105, 52, 21], ("hm", "base_pos"): [110, 60, 25]}
    assert thesis.judge(replace(figure, data=_lines(similar))).verdict.agrees is True
    apart = dict(similar) | {("hm", "base_pos"): [110, 200, 130]}
    verdict = thesis.judge(replace(figure, data=_lines(apart))).verdict
    assert verdict.agrees is False and "Hadamard's RMSE is" in verdict.data_note


def _trials(zeros: dict, worst: dict, exact: dict, count: int = 80) -> pd.DataFrame:
    return pd.DataFrame([{"mechanism": k, "trial": t, "zeros": zeros.get(k, 0),
                          "zeros_cut": np.nan, "worst_rank": worst[k], "exact": exact[k]}
                         for k in worst for t in range(count)])


def test_stated_number_and_table_verdicts_follow_their_trials(county_chapter):
    figure = item(county_chapter, "Figure 5.9")
    keys = thesis.LOCAL
    stated = _trials(thesis.THESIS_ZEROS_5_9, {k: 10 for k in keys}, {k: True for k in keys})
    close = stated.assign(zeros=stated["zeros"] + stated["trial"] % 3 - 1)  # s.d. ≈ 0.8
    context = figure.context | {"trials": close}
    assert thesis.judge(replace(figure, context=context)).verdict.agrees is True
    far = close.assign(zeros=close["zeros"] + (close["mechanism"] == "grr") * 300)
    verdict = thesis.judge(replace(figure, context=figure.context | {"trials": far})).verdict
    assert verdict.agrees is False and "thesis 0, outside" in verdict.ours

    table = item(county_chapter, "Table 5.2")  # ε = 5: all exact but RR, 10th → 11th
    worst = {k: 10 for k in thesis.MECHANISMS} | {"grr": 11}
    exact = {k: True for k in thesis.MECHANISMS} | {"grr": False}
    plausible = replace(table, context=table.context | {"trials": _trials({}, worst, exact)})
    assert thesis.judge(plausible).verdict.agrees is True
    never = replace(table, context=table.context | {
        "trials": _trials({}, worst | {"hm": 13}, exact | {"hm": False})})
    verdict = thesis.judge(never).verdict
    assert verdict.agrees is False and "Hadamard: P(exact order) = 0/80" in verdict.ours
    few = replace(table, context=table.context | {
        "trials": _trials({}, worst | {"hm": 13}, exact | {"hm": False}, count=3)})
    assert thesis.judge(few).verdict.agrees is None  # 3 trials cannot rule 0 out


def test_running_times_simulate_every_user_and_their_verdict_follows_the_order(county_chapter):
    table = item(county_chapter, "Running times")
    times = table.data.set_index("key")
    assert list(times.index) == list(thesis.MECHANISMS)
    # the extrapolation is the line through the two timed sizes, and 2m was timed on 2m people
    m, m2 = (int(v.replace(",", "")) for v in times.loc["oue", "timed people m, 2m"].split(", "))
    assert m2 == 2 * m
    assert times.loc["oue", "per-user, all n (s)"] > times.loc["oue", "seconds at 2m"]
    assert (times["aggregate release (s)"] > 0).all()
    assert (times["as run: per-person loop, all n (s)"] > 0).all()
    ordered = table.data.assign(**{"per-user, all n (s)": [1, 1, 2, 300, 2000, 3]})
    assert thesis.judge(replace(table, data=ordered)).verdict.agrees is True
    swapped = table.data.assign(**{"per-user, all n (s)": [1, 1, 2, 300, 200, 3]})
    assert thesis.judge(replace(table, data=swapped)).verdict.agrees is False


def test_summary_lists_every_item_with_its_verdict(county_chapter):
    summary = thesis.summary(county_chapter)
    assert list(summary["Item"]) == [ref for ref, _ in thesis.ITEMS]
    assert set(summary["Verdict"]) <= {"agrees", "differs", "not checked"}
    assert set(summary["Protocol"]) == {"as written"}
    differs = summary[summary["Verdict"] == "differs"]
    assert differs["Why it differs"].str.startswith("computed: ").all()


# ------------------------------------------------------------------------------------ stopping
def test_a_stopped_run_has_no_items_and_leaves_no_release_thread_running():
    """The trial-0 releases run in a thread beside the sweep; Stop ends both."""
    cancel = threading.Event()
    chapter = thesis.run(datasets.load("ireland_county"), epsilons=EPSILONS, trials=2, seed=3,
                         n_jobs=1, progress=lambda done, total: cancel.set(), cancel=cancel)
    assert chapter.table.attrs["cancelled"] and chapter.table.attrs["jobs_done"] == 1
    assert chapter.items == []
    assert not [t for t in threading.enumerate() if t.name.startswith("thesis")]


def test_trial_zero_releases_stop_when_asked():
    od = datasets.load("ireland_county")
    stop = threading.Event()
    stop.set()
    lv = thesis.levels(od)
    assert thesis._snapshots(od, lv, thesis.mechanism_specs(od), 0, stop) == {}


# ------------------------------------------------------------------------------------ report
def test_log_ticks_label_only_unambiguous_values():
    wide = log_ticks.log_axis([3, 40, 2_000])
    assert wide["ticktext"] == ["1", "10", "100", "1,000", "10,000"]
    assert "ticktext" not in wide["minor"] and 20 in wide["minor"]["tickvals"]
    narrow = log_ticks.log_axis([30, 90])
    assert narrow["ticktext"] == ["20", "50", "100"] and "ticktext" not in narrow["minor"]
    one_decade = log_ticks.log_axis([300, 7_000])  # only 1,000 inside: 1-2-5 labels instead
    assert one_decade["ticktext"] == ["200", "500", "1,000", "2,000", "5,000", "10,000"]


def test_series_are_told_apart_by_more_than_colour(county_chapter):
    for figure in county_chapter.figures:
        if figure.kind != "lines":
            continue
        fig = thesis_html.figure(figure)
        styles = {}
        for trace in fig.data:
            styles.setdefault(trace.name, (trace.marker.symbol, trace.line.dash))
        assert len(set(styles.values())) == len(styles), figure.ref
    panels = thesis_html.figure(item(county_chapter, "Figure 5.10"))
    assert all(axis.matches is None for axis in (panels.layout.yaxis2, panels.layout.yaxis3))


def test_report_is_one_offline_html_with_the_summary_first(county_chapter, tmp_path):
    path = thesis_html.write(county_chapter, tmp_path)
    text = path.read_text(encoding="utf-8")
    assert text.count("plotly.js v") == 1  # plotly.js inlined once, in the head
    bundle = re.search(r"<script>(.*?)</script>", text, re.S)
    assert "plotly.js v" in bundle.group(1)
    page = text[:bundle.start()] + text[bundle.end():]  # its strings name map servers it never
    assert not re.search(r"<script[^>]*\bsrc\b|<link\b|https?://", page)  # calls here
    assert text.count('class="plotly-graph-div"') == len(county_chapter.figures)
    assert text.index('id="summary"') < text.index('id="as_written_figure_5.1"')
    assert "synthetic" in text and "your data" not in text
    assert "Hadamard mechanism with t = 1" in text and "Hadamard Response" in text
    for figure in county_chapter.figures:
        slug = thesis.slug(f"as written {figure.ref}")
        assert f'id="{slug}"' in text and (tmp_path / f"{slug}.csv").exists()
    assert (tmp_path / "as_written_table_5.1.csv").exists()
    assert (tmp_path / "verdicts.csv").exists()


def test_a_user_file_is_called_the_user_s_and_zone_names_are_escaped(tmp_path):
    rows = ["origin,destination,count", "<img src=x onerror=alert(1)>,=HYPERLINK(1),900"] + [
        f"Z{i},Z{j},{(i * 7 + j) % 13 + 1}" for i in range(5) for j in range(5)]
    od = importers.import_od("\n".join(rows).encode(), "evil.csv").matrix
    chapter = thesis.run(od, epsilons=(1.0, 5.0), trials=1, seed=1, n_jobs=1)
    text = thesis_html.write(chapter, tmp_path).read_text(encoding="utf-8")
    assert "<img src=x" not in text and "&lt;img src=x onerror=alert(1)&gt;" in text
    assert "your data" in text and "synthetic" not in text
    table = pd.read_csv(tmp_path / "as_run_table_5.2.csv", keep_default_na=False)
    assert table["Commute"].iloc[0].startswith("<img")
    assert not table["Commute"].str.startswith(("=", "+", "-", "@")).any()


def test_cli_writes_the_report(capsys, tmp_path):
    code = cli.main(["reproduce-thesis", "--dataset", "toy_town", "--epsilons", "1,5",
                     "--trials", "1", "--jobs", "1", "--out", str(tmp_path)])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "releases on Toy town" in out and "agree with the thesis" in out
    assert (tmp_path / "report.html").exists()


def test_cli_uses_every_core_by_default():
    args = cli._parser().parse_args(["reproduce-thesis", "--out", "x"])
    assert args.jobs == -1


@pytest.mark.parametrize("argv, message", [
    (["--scheduler", "10.0.0.1:8786"], "tcp://host:8786"),
    (["--epsilons", "0,1"], "outside"),
    (["--trials", "0"], "--trials"),
    (["--dataset", "missing.csv"], "cannot read missing.csv"),
])
def test_cli_rejects_bad_options_with_a_message(capsys, tmp_path, argv, message):
    code = cli.main(["reproduce-thesis", *argv, "--out", str(tmp_path)])
    assert code == cli.EXIT_USAGE and message in capsys.readouterr().err
