"""The Plan & publish page's publish section, the budget ledger, and flat / WLS / TopDown side by
side.

A publish is never cached and never seeded: OpenDP draws from the operating system, so the same
settings give a new release every time (:mod:`dpcore.interfaces.publish`). Every publish is
recorded in the budget ledger in the app's local database (:mod:`dpcore.interfaces.ledger`): it
outlives the session and the server, and only grows. The side-by-side comparison draws seeded
simulated releases (:mod:`dpcore.interfaces.publish_compare`), not OpenDP's.

The published files hold the mechanism's output and public facts only: a bundled dataset is
published over its own (public) geography; an upload over a domain the user names
(:mod:`dpcore.interfaces.published_domain`), or over its own zones only after ticking that they
accept what this reveals. What is computed from the confidential table — the audit record, the
side-by-side comparison — is offered apart, labelled "not for publication" on the page and in
each file's first line (:mod:`dpcore.confidential`). The ledger and the manifest name
a publication by the label the publisher types, never by a file name (the ledger is shown to
every session, the manifest to everyone); the ledger's problems are shown as plain sentences,
their paths on the server only in its log.
"""

from __future__ import annotations

import json
import logging

import pandas as pd
import streamlit as st

from dpcore import confidential, export
from dpcore.data import datasets, importers, views
from dpcore.evaluation import margins
from dpcore.interfaces import ledger, publish, publish_compare, published_domain
from dpcore.interfaces.store import StoreUnavailable
from dpcore.limits import DELTA, EPSILON, FINE_SHARE
from dpcore.mechanisms import postprocess as postprocessing
from dpcore.mechanisms import topdown
from dpcore.release import RunSettings
from ui.components import charts, data, runs, safe, state, widgets

log = logging.getLogger(__name__)
LAST = "publish_last"  # the last publish of this session: (Published, errors table or None)
COMPARED = "publish_compared"  # {settings: comparison results} of this session
#: ε values of the side-by-side chart (the publish's own ε is added).
COMPARE_EPSILONS = (0.25, 0.5, 1.0, 2.0, 4.0)
AUDIT = "publish_audit_record"  # its private audit record (never part of the published files)
LOGGED = "publish_ledger_logged"  # the ledger problems this session has written to the log
DOMAIN_CACHE = "publish_domain_cache"  # (the user's choice, its Domain): read a zones file once
#: Above this many cells a dense publish through OpenDP takes minutes on a small machine.
SLOW_CELLS = 1_000_000
#: The ledger's columns as shown: the guarantee first, so ε and δ are on screen at 1,280 px
#: (they were the 6th and 7th of ten, off-screen at 1,400 px); the table wraps (issue 30).
LEDGER_COLUMNS = ["number", "ε", "δ", "ρ (zCDP)", "label", "method", "levels", "time (UTC)",
                  "manifest", "note"]
#: The publishing mechanisms in plain words (the manifest keeps publish.MECHANISMS' exact wording).
PLAIN_MECHANISMS = {publish.DISCRETE_LAPLACE: "Discrete Laplace",
                    publish.GAUSSIAN: "Discrete Gaussian"}


def book() -> tuple[ledger.LedgerStore | None, ledger.Check | None]:
    """The ledger of this server's database (the classroom's file) and its check; (None, None),
    with a message, when the database cannot be opened."""
    book = ledger.LedgerStore()
    try:
        return book, book.check()
    except StoreUnavailable as error:
        log.warning("budget ledger: %s (%s)", error, error.detail)
        st.error(f"The budget ledger's database cannot be opened: {error} Publishing is "
                 "disabled until it can: every publication must be recorded.")
        return None, None


def _label_input(settings: RunSettings) -> str | None:
    """The ledger label the publisher types (a bundled dataset's key is offered); None, with a
    message, when it cannot be used."""
    text = st.text_input(
        "Label for the budget ledger: who the data is about", max_chars=ledger.LABEL_CHARS,
        value="" if settings.dataset == state.UPLOADED else settings.dataset,
        key=f"publish_label_{settings.dataset}", placeholder="e.g. Kildare commuters 2016",
        help="Publications with the same label are about the same people, so their budgets "
             "add up in the ledger. The ledger is shown to everyone using this server: type "
             "the population, never a file name. Left empty, the publication stands alone.")
    try:
        return ledger.check_label(text)
    except ValueError as error:
        message = str(error)
        st.error(safe.markdown(message[:1].upper() + message[1:]))
        return None


