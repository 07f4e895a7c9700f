"""The Learn page's six lessons, one function each, drawn on the current dataset.

Each lesson fits a projector screen: a few live numbers, one figure or table, a one-line reading
and its formula, with details in expanders. Computations come from :mod:`dpcore.theory.learn`,
:mod:`dpcore.theory.privacy_theory`, :mod:`dpcore.theory.amplification` and :mod:`dpcore.theory.accuracy`; zone names
are escaped (:func:`ui.components.safe.markdown`) wherever they become Markdown.

Heavier results (releases on the whole dataset) are cached like the other pages' (:mod:`ui.components.runs`):
across sessions for bundled data, in this session only for an upload.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import streamlit as st

from dpcore import mechanisms, seeding
from dpcore.data import views
from dpcore.data.od import ODMatrix
from dpcore.evaluation import heavy_hitters
from dpcore.mechanisms import LOCAL
from dpcore.mechanisms.local import HASH_PRIME
from dpcore.theory import (
    accuracy,
    amplification,
    learn,
    learn_heavy_hitters,
    privacy_theory,
)
from ui.components import charts, data, runs, safe, state
from ui.learn import figures, probabilistic_dp
from ui.components import heavy_hitters as hh
from ui.components.charts import NOTHING
from ui.components.viewstate import kept

LESSONS = {
    "why": "Why exact tables leak",
    "phone": "One commuter's phone",
    "epsilon": "What ε means",
    "budgets": "Groups and budgets",
    "models": "Central, local, shuffled",
    "choose": "Choosing a mechanism",
    "heavy": "Heavy hitters (PEM, TreeHist)",
}
#: Session key of the Learn page's own draw counter ("Send again", "Draw again").
DRAW = "learn_draw"
DELTAS = (1e-4, 1e-5, 1e-6, 1e-7, 1e-8)


def _draw() -> int:
    return st.session_state.get(DRAW, 0)


def _rng(*parts, draw: int | None = None) -> np.random.Generator:
    """The generator of one demonstration at the page's current draw (or at ``draw``), by the
    seeding rule of :mod:`dpcore.release`."""
    return seeding.generator(_draw() if draw is None else draw, "lesson",
                             *(str(part) for part in parts))


def _draw_again(label: str, key: str) -> None:
    """A button that draws fresh randomness for every demonstration on the page."""
    if st.button(label, key=key, icon=":material/casino:"):
        st.session_state[DRAW] = _draw() + 1


def _trust(matrix: ODMatrix, epsilon: float, delta: float, draw: int) -> pd.DataFrame:
    return learn.trust_models(matrix, epsilon, delta, _rng("trust", draw=draw))


@st.cache_data(max_entries=32, show_spinner="Releasing under the three trust models…")
def _bundled_trust(dataset: str, epsilon: float, delta: float, draw: int) -> pd.DataFrame:
    return _trust(data.bundled(dataset), epsilon, delta, draw)


def trust_table(current: data.Current, epsilon: float, delta: float) -> pd.DataFrame:
    """:func:`dpcore.theory.learn.trust_models` on the current dataset, cached for everyone (bundled
    data) or in this session only (an upload)."""
    if current.key == state.UPLOADED:
        return runs.session_memo("learn_trust", (epsilon, delta, _draw()),
                                 lambda: _trust(current.matrix, epsilon, delta, _draw()))
    return _bundled_trust(current.key, epsilon, delta, _draw())


def _times(factor: float) -> str:
    """A likelihood factor in words-friendly digits: 2.72×, 2,981×, 1.2 million×."""
    if factor < 100:
        return f"{factor:.3g}×"
    return f"{factor:,.0f}×" if factor < 1e6 else f"{factor / 1e6:,.3g} million×"


def _label(od: ODMatrix):
    """Cell index → its "Origin → Destination" name, escaped for Markdown."""
    return lambda cell: f"**{safe.markdown(od.cell_labels([cell])[0])}**"


# ----------------------------------------------------------------------------------- lesson 1
def why(current: data.Current, epsilon: float) -> None:
    """Re-identification exposure, the example cell and the differencing attack."""
    od = current.matrix
    found = learn.exposure(od)
    cols = st.columns(3)
    cols[0].metric("Commutes made by exactly 1 person", f"{found.cells_single:,}")
    cols[1].metric("Commutes made by fewer than 10", f"{found.cells_under_10:,}")
    cols[2].metric("People in those small cells", f"{found.people_under_10:,}",
                   help=f"{found.people_under_10 / max(found.n, 1):.3%} of all {found.n:,} "
                        "commuters: each shares their commute with at most 8 others.")
    if found.example is None:
        st.info("No cell of this dataset holds a single commuter: the attack below still works, "
                "on any cell, because it compares two releases.")
        cell = int(od.flat_index[np.argmax(od.counts)])
    else:
        cell = found.example
    origin, destination = divmod(cell, od.n_destinations)
    name_o = safe.markdown(od.origins.labels[origin])
    name_d = safe.markdown(od.destinations.labels[destination])
    if found.example is not None:
        st.markdown(
            f"An exact table says that **1** person commutes from **{name_o}** to **{name_d}**. "
            f"{found.origin_total:,} commuters live in {name_o} and {found.destination_total:,} "
            "work or study in " + name_d + ": a crowd at each end, yet the *combination* is "
            "unique (the thesis's example is Fermoy Urban → Clonakilty Urban).\n"
            "- Anyone who knows one fact about that person — a neighbour who works in "
            f"{name_d}, say — now knows that every other published figure about this cell "
            "(mode of travel, departure time, age band) is about that person alone.\n"
            "- Suppressing small cells does not help for long: totals and a second release can "
            "be subtracted, as below.")
    st.markdown(f"**A differencing attack.** The office publishes the commutes from **{name_o}** "
                f"in one month and again the next, after one newcomer moved to {name_o}. The "
                "attacker knows only that; subtracting the two tables finds the newcomer's "
                "destination.")
    attack = learn.differencing_attack(learn.origin_row(od, origin), destination, epsilon,
                                       _rng("attack", cell))
    names = od.destinations.labels
    left, right = st.columns(2)
    with left:
        st.markdown("**Exact tables**: the only change is")
        charts.wrapped_table(pd.DataFrame({"Destination": names[attack.exact_changed],
                                           "Month 2 − month 1": [1] * len(attack.exact_changed)}))
        st.markdown("The attacker is **100 %** sure.")
    with right:
        st.markdown(f"**Both months through the Laplace mechanism** (ε = {epsilon:g} each, "
                    f"noise scale {attack.scale:.3g}): the attacker's best guesses")
        top = attack.top(5)
        guesses = pd.DataFrame({"Destination": names[top],
                                "Month 2 − month 1 (noisy)": [
                                    f"{x:+.2f}" for x in attack.noisy_difference[top]],
                                "Attacker's belief": [f"{p:.1%}" for p in attack.posterior[top]],
                                "Truth": np.where(top == destination, "← the newcomer's", "")})
        charts.wrapped_table(guesses)
    st.markdown(
        f"The true destination ranks **{attack.true_rank:,}** of {attack.destinations:,} with a "
        f"belief of **{attack.true_posterior:.1%}** (it started at {attack.prior:.2%}). Whatever "
        f"the noise, the belief is capped at **{attack.bound:.1%}**, the Bayesian bound at 2ε: "
        "month 2 alone tells the destinations apart, and in it two cells differ between any two "
        f"guesses (the cap for one changed cell, {attack.one_cell_bound:.1%}, can be exceeded).")
    _draw_again("Draw the noise again", "learn_attack_again")
    baseline_attack(od, origin, destination)
    with st.expander("Why the belief is capped"):
        st.latex(r"\frac{P[\text{newcomer in } v \mid D]}{P[\text{newcomer in } w \mid D]}"
                 r"\le e^{2\varepsilon}\ \Rightarrow\ "
                 r"P[v \mid D] \le \frac{e^{2\varepsilon}}{e^{2\varepsilon} + |D| - 1}")
        st.markdown("Month 1 is the same whichever destination the newcomer chose, so it "
                    "cannot tell destinations apart. In month 2, the table if the newcomer works "
                    "in v and the table if they work in w differ in two cells, by one commuter "
                    "each: the ε-DP release (sensitivity 1 per cell) makes those two tables' "
                    "outcomes at most e^{2ε} times as likely as each other — group privacy of "
                    "two changes within one release, not the composition of two releases. So no "
                    "outcome makes one destination more than e^{2ε} times as likely as another, "
                    "relative to the prior. The belief shown is the exact posterior of an "
                    "attacker with a uniform prior over destinations, from the density of the "
                    "difference of two Laplace noises.")


def baseline_attack(od: ODMatrix, origin: int, destination: int) -> None:
    """The two-month attack on today's disclosure control (not DP), computed exactly."""
    found = learn.baseline_differencing(learn.origin_row(od, origin), destination)
    base = mechanisms.build("random_rounding").base
    recovery = ", ".join(f"{learn.rounding_recovery(m, base):.0%} after {m}"
                         for m in learn.AVERAGED_RELEASES)
    st.markdown("**The same attack on today's disclosure control** (none of these is "
                "differentially private): the attacker is certain when the newcomer's cell is "
                "the only one whose published value changed.")
    charts.wrapped_table(pd.DataFrame({
        "Method (not DP)": found["name"],
        "This newcomer found with certainty": [f"{x:.1%}" for x in found["found_here"]],
        "A typical newcomer found with certainty": [f"{x:.1%}" for x in found["found_typical"]]}))
    st.markdown(
        "- **Suppression** hides small cells, but above the threshold the exact counts change by "
        "exactly the newcomer: most newcomers join a large flow and are found.\n"
        "- **Rounding** hides a change until the count crosses a rounding boundary; then that "
        "cell alone moves, and the newcomer is found.\n"
        "- **Random rounding** is drawn afresh every month, so one difference hides the "
        "newcomer among many changed cells, but it is unbiased: averaging releases of the same "
        "table and rounding the mean gives a count that is not a multiple of "
        f"{base} back exactly with probability at least {recovery} releases.\n"
        "- **Cell-key perturbation** gives the same people the same noise every time, so "
        "averaging repeats gains nothing while the record keys stay secret; that same "
        "consistency means only the newcomer's cell can move, and it does whenever the "
        "perturbation does not happen to absorb the +1.\n\n"
        "A DP mechanism bounds what any of these attacks can learn, whatever the attacker "
        "knows.")


