"""The shared run controls: what to release and how, kept across pages and mirrored in the URL.

Every page first calls :func:`keep` (its result goes to the menu's links); a page that runs
mechanisms (Explore, Tradeoffs, Flow map, Plan & publish) then draws the controls once and gets
back a frozen :class:`RunSettings`::

    from ui.components import controls, navigation, runs

    navigation.menu(controls.keep())
    settings = controls.run_controls()              # sidebar; several mechanisms
    settings = controls.run_controls(multi=False)   # one mechanism (the first of the selection)
    matrix = runs.view(settings)                    # the chosen level/subset of the dataset
    result = runs.release_of(settings, settings.mechanisms[0])   # see ui.components.runs

One state shared by every page (issue 42): each value lives under a plain session-state key of
:data:`KEYS` (Streamlit deletes a *widget's* state when a page does not draw it, and gives a
widget a new identity on every page, so widgets have their own keys, copy into the plain ones
through callbacks and are given their value again on each page by
:func:`ui.components.viewstate.restore`). Every page writes them to ``st.query_params`` — pages
without run controls too — and the first page a session opens reads them from its URL, so a view
can be shared by its link. An invalid URL value is not used (the default is kept), never an
error, and a one-line notice says so (:func:`ui.components.viewstate.parsed`).

Only the dataset itself belongs to :mod:`ui.components.state` (``CURRENT_DATASET``, shared with the home
page); everything else is defined here, in :data:`KEYS`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import streamlit as st

from dpcore import mechanisms
from dpcore.data import views
from dpcore.data.views import LEVEL_AS_LOADED, LEVEL_PARENT
from dpcore.limits import SEED
from dpcore.mechanisms import BASELINE, CENTRAL, SUBSTITUTION, postprocess, sparse_release
from dpcore.mechanisms.base import DELTA, DELTA_MEANING, EPSILON, NEIGHBOURS
from dpcore.release import SHARED_PARAMS, RunSettings
from dpcore.text import plain_number
from ui.components import access, data, state, viewstate, widgets

#: ε steps of the slider: log-spaced over the whole declared range (mechanisms.base.EPSILON,
#: 1e-6 to 20), finer from 0.1 to 10, with every point of the thesis grid 0.5, 1, …, 5. Any other ε
#: in the range can be typed; the slider then shows the nearest step, so the two always agree.
EPSILON_STEPS = (EPSILON.low, 1e-5, 1e-4, 1e-3, 0.01, 0.02, 0.05, 0.1, 0.12, 0.15, 0.2, 0.25, 0.3,
                 0.4, 0.5, 0.6, 0.7, 0.8, 1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0,
                 7.0, 8.0, 10.0, 12.0, 15.0, EPSILON.high)
DEFAULT_MECHANISMS = ("laplace", "stability_histogram", "grr", "oue", "olh", "hm")
DEFAULT_POSTPROCESS = "base_pos"  # the thesis's "Base-Pro"


@dataclass(frozen=True)
class _Key:
    """One setting: its session-state key, its widget key(s) and its URL parameter."""

    value: str
    widget: str
    url: str


#: Every setting's keys, in one place.
KEYS = {name: _Key(f"run_{name}", f"run_widget_{name}", url) for name, url in (
    ("level", "level"), ("areas", "areas"), ("mechanisms", "mech"), ("epsilon", "eps"),
    ("delta", "delta"), ("neighbours", "nb"), ("options", "opt"), ("postprocess", "pp"),
    ("seed", "seed"))}
EPSILON_TYPED = "run_widget_epsilon_typed"
NEW_DRAW = "run_widget_new_draw"
#: Set once a session has read its settings from the URL (only the first page it opens does).
FROM_URL_DONE = "run_from_url_done"
DATASET_URL = "dataset"


def option_widget(mechanism: str, name: str) -> str:
    """Widget key of a mechanism-specific parameter."""
    return f"run_widget_opt_{mechanism}_{name}"


# ------------------------------------------------------------------------------ parsing values
def _defaults() -> dict:
    return {"level": LEVEL_AS_LOADED, "areas": (), "mechanisms": DEFAULT_MECHANISMS,
            "epsilon": 1.0, "delta": 1e-6, "neighbours": SUBSTITUTION, "options": {},
            "postprocess": DEFAULT_POSTPROCESS, "seed": 0}


#: Each setting's name in a sentence.
LABELS = {"level": "level", "areas": "areas", "mechanisms": "mechanisms", "epsilon": "ε",
          "delta": "δ", "neighbours": "neighbouring datasets",
          "options": "mechanism parameters", "postprocess": "post-processing", "seed": "seed"}


def _as_text(value) -> str:
    """A setting's value in a sentence: 1e-06, "laplace, grr", "none", "each one's default"."""
    if isinstance(value, float):
        return viewstate.number_text(value)
    if isinstance(value, (tuple, list)):
        return ", ".join(value) or "none"
    return "each one's default" if isinstance(value, dict) else str(value)


