"""Make untrusted text (zone names, file and column names, messages quoting them) inert.

Streamlit renders Markdown in ``st.markdown``, ``st.caption``, alerts and widget labels. A zone name
such as ``![x](http://tracker/)`` or ``:red[…]`` would otherwise become an image, a link or a
directive. ``st.dataframe``, ``st.text`` and ``st.code`` show text verbatim and need no escaping.
"""

import string

_ESCAPE_PUNCTUATION = str.maketrans({char: "\\" + char for char in string.punctuation})


def markdown(text) -> str:
    """``text`` as literal Markdown: every ASCII punctuation character backslash-escaped.

    CommonMark allows a backslash before any ASCII punctuation, so escaping all of them (rather
    than a hand-picked list) also defeats links, HTML, LaTeX (``$``), autolinks and Streamlit's
    ``:directive[…]`` syntax. Runs of whitespace, newlines included, become one space so the text
    cannot start a heading, list or code block.
    """
    return " ".join(str(text).split()).translate(_ESCAPE_PUNCTUATION)