# ----------------------------------------------------------------------------------- lesson 2
def phone(current: data.Current, epsilon: float) -> None:
    """What one phone sends, and how a crowd of reports becomes an estimate."""
    od, note = learn.classroom_matrix(current.matrix)
    if note:
        st.caption(f"Every phone is simulated here, so the data is {note}.")
    left, middle, right = st.columns([3, 3, 2])
    busiest = learn.busiest_commutes(od)
    names = dict(zip(busiest, od.cell_labels(list(busiest))))
    cell = kept(left.selectbox, "Commute", "learn_commute", next(iter(busiest)),
                options=list(busiest), format_func=lambda c: f"{names[c]} ({busiest[c]:,})")
    local = mechanisms.names(LOCAL)
    key = kept(middle.selectbox, "Local mechanism", "learn_mechanism", "oue", options=local,
               format_func=lambda k: mechanisms.get(k).name)
    with right:
        st.write("")
        _draw_again("Send again", "learn_send_again")
    mech = mechanisms.build(key, epsilon=epsilon)
    d = od.domain_size
    report = learn.phone_report(mech, cell, d, _rng("phone", key, cell), label=_label(od))
    steps = "\n".join(f"{i}. {step}" for i, step in enumerate(report.steps, 1))
    st.markdown(f"**On the phone** ({mech.name}, ε = {epsilon:g})\n\n{steps}\n\n"
                f"**Sent:** {report.sent} ({report.bits:,.0f} bits).")

    st.markdown("**On the server**: a crowd of such reports")
    people = kept(st.select_slider, "Commuters in the crowd", "learn_crowd", 10_000,
                  options=[100, 300, 1_000, 3_000, 10_000],
                  help="Drawn at random from the data; each runs the phone code above.")
    crowd = learn.crowd_estimate(mech, od, people, cell, _rng("crowd", key, cell, people))
    cols = st.columns(3)
    cols[0].metric("True count in the crowd", f"{crowd.truth[cell]:,.0f}")
    cols[1].metric("Server's estimate", f"{crowd.estimate[cell]:,.1f}",
                   f"{crowd.estimate[cell] - crowd.truth[cell]:+,.1f}", delta_color="off")
    if crowd.sd is not None:
        cols[2].metric("Standard deviation (theory)", f"{crowd.sd:,.1f}")
    if crowd.support is not None:
        st.markdown(f"{crowd.support:,.0f} of the {crowd.people:,} reports support this commute. "
                    "Some of that support is noise, and the server knows how much to expect, so "
                    "it subtracts it and rescales:")
        st.latex(rf"\hat c = \frac{{C - nq}}{{p - q}} = \frac{{{learn.tex_number(crowd.support)} - "
                 rf"{learn.tex_number(crowd.people)} \times {report.q:.4g}}}{{{report.p:.4g} - "
                 rf"{report.q:.4g}}} = {crowd.estimate[cell]:.1f}")
    table = crowd.table(10)
    table.insert(0, "commute", od.cell_labels(table["cell"].to_numpy()))
    charts.wrapped_table(table.drop(columns="cell").assign(
        estimate=[f"{x:,.1f}" for x in table["estimate"]],
        error=[f"{x:+,.1f}" for x in table["error"]]))
    theory = "" if crowd.rmse_theory is None else f" (theory {crowd.rmse_theory:,.1f})"
    st.caption(f"The crowd's 10 busiest commutes. Over all {d:,} cells the error is "
               f"{crowd.rmse:,.1f} commuters per cell{theory}; it is unbiased: averaged over "
               "many crowds, each estimate equals the truth.")
    with st.expander("How it works (formulas)"):
        st.markdown(mech.explain())


