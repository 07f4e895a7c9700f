"""View state kept across pages and in the page URL: the one way every page does it.

A value the user chose lives under a plain session-state key (Streamlit deletes a *widget's* state
when a page does not draw it), and may be mirrored in ``st.query_params`` so that a link
reproduces the view: a session that opens such a link starts from it. A value in a link that is
not valid is not used, never an error: a one-line notice names the parameter, the value, what
would be valid and what is used instead (:func:`ignored`).

* :func:`kept` — a widget whose value survives page changes and, with ``url=``, lives in the URL;
* :func:`read` / :func:`write` — the URL itself, for settings drawn by several widgets (the run
  controls of :mod:`ui.components.controls`); :func:`parsed` reads one such value and reports a bad one.
"""

from __future__ import annotations

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from dpcore.text import plain_number
from ui.components import safe

#: Characters of a link's value quoted back in a notice (a link can carry anything, at any length).
QUOTED = 40
#: Options listed by name in a notice; longer lists are cut with their count.
LISTED = 8
#: Session key: widget key → the page (script hash) that last drew it (:func:`restore`).
DRAWN_ON = "viewstate_drawn_on"
#: Session key: widget key → how many times :func:`synced` has given it a value from the server.
GENERATIONS = "viewstate_generations"


def number_text(value: float) -> str:
    """A number as short URL text that reads back as the same float ("1", "0.25", "1e-06")."""
    short = f"{value:g}"
    return short if float(short) == value else repr(float(value))


def read(name: str) -> list[str]:
    """Every value of URL parameter ``name`` (empty when absent)."""
    return st.query_params.get_all(name)


def write(name: str, value: str | list[str]) -> None:
    """Set URL parameter ``name`` (a list: repeated), only when it changes (no needless update)."""
    current = read(name) if isinstance(value, list) else st.query_params.get(name)
    if current != value:
        st.query_params[name] = value


def ignored(name: str, text: str, valid: str, used: str) -> None:
    """One line saying that the link's ``name=text`` was not used: what would be valid and what
    is used instead. The link's text is untrusted: cut short and shown as literal text."""
    quoted = text if len(text) <= QUOTED else text[:QUOTED - 1] + "…"
    st.warning(f"The link's value {safe.markdown(name)}={safe.markdown(quoted)} is not valid "
               f"(valid: {safe.markdown(valid)}); using {safe.markdown(used)} instead.")


def parsed(name: str, parse, valid: str, used: str):
    """URL parameter ``name`` read by ``parse`` (which raises ValueError, TypeError or KeyError
    for a bad value); None when it is absent or bad, and a bad one is reported (:func:`ignored`)."""
    values = read(name)
    if not values:
        return None
    try:
        return parse(values[-1])
    except (ValueError, TypeError, KeyError, OverflowError):
        ignored(name, values[-1], valid, used)
        return None


def one_of(choices):
    """A :func:`parsed` parser that accepts exactly one of ``choices``."""
    def parse(text: str):
        if text not in choices:
            raise ValueError(text)
        return text
    return parse


def listed(options) -> str:
    """``options`` as text for a notice: every one, or the first few and how many there are."""
    names = [str(o) for o in options]
    return ", ".join(names) if len(names) <= LISTED else \
        ", ".join(names[:LISTED]) + f", … ({len(names)} in all)"


def _valid(default, kwargs: dict) -> str:
    """What a kept widget accepts, in words (for :func:`ignored`)."""
    if kwargs.get("options") is not None:
        return "one of " + listed(kwargs["options"])
    low, high = kwargs.get("min_value"), kwargs.get("max_value")
    if isinstance(default, bool):
        return "true or false"
    kind = "a whole number" if isinstance(default, int) else "a number"
    if low is not None and high is not None:
        return f"{kind} from {_to_text(low)} to {_to_text(high)}"
    if low is not None:
        return f"{kind} of at least {_to_text(low)}"
    return kind + (f" of at most {_to_text(high)}" if high is not None else "")


def _from_text(text: list[str], default, kwargs: dict):
    """A kept widget's value from its URL text, or None when it is not a valid value for it."""
    try:
        if isinstance(default, (list, tuple)):
            value = [_typed(type(default[0]), t) if default else t for t in text]
        elif isinstance(default, bool):
            value = {"true": True, "false": False}[text[-1].lower()]
        else:
            value = _typed(type(default), text[-1])
    except (ValueError, KeyError, IndexError, TypeError):
        return None
    options = kwargs.get("options")
    if options is not None and not all(v in options for v in
                                       (value if isinstance(value, list) else [value])):
        return None
    low, high = kwargs.get("min_value"), kwargs.get("max_value")
    if (low is not None and value < low) or (high is not None and value > high):
        return None
    return value


def _typed(kind: type, text: str):
    """URL text as a value of ``kind``: numbers only written the plain way ("1_0" is not 10)."""
    if kind in (int, float):
        return plain_number(text, whole=kind is int)
    return kind(text)


def _to_text(value) -> str | list[str]:
    """A kept widget's value as URL text (lists as repeated parameters)."""
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value]
    if isinstance(value, bool):
        return str(value).lower()
    return number_text(value) if isinstance(value, float) else str(value)


