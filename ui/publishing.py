"""The Plan & publish page's publish section and the session's budget ledger.

A publish is never cached and never seeded: OpenDP draws from the operating system, so the same
settings give a new release every time (:mod:`dpcore.interfaces.publish`). The ledger lives in this session
only and only grows; "Start a new ledger" is the only reset, and says what it does not undo.

The published files hold the mechanism's output and public facts only: a bundled dataset is
published over its own (public) geography; an upload over a domain the user names
(:mod:`dpcore.interfaces.published_domain`), or over its own zones only after ticking that they
accept what this reveals. The input's hash is offered apart, as a private audit record.
"""

from __future__ import annotations

import json

import streamlit as st

from dpcore.data import datasets, importers, views
from dpcore.interfaces import export, ledger, publish, published_domain
from dpcore.release import RunSettings
from ui import data, runs, safe, state, widgets

LEDGER = "publish_ledger"
LAST = "publish_last"  # the last publish of this session: (Published, errors table or None)
AUDIT = "publish_audit_record"  # its private audit record (never part of the published files)
DOMAIN_CACHE = "publish_domain_cache"  # (the user's choice, its Domain): read a zones file once
#: Above this many cells a dense publish through OpenDP takes minutes on a small machine.
SLOW_CELLS = 1_000_000


def book() -> ledger.Ledger:
    return st.session_state.setdefault(LEDGER, ledger.Ledger())


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


def _published_view(settings: RunSettings):
    """(view over a public domain, the manifest's input entry), or None with a message shown."""
    if settings.dataset != state.UPLOADED:
        od = runs.view(settings)
        domain = published_domain.of_dataset(settings.dataset, data.bundled(settings.dataset))
        st.caption(f"Published domain: {safe.markdown(domain.description)} (public), "
                   f"{len(domain.origins):,} origins × {len(domain.destinations):,} destinations.")
        return od, publish.input_entry(settings.dataset, od.name, domain.manifest_entry())
    domain = _uploaded_domain()
    if domain is None:
        return None
    try:
        od = views.select(published_domain.apply(st.session_state[state.UPLOADED_MATRIX], domain),
                          settings.view.whole)
    except ValueError as error:
        st.error(str(error))
        return None
    name = str(st.session_state[state.UPLOADED_FILENAME])
    return od, publish.input_entry(name, od.name, domain.manifest_entry())


def ledger_section() -> None:
    """Every publish of this session and the totals under each composition theorem."""
    entries = book()
    st.subheader("Budget ledger (this session)")
    if not entries.entries:
        st.caption(f"Started {entries.started}. Nothing published yet.")
    else:
        st.dataframe(entries.table(), hide_index=True, width="stretch")
        st.markdown("**Spent so far, all releases together** (every one is about the same "
                    "people, so their budgets compose):")
        st.dataframe(entries.totals(), hide_index=True, width="stretch",
                     column_config={"epsilon": st.column_config.NumberColumn("ε", format="%.4g"),
                                    "delta": st.column_config.NumberColumn("δ", format="%.2e")})
    if st.button("Start a new ledger", key="publish_new_ledger", icon=":material/restart_alt:"):
        st.session_state[LEDGER] = ledger.Ledger()
        st.rerun()
    st.caption("A new ledger forgets the entries, not the releases: what was published stays "
               "published, and its privacy loss still counts for the people in it.")


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
    od, source = found
    left, middle, right = st.columns(3)
    mechanism = left.selectbox("Mechanism", list(publish.MECHANISMS), key="publish_mechanism",
                               format_func=publish.MECHANISMS.__getitem__)
    epsilon = middle.number_input("ε for this publish", min_value=0.001, max_value=20.0,
                                  value=float(settings.epsilon), format="%.4g",
                                  key="publish_epsilon")
    delta = (right.number_input("δ", min_value=1e-15, max_value=0.5, value=settings.delta,
                                format="%.2e", key="publish_delta")
             if mechanism == publish.GAUSSIAN else 0.0)
    levels = False
    if od.has_parent_level:
        levels = st.toggle("Publish this level and its parent level together, consistent",
                           key="publish_levels",
                           help="Every fine flow then sums exactly to its parent flow.")
    share = (st.slider("Share of ε for the fine level", 0.1, 0.9, 0.5, 0.05,
                       key="publish_share") if levels else 0.5)
    method = st.radio("Post-processing", list(publish.POSTPROCESS), horizontal=True,
                      index=0 if levels else 1, key="publish_postprocess",
                      format_func=lambda k: f"{k}: {publish.POSTPROCESS[k]}")
    problem = publish.too_large(od, levels)
    if problem:
        st.warning(problem)
        return
    cells = od.domain_size + (od.aggregate().domain_size if levels else 0)
    if cells > SLOW_CELLS:
        st.warning(f"{cells:,} cells go through OpenDP one by one (several µs each): expect "
                   "minutes. Restrict to some areas in the sidebar for a quicker publish.")
    if levels:
        errors = publish.level_errors(od, mechanism, epsilon, share, delta, settings.neighbours)
        st.dataframe(errors, hide_index=True, width="stretch",
                     column_config={c: st.column_config.NumberColumn(format="%.3g")
                                    for c in errors.columns[1:]})
        st.caption("Expected RMSE per cell (commuters), before rounding and clipping. "
                   "Consistent: budget split, then weighted least squares over the two levels "
                   "(Hay et al. 2010; Boninsegna & Silvestri 2024 for OD data). Clipping "
                   "negatives (base_pos) after it inflates the parent totals: prefer base here.")
    entries = book()
    if entries.entries:
        st.caption(f"Before this publish the ledger holds {len(entries.entries)} release(s), "
                   f"ε = {entries.totals()['epsilon'].iloc[0]:.4g} in total (basic "
                   "composition): see the ledger below.")
    if st.button("Publish", key="publish_go", type="primary", icon=":material/publish:"):
        bar = st.progress(0.0, "Publishing…")

        def progress(done, total):
            bar.progress(done / total, f"{done:,} of {total:,} cells")
        try:
            options = dict(delta=delta, neighbours=settings.neighbours, postprocess=method,
                           source=source, progress=progress)
            result = (publish.publish_levels(od, mechanism, epsilon, fine_share=share, **options)
                      if levels else publish.publish(od, mechanism, epsilon, **options))
        except ValueError as error:
            st.error(str(error))
            result = None
        bar.empty()
        if result is not None:
            what = f"{mechanism}, {od.name}" + (" + parent level" if levels else "")
            entries.add(what, epsilon, delta, result.manifest["rho_zcdp"])
            st.session_state[LAST] = result
            st.session_state[AUDIT] = publish.audit_record(od)
    last = st.session_state.get(LAST)
    if last is not None:
        st.success(f"Published: {len(last.table):,} rows. Guarantee: "
                   f"{last.manifest['guarantee']}")
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
            st.download_button("audit-private.json",
                               json.dumps(st.session_state[AUDIT], indent=2, ensure_ascii=False),
                               "audit-private.json", "application/json", key="publish_audit",
                               on_click="ignore", icon=":material/lock:")
    ledger_section()