# ----------------------------------------------------------------------------------- lesson 3
def epsilon_meaning(current: data.Current, epsilon: float) -> None:
    """What one ε promises: the Bayesian bound and the hypothesis-testing region."""
    left, right = st.columns(2)
    with left:
        prior = kept(st.slider, "Adversary's prior belief that a person makes a given commute",
                     "learn_prior", 0.10, min_value=0.01, max_value=0.99, step=0.01,
                     format="%.2f")
        fig, frame = figures.posterior(epsilon, 0.0, prior)
        charts.show(fig, frame, "posterior_bound", "learn_posterior")
        top = privacy_theory.posterior_bound(prior, epsilon)
        st.markdown(f"Sure to **{prior:.0%}** before, at most **{top:.1%}** after an "
                    f"ε = {epsilon:g} release, whatever it shows.")
        st.latex(r"P[\text{commute} \mid \text{release}] \le "
                 r"\frac{e^\varepsilon p}{1 + (e^\varepsilon - 1)p}")
    with right:
        delta = kept(st.select_slider, "δ", "learn_delta", 0.0,
                     options=(0.0, 1e-6, 1e-3, 0.01, 0.05, 0.1), format_func=lambda x: f"{x:g}")
        fig, frame = figures.test_region(epsilon, delta)
        charts.show(fig, frame, "hypothesis_test_region", "learn_region")
        at = privacy_theory.tpr_bound(0.05, epsilon, delta)
        st.markdown(f"Take two tables that differ only in one person's commute, A or B "
                    f"(substitution neighbours, this product's default). A test that says "
                    f"\"A\" for 5 % of the tables where it is B says \"A\" at most "
                    f"**{at:.1%}** of the time where it is A.")
        st.caption("Under substitution the total is published exactly, so this says nothing "
                   "about whether someone is in the table at all. A guarantee of ε for add/remove "
                   "neighbours (is this person in it?) gives 2ε for substitution, since a "
                   "replacement is a removal plus an addition; an ε for substitution gives no "
                   "add/remove guarantee.")
        st.latex(r"\mathrm{TPR} \le e^\varepsilon\,\mathrm{FPR} + \delta")
        st.latex(r"1 - \mathrm{FPR} \le e^\varepsilon(1 - \mathrm{TPR}) + \delta")
    fig, frame = figures.epsilon_ruler(epsilon)
    charts.show(fig, frame, "epsilon_ruler", "learn_ruler")
    st.caption("An ε is only comparable with its privacy unit and scope: a per-day ε spent "
               "every day adds up (see *Groups and budgets*). Values quoted second-hand are "
               "marked so when you point at them.")


