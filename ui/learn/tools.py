"""The Learn page's "more tools" lessons: choosing privately, who is protected, Gaussian
accounting, and the two-coin survey — topics of the seed texts the first lessons do not teach.

Same shape as :mod:`ui.learn.lessons` (one screen each, live numbers, one figure, its formula);
numbers come from :mod:`dpcore.theory.selection`, :mod:`~dpcore.theory.neighbours`,
:mod:`~dpcore.theory.composition` and :mod:`~dpcore.theory.coins`. Zone names are escaped
(:func:`ui.components.safe.markdown`, :func:`ui.components.charts.escape`).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import streamlit as st

from dpcore import mechanisms
from dpcore.data.od import ODMatrix
from dpcore.theory import (
    anonymity,
    coins,
    learn,
    composition,
    mean_estimation,
    memoization,
    multi_message,
    neighbours,
    privacy_theory,
    selection,
)
from ui.components import charts, data, safe
from ui.components.viewstate import kept
from ui.learn import lessons, tool_figures

LESSONS = {
    "select": "Choosing privately",
    "neighbours": "Who is protected",
    "gaussian": "Gaussian accounting",
    "coins": "Two coins",
    "mean": "Averages, locally",
    "memo": "Asking every month",
    "kanon": "k-anonymity, sensitivity",
    "messages": "Many messages per phone",
}
#: Draws of the product's Gumbel top-1 shown beside the exact probabilities.
GUMBEL_DRAWS = 2_000
#: Origins offered for the selection lesson (busiest first).
ORIGINS_LISTED = 200
SHOWN = 6
COIN_CROWDS = (100, 300, 1_000, 3_000, 10_000, 30_000, 100_000, 300_000, 1_000_000)
#: Commuters drawn for the averaging attack (each answers every month).
MEMO_CROWD = 5_000


def busiest_destination(od: ODMatrix) -> tuple[int, int]:
    """The destination most commuters go to, and how many: the yes/no question of the coin and
    memoization lessons is "do you work or study there?"."""
    totals = od.destination_totals()
    destination = int(np.argmax(totals))
    return destination, int(totals[destination])


def _origin_picker(od: ODMatrix, key: str, place=st) -> int:
    totals = od.origin_totals()
    order = [int(i) for i in np.argsort(-totals, kind="stable")[:ORIGINS_LISTED]]
    return kept(place.selectbox, "Origin", key, order[0], options=order,
                format_func=lambda o: f"{od.origins.labels[o]} ({totals[o]:,.0f} commuters)")


# ----------------------------------------------------------------------------------- selection
def select(current: data.Current, epsilon: float) -> None:
    """Name an origin's busiest destination: exponential mechanism, noisy max, Gumbel top-1."""
    od = current.matrix
    left, right = st.columns([3, 2])
    origin = _origin_picker(od, "learn_select_origin", left)
    with right:
        st.write("")
        away = kept(st.toggle, "Only those who leave their home zone", "learn_select_away", True,
                    help="Leave out the destination that is the origin itself, which usually "
                         "wins by far.")
    candidates = np.arange(od.n_destinations)
    if away:
        candidates = candidates[od.destinations.ids != od.origins.ids[origin]]
    counts = learn.origin_row(od, origin)[candidates].astype(float)
    if counts.size < 2:
        st.info("There is only one destination to choose from.")
        return
    exponential = selection.exponential_probabilities(counts, epsilon)
    noisy = selection.noisy_max_probabilities(counts, epsilon)
    topk = mechanisms.build("topk", epsilon=epsilon, k=1, neighbours="add_remove")
    rng = lessons._rng("select", origin, away)
    gumbel = np.bincount([int(topk.select(counts, rng)[0]) for _ in range(GUMBEL_DRAWS)],
                         minlength=counts.size) / GUMBEL_DRAWS
    shown = np.argsort(-counts, kind="stable")[:SHOWN]
    best = int(shown[0])
    labels = od.destinations.labels[candidates]
    name = safe.markdown(od.origins.labels[origin])
    top_two = counts[shown[:2]]
    certain = ("" if top_two[0] == top_two[1] else
               f" It names it with 90 % probability from ε = "
               f"**{selection.epsilon_for(counts, 0.9):.3g}**: the top two counts "
               f"({top_two[0]:,.0f} and {top_two[1]:,.0f}) differ by "
               f"{top_two[0] - top_two[1]:,.0f}, and the probabilities are far from certain only "
               "while ε times that gap is a few units at most.")
    st.markdown(
        f"**Which destination do most commuters from {name} go to"
        + (" when they leave it" if away else "") + "?** Each destination's score "
        "is its count; one person changes any count by at most 1, so the score's sensitivity is "
        f"Δu = 1. At ε = {epsilon:g} the exponential mechanism names the true busiest, "
        f"**{safe.markdown(labels[best])}**, with probability "
        f"**{exponential[best]:.1%}**; report-noisy-max with Laplace noise of scale 2/ε = "
        f"{2 / epsilon:.3g} names it with probability **{noisy[best]:.1%}**. Both are ε-DP and "
        "publish only a name, never a count." + certain)
    charts.wrapped_table(pd.DataFrame({
        "Destination": labels[shown],
        "Commuters": [f"{c:,.0f}" for c in counts[shown]],
        "Exponential mechanism": [f"{p:.2%}" for p in exponential[shown]],
        "Noisy max (Laplace)": [f"{p:.2%}" for p in noisy[shown]],
        f"Product's Gumbel top-1 ({GUMBEL_DRAWS:,} draws)": [f"{p:.2%}" for p in gumbel[shown]],
    }))
    st.caption(f"The {SHOWN} busiest of {counts.size:,} destinations; every destination, "
               "including empty ones, can be named. Probabilities are exact (the noisy max's by "
               "numerical integration); the last column is a simulation.")
    fig, frame = tool_figures.selection_curve(counts, epsilon)
    charts.show(fig, frame, "exponential_mechanism", "learn_select_curve")
    st.latex(r"P[v] = \frac{\exp(\varepsilon c_v / 2\Delta u)}"
             r"{\sum_w \exp(\varepsilon c_w / 2\Delta u)}")
    st.markdown(
        "**The product's Gumbel top-k *is* the exponential mechanism, repeated.** Adding "
        f"Gumbel noise of scale 2Δu/ε = {topk.selection_scale:.3g} to every count and naming the "
        "largest picks each destination with exactly the probability above (the Gumbel-max "
        "trick); taking the k largest is k rounds of the exponential mechanism, each removing "
        "the winner. The product's *Top-k busiest commutes* spends half its ε on these k "
        "rounds, ε/(2k) each, in the sharper form exp(ε c_v/Δu) that counts allow when every "
        "count moves the same way (add/remove); at k = 1 that is exactly the distribution "
        "above, which the last column samples. The other half of its ε publishes the chosen "
        "counts.")
    with st.expander("Sources"):
        st.markdown("- McSherry & Talwar, *Mechanism design via differential privacy*, FOCS "
                    "2007; Dwork & Roth 2014 §3.3–3.4 (report-noisy-max, exponential "
                    "mechanism).\n- Durfee & Rogers, NeurIPS 2019 (one-shot Gumbel top-k).")