def _param(key: str, name: str):
    return next(p for p in mechanisms.get(key).params if p.name == name)


def _parse_param(key: str, name: str, text: str):
    """A mechanism parameter from its URL text, validated by its declaration (ValueError if bad)."""
    param = _param(key, name)
    if param.choices is not None:
        matches = [c for c in param.choices if str(c) == text]
        if not matches:
            raise ValueError(text)
        return matches[0]
    return param.check(plain_number(text, whole=param.kind is int), key)


def _from_url() -> dict:
    """Settings found in the URL; a value that is not valid is left out (the default is kept) and
    reported (:func:`ui.components.viewstate.parsed`)."""
    defaults = _defaults()

    def parsed(name: str, parse, valid: str):
        return viewstate.parsed(KEYS[name].url, parse, valid, _as_text(defaults[name]))

    found = {
        "level": parsed("level", viewstate.one_of(views.LEVELS),
                        "one of " + viewstate.listed(views.LEVELS)),
        "epsilon": parsed("epsilon", lambda t: EPSILON.check(plain_number(t), "the URL"),
                          f"ε in {EPSILON.interval()}"),
        "delta": parsed("delta", lambda t: DELTA.check(plain_number(t), "the URL"),
                        f"δ in {DELTA.interval()}"),
        "seed": parsed("seed", lambda t: SEED.check(plain_number(t, whole=True), "the URL"),
                       f"a whole number in {SEED.interval()}"),
        "neighbours": parsed("neighbours", viewstate.one_of(NEIGHBOURS.choices),
                             "one of " + viewstate.listed(NEIGHBOURS.choices)),
        "postprocess": parsed("postprocess", viewstate.one_of(postprocess.METHODS),
                              "one of " + viewstate.listed(postprocess.METHODS))}
    if viewstate.read(KEYS["areas"].url):
        found["areas"] = tuple(a for a in viewstate.read(KEYS["areas"].url) if a)
    # Repeated (mech=laplace&mech=oue), as the page writes it, or comma-separated, as people type it.
    linked = [key.strip() for value in viewstate.read(KEYS["mechanisms"].url)
              for key in value.split(",") if key.strip()]
    keys = tuple(k for k in linked if k in mechanisms.names())
    if keys:
        found["mechanisms"] = keys
    unknown = [k for k in linked if k not in mechanisms.names()]
    if unknown:
        viewstate.ignored(KEYS["mechanisms"].url, ", ".join(unknown),
                          "mechanism keys: " + ", ".join(mechanisms.names()),
                          ", ".join(keys or defaults["mechanisms"]))
    options: dict = {}
    for item in viewstate.read(KEYS["options"].url):  # "hm.t=4"
        try:
            target, text = item.split("=", 1)
            key, name = target.split(".", 1)
            if name not in SHARED_PARAMS:
                options.setdefault(key, {})[name] = _parse_param(key, name, text)
        except (ValueError, KeyError, StopIteration, TypeError):
            _ignored_option(item)
    if options:
        found["options"] = options
    return {name: value for name, value in found.items() if value is not None}


