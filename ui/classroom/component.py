"""The student's phone as a Streamlit v2 component: the randomisation runs in the browser.

The JavaScript is ours and fixed (``ui/classroom/js``: one reviewed randomiser per mechanism, then
the page around it); nothing from users, URLs or the database is ever put into it. The round's
numbers and the (untrusted) zone names travel as the component's ``data`` and are shown as text.
The component hands back only the report (trigger ``report``) or, when the student chooses, the
true cell (trigger ``reveal``).

Streamlit parses what the browser sends with ``json.loads`` before any of our code runs, and
Python's parser recurses once per level: a forged message nested 100,000 deep raised
RecursionError there, a traceback shown to its sender. :class:`_BoundedJson` stands in for the
``json`` module of Streamlit's component deserialisation: a message deeper than
:data:`dpcore.interfaces.classroom.MAX_MESSAGE_DEPTH` is not parsed but becomes a ``refused``
event (trigger ``refused``, never sent by our JavaScript) carrying the sentence to show.
"""

import json
from pathlib import Path

import streamlit as st
from streamlit.components.v2.bidi_component import serialization

from dpcore.interfaces import classroom

JS_FOLDER = Path(__file__).with_name("js")
#: The randomisers, then the component that uses them (one module, so no script loading).
RANDOMISERS_JS = (JS_FOLDER / "randomisers.js").read_text(encoding="utf-8")
STUDENT_JS = RANDOMISERS_JS + "\n" + (JS_FOLDER / "student.js").read_text(encoding="utf-8")

CSS = """
.dp-student { display: flex; flex-direction: column; gap: 0.6rem; max-width: 32rem;
              font-family: var(--st-font, sans-serif); color: var(--st-text-color); }
.dp-field { display: flex; flex-direction: column; gap: 0.2rem; font-weight: 600; }
.dp-field select { font-size: 1rem; padding: 0.5rem; width: 100%; }
.dp-student button { font-size: 1rem; padding: 0.7rem; border-radius: 0.5rem; cursor: pointer;
                     border: 1px solid var(--st-border-color, #ccc); }
.dp-primary { background: var(--st-primary-color, #ff4b4b); color: white; }
.dp-student button:disabled { opacity: 0.5; cursor: default; }
.dp-reveal { background: #fff4e5; color: #7a4b00; }
.dp-sent { white-space: pre-wrap; word-break: break-all; padding: 0.5rem; margin: 0;
           background: var(--st-secondary-background-color, #f0f2f6); border-radius: 0.3rem; }
.dp-steps { margin: 0; padding-left: 1.2rem; }
.dp-status { font-weight: 600; margin: 0; }
"""

#: The event a message too deep to parse becomes (its value: the sentence for the sender).
REFUSED = "refused"


class _BoundedJson:
    """The ``json`` module with a ``loads`` that refuses to parse deeply nested text."""

    def loads(self, text, *args, **kwargs):
        try:
            classroom.check_message(text)
        except classroom.ReportRejected as refusal:
            return [{"event": REFUSED, "value": str(refusal)}]
        return json.loads(text, *args, **kwargs)

    def __getattr__(self, name):  # dumps, JSONDecodeError, … as they are
        return getattr(json, name)


serialization.json = _BoundedJson()
_phone = st.components.v2.component("classroom_phone", css=CSS, js=STUDENT_JS)


def phone(data: dict, key: str, on_report, on_reveal, on_refused):
    """Mount the phone; ``on_report``/``on_reveal`` run (as callbacks) when the student sends,
    ``on_refused`` when a message was too deep to parse.

    Their payloads are read from ``st.session_state[key]`` inside the callbacks.
    """
    return _phone(data=data, key=key, on_report_change=on_report, on_reveal_change=on_reveal,
                  on_refused_change=on_refused)