# ----------------------------------------------------------------------------------- neighbours
def who(current: data.Current, epsilon: float) -> None:
    """Add/remove vs substitution neighbours on the busiest origin's table."""
    od = current.matrix
    origin = _origin_picker(od, "learn_neighbours_origin")
    counts = learn.origin_row(od, origin).astype(float)
    order = np.argsort(-counts, kind="stable")
    if counts[order[0]] < 1 or od.n_destinations < 2:
        st.info("This origin has no commuter to take out or move.")
        return
    pair = neighbours.neighbour_rows(od, origin, int(order[0]), int(order[1]))
    there, other = (safe.markdown(od.destinations.labels[i]) for i in (pair.destination,
                                                                        pair.other))
    changed = [pair.destination, pair.other]
    charts.wrapped_table(pd.DataFrame({
        "Destination": [*od.destinations.labels[changed], "All destinations (total)"],
        "The table": [*(f"{c:,}" for c in pair.counts[changed]), f"{pair.counts.sum():,}"],
        "Add/remove neighbour: one commuter left out": [
            *(f"{c:,}" for c in pair.removed[changed]), f"{pair.removed.sum():,}"],
        "Substitution neighbour: one commute changed": [
            *(f"{c:,}" for c in pair.moved[changed]), f"{pair.moved.sum():,}"]}))
    add = mechanisms.build("laplace", epsilon=epsilon, neighbours="add_remove")
    sub = mechanisms.build("laplace", epsilon=epsilon, neighbours="substitution")
    st.markdown(
        f"- **Add/remove (membership)**: is this commuter in the table at all? Leaving one "
        f"commuter of {there} out changes one count by 1: L1 distance **{pair.l1(pair.removed)}**"
        f", so Laplace noise of scale 1/ε = **{add.scale:.3g}** hides them.\n"
        f"- **Substitution (edit)**: which commute is theirs? Moving them from {there} to "
        f"{other} changes two counts by 1: L1 distance **{pair.l1(pair.moved)}**, so the same "
        f"ε needs scale 2/ε = **{sub.scale:.3g}** — the sensitivity doubles. The total "
        f"({pair.counts.sum():,}) is the same in both tables, so it may be published exactly: "
        "substitution says nothing about membership.\n"
        f"- An edit is a removal and then an addition, so a membership guarantee of ε = "
        f"{epsilon:g} gives **{2 * epsilon:g}** for edits (group privacy of two). Not the "
        "converse: the exact total is 0-DP under substitution and reveals whether anyone "
        "joined.")
    table = pd.DataFrame(neighbours.guarantees(epsilon))
    charts.wrapped_table(pd.DataFrame({
        "Release": table["release"], "Laplace scale": [f"{s:.3g}" for s in table["scale"]],
        "ε, is this person in it?": [_epsilon_text(e) for e in table["membership"]],
        "ε, which commute is theirs?": [_epsilon_text(e) for e in table["edit"]]}))
    st.caption("∞: no guarantee at all. The product's default is substitution (the total "
               "number of commuters is treated as public); choose add/remove on the "
               "Mechanisms page when membership itself is sensitive. Source: the seeds' "
               "textbook chapter, 'Membership neighbourhood' and 'Edit neighbourhood'.")