def _ignored_option(item: str) -> None:
    """Report a link's mechanism option ``key.name=value`` that cannot be used."""
    target = item.split("=", 1)[0]
    key, _, name = target.partition(".")
    try:
        param = _param(key, name)
    except (KeyError, StopIteration):
        viewstate.ignored(KEYS["options"].url, item, "mechanism.parameter=value, e.g. hm.t=4",
                          "the default of each parameter")
        return
    valid = (f"one of {viewstate.listed(param.choices)}" if param.choices is not None
             else f"in {param.interval()}")
    viewstate.ignored(KEYS["options"].url, item, f"{target} {valid}", f"{target}={param.default}")


def own_options(keys, stored: dict) -> dict:
    """Each mechanism's own parameters (not ε, δ, neighbours): the value the user set, else the
    declared default — what the pages draw and what the URL carries."""
    return {key: {p.name: stored.get(key, {}).get(p.name, p.default)
                  for p in mechanisms.get(key).params if p.name not in SHARED_PARAMS}
            for key in keys}


def shared_query() -> dict[str, str | list[str]]:
    """The settings every page shares, as URL parameters: what the menu's links carry and every
    page's URL holds, so a link — even one opened from a page that draws no run controls, or
    from the Flow map, which uses only the first mechanism — reproduces all of them."""
    init()
    value = {name: st.session_state[KEYS[name].value] for name in KEYS}
    chosen = [k for k in value["mechanisms"] if k in mechanisms.names()]
    options = [f"{key}.{name}={text}" for key, own in own_options(chosen, value["options"]).items()
               for name, text in own.items()]
    return {DATASET_URL: st.session_state[state.CURRENT_DATASET],
            KEYS["level"].url: value["level"], KEYS["areas"].url: list(value["areas"]),
            KEYS["mechanisms"].url: chosen,
            KEYS["epsilon"].url: viewstate.number_text(value["epsilon"]),
            KEYS["delta"].url: viewstate.number_text(value["delta"]),
            KEYS["neighbours"].url: value["neighbours"], KEYS["options"].url: options,
            KEYS["postprocess"].url: value["postprocess"], KEYS["seed"].url: str(value["seed"])}


def keep() -> dict[str, str | list[str]]:
    """On every page, first: the shared settings (from this session, or from the URL on the
    session's first page) written into the page's URL, also where no run controls are drawn.
    Returns them as URL parameters, for the menu's links (:func:`ui.components.navigation.menu`)."""
    query = shared_query()
    for name, value in query.items():
        viewstate.write(name, value)
    return query


def init() -> None:
    """Give every setting its value: the session's, else the URL's (first page), else default."""
    state.init()
    first = FROM_URL_DONE not in st.session_state
    from_url = _from_url() if first else {}
    if first:
        st.session_state[FROM_URL_DONE] = True
        bundled = [key for key in data.choices() if key != state.UPLOADED]
        dataset = viewstate.parsed(DATASET_URL, viewstate.one_of(bundled),
                                   "a bundled dataset: " + viewstate.listed(bundled),
                                   st.session_state[state.CURRENT_DATASET])
        if dataset is not None:
            data.select(dataset)
    for name, value in _defaults().items():
        if not first and KEYS[name].value not in st.session_state:
            st.caption(f"The run setting “{LABELS[name]}” was missing from this session; using "
                       f"its default ({_as_text(value)}).")
        st.session_state.setdefault(KEYS[name].value, from_url.get(name, value))


# ------------------------------------------------------------------------------------- widgets
def _store(name: str) -> None:
    """Callback: copy a widget's new value into its persistent key."""
    st.session_state[KEYS[name].value] = st.session_state[KEYS[name].widget]