# ----------------------------------------------------------------------------------- lesson 4
def budgets(current: data.Current, epsilon: float) -> None:
    """Privacy profiles, group privacy, and how budgets split and compose."""
    st.markdown("**One mechanism, many guarantees: privacy profiles**")
    sigma = kept(st.slider, "Gaussian noise σ (sensitivity 1)", "learn_sigma", 1.0,
                 min_value=0.2, max_value=5.0, step=0.1)
    fig, frame = figures.profiles(epsilon, sigma, current.matrix.domain_size)
    charts.show(fig, frame, "privacy_profiles", "learn_profiles")
    st.caption(f"Each curve is every (ε, δ) pair the mechanism satisfies. Randomised response and "
               f"Laplace reach δ = 0 at ε₀ = {epsilon:g} (pure ε-DP); the Gaussian never does. "
               + learn.delta_meaning(epsilon).sentence)

    st.markdown("**Groups and budgets**")
    cols = st.columns(3)
    with cols[0]:
        k = kept(st.number_input, "Group size (e.g. a household)", "learn_group", 4,
                 min_value=1, max_value=50)
        group_eps, _ = privacy_theory.group_privacy(epsilon, k)
        st.markdown(f"A household of {k} commuting together is protected at "
                    f"**kε = {group_eps:g}**: any release makes their combined commutes at most "
                    f"{_times(math.exp(group_eps))} more (or less) likely.")
    with cols[1]:
        st.markdown(f"**Splitting ε = {epsilon:g}** over three tables of the same people "
                    "(sequential composition: budgets add up)")
        weights = {"Origin totals": 1, "Destination totals": 1, "OD matrix": 2}
        split = privacy_theory.split_budget(epsilon, weights)
        total, _ = privacy_theory.sequential_composition(list(split.values()))
        charts.wrapped_table(pd.DataFrame({"release": list(split), "ε": list(split.values())}))
        st.caption(f"Together: ε = {total:g}. The OD matrix gets half, so it is the least noisy.")
    with cols[2]:
        months = kept(st.number_input, "Monthly releases per year", "learn_months", 12,
                      min_value=1, max_value=365)
        plan = learn.yearly_budget(epsilon, months)
        st.markdown(plan.sentence)
    with st.expander("The composition formulas"):
        st.latex(r"\text{sequential: } \Big(\sum_i \varepsilon_i, \sum_i \delta_i\Big)\qquad"
                 r"\text{parallel: } (\max_i \varepsilon_i, \max_i \delta_i)\qquad"
                 r"\text{group of } k: (k\varepsilon,\ k e^{(k-1)\varepsilon}\delta)")
        st.latex(r"\text{advanced: } \varepsilon' = \varepsilon\sqrt{2k\ln(1/\delta')} + "
                 r"k\varepsilon(e^\varepsilon - 1),\quad \delta_{\text{total}} = k\delta + \delta'")