def _epsilon_text(value: float) -> str:
    return "∞ (none)" if math.isinf(value) else f"{value:g}"


# ----------------------------------------------------------------------------------- gaussian
def gaussian(current: data.Current, epsilon: float) -> None:
    """Classic vs analytic σ across ε, then twelve monthly releases under three accountings."""
    delta = kept(st.select_slider, "δ", "learn_gauss_delta", 1e-5, options=lessons.DELTAS,
                 format_func=lambda x: f"{x:g}")
    fig, frame = tool_figures.gaussian_sigmas(epsilon, delta)
    charts.show(fig, frame, "classic_vs_analytic_gaussian", "learn_gauss_sigma")
    row = frame.loc[frame["epsilon"] == epsilon].iloc[0]
    limit = privacy_theory.classic_gaussian_limit(delta)
    status = {"proven": "within the classic proof (ε < 1)",
              "unproven, private": f"beyond the classic proof (ε ≥ 1), yet still private up to "
                                   f"ε = {limit:.3g}",
              "not private": f"past ε = {limit:.3g}, where the classic σ is too small to be "
                             f"({epsilon:g}, {delta:g})-DP at all"}[row["classic_status"]]
    small = frame[frame["epsilon"] < 1]
    st.markdown(
        f"At ε = {epsilon:g}, δ = {delta:g}: classic σ = **{row['classic_sigma']:.3g}**, analytic "
        f"σ = **{row['analytic_sigma']:.3g}** — the classic is **{row['ratio']:.3g}×** as wide, "
        f"and {status}. Below ε = 1 the classic is {small['ratio'].min():.3g}–"
        f"{small['ratio'].max():.3g}× the analytic σ on this grid.")
    # Two lines: one would overflow a 1,280 px screen into a scrolling box.
    st.latex(r"\sigma_{\text{classic}} = \frac{\Delta_2\sqrt{2\ln(1.25/\delta)}}{\varepsilon}")
    st.latex(r"\sigma_{\text{analytic}} = \Delta/\mu:\ \Phi\big(\tfrac{\mu}{2} - "
             r"\tfrac{\varepsilon}{\mu}\big) - e^\varepsilon\,\Phi\big(-\tfrac{\mu}{2} - "
             r"\tfrac{\varepsilon}{\mu}\big) = \delta")

    st.markdown("**Twelve monthly releases: adding up the budget**")
    monthly = kept(st.select_slider, "ε of each monthly release", "learn_gauss_month", 0.1,
                   options=(0.01, 0.03, 0.1, 0.3, 1.0), format_func=lambda x: f"{x:g}")
    table = composition.monthly_gaussian(monthly, delta)
    last = table.iloc[-1]
    charts.show(tool_figures.monthly(table, monthly), table, "monthly_gaussian_composition",
                "learn_gauss_monthly")
    st.markdown(
        f"Each month adds Gaussian noise σ = {last['sigma']:.3g} (analytic, ({monthly:g}, "
        f"{delta:g})), which is ρ = 1/(2σ²) = {last['rho'] / len(table):.3g}-zCDP. After "
        f"{len(table)} months: basic **{last['basic']:.3g}** (δ = {last['basic_delta']:.2g}), "
        f"advanced **{last['advanced']:.3g}** and zCDP **{last['zcdp']:.3g}** (both at δ = "
        f"{last['advanced_delta']:.2g}; ρ = {last['rho']:.3g}).")
    st.latex(r"\rho = \frac{\Delta^2}{2\sigma^2},\qquad \rho_{\text{total}} = "
             r"\rho_1 + \dots + \rho_k,\qquad \varepsilon = \rho + 2\,\sqrt{\rho\,\ln(1/\delta)}\;")
    st.caption("zCDP (Bun & Steinke, TCC 2016) bounds every Rényi divergence of the outputs, "
               "so Gaussian releases compose by adding ρ, with no δ spent per release. It applies "
               "to Gaussian noise; Laplace releases are ε²/2-zCDP, a looser fit.")