def _store_epsilon(widget_key: str, key: str) -> None:
    """Callback of the ε slider or box, drawn under :func:`viewstate.synced` keys: the next run
    gives the other one the new value. A callback of a key that is no longer current is a stale
    report of a widget already replaced (the browser's value from before the server's), so it
    is ignored: it once set ε back to 1 while the user pressed the slider's arrow keys."""
    if key == viewstate.current_key(st.session_state, widget_key):
        st.session_state[KEYS["epsilon"].value] = st.session_state[key]


def _store_single_mechanism() -> None:
    chosen = st.session_state[KEYS["mechanisms"].widget + "_single"]
    rest = [k for k in st.session_state[KEYS["mechanisms"].value] if k != chosen]
    st.session_state[KEYS["mechanisms"].value] = (chosen, *rest)


def _store_option(mechanism: str, name: str) -> None:
    options = {k: dict(v) for k, v in st.session_state[KEYS["options"].value].items()}
    options.setdefault(mechanism, {})[name] = st.session_state[option_widget(mechanism, name)]
    st.session_state[KEYS["options"].value] = options


def _new_draw() -> None:
    seed = st.session_state[KEYS["seed"].value] + 1
    st.session_state[KEYS["seed"].value] = seed
    st.session_state[KEYS["seed"].widget] = seed


def nearest_step(epsilon: float) -> float:
    """The slider step closest to ``epsilon`` on the log scale."""
    return min(EPSILON_STEPS, key=lambda step: abs(math.log(step) - math.log(epsilon)))


def _restore(name: str, value=None) -> None:
    """Put the persistent value back into the widget before drawing it (after a page change)."""
    keys = KEYS[name]
    viewstate.restore(keys.widget, st.session_state[keys.value] if value is None else value)


def mechanism_label(key: str) -> str:
    """``Laplace · central`` — the name every picker and legend uses."""
    cls = mechanisms.get(key)
    return f"{cls.name} · {cls.model}"


def _level_and_areas(current: data.Current) -> tuple[str, tuple[str, ...]]:
    matrix = current.matrix
    level = st.session_state[KEYS["level"].value]
    if matrix.has_parent_level:
        _restore("level")
        level = st.radio("Level", [LEVEL_AS_LOADED, LEVEL_PARENT], key=KEYS["level"].widget,
                         on_change=_store, args=("level",), horizontal=True,
                         format_func={LEVEL_AS_LOADED: "Zones as loaded",
                                      LEVEL_PARENT: "Rolled up to parent zones"}.__getitem__,
                         help="Rolled up: the counts summed to the coarser level (e.g. ED → "
                              "county), a much smaller domain.")
    else:
        level = LEVEL_AS_LOADED
    areas = views.areas(matrix, rolled_up=level == LEVEL_PARENT)
    chosen = tuple(a for a in st.session_state[KEYS["areas"].value] if a in areas)
    st.session_state[KEYS["areas"].value] = chosen
    _restore("areas", list(chosen))
    chosen = tuple(st.multiselect(
        "Only these areas (empty: everything)", list(areas), key=KEYS["areas"].widget,
        on_change=_store, args=("areas",), format_func=areas.__getitem__,
        help="Keep only commutes that start and end in the chosen areas (e.g. the EDs of Dublin "
             "City, or of Cavan and Leitrim, as in thesis figure 5.17)."))
    return level, chosen


#: Reports from which a mechanism that places reports one by one on a huge domain
#: (:data:`dpcore.mechanisms.sparse_release.PER_REPORT`) is left out of the default mechanisms.
PER_REPORT_DEFAULT_LIMIT = 10_000_000


