"""The Plan & publish page's publish section and the session's budget ledger.

A publish is never cached and never seeded: OpenDP draws from the operating system, so the same
settings give a new release every time (:mod:`dpcore.interfaces.publish`). The ledger lives in this session
only and only grows; "Start a new ledger" is the only reset, and says what it does not undo.
"""

from __future__ import annotations

import json

import streamlit as st

from dpcore.data import datasets
from dpcore.interfaces import export, ledger, publish
from dpcore.mechanisms import postprocess
from dpcore.release import RunSettings
from ui import runs, state

LEDGER = "publish_ledger"
LAST = "publish_last"  # the last publish of this session: (Published, errors table or None)
#: Above this many cells a dense publish through OpenDP takes minutes on a small machine.
SLOW_CELLS = 1_000_000
#: The publishing mechanisms in plain words (the manifest keeps publish.MECHANISMS' exact wording).
PLAIN_MECHANISMS = {publish.DISCRETE_LAPLACE: "Discrete Laplace",
                    publish.GAUSSIAN: "Discrete Gaussian"}


def book() -> ledger.Ledger:
    return st.session_state.setdefault(LEDGER, ledger.Ledger())


def _source(settings: RunSettings, od) -> dict:
    if settings.dataset == state.UPLOADED:
        return publish.matrix_source(od, str(st.session_state[state.UPLOADED_FILENAME]))
    return {"dataset": settings.dataset,
            **publish.file_source(datasets.DATASETS[settings.dataset].files), "view": od.name}


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
    od = runs.view(settings)
    problem = publish.too_large(od)
    if problem:
        st.info(problem)
        return
    left, middle, right = st.columns(3)
    mechanism = left.selectbox("Mechanism", list(publish.MECHANISMS), key="publish_mechanism",
                               format_func=PLAIN_MECHANISMS.__getitem__,
                               help="Noise on whole-number counts, drawn by the OpenDP library.")
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
                      format_func=lambda k: f"{postprocess.METHODS[k][0].split(' (')[0]}: "
                                            f"{publish.POSTPROCESS[k]}")
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
                           source=_source(settings, od), progress=progress)
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
    ledger_section()