# ----------------------------------------------------------------------------------- lesson 5
def models(current: data.Current, epsilon: float) -> None:
    """The same ε under the three trust models, shuffling's inverse, and subsampling."""
    od = current.matrix
    delta = kept(st.select_slider, "δ of the shuffled guarantee", "learn_shuffle_delta", 1e-6,
                 options=DELTAS, format_func=lambda x: f"{x:g}")
    try:
        frame = trust_table(current, epsilon, delta)
    except ValueError as error:
        st.warning(str(error))
        return
    central, local, shuffled = (frame.iloc[i] for i in range(3))
    shuffle = learn.shuffle_table(od.n, epsilon, delta, od.domain_size)
    bound, epsilon0 = learn.shuffle_choice(shuffle, epsilon)   # = shuffled.epsilon_local
    st.markdown(
        f"At central ε = {epsilon:g}: the office adding Laplace noise errs by "
        f"**{central.rmse:,.1f}** commuters per cell; if every phone randomises on its own "
        f"({local.mechanism}, the best local choice here) the error is **{local.rmse:,.0f}**, "
        f"{local.rmse / central.rmse:,.0f}× more. A shuffler that strips who sent what lets each "
        f"phone use ε₀ = **{charts.table_number(epsilon0)}** with GRR and still give "
        f"({epsilon:g}, {delta:g})-DP: error **{shuffled.rmse:,.0f}**. That ε₀ is the row "
        f"“{bound}” of the table below; each closed form there holds only up to the ε₀ its "
        "note gives.")
    charts.show(figures.trust_bars(frame, epsilon), frame, "trust_models", "learn_trust")
    st.markdown(f"**Shuffling, both ways**, for {od.n:,} phones and δ = {delta:g}")
    charts.wrapped_table(shuffle.rename(columns={
        "bound": "Bound", "phone_epsilon0": f"ε₀ a phone may use for central ε = {epsilon:g}",
        "central_epsilon": f"Central ε if phones use ε₀ = {epsilon:g}", "note": "Note"}))
    st.caption("The comparison above uses the numerical clone bound (Feldman, McMillan, Talwar, "
               "'Hiding among the clones', FOCS 2021) with GRR's clone probability 2/(e^ε₀ + 1) "
               "(Feldman, McMillan, Talwar, SODA 2023). The FMT21 closed forms are shown for "
               "reference and certify nothing outside their range; the blanket row is the "
               "numeric bound of Balle, Bell, Gascón and Nissim (CRYPTO 2019).")
    st.markdown("**Amplification by subsampling**: ask only a random share γ of commuters")
    rate = kept(st.slider, "Sampling rate γ", "learn_rate", 0.05, min_value=0.01, max_value=1.0,
                step=0.01, format="%.2f")
    fig, table = figures.subsampling(epsilon, delta, rate)
    charts.show(fig, table, "subsampling", "learn_subsampling")
    amplified, amplified_delta = amplification.subsampling_amplification(epsilon, delta, rate)
    st.latex(rf"\varepsilon' = \ln\!\big(1 + \gamma(e^\varepsilon - 1)\big) = "
             rf"\ln(1 + {rate:g}\,(e^{{{epsilon:g}}} - 1)) = {amplified:.3g},\qquad "
             rf"\delta' = \gamma\delta = {amplified_delta:.3g}")
    st.caption(amplification.SUBSAMPLING_CONDITIONS)


