"""Readable and reachable: no cut-off text in the run controls, and a skip link to ε.

* **Skip link.** Reaching ε by keyboard took 38 Tab presses (the page menu, the dataset, each
  mechanism chip…). :func:`skip_link` puts a link at the top of the main area, the first stop
  after Streamlit's own "Skip to main content", that jumps to :func:`epsilon_anchor` just above
  the ε slider; it is visible only while it has the keyboard focus (WCAG 2.4.1, bypass blocks).
* **No truncation.** Streamlit cuts multiselect chips ("Generalised rando…"), narrow button
  labels ("Ne…"), metric labels ("Released commutes inv…") and a checkbox's or toggle's label
  in a narrow column ("Rings: flows with…") with an ellipsis, and scrolls tab labels out of
  sight; :data:`CSS` lets them wrap instead, so every chip, button, metric, toggle and tab reads
  whole at 1,280–1,400 px. Long unspaced text in a wrapped table's cell breaks rather than
  spills. (A select's value is a one-line input that cannot wrap: the dataset picker has short
  labels, :data:`ui.components.widgets.PICKER_LABELS`.)
* **Contrast.** Inline code in a caption is drawn in the text colour (see :data:`CSS`).
"""

from __future__ import annotations

import streamlit as st

#: The element id the skip link jumps to.
EPSILON_ANCHOR = "run-settings-epsilon"
SKIP_TEXT = "Skip to the run settings (ε)"

CSS = """<style>
/* Chips of a multiselect wrap onto more lines instead of ending in "…". */
[data-testid="stMultiSelectTagsContainer"] [data-tag] { white-space: normal; height: auto; }
[data-testid="stMultiSelectTagsContainer"] [data-tag] > span { white-space: normal;
  overflow: visible; text-overflow: clip; overflow-wrap: anywhere; }
/* Button labels wrap instead of ending in "…". */
.stButton button div[data-testid="stMarkdownContainer"] p,
.stButton button div[data-testid="stMarkdownContainer"] { white-space: normal;
  overflow: visible; text-overflow: clip; }
/* Metric labels ("Released commutes invented") and tab labels wrap instead of ending in "…"
   or scrolling out of sight behind an arrow. */
[data-testid="stMetricLabel"] [data-testid="stMarkdownContainer"],
[data-testid="stMetricLabel"] [data-testid="stMarkdownContainer"] p { white-space: normal;
  overflow: visible; text-overflow: clip; }
[data-testid="stTabs"] [role="tablist"] { flex-wrap: wrap; }
/* A checkbox's or toggle's label in a narrow column ("Rings: flows with…" at 1,280 px) wraps. */
[data-testid="stCheckbox"] [data-testid="stWidgetLabel"] div,
[data-testid="stCheckbox"] [data-testid="stWidgetLabel"] span,
[data-testid="stCheckbox"] [data-testid="stWidgetLabel"] [data-testid="stMarkdownContainer"],
[data-testid="stCheckbox"] [data-testid="stWidgetLabel"] p { white-space: normal;
  overflow: visible; text-overflow: clip; }
/* Cells of a wrapped table (charts.wrapped_table) break long unspaced text (a manifest id)
   rather than spill out of their column. */
[data-testid="stTable"] td, [data-testid="stTable"] th { overflow-wrap: anywhere; }
/* Inline code in a caption: the caption's 60 % opacity made the theme's green code text
   3.0:1 on its background (axe's colour-contrast rule); the text colour keeps ≥ 4.5:1. */
[data-testid="stCaptionContainer"] code { color: #111111; }
/* The skip link: off-screen until it has the keyboard focus. */
a.dpcore-skip { position: absolute; left: -10000px; }
a.dpcore-skip:focus { position: static; left: auto; outline: 2px solid currentColor; }
</style>"""


def styles() -> None:
    """The stylesheet above, once per page run (it draws nothing)."""
    st.html(CSS)


def skip_link() -> None:
    """The skip link, where it is called (the top of the main area)."""
    st.html(f'<a class="dpcore-skip" href="#{EPSILON_ANCHOR}">{SKIP_TEXT}</a>')


def epsilon_anchor() -> None:
    """The skip link's target, just above the ε inputs (focusable, so Tab continues from it)."""
    st.html(f'<span id="{EPSILON_ANCHOR}" tabindex="-1"></span>')