# ----------------------------------------------------------------------------------- coins
def two_coins(current: data.Current, epsilon: float) -> None:
    """Warner's two-coin survey on a yes/no question about the current data."""
    od = current.matrix
    destination, truth_yes = busiest_destination(od)
    place = safe.markdown(od.destinations.labels[destination])
    st.markdown(
        f"**Do you work or study in {place}?** Every commuter flips a coin: heads, answer "
        "truthfully; tails, flip again and answer *yes* on heads, *no* on tails. A *yes* is "
        "3 times as likely from someone whose true answer is yes (3/4) as from someone whose "
        f"answer is no (1/4): ε = ln 3 = {coins.EPSILON:.4g}, whatever the ε chosen above.")
    lessons._draw_again("Flip again", "learn_coins_again")
    sizes = [s for s in COIN_CROWDS if s < od.n] + [od.n]
    surveys = coins.crowd_surveys(od.n, truth_yes, sizes, lessons._rng("coins", destination))
    whole = surveys[-1]
    low, high = whole.interval
    st.markdown(
        f"All {whole.n:,} commuters answer: **{whole.share_yes:.2%}** say yes. Expected: 1/4 + "
        f"q/2 with q the true share, so q̂ = 2p − 1/2 = **{whole.estimate:.2%}** (exact 95 % "
        f"interval {low:.2%}–{high:.2%}); the truth is {whole.truth:.2%}.")
    fig, frame = tool_figures.coin_crowds(surveys)
    charts.show(fig, frame, "two_coin_survey", "learn_coins")
    st.latex(r"\mathbb{E}[p] = \tfrac14 + \tfrac{q}{2}\ \Rightarrow\ \hat q = 2p - \tfrac12")
    st.caption("Interval: Clopper–Pearson on the count of yes answers (exact for a binomial), "
               "mapped through q = 2p − 1/2 and clipped to [0, 1]. Sources: Warner, JASA 1965; "
               "the seeds' textbook chapter (the drug-use group activity) and thesis draft §2.1.")