# ----------------------------------------------------------------------------------- lesson 6
#: The comparison's columns as shown, in order, with their headers.
CHOOSE_COLUMNS = {"name": "Mechanism", "model": "Model", "std_empty": "SD, empty cell",
                  "max_error": "Max error (95 %)", "bits_per_user": "Bits per person",
                  "server_cost": "Server cost", "variance_cell": "Variance, busiest cell",
                  "max_error_order": "Max error order", "guarantee": "Guarantee"}


def choose(current: data.Current, epsilon: float) -> None:
    """Every mechanism's variance, max error, bits and decoding cost for this n, |X| and ε."""
    od = current.matrix
    busiest = int(od.counts.max()) if od.nonzero else 0
    pick = accuracy.recommend_local(od.domain_size, epsilon, od.n)
    st.success(f"**Recommended local mechanism: {pick.name}.** {pick.reason}",
               icon=":material/recommend:")
    table = accuracy.compare_mechanisms(od.n, od.domain_size, epsilon, cell_count=busiest)
    shown = table.assign(bits_per_user=[NOTHING if pd.isna(bits) else f"{bits:,.0f}"
                                        for bits in table["bits_per_user"]])
    # Nine columns as a wrapping table: all read at once at 1,280 px (a data grid cut the last).
    charts.wrapped_table(shown[list(CHOOSE_COLUMNS)].rename(columns={
        **CHOOSE_COLUMNS, "variance_cell": f"Variance, busiest cell ({busiest:,})"}))
    charts.table_download(table, "choosing_a_mechanism", "learn_choose")
    st.caption(f"For n = {od.n:,} commuters and |X| = {od.domain_size:,} cells at ε = "
               f"{epsilon:g}; counts in commuters, variances in commuters². Central mechanisms "
               f"send people's true data to the office ({NOTHING} in the bits column). SD, empty "
               "cell: the standard deviation of an empty cell's estimate; max error (95 %): the "
               "largest error over all cells, exceeded with probability 5 %; bits per person: "
               "what one person's device sends. As in thesis tables 3.1–3.3, with every number "
               "evaluated for this dataset.")
    with st.expander("How the recommendation is made"):
        st.markdown(accuracy.RECOMMENDATION_RULE)


