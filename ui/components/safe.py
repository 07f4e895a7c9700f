"""Make untrusted text (zone names, file and column names, messages quoting them) inert.

Streamlit renders Markdown in ``st.markdown``, ``st.caption``, alerts and widget labels. A zone name
such as ``![x](http://tracker/)`` or ``:red[…]`` would otherwise become an image, a link or a
directive. ``st.dataframe``, ``st.text`` and ``st.code`` show text verbatim and need no Markdown
escaping, but a bidirectional override (U+202E) still reorders what follows it there: their
untrusted columns go through :func:`verbatim`.
"""

import re
import string

import pandas as pd

from dpcore.text import visible

_ESCAPE_PUNCTUATION = str.maketrans({char: "\\" + char for char in string.punctuation})
#: Where GitHub-flavoured Markdown turns bare text into a link ("http://", "www.", "a@b.org").
_AUTOLINK = re.compile(r"(?<=:)(?=//)|(?<=www)(?=\.)|(?<=@)", re.IGNORECASE)
_ZERO_WIDTH_SPACE = "\u200b"


def markdown(text) -> str:
    """``text`` as literal Markdown.

    Every ASCII punctuation character is backslash-escaped (CommonMark allows it before any of
    them), which defeats links, images, HTML, LaTeX (``$``) and Streamlit's ``:directive[…]``.
    Escaping does not stop GFM's bare-URL and e-mail autolinks, so an invisible zero-width space
    is put where they would start. Runs of whitespace, newlines included, become one space so the
    text cannot start a heading, list or code block. Control and bidirectional characters (U+202E,
    …) are written as escapes (:func:`dpcore.text.visible`): they cannot reorder the message.
    """
    text = _AUTOLINK.sub(_ZERO_WIDTH_SPACE, visible(" ".join(str(text).split())))
    return text.translate(_ESCAPE_PUNCTUATION)


def verbatim(frame: pd.DataFrame, *columns: str) -> pd.DataFrame:
    """A copy of ``frame`` for a verbatim table (``st.dataframe``) whose untrusted text
    ``columns`` show control and bidirectional characters as escapes (``\\u202e``)."""
    return frame.assign(**{column: frame[column].map(visible) for column in columns})