# ----------------------------------------------------------------------------------- mean
def mean(current: data.Current, epsilon: float) -> None:
    """Each commuter's distance in km, averaged under local DP (one bit) and centrally."""
    od = current.matrix
    distances = mean_estimation.commute_distances(od)
    if distances is None:
        st.info("This dataset's zones have no positions, so there is no distance to average: "
                "choose a bundled dataset (they carry zone centroids) on the home page.")
        return
    if distances.left_out:
        st.caption(f"{distances.left_out:,} commuters go to or from a place without a position "
                   f"({', '.join(safe.markdown(z) for z in distances.unplaced)}) and are left "
                   "out. Distances run between zone centres, so a commute within one zone "
                   "counts as 0 km.")
    lessons._draw_again("Send again", "learn_mean_again")
    b, n = distances.bound, distances.n
    estimate = mean_estimation.one_bit_mean(distances, epsilon, lessons._rng("mean"))
    one_bit = math.sqrt(mean_estimation.one_bit_variance(distances, epsilon))
    local = math.sqrt(mean_estimation.local_laplace_variance(b, epsilon, n))
    central = math.sqrt(mean_estimation.central_laplace_variance(b, epsilon, n))
    c = mean_estimation.one_bit_constant(epsilon)
    st.markdown(
        f"**How far do people commute, on average?** {n:,} commuters, true mean "
        f"**{distances.mean:.2f} km**; no commute is longer than B = {b:,.1f} km (the widest "
        "distance between two zones, public). Each phone sends **one bit**: ±C with C = "
        f"(e^ε + 1)/(e^ε − 1) = {c:.3g}, + with probability 1/2 + t/(2C) for t = 2x/B − 1. "
        f"The server's average of this draw: **{estimate:.2f} km** (SD {one_bit:.3g} km).\n"
        f"- Local Laplace (each phone adds Laplace(B/ε)): SD √(2B²/(ε²n)) = **{local:.3g} km**.\n"
        f"- Central Laplace (the office adds Laplace(B/(εn)) to the true mean): SD "
        f"√2·B/(εn) = **{central:.3g} km**, {local / central:,.0f}× (= √n) smaller.")
    fig, frame = tool_figures.mean_errors(distances, epsilon)
    charts.show(fig, frame, "local_mean_estimation", "learn_mean")
    st.latex(r"\operatorname{Var}[\hat x]_{\text{one bit}} = \frac{(B/2)^2\,(C^2 - "
             r"\overline{t^2})}{n},\quad \operatorname{Var}_{\text{local Laplace}} = "
             r"\frac{2B^2}{\varepsilon^2 n},\quad \operatorname{Var}_{\text{central}} = "
             r"2\Big(\frac{B}{\varepsilon n}\Big)^2")
    st.caption("Sources: the seeds' textbook chapter (the Laplace mechanism for averages, local "
               "vs central); Duchi, Jordan & Wainwright, JASA 2018 (the one-bit mechanism). The "
               "local variances fall as 1/n, the central as 1/n².")