# ----------------------------------------------------------------------------------- lesson 7
def _device_steps(report: learn_heavy_hitters.DeviceReport, od: ODMatrix) -> list[str]:
    """One phone's PEM/TreeHist report as numbered markdown steps."""
    tree, sent = report.protocol == "treehist", report.prefix_report
    rest = report.cell_bits[report.prefix_length:]
    steps = [f"The commute is cell #{report.cell} of $d = {learn.tex_number(od.domain_size)}$: "
             f"{_label(od)(report.cell)}. Written in $L = \\lceil\\log_2 d\\rceil = "
             f"{report.bits}$ bits: **`{report.prefix_bits}`**" + (f"`{rest}`." if rest else ".")]
    if tree:
        steps.append(f"The phone picks one of the {report.levels} levels at random: level "
                     f"**{report.level}**, so it reports the first {report.prefix_length} bits, "
                     f"**`{report.prefix_bits}`**, as item $2^{{{report.prefix_length}}} + "
                     f"{report.prefix} = {sent.item}$ (a prefix never collides with a shorter "
                     "or longer one).")
    else:
        steps.append(f"The phone joins one of the {report.levels} groups at random: group "
                     f"**{report.level}**, which reports the first {report.prefix_length} bits, "
                     f"**`{report.prefix_bits}`** (prefix number {report.prefix} of "
                     f"$2^{{{report.prefix_length}}}$).")
    share = "ε/2" if tree else "the whole ε"
    steps.append(
        f"Optimised local hashing with {share} = {sent.epsilon:g}: a personal hash "
        f"$H(x) = ((a x + b) \\bmod {learn.tex_number(HASH_PRIME)}) \\bmod g$ with "
        f"$g = {sent.hash_range}$ buckets and seed $(a, b) = ({learn.tex_number(sent.a)}, "
        f"{learn.tex_number(sent.b)})$; $H({sent.item}) = {sent.own_bucket}$. Keep that bucket "
        f"with probability $p = {sent.p:.4g}$, else send one of the other {sent.hash_range - 1}. "
        + ("This time it **kept** it." if sent.kept else f"This time it **sent bucket "
                                                         f"{sent.bucket}** instead."))
    if report.cell_report is not None:
        whole = report.cell_report
        steps.append(f"A second report, of the whole cell, with the other ε/2: seed "
                     f"$({learn.tex_number(whole.a)}, {learn.tex_number(whole.b)})$, bucket "
                     f"{whole.bucket} ({'kept' if whole.kept else 'changed'}). The server uses "
                     "it only at the end, to estimate the k cells the walk found.")
    return steps