def _page() -> str:
    """The page this run draws (its script hash; "" outside a script run)."""
    context = get_script_run_ctx()
    return context.page_script_hash if context is not None else ""


def restore(widget_key: str, value) -> None:
    """Give a widget ``value`` before it is drawn: when this page has not drawn it yet (the
    first draw, or a page change), when its state was deleted, or when another control changed
    the setting — and only then.

    Streamlit gives a widget a new identity on every page (its element id includes the page), but
    until the widget is drawn there, ``st.session_state[widget_key]`` still reads the value of its
    twin on the page the user came from. Skipping the assignment because that value was already
    right left the new page's widget at its own default — the multiselect empty, ε at the
    slider's first step, 1e-06 (issue 42, on every menu click between two pages that draw the
    same control). So a widget is always given its value on the first draw on a page
    (:data:`DRAWN_ON` records the page each widget key was last drawn on).

    Assigning a widget's key on *every* rerun is wrong too: Streamlit sends the value to the
    browser as a new one (``set_value``), replacing the widget's state there, and that reset the
    multiselect while the user was still removing options (issue 24: after one ×, further ×
    clicks did nothing until the page was clicked elsewhere).
    """
    page = _page()
    drawn_on = st.session_state.setdefault(DRAWN_ON, {})
    moved = drawn_on.get(widget_key) != page
    drawn_on[widget_key] = page
    if moved or widget_key not in st.session_state or st.session_state[widget_key] != value:
        st.session_state[widget_key] = value


def current_key(state, widget_key: str) -> str:
    """The key a :func:`synced` widget is drawn under now (``state``: a session state)."""
    generation = state[GENERATIONS].get(widget_key, 0) if GENERATIONS in state else 0
    return widget_key if generation == 0 else f"{widget_key}@{generation}"


def synced(widget_key: str, value) -> str:
    """The key to draw a widget under when another control mirrors it (the ε slider and the ε
    box): a fresh key holding ``value`` whenever the server must change what the browser shows
    — the first draw on a page, state deleted, or the other control moved the value.

    :func:`restore` reassigns the same key, and that races with a user who keeps pressing keys:
    the browser asks for the next rerun before the server's new value of the *mirror* has
    reached it, reports the mirror's stale value, Streamlit sees a change and the mirror's
    callback set ε back (arrow-key presses on the ε slider were lost: the slider snapped back to
    1 while the box showed 1.5). A stale value under an old key equals that key's own last
    value, so it changes nothing; the old widget is simply no longer drawn.
    """
    page = _page()
    drawn_on = st.session_state.setdefault(DRAWN_ON, {})
    key = current_key(st.session_state, widget_key)
    moved = drawn_on.get(widget_key) != page
    drawn_on[widget_key] = page
    if moved or key not in st.session_state or st.session_state[key] != value:
        generations = st.session_state.setdefault(GENERATIONS, {})
        generations[widget_key] = generations.get(widget_key, 0) + 1
        key = current_key(st.session_state, widget_key)
        st.session_state[key] = value
    return key


def kept(widget, label: str, key: str, default, *, url: str | None = None,
         valid: str | None = None, **kwargs):
    """Draw ``widget`` (e.g. ``st.slider``) so that its value survives page changes.

    The value lives under ``kept_<key>`` in the session; the widget itself under
    ``kept_widget_<key>``. Pass every argument except ``value``/``index``/``key``/``on_change``.
    With ``url``, the value is also mirrored in the page URL under that name, and a session that
    opens such a link starts from it (an invalid value is reported and the default used), so a
    shared link reproduces the view. ``valid`` words what is valid in that report when the
    options themselves would not say it (ids, thousands of them).
    """
    value_key, widget_key = f"kept_{key}", f"kept_widget_{key}"
    kept_value(key, default, url=url, valid=valid, **kwargs)
    options = kwargs.get("options")
    if options is not None:  # options can change with the data: keep only what still exists
        value = st.session_state[value_key]
        if isinstance(value, list):
            st.session_state[value_key] = [v for v in value if v in options]
        elif value not in options:
            st.session_state[value_key] = default if default in options else options[0]
    restore(widget_key, st.session_state[value_key])

    def store():
        st.session_state[value_key] = st.session_state[widget_key]
    result = widget(label, key=widget_key, on_change=store, **kwargs)
    if url is not None:
        write(url, _to_text(result))
    return result


def kept_value(key: str, default, *, url: str | None = None, valid: str | None = None,
               **kwargs):
    """The value a :func:`kept` widget of ``key`` holds, before it is drawn: the session's, else
    the link's (when valid for ``kwargs``; a bad one is reported), else ``default``. A control
    drawn above it can then follow it (the Learn page's part follows its lesson)."""
    value_key = f"kept_{key}"
    if url is not None and value_key not in st.session_state and read(url):
        linked = _from_text(read(url), default, kwargs)
        if linked is not None:
            st.session_state[value_key] = linked
        else:
            shown = _to_text(default)
            used = ", ".join(shown) if isinstance(shown, list) else shown
            if not used and "format_func" in kwargs:   # "" means something: say what
                used = f"empty ({kwargs['format_func'](default)})"
            ignored(url, ", ".join(read(url)), valid or _valid(default, kwargs), used)
    return st.session_state.setdefault(value_key, default)