def _huge_defaults(stored: tuple[str, ...], od) -> tuple[str, ...]:
    """On a huge domain, the untouched defaults less the mechanisms that have no sparse release
    there (:data:`dpcore.mechanisms.sparse_release.UNSUPPORTED`) or whose sparse release places
    every report (``PER_REPORT``, above :data:`PER_REPORT_DEFAULT_LIMIT` commuters), each said
    in one line. Only shown, not stored: the county data gets the full defaults back, and a
    user's own pick is kept."""
    if stored != DEFAULT_MECHANISMS:
        return stored
    why = {key: f"{sparse_release.UNSUPPORTED[key]}, which a domain this large cannot hold. "
                "Pick it on the rolled-up level or a smaller area."
           for key in stored if key in sparse_release.UNSUPPORTED}
    if od.n > PER_REPORT_DEFAULT_LIMIT:
        why |= {key: f"{sparse_release.PER_REPORT[key]}: {od.n:,} commuters here, tens of "
                     "seconds for each release. Pick it to run it anyway."
                for key in stored if key in sparse_release.PER_REPORT}
    for key, reason in why.items():
        st.caption(f"**{mechanisms.get(key).name}** is left out of the default mechanisms on "
                   f"this dataset: {reason}")
    return tuple(k for k in stored if k not in why)


def _mechanism_picker(multi: bool, huge=None) -> tuple[str, ...]:
    """``huge``: the matrix when it is too large for a dense vector (defaults adapted to it)."""
    # The differentially private mechanisms first, the baselines (not DP) last.
    keys = sorted(mechanisms.names(), key=lambda k: mechanisms.get(k).model == BASELINE)
    stored = tuple(k for k in st.session_state[KEYS["mechanisms"].value] if k in keys)
    st.session_state[KEYS["mechanisms"].value] = stored
    if huge is not None:
        stored = _huge_defaults(stored, huge)
    if multi:
        _restore("mechanisms", list(stored))
        # No built-in "Select all": it came first in the list and added all 20 mechanisms,
        # the four baselines that are not DP among them.
        chosen = st.multiselect("Mechanisms", keys, key=KEYS["mechanisms"].widget,
                                on_change=_store, args=("mechanisms",), format_func=mechanism_label,
                                select_all=False,
                                help="Central: a trusted curator adds noise to exact counts. "
                                     "Local: every commuter randomises their own answer.")
        return tuple(chosen)
    single = KEYS["mechanisms"].widget + "_single"
    viewstate.restore(single, stored[0] if stored else DEFAULT_MECHANISMS[0])
    return (st.selectbox("Mechanism", keys, key=single, on_change=_store_single_mechanism,
                         format_func=mechanism_label),)


def _approximation_notes(chosen: tuple[str, ...]) -> None:
    """Say which chosen mechanisms' fast releases are not exact in distribution, and how, what
    a guarantee does not promise (``caveat``), and which are baselines that ignore ε (not DP)."""
    for key in chosen:
        cls = mechanisms.get(key)
        if cls.approximation:
            st.caption(f"⚠ **{cls.name}: approximate fast release.** {cls.approximation}")
        if cls.caveat:
            st.caption(f"⚠ **{cls.name}: what its guarantee does not promise.** {cls.caveat}")
        if not cls.uses_epsilon:
            st.caption(f"⚠ **{cls.name}** is today's disclosure control, **not differentially "
                       "private**: the ε below does not affect it.")


def epsilon_inputs(label: str = "ε (privacy budget, log scale)") -> float:
    """The shared ε: a log-scale slider and a box for any value (the Learn page draws them too,
    so that one ε serves every page)."""
    init()
    value = st.session_state[KEYS["epsilon"].value]
    slider = viewstate.synced(KEYS["epsilon"].widget, nearest_step(value))
    st.select_slider(label, EPSILON_STEPS, key=slider, on_change=_store_epsilon,
                     args=(KEYS["epsilon"].widget, slider),
                     format_func=lambda v: f"{v:g}",
                     help="Natural-log privacy loss bound: smaller ε is more private and noisier.")
    typed = viewstate.synced(EPSILON_TYPED, value)
    st.number_input("ε, typed", min_value=float(EPSILON.low), max_value=float(EPSILON.high),
                    key=typed, on_change=_store_epsilon, args=(EPSILON_TYPED, typed), format="%.4g",
                    help=f"Any ε in {EPSILON.interval()}; the slider shows the nearest step.")
    return st.session_state[KEYS["epsilon"].value]