def heavy(current: data.Current, epsilon: float) -> None:
    """One phone under PEM or TreeHist, then the server's walk down the prefix tree."""
    od = current.matrix
    left, middle, right, last = st.columns([2, 4, 2, 2])
    protocols = heavy_hitters.PROTOCOLS
    with left:
        protocol = kept(st.segmented_control, "Protocol", "learn_hh_protocol", "pem",
                        options=list(protocols), format_func=lambda p: protocols[p][0],
                        required=True)
    busiest = learn.busiest_commutes(od)
    names = dict(zip(busiest, od.cell_labels(list(busiest))))
    cell = kept(middle.selectbox, "Commute", "learn_hh_commute", next(iter(busiest)),
                options=list(busiest), format_func=lambda c: f"{names[c]} ({busiest[c]:,})")
    with right:
        k = hh.k_input(od, "learn_hh_k")
    with last:
        st.write("")
        _draw_again("Send again", "learn_hh_again")
    if k is None:
        return
    st.markdown(f"A frequency oracle estimates all {od.domain_size:,} possible commutes. "
                f"**{protocols[protocol][0]}** ({protocols[protocol][1]}) finds the busiest {k} "
                "by growing them bit by bit, estimating only a few prefixes at each level.")
    found = hh.found(current.key, views.View(), od, protocol, epsilon, k, _draw())
    try:
        report = learn_heavy_hitters.device_report(protocol, od.domain_size, cell, epsilon, k,
                                                   _rng("heavy", protocol, cell, k))
    except ValueError as error:
        st.warning(str(error))
        report = None
    if report is not None:
        steps = "\n".join(f"{i}. {step}" for i, step in enumerate(_device_steps(report, od), 1))
        sent = [report.prefix_report] + ([report.cell_report] if report.cell_report else [])
        st.markdown(f"**On the phone** ({protocols[protocol][0]}, ε = {epsilon:g})\n\n{steps}"
                    f"\n\n**Sent:** {' and '.join(f'seed and bucket {r.bucket}' for r in sent)} "
                    f"({sum(r.bits for r in sent)} bits).")
        level = found.levels[report.level - 1]
        supported = learn_heavy_hitters.supported_candidates(report, found)
        own = report.prefix in level.candidates
        st.markdown(
            f"**On the server.** At level {report.level} it estimates {level.candidates.size:,} "
            f"candidate prefixes of {level.length} bits from {level.reports:,} reports. This "
            f"report supports {supported.size:,} of them (about 1 in "
            f"{report.prefix_report.hash_range}) — "
            + ("including the phone's own prefix: it adds one to that prefix's support count, "
               "and the server subtracts the support that noise alone is expected to give."
               if report.prefix in supported else
               ("not the phone's own: this time the randomised bucket points elsewhere."
                if own else
                "and the phone's own prefix is not among them: it was dropped at an earlier "
                "level, so no report can bring this commute back.")))
    walk = heavy_hitters.walk(od, found, k)
    charts.show(hh.walk_chart(walk, k, protocols[protocol][0]), walk, "heavy_hitters_walk",
                "learn_hh_walk")
    score = heavy_hitters.scores(od, found, k)
    st.markdown(f"At the last level the server names {k} commutes: **{score['recall']:.0%}** of "
                f"the true top {k} (recall), after estimating "
                f"{int(walk['candidates'].sum()):,} prefixes instead of {od.domain_size:,} "
                "cells.")
    with st.expander("How it works"):
        st.markdown(
            "- **PEM** (Wang et al., IEEE TDSC 2019): commuters are split into g groups; group j "
            "reports a prefix η bits longer than group j − 1. The server keeps the k best "
            "prefixes of each level, extends each by every η-bit suffix, and estimates those "
            "k·2^η candidates with the next group; each group's estimate is scaled by g.\n"
            "- **TreeHist** (Bassily et al., NeurIPS 2017): one bit per level; each phone "
            "reports the prefix of one random level and the whole cell, each with ε/2.\n"
            "- Either way each phone is ε-LDP, and the server never evaluates all d cells.")
        st.latex(r"\hat c_v = g\,\frac{C_v - n_j/g_h}{p - 1/g_h},\qquad "
                 r"p = \frac{e^\varepsilon}{e^\varepsilon + g_h - 1}")
        st.caption("g: groups (PEM) or levels (TreeHist); g_h: hash buckets; C_v: reports "
                   "supporting prefix v; n_j: reports at that level.")


SECTIONS = {"why": why, "phone": phone, "epsilon": epsilon_meaning, "budgets": budgets,
            "models": models, "choose": choose, "heavy": heavy}

LESSONS[probabilistic_dp.KEY] = probabilistic_dp.TITLE       # issue 37's lesson, own module
SECTIONS[probabilistic_dp.KEY] = probabilistic_dp.lesson