# ----------------------------------------------------------------------------------- memo
def memo(current: data.Current, epsilon: float) -> None:
    """The same question every month: fresh randomised response vs a memoized answer."""
    od = current.matrix
    destination, truth_yes = busiest_destination(od)
    place = safe.markdown(od.destinations.labels[destination])
    months = kept(st.slider, "Months the question is asked", "learn_memo_months", 12,
                  min_value=1, max_value=36)
    lessons._draw_again("Draw again", "learn_memo_again")
    rng = lessons._rng("memo", destination, months)
    crowd = min(MEMO_CROWD, od.n)
    yes = int(rng.hypergeometric(truth_yes, od.n - truth_yes, crowd))
    truth = np.zeros(crowd, dtype=bool)
    truth[:yes] = True
    if not 0 < yes < crowd:
        st.info(f"Every one of the {crowd:,} commuters drawn gives the same answer, so there is "
                "nothing to attack: draw again or choose a larger dataset.")
        return
    frame = memoization.simulate_attack(truth, epsilon, months, rng)
    last = frame.iloc[-1]
    p = memoization.keep_probability(epsilon)
    guess = max(yes, crowd - yes) / crowd
    st.markdown(
        f"**Do you work or study in {place}?** asked every month of {crowd:,} commuters drawn "
        f"from the data ({yes / crowd:.1%} of them truly yes). Each answer is randomised "
        f"response at ε = {epsilon:g}: the truth with probability {p:.1%}.\n"
        f"- **Fresh randomness every month**: after {months} months an attacker who sees one "
        f"person's answers and weighs them (Bayes) names their true answer for "
        f"**{last['fresh_simulated']:.1%}** of people (exact: {last['fresh_exact']:.1%}); the "
        f"guarantee spent is {months} × ε = **{last['epsilon_fresh']:g}**.\n"
        f"- **Memoized**: each phone draws its noisy answer once and resends it; the attacker "
        f"stays at **{last['memoized_simulated']:.1%}** (exact {last['memoized_exact']:.1%}) "
        f"and the guarantee at ε = **{last['epsilon_memoized']:g}**. Guessing the commoner "
        f"answer alone is right for {guess:.1%}.")
    charts.show(tool_figures.memo_attack(frame, guess), frame, "memoization_attack", "learn_memo")
    st.caption("Memoization protects the answer, not its changes: a person whose true answer "
               "changes draws a new permanent answer, and the repeated identical report can "
               "itself link a person's reports — RAPPOR adds a fresh instantaneous randomisation "
               "on top for that. Sources: Erlingsson, Pihur, Korolova, CCS 2014 (RAPPOR); Ding, "
               "Kulkarni, Yekhanin, NeurIPS 2017 (memoization, used in the thesis draft).")


# ----------------------------------------------------------------------------------- kanon
def kanon(current: data.Current, epsilon: float) -> None:
    """k-anonymity by suppression beside DP, then local vs global sensitivity of a median."""
    od = current.matrix
    k = kept(st.slider, "k", "learn_kanon_k", 5, min_value=2, max_value=50)
    found = anonymity.k_anonymise(od, k)
    st.markdown(
        f"**k-anonymity** treats origin and destination as quasi-identifiers: every published "
        f"commute must be shared by at least k = {k} commuters. Here that suppresses "
        f"**{found.cells_suppressed:,}** of {found.cells:,} commutes, "
        f"**{found.people_suppressed:,}** of {found.people:,} commuters "
        f"({found.people_suppressed / max(found.people, 1):.2%}). Every other count is "
        "published exactly — so next month's table minus this month's still finds a newcomer "
        "whose commute was already published (the first lesson's differencing attack). "
        "k-anonymity describes one output; DP bounds what every output, and any combination of "
        f"them, can reveal (ε = {epsilon:g} per release, adding up).")
    if od.nonzero:
        fig, frame = tool_figures.suppression(od.counts, k)
        charts.show(fig, frame, "k_anonymity_suppression", "learn_kanon")
    distances = mean_estimation.commute_distances(od)
    if distances is None:
        st.info("This dataset's zones have no positions, so the sensitivity example (the median "
                "commute distance) cannot be computed.")
        return
    median = anonymity.median_sensitivity(distances.km, distances.counts, distances.bound)
    st.markdown(
        f"**Local vs global sensitivity: the median commute distance**, {median.median:.2f} km "
        f"here. Replacing one commuter moves it by at most **{median.local:.3g} km** on this "
        f"table (its *local* sensitivity); on the worst table, by up to B = "
        f"**{median.global_:,.1f} km** (the *global* sensitivity, which DP noise must use). "
        f"{median.changes_to_move:,} commuters would have to change before this median moved "
        "at all. Noise scaled to the local sensitivity is not private: its size depends on the "
        "data, so it tells whether a table is near a jump — which is why smooth sensitivity "
        "and propose-test-release exist.")
    st.caption("Sources: the seeds' textbook chapter (k-anonymity, 003 l.439–469; sensitivity "
               "versus local sensitivity, l.1743); Nissim, Raskhodnikova, Smith, STOC 2007.")