def _mechanism_options(chosen: tuple[str, ...]) -> dict:
    """Inputs for each chosen mechanism's own parameters, from their declarations."""
    options = {}
    for key, values in own_options(chosen, st.session_state[KEYS["options"].value]).items():
        if not values:
            continue
        st.caption(mechanisms.get(key).name)
        for param in (_param(key, name) for name in values):
            value = values[param.name]
            widget = option_widget(key, param.name)
            viewstate.restore(widget, value)
            common = dict(key=widget, on_change=_store_option, args=(key, param.name),
                          help=f"{param.help} Range: {param.interval()}.")
            if param.choices is not None:
                st.selectbox(param.label, list(param.choices), **common)
            else:
                step = 1 if param.kind is int else None
                st.number_input(param.label, min_value=param.low, max_value=param.high, step=step,
                                **common)
            options.setdefault(key, {})[param.name] = st.session_state[widget]
    return options


def run_controls(multi: bool = True, where=None) -> RunSettings:
    """Draw the controls (in the sidebar unless ``where`` is given) and return the settings.

    ``multi`` lets the user choose several mechanisms; with ``multi=False`` one is chosen and it
    becomes the first of the stored selection, so other pages keep the rest.
    """
    init()
    access.styles()
    access.skip_link()
    with where if where is not None else st.sidebar:
        st.header("Run settings")
        current = widgets.dataset_picker()
        level, areas = _level_and_areas(current)
        huge = (not current.matrix.fits_dense and level == LEVEL_AS_LOADED and not areas)
        chosen = _mechanism_picker(multi, huge=current.matrix if huge else None)
        _approximation_notes(chosen)
        access.epsilon_anchor()
        epsilon = epsilon_inputs()
        if any(mechanisms.get(k).uses_delta for k in chosen):
            _restore("delta")
            st.number_input("δ", min_value=DELTA.low, max_value=DELTA.high, format="%.2e",
                            key=KEYS["delta"].widget, on_change=_store, args=("delta",),
                            help=f"{DELTA_MEANING} Keep it well below "
                                 f"1/n = {1 / max(current.matrix.n, 1):.2e}.")
        if any(mechanisms.get(k).model == CENTRAL for k in chosen):
            _restore("neighbours")
            st.radio("Neighbouring datasets (central)", NEIGHBOURS.choices,
                     key=KEYS["neighbours"].widget, on_change=_store, args=("neighbours",),
                     format_func=lambda v: {"substitution": "Substitution (sensitivity 2)",
                                            "add_remove": "Add/remove (sensitivity 1)"}.get(v, v),
                     help=NEIGHBOURS.help)
        options = _mechanism_options(chosen)
        _restore("postprocess")
        st.selectbox("Post-processing", list(postprocess.METHODS), key=KEYS["postprocess"].widget,
                     on_change=_store, args=("postprocess",),
                     format_func=lambda k: postprocess.METHODS[k][0],
                     help="Applied to every released matrix; it never changes the privacy "
                          "guarantee.\n\n" + postprocess.definitions())
        seed_column, draw_column = st.columns(2, vertical_alignment="bottom")
        _restore("seed")
        seed_column.number_input("Seed", min_value=SEED.low, max_value=SEED.high, step=1,
                                 key=KEYS["seed"].widget,
                                 on_change=_store, args=("seed",),
                                 help="The same seed gives the same noise: share it to reproduce "
                                      "a draw.")
        draw_column.button("New draw", key=NEW_DRAW, on_click=_new_draw,
                           icon=":material/casino:", help="Next seed: a fresh random draw.")
    settings = RunSettings(
        dataset=current.key, level=level, areas=areas, mechanisms=chosen, epsilon=float(epsilon),
        delta=float(st.session_state[KEYS["delta"].value]),
        neighbours=st.session_state[KEYS["neighbours"].value],
        options=tuple(sorted((k, tuple(sorted(v.items()))) for k, v in options.items())),
        postprocess=st.session_state[KEYS["postprocess"].value],
        seed=int(st.session_state[KEYS["seed"].value]))
    keep()
    return settings
