"""The Places page on a published release: the two files of a publish (``release.csv`` and
``manifest.json``) uploaded, checked, and answered alone — no confidential input, so no true
answer, no verdict against the truth, and a public download.

The reading, the checks and the intervals are :mod:`dpcore.interfaces.published_analyses`' (the
command line's ``analyse --release DIR``); a bad file is one message naming the file, the row or
field and how to fix it, and the page stops (never a traceback). The analyses and selections are
the live mode's (:func:`ui.places.view.inputs`) on the release's own zones, their shares too (the
live-and-work shares of the flows; distance and its share within a distance need positions,
which a folder does not hold: an optional zones file of the public geography gives them).
"""

from __future__ import annotations

import re

import pandas as pd
import streamlit as st

from dpcore.analyses import answers, shares
from dpcore.interfaces import published_analyses as published
from ui.components import charts, safe
from ui.components.viewstate import kept
from ui.places import figures, view

#: Where the page's answers come from (kept in the URL as ``source``).
SOURCES = {"live": "The loaded data: true vs each mechanism's release (sidebar)",
           "published": "A published release (upload release.csv and manifest.json)"}
#: The public answers' columns, as shown and downloaded (no true column: nothing true is here).
SHOWN = ["analysis", "selection", "part", "rank", "released", "low", "high", "cells", "method"]
#: The public shares' columns (per cent; no true column).
SHARE_SHOWN = ["share", "selection", "released (%)", "low (%)", "high (%)", "method"]
#: Answers listed as sentences under the chart (the rest are in the table and the download).
SENTENCES = 12


def folder() -> published.Folder:
    """The uploaded folder, at the level chosen (a WLS or TopDown folder publishes several); a
    message and a stop while a file is missing or wrong."""
    left, right, third = st.columns(3)
    release = left.file_uploader("release.csv", type=["csv"], key="places_release_csv",
                                 help="The release.csv of a publish (Plan & publish page, or "
                                      "`python3 -m dpcore publish`), unchanged.")
    manifest = right.file_uploader("manifest.json", type=["json"], key="places_manifest_json",
                                   help="The manifest.json written beside that release.csv.")
    zones = third.file_uploader("Zones file (optional)", type=["csv", "txt"],
                                key="places_zones_csv",
                                help="Public geography of the release's zones (zone, lat, lon[, "
                                     "parent]; e.g. data/ireland_ed.zones.csv): positions for "
                                     "distance, direction, a radius and the share within "
                                     f"{view.SHARE_KM:g} km, parents for parent areas. The "
                                     "counts stay the release's; a TopDown folder whose "
                                     "manifest has no zone-to-parent map gets its tighter "
                                     "per-parent intervals from the file's parents.")
    if release is None or manifest is None:
        missing = " and ".join(name for name, file in (("release.csv", release),
                                                        ("manifest.json", manifest))
                               if file is None)
        st.info(f"Upload {missing} of one publish: the answers are the release's own, and "
                "their 95 % intervals come from the manifest's noise law alone.")
        st.stop()
    try:
        rules = published.parse_manifest(manifest.getvalue())
        rows = published.parse_release(release.getvalue())
        found = published.read(rules, rows)
        if len(found.levels) > 1:
            level = st.radio("Level answered", found.levels, key="places_release_level",
                             index=found.levels.index(found.level), horizontal=True,
                             help="This publish releases several levels that add up: answer "
                                  "at the zones of one of them.")
            if level != found.level:
                found = published.read(rules, rows, level)
        if zones is not None:
            found = published.placed(found, zones.getvalue(), zones.name)
    except ValueError as error:
        view.stop(str(error))
    return found


def table(found: published.Folder, choice: view.Choice) -> pd.DataFrame:
    """The release's answers with their intervals, ranked analyses ranked by the release."""
    frame = answers.evaluate(list(choice.queries), None, found.values, found.interval)
    if choice.analysis == "comparison":   # one selection per zone: the part names it
        frame["part"] = frame["part"].where(frame["part"] != "", frame["selection"])
    return frame.assign(mechanism=mechanism(found), key=found.kind)


