"""Page pieces shared by several pages: dataset picker, headline figures, notices, links."""

import ast
from pathlib import Path

import streamlit as st

from dpcore.data import national
from dpcore.data.od import ODMatrix
from ui.components import data, navigation, safe, state, viewstate

ROOT = Path(__file__).resolve().parents[2]

_ALERTS = {"error": st.error, "warning": st.warning, "info": st.info}
#: The picker's short labels: a select's value is one line, and "Ireland 2016 — counties
#: (synthetic)" was cut to "…(synthet…" in the sidebar at 1,280–1,400 px (issue 30). The full
#: title (an upload's file name too) is the caption under the picker. Others show their title.
PICKER_LABELS = {"ireland_county": "Ireland counties", "ireland_ed": "Ireland EDs",
                 "toy_town": "Toy town", national.KEY: "United States tracts",
                 state.UPLOADED: "Your upload"}


def _remember_choice() -> None:
    data.select(st.session_state[state.DATASET_PICKER])


def dataset_picker() -> data.Current:
    """Choose among the bundled datasets and this session's upload; returns the current dataset.

    The picker mirrors :data:`ui.components.state.CURRENT_DATASET` (which other pages set too, e.g. "Use this
    dataset" on the Data page), so it is re-synchronised before it is drawn.
    """
    current = data.current()
    options = data.choices()
    viewstate.restore(state.DATASET_PICKER, current.key)
    chosen = st.selectbox("Dataset", list(options), format_func=picker_label,
                          key=state.DATASET_PICKER, on_change=_remember_choice)
    st.caption(safe.markdown(options[chosen]))
    return current


def picker_label(key: str) -> str:
    """The dataset picker's one-line label for ``key`` (:data:`PICKER_LABELS`)."""
    return PICKER_LABELS.get(key) or data.choices()[key]


def provenance(current: data.Current) -> None:
    """Say where the data comes from: synthetic bundled data is labelled as such, prominently.

    Source and description are the app's own text (never the uploaded file's), so not escaped.
    """
    if current.synthetic:
        st.info(f"**{current.source}.** {current.description}", icon=":material/science:")
    else:
        st.caption(current.description)


def figures(matrix: ODMatrix) -> None:
    """The headline figures of a dataset, including its re-identification exposure."""
    summary = matrix.summary()
    row = st.columns(4)
    row[0].metric("Commuters (n)", f"{summary['n']:,}", help="People in the data: one count each.")
    row[1].metric("Origins", f"{summary['origins']:,}", help="Zones people live in.")
    row[2].metric("Destinations", f"{summary['destinations']:,}",
                  help="Zones people work or study in, including special ones such as "
                       "'Work/school from home'.")
    row[3].metric("Domain |X|", f"{summary['domain_size']:,}",
                  help="Every origin × destination pair, including those nobody commutes along.")
    row = st.columns(4)
    row[0].metric("Non-empty cells", f"{summary['nonzero']:,}")
    row[1].metric("Empty cells", f"{summary['sparsity']:.1%}",
                  help="Share of the domain |X| that nobody commutes along (its sparsity).")
    row[2].metric("Cells with count 1", f"{summary['cells_count_1']:,}")
    row[3].metric("Cells with count < 10", f"{summary['cells_under_10']:,}",
                  help="Non-empty cells with 1 to 9 commuters.")
    risk = ("publishing such a count tells anyone who knows where a person lives where that "
            "person works, the re-identification risk that differential privacy is meant to "
            "remove.")
    if summary["cells_under_10"]:
        st.markdown(f"**{summary['cells_count_1']:,}** origin–destination cells hold exactly one "
                    f"commuter and **{summary['cells_under_10']:,}** fewer than ten: {risk}")
    else:
        st.markdown(f"No origin–destination cell here holds fewer than ten commuters. Finer data "
                    f"has many, and {risk}")


def top_flows(matrix: ODMatrix, k: int = 10) -> None:
    """The k busiest commutes (zone names shown verbatim by the dataframe, never as Markdown)."""
    st.dataframe(matrix.top(k), hide_index=True, width="stretch",
                 column_config={"rank": "Rank", "commute": "Commute",
                                "count": st.column_config.NumberColumn("Commuters",
                                                                       format="localized")})


def notice(item) -> None:
    """One import notice as an error, warning or info box: what, where, and how to fix it."""
    body = f"**{safe.markdown(item.message)}**  \nWhere: {safe.markdown(item.location)}"
    if item.fix:
        body += f"  \nHow to fix: {safe.markdown(item.fix)}"
    _ALERTS[item.level](body)


def _page_summary(path: Path, title: str) -> str:
    """The first paragraph of a page's module docstring, so each page describes itself, without
    the page's own name in front ("Tradeoffs: how error falls…" → "How error falls…"): the link
    above it already says it."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    summary = " ".join(doc.strip().split("\n\n")[0].split())
    head, colon, rest = summary.partition(": ")
    if colon and head.lower().startswith(title.lower()):
        summary = rest[:1].upper() + rest[1:]
    return summary


def page_links(query: dict | None = None) -> None:
    """A link to every page but the home page, with the page's own one-line description; like
    the menu's, each carries ``query``, the settings every page shares."""
    for info in navigation.PAGES:
        if info is navigation.HOME:
            continue
        st.page_link(info.path, label=info.title, query_params=query or None)
        summary = _page_summary(ROOT / info.path, info.title)
        if summary:
            st.caption(summary)