def _reset_postprocess() -> None:
    """A new method starts from its own default post-processing (Base for WLS, Base-Pos for
    flat), not from the one chosen for the method before."""
    st.session_state.pop("publish_postprocess", None)


def _uploaded_domain() -> published_domain.Domain | None:
    """The domain the user names for an upload (None until the choice is complete)."""
    upload = st.session_state[state.UPLOADED_MATRIX]
    source = st.radio("Published domain: the zones a release can contain",
                      list(published_domain.SOURCES), key="publish_domain_source",
                      index=None, format_func=published_domain.SOURCES.__getitem__,
                      help="Every cell of the domain gets a noisy value. A list read from your "
                           "data would itself tell who is in it.")
    if source is None:
        st.info("Choose where the published zones come from: a public list (a zones file, a "
                "bundled geography, or the official codes), so that the release does not show "
                "which zones your data has.")
        return None
    if source == published_domain.ZONES_FILE:
        file = st.file_uploader("Zones file listing the published zones (zone[, parent])",
                                key="publish_domain_zones",
                                max_upload_size=importers.MAX_UPLOAD_BYTES // 2 ** 20)
        if file is None:
            return None
        choice = (source, file.file_id)
        make = lambda: published_domain.of_zones_file(file.getvalue(), file.name)
    elif source == published_domain.BUNDLED:
        key = st.selectbox("Bundled geography", list(datasets.DATASETS),
                           key="publish_domain_dataset",
                           format_func=lambda k: datasets.DATASETS[k].title)
        choice, make = (source, key), lambda: published_domain.of_dataset(key, data.bundled(key))
    elif source == published_domain.CODES:
        text = st.text_area("Zone codes (separated by commas, spaces or line breaks)",
                            key="publish_domain_codes",
                            max_chars=published_domain.MAX_CODES_CHARS)
        if not text.strip():
            return None
        choice, make = (source, text), lambda: published_domain.of_codes(text)
    else:
        st.warning(published_domain.DATA_DERIVED_RISK)
        if not st.checkbox("I accept that the release shows which zones my data has",
                           key="publish_domain_ack"):
            return None
        choice, make = (source, id(upload)), lambda: published_domain.of_data(upload)
    cached = st.session_state.get(DOMAIN_CACHE)
    if cached is not None and cached[0] == choice:
        return cached[1]
    try:
        domain = make()
    except importers.ImportFailed as failure:
        for notice in failure.notices:
            widgets.notice(notice)
        return None
    except ValueError as error:
        st.error(str(error))
        return None
    st.session_state[DOMAIN_CACHE] = (choice, domain)
    return domain


def _domain_notices(domain: published_domain.Domain) -> None:
    """What was done with a zones file's rows that do not fit two levels."""
    for notice in domain.notices:
        if notice.code in published_domain.LEVEL_NOTICES:
            widgets.notice(notice)


def _published_view(settings: RunSettings):
    """(view over a public domain, the manifest's domain entry), or None with a message shown."""
    if settings.dataset != state.UPLOADED:
        od = runs.view(settings)
        domain = published_domain.of_dataset(settings.dataset, data.bundled(settings.dataset))
        st.caption(f"Published domain: {safe.markdown(domain.description)} (public), "
                   f"{len(domain.origins):,} origins × {len(domain.destinations):,} destinations.")
        return od, domain.manifest_entry()
    domain = _uploaded_domain()
    if domain is None:
        return None
    _domain_notices(domain)
    try:
        od = views.select(published_domain.apply(st.session_state[state.UPLOADED_MATRIX], domain),
                          settings.view.whole)
    except ValueError as error:
        st.error(str(error))
        return None
    return od, domain.manifest_entry()


def ledger_section(check: ledger.Check | None) -> None:
    """Every publication recorded on this server, the totals per label, the keyed chain's
    check (``check``: :meth:`dpcore.interfaces.ledger.LedgerStore.check`; None when the
    database cannot be opened, already said)."""
    st.subheader("Budget ledger")
    if check is None:
        return
    st.caption("Every publication made with this app on this server, kept in its local database "
               "(it survives a restart) and shown to everyone using the server. Entries cannot "
               "be changed or removed: forgetting a release does not make it any less public.")
    if check.refusal is not None:
        _log_for_operator([check.refusal])
        st.error("The budget ledger cannot be checked: " + safe.markdown(check.refusal) +
                 ". Publishing is disabled until it can. The person running this server finds "
                 "the details in its log and with `python -m dpcore ledger`.")
        return
    entries, problems = check.entries, check.problems
    if problems:
        _log_for_operator(problems)
        st.error("The budget ledger was tampered with: " + safe.markdown("; ".join(problems)) +
                 ". Someone changed the database outside the app; the totals below may "
                 "understate what was spent. The person running this server finds the details "
                 "in its log and with `python -m dpcore ledger --verify FOLDER…`, which also "
                 "compares the ledger with the published manifests.")
    if not entries:
        st.caption("No entry is left to show." if problems else "Nothing published yet.")
        return
    shown = ledger.table(entries)[LEDGER_COLUMNS]
    # The manifest id's first 8 hex digits name it on screen (the 32 would widen the table past a
    # 1,280 px frame, a scrollable region the keyboard cannot reach); manifest.json has it whole.
    shown["manifest"] = shown["manifest"].astype(str).str[:8]
    charts.wrapped_table(shown)
    st.markdown("**Spent so far, per label** (publications with one label are about the same "
                "people, so their budgets compose; an unlabelled one stands alone; advanced "
                "composition is shown only where it gives a smaller total than adding up). "
                "Where the releases are Gaussian, their ρ's add up exactly (zero-concentrated "
                "DP, Bun & Steinke 2016) and the zCDP row states ρ's total as (ρ + "
                "2√(ρ ln(1/δ)), δ) at the same δ as adding up, so the two ε compare directly: "
                "the note says which is smaller. A discrete Laplace release (pure ε-DP) counts "
                "as ρ = ε²/2 there.")
    totals = ledger.totals_by_label(entries)
    # the notes are sentences: as a column they widened the table past a 1,280 px frame
    notes = totals.pop("note")
    st.dataframe(safe.verbatim(totals, "label"), hide_index=True, width="stretch",
                 column_config={"epsilon": st.column_config.NumberColumn("ε", format="%.4g"),
                                "delta": st.column_config.NumberColumn("δ", format="%.2e"),
                                "rho": st.column_config.NumberColumn("ρ (zCDP)", format="%.4g")})
    for (label, composition), note in zip(zip(totals["label"], totals["composition"]), notes):
        if isinstance(note, str) and note:
            st.markdown(f"- {safe.markdown(str(label))}, {safe.markdown(str(composition))}: "
                        f"{safe.markdown(note)}")
    if not problems:
        st.caption(f"Keyed chain intact: {len(entries)} "
                   f"{'entry' if len(entries) == 1 else 'entries'}, each sealed with an HMAC "
                   "of it and the previous one under the server's key (kept outside the "
                   "database), the newest matching the head record kept beside the key.")


def _log_for_operator(problems: list[ledger.Problem]) -> None:
    """The problems with their details (the key's and head record's paths) in the server's log,
    once per session: the page itself shows only the plain sentences."""
    text = "; ".join(problem.for_operator() for problem in problems)
    if st.session_state.get(LOGGED) != text:
        log.warning("budget ledger: %s", text)
        st.session_state[LOGGED] = text


def _topdown_shares(levels: list[topdown.Level]) -> list[float]:
    """The levels of the hierarchy and their share of ρ (editable weights, normalised)."""
    if len(levels) == 1:
        st.caption(f"{levels[0].name} has no parent level here: TopDown publishes it as one "
                   "level of non-negative whole numbers.")
        return [1.0]
    st.caption("How ρ is split over the levels (the paper splits it evenly). Weights are "
               "normalised to shares.")
    columns = st.columns(len(levels))
    weights = [column.number_input(f"Weight of level {number + 1}: {level.name}", 0.01, 100.0,
                                   1.0, 0.1, key=f"publish_topdown_weight_{number}")
               for number, (column, level) in enumerate(zip(columns, levels))]
    return [w / sum(weights) for w in weights]


@st.cache_data(max_entries=64, show_spinner=False)
def _budget(epsilon: float, delta: float, shares: tuple, names: tuple, cells: tuple,
            neighbours: str) -> pd.DataFrame:
    """Each level's ρ, σ, ε alone and error bound (OpenDP's calibration takes ~1 s: kept)."""
    _, budget = publish.topdown_budget(epsilon, delta, shares, names, neighbours)
    return pd.DataFrame({
        "level": [b.name for b in budget], "share of ρ": [b.share for b in budget],
        "ρ (zCDP)": [b.rho for b in budget], "noise σ (commuters)": [b.scale for b in budget],
        "ε alone (at δ·share)": [b.epsilon for b in budget],
        "max error bound, 95 % (commuters)": topdown.error_bound([b.scale for b in budget],
                                                                 list(cells))})


def _topdown_budget_table(levels, epsilon, delta, shares, neighbours) -> None:
    table = _budget(float(epsilon), float(delta), tuple(shares),
                    tuple(lv.name for lv in levels), tuple(lv.od.domain_size for lv in levels),
                    neighbours)
    charts.numbers_table(table, "%.4g")
    st.caption("TopDown (InfTDA; Boninsegna & Silvestri 2024): each level noised with OpenDP's "
               "discrete Gaussian, then from the top, each parent's children fitted to its "
               "published count (whole numbers ≥ 0 that sum exactly to it); children of a "
               "parent published as 0 stay 0. The bound holds for all levels at once with "
               "probability 95 %: each level adds at most twice its largest noise.")


def section(settings: RunSettings) -> None:
    """Settings, the Publish button (progress), the guarantee, downloads, the ledger."""
    st.caption("The noise comes from the **OpenDP** library's measurements on whole-number "
               "counts, with randomness from the operating system: **no seed**. A seeded release "
               "could be re-derived by anyone who learns the seed, and its noise subtracted. "
               "This is why a publish cannot be repeated, unlike the explorations above.")
    # A valid domain holds every zone of the data: a view too large already is too large on it.
    problem = publish.too_large(runs.view(settings))
    if problem:
        st.info(problem)
        return
    found = _published_view(settings)
    if found is None:
        return
    od, domain_entry = found
    methods = [m for m in publish.METHODS if m != publish.WLS or od.has_parent_level]
    method = st.radio("Method", methods, key="publish_method", horizontal=True,
                      index=methods.index(publish.FLAT), on_change=_reset_postprocess,
                      format_func=publish.METHODS.__getitem__)
    why_not_wls = publish.wls_unavailable(od)
    if why_not_wls:
        st.caption(safe.markdown(why_not_wls))  # an upload names the table
    left, middle, right = st.columns(3)
    mechanism = (publish.GAUSSIAN if method == publish.TOPDOWN else
                 left.selectbox("Mechanism", list(publish.MECHANISMS), key="publish_mechanism",
                                format_func=PLAIN_MECHANISMS.__getitem__,
                                help="Noise on whole-number counts, drawn by the OpenDP library."))
    if method == publish.TOPDOWN:
        left.caption("Noise: the discrete Gaussian (zCDP), as TopDown requires.")
    epsilon = middle.number_input("ε for this publish", min_value=EPSILON.low,
                                  max_value=EPSILON.high,
                                  value=float(settings.epsilon), format="%.4g",
                                  key="publish_epsilon")
    delta = (right.number_input("δ", min_value=DELTA.low, max_value=DELTA.high,
                                value=settings.delta,
                                format="%.2e", key="publish_delta")
             if mechanism == publish.GAUSSIAN else 0.0)
    if mechanism == publish.GAUSSIAN and method == publish.FLAT:
        try:
            st.caption(publish.gaussian_gap_sentence(epsilon, delta, settings.neighbours))
        except ValueError:   # the publish below says why it cannot calibrate
            pass
    levels = method == publish.WLS
    share = (st.slider(FINE_SHARE.label, FINE_SHARE.low, FINE_SHARE.high, FINE_SHARE.default, 0.05,
                       key="publish_share") if levels else 0.5)
    hierarchy = topdown.hierarchy(od) if method == publish.TOPDOWN else None
    shares = _topdown_shares(hierarchy) if method == publish.TOPDOWN else None
    postprocess = "base_pos"
    if method != publish.TOPDOWN:
        postprocess = st.radio(
            "Post-processing", list(publish.POSTPROCESS), horizontal=True,
            index=0 if levels else 1, key="publish_postprocess",
            format_func=lambda k: f"{postprocessing.METHODS[k][0].split(' (')[0]}: "
                                  f"{publish.POSTPROCESS[k]}")
    problem = publish.too_large(od, levels)
    if problem:
        st.warning(problem)
        return
    if method == publish.TOPDOWN and publish.exact_total(settings.neighbours,
                                                         not settings.view.areas):
        st.info(f"**The total is published exactly.** {publish.TOPDOWN_TOTAL} (Sidebar: "
                "neighbouring relation.)")
    if method == publish.TOPDOWN:
        cells = sum(level.od.domain_size for level in hierarchy)
    else:
        cells = od.domain_size + (od.aggregate().domain_size if levels else 0)
    if cells > SLOW_CELLS:
        st.warning(f"Up to {cells:,} cells go through OpenDP (several µs each): expect "
                   "minutes. Restrict to some areas in the sidebar for a quicker publish.")
    try:
        if levels:
            errors = publish.level_errors(od, mechanism, epsilon, share, delta,
                                          settings.neighbours)
            charts.numbers_table(errors, "%.3g")
            st.caption("Expected RMSE per cell (commuters), before rounding and clipping. "
                       "Consistent: budget split, then weighted least squares over the two "
                       "levels (Hay et al. 2010; Boninsegna & Silvestri 2024 for OD data). "
                       "Clipping negatives (base_pos) after it inflates the parent totals: "
                       "prefer base here.")
        if method == publish.TOPDOWN:
            _topdown_budget_table(hierarchy, epsilon, delta, shares, settings.neighbours)
        if method == publish.FLAT:
            scale = publish.calibrate(mechanism, epsilon, delta, settings.neighbours).scale
            st.caption(f"Every count in release.csv will carry its 95 % margin of error: "
                       f"± {margins.noise_margin(mechanism, scale):,} commuters (from the noise "
                       "law alone, so it can be known before publishing).")
    except ValueError as error:
        st.error(str(error))
        return
    store, check = book()
    label = _label_input(settings)
    if st.button("Publish", key="publish_go", type="primary", icon=":material/publish:",
                 disabled=check is None or check.refusal is not None or label is None):
        bar = st.progress(0.0, "Publishing…")

        def progress(done, total):
            bar.progress(min(done / total, 1.0), f"{done:,} of up to {total:,} cells noised")
        try:
            source = publish.input_entry(label, settings.view.whole, domain_entry)
            options = dict(delta=delta, neighbours=settings.neighbours, source=source,
                           progress=progress)
            if method == publish.TOPDOWN:
                result = publish.publish_topdown(od, epsilon, shares=shares,
                                                 whole_table=not settings.view.areas, **options)
            elif levels:
                result = publish.publish_levels(od, mechanism, epsilon, fine_share=share,
                                                postprocess=postprocess, **options)
            else:
                result = publish.publish(od, mechanism, epsilon, postprocess=postprocess,
                                         **options)
        except ValueError as error:
            st.error(str(error))
            result = None
        bar.empty()
        if result is not None:
            try:
                ledger.record(store, result, label, f"{method} ({mechanism})")
            except (StoreUnavailable, ValueError) as error:
                if getattr(error, "detail", ""):
                    log.warning("budget ledger: %s (%s)", error, error.detail)
                st.error(f"The release was made but could not be recorded in the budget "
                         f"ledger ({error}), so it is not offered for download: publish again "
                         "when the database is writable.")
                result = None
            st.session_state[LAST] = result
            st.session_state[AUDIT] = publish.audit_record(od)
            check = store.check()  # with the new entry
    last = st.session_state.get(LAST)
    if last is not None:
        entry = last.manifest.get("ledger_entry", {}).get("number")
        st.success(f"Published: {len(last.table):,} rows (ledger entry {entry}). Guarantee: "
                   f"{last.manifest['guarantee']}")
        st.caption(margins.sentence(last.table, last.manifest["margin_of_error"]))
        row = st.container(horizontal=True)
        row.download_button("release.csv", export.safe_csv(last.table), "release.csv",
                            "text/csv", key="publish_csv", on_click="ignore",
                            icon=":material/download:")
        row.download_button("manifest.json", json.dumps(last.manifest, indent=2,
                                                        ensure_ascii=False),
                            "manifest.json", "application/json", key="publish_manifest",
                            on_click="ignore", icon=":material/download:")
        with st.expander("The manifest"):
            st.json(last.manifest)
        with st.expander("Private audit record (not for publication)"):
            st.caption("The SHA-256 of the table you published from and its number of "
                       "commuters, for your own records. **Never publish it**: anyone who knows "
                       "every record but one could try each candidate for the last one and "
                       "match the hash.")
            st.download_button("audit-private.json — not for publication",
                               confidential.json_text(st.session_state[AUDIT]),
                               "audit-private.json", "application/json", key="publish_audit",
                               on_click="ignore", icon=":material/lock:")
            st.caption(charts.PRIVATE_CAPTION)
    ledger_section(check)


_METHOD_LABELS = {publish.FLAT: "Flat (one level)", publish.WLS: "WLS (two levels)",
                  publish.TOPDOWN: "TopDown (InfTDA)"}


def comparison_section(settings: RunSettings) -> None:
    """Flat, WLS and TopDown at the same budget over repeated seeded releases: a table at the
    publish's ε and a chart over ε, per level and metric, with 95 % intervals."""
    od = runs.view(settings)
    if publish.too_large(od):
        return
    epsilon = float(st.session_state.get("publish_epsilon", settings.epsilon))
    delta = float(st.session_state.get("publish_delta", settings.delta))
    st.caption(f"Every method with the whole budget (ε = {epsilon:g}, δ = {delta:.2g}, discrete "
               "Gaussian noise at the scales OpenDP calibrates), measured over repeated "
               "releases drawn with the page's seed — simulated, so that they can be repeated. "
               "**Not for publication**: every figure here is measured against the confidential "
               "table (with the seed, a function of its rows); nothing here is recorded in the "
               "ledger.")
    left, right = st.columns(2)
    trials = int(left.number_input("Releases per method and ε", 2, 50, 5,
                                   key="publish_compare_trials"))
    epsilons = tuple(sorted({*COMPARE_EPSILONS, epsilon}))
    right.caption(f"ε values: {', '.join(f'{e:g}' for e in epsilons)}")
    key = (settings.dataset, settings.view, settings.neighbours, settings.seed, trials,
           epsilons, delta)
    found = st.session_state.setdefault(COMPARED, {})
    if key not in found:
        if not st.button("Compare", key="publish_compare_go", icon=":material/compare_arrows:"):
            return
        bar = st.progress(0.0, "Comparing…")
        found[key] = publish_compare.compare(
            od, epsilons, delta, trials=trials, seed=settings.seed,
            neighbours=settings.neighbours, whole_table=not settings.view.areas,
            progress=lambda done, total: bar.progress(done / total,
                                                      f"{done} of {total} method × ε"))
        bar.empty()
    results = found[key].assign(method=lambda f: f["method"].map(_METHOD_LABELS))
    side = publish_compare.table(results, epsilon).rename(columns={
        m: label for m, label in publish_compare.METRICS.items()})
    charts.numbers_table(side, "%.4g", first=2)
    st.caption(f"Means over {trials} releases at ε = {epsilon:g}. The CSV below has the 95 % "
               "intervals.")
    left, right = st.columns(2)
    metric = left.selectbox("Metric", list(publish_compare.METRICS), key="publish_compare_metric",
                            format_func=publish_compare.METRICS.__getitem__)
    level = right.selectbox("Level", list(dict.fromkeys(results["level"])),
                            key="publish_compare_level")
    shown = results[(results["metric"] == metric) & (results["level"] == level)]
    unit = publish_compare.METRICS[metric]
    fig = charts.curves(shown, "epsilon", f"{unit.split(' (')[0].capitalize()} over ε — "
                        f"{level}", "ε (log scale)", unit, group="method", log_x=True)
    labels = list(_METHOD_LABELS.values())
    for trace in fig.data:  # a dash and a marker per method: colour is not the only cue
        if trace.mode == "lines+markers":
            number = labels.index(trace.name)
            trace.line.dash = charts.DASHES[number]
            trace.marker.symbol = ("circle", "square", "diamond")[number]
    charts.show(fig, results, "publish-comparison-private", "publish_compare_chart",
                private=True)