def share_table(found: published.Folder, choice: view.Choice) -> pd.DataFrame:
    """The release's shares (:data:`SHARE_SHOWN`) with their intervals where the folder's rule
    gives one (:mod:`dpcore.analyses.shares`: the delta method on a flat folder's noise, the
    range over joint bounds on a WLS or TopDown level), else the reason."""
    frame = shares.evaluate(list(choice.shares), None, found.values, found.interval)
    return view.in_percent(frame)[SHARE_SHOWN]


def show_shares(found: published.Folder, choice: view.Choice) -> None:
    """The shares of the analysis (flows: live-and-work; distance: within a distance), each
    with its interval or why there is none, and their public download."""
    frame = share_table(found, choice)
    st.markdown("**Shares** (per cent), each with its 95 % interval where the folder's noise "
                "law gives one; the method column says how, or why there is none.")
    st.dataframe(safe.verbatim(frame, "selection"), hide_index=True, width="stretch",
                 column_config={c: st.column_config.NumberColumn(format="%.2f")
                                for c in ("released (%)", "low (%)", "high (%)")})
    charts.table_download(frame, f"places_published_shares_{choice.analysis}",
                          "places_published_shares", label="Shares (CSV, public)")


def mechanism(found: published.Folder) -> str:
    """The legend's name of the release."""
    return f"Published release ({published.KINDS[found.kind]}, {found.level})"


def sentences(found: pd.DataFrame) -> list[str]:
    """The drawn answers in words: each with its interval, or why it has none."""
    lines = []
    for row in found.head(SENTENCES).itertuples():
        what = view.MEASURES.get(row.analysis, row.analysis.replace("_", " ").capitalize())
        where = " · ".join(str(x) for x in (row.selection, row.part) if x)
        interval = (f"95 % interval {row.low:,.0f} to {row.high:,.0f}" if pd.notna(row.low)
                    else "no interval")
        lines.append(f"**{safe.markdown(what)}** ({safe.markdown(where)}): "
                     f"**{row.released:,.0f}** ({interval})")
    if len(found) > SENTENCES:
        lines.append(f"… and {len(found) - SENTENCES:,} more in the table below.")
    return lines


def public(found: pd.DataFrame) -> pd.DataFrame:
    """The answers and margins a planner may pass on: the release's own numbers only."""
    return found[SHOWN]


def source() -> str:
    """The page's source choice: "live" (the sidebar's mechanisms) or "published"."""
    return kept(st.radio, "Answer from", "places_source", "live", url="source",
                options=list(SOURCES), format_func=SOURCES.get)


def show() -> None:
    """The published-release mode of the page, then the page stops: the uploads, the live
    mode's analysis choices on the release's zones, the answers with their intervals (chart,
    sentences, table) and the public download of answers and margins."""
    found = folder()
    st.caption("The release's own answers, each with its 95 % interval from the manifest's noise "
               "law alone (no confidential input, so no true answer beside them). The command "
               "line gives the same: `python3 -m dpcore analyse --release DIR` "
               "(docs/ANALYSES.md).")
    choice = view.inputs(found.od, "places_" + re.sub(r"[^a-z0-9]+", "_", found.level.lower()))
    answered = table(found, choice)
    shown = view.drawn(answered, choice)
    if shown.empty:
        st.info("Nothing to draw for this selection.")
        st.stop()
    charts.show(figures.bars(shown, choice.analysis,
                             f"{view.ANALYSES[choice.analysis]}: the published answers"),
                safe.verbatim(public(shown), "selection", "part"),
                f"places_published_{choice.analysis}", "places_published_bars")
    for line in sentences(shown):
        st.markdown("- " + line)
    st.caption("Whiskers and intervals: " + safe.markdown(found.interval.method) + ".")
    if choice.shares:
        show_shares(found, choice)
    with st.expander("Every answer (ranks and all parts)"):
        st.dataframe(safe.verbatim(public(answered).head(view.TABLE_ROWS), "selection", "part"),
                     hide_index=True, width="stretch")
        charts.table_download(public(answered), f"places_published_{choice.analysis}",
                              "places_published_all", label="Answers and margins (CSV, public)")
    st.stop()