# ----------------------------------------------------------------------------------- messages
def many_messages(current: data.Current, epsilon: float) -> None:
    """Single-message vs one-bit-per-cell shuffling at the same central (ε, δ)."""
    od = current.matrix
    delta = kept(st.select_slider, "δ", "learn_messages_delta", 1e-6, options=lessons.DELTAS,
                 format_func=lambda x: f"{x:g}")
    n, d = od.n, od.domain_size
    table = multi_message.compare(n, d, epsilon, delta)
    single, bits, central = (table.iloc[i] for i in range(3))
    better = "one bit per cell" if bits["rmse"] < single["rmse"] else "the single message"
    st.markdown(
        f"A shuffler mixes **all** messages of all {n:,} phones. With **one message** each "
        f"(GRR over the d = {d:,} commutes at ε₀ = {single['epsilon0']:.3g}) the error per "
        f"cell is **{single['rmse']:,.1f}** commuters, and it grows with d. With **one bit per "
        f"cell** ({d:,} messages per phone, each a randomised yes/no for one commute at ε₀′ = "
        f"{bits['epsilon0']:.3g}) it is **{bits['rmse']:,.1f}**, whatever d; the trusted office "
        f"errs by {central['rmse']:.3g}. Here {better} is more accurate.")
    fig, frame = tool_figures.messages(n, d, epsilon, delta)
    charts.show(fig, frame, "multi_message_shuffling", "learn_messages")
    st.markdown(
        f"Ghazi, Golowich, Kumar, Pagh and Velingker (*On the power of multiple anonymous "
        f"messages*, EUROCRYPT 2021, arXiv 1908.11358 — the seeds' shuffle-model cheat sheet) "
        f"prove that **no** single-message protocol can err by less than about min(n^¼, √d) "
        f"(= min({n ** 0.25:,.1f}, {math.sqrt(d):,.1f}) = "
        f"{multi_message.single_message_order(n, d):,.1f} here, up to constants and log factors "
        f"the abstract does not give), while several messages per phone reach error "
        f"polylogarithmic in d, with only poly(log d, log n) bits per phone — far fewer than the "
        f"one-bit-per-cell protocol's {d:,} messages.")
    st.caption("Both shuffled protocols use the product's numerical clone bound (Feldman, "
               "McMillan, Talwar) with GRR's clone probability; one bit per cell gives each "
               "cell (ε/2, δ/2), since replacing one commute changes two cells' bits. Substitution "
               "neighbours throughout. The paper's bounds are quoted from its abstract (the "
               "orders above); its theorems' constants and messages per phone were not available "
               "to us, so no number of commuters is claimed for them.")


SECTIONS = {"select": select, "neighbours": who, "gaussian": gaussian, "coins": two_coins,
            "mean": mean, "memo": memo, "kanon": kanon, "messages": many_messages}
#: Every lesson of the page, the first ones then these.
ALL_LESSONS = {**lessons.LESSONS, **LESSONS}
ALL_SECTIONS = {**lessons.SECTIONS, **SECTIONS}
