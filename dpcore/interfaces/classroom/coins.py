"""Coins mode: Warner's randomised response with two real coins, for a yes/no question.

Each student flips two coins in private. First coin heads: answer truthfully; tails: the second
coin answers (heads "yes", tails "no"). The phone sends only the yes/no the coins told the
student to tap. With q the class's true share of "yes", a report is "yes" with probability
p = q/2 + 1/4, so q = 2p − 1/2 (estimated by 2p̂ − 1/2, unbiased); a "yes" is 3/4 likely from a
true yes and 1/4 from a true no, so ε = ln 3 [War65]. The exact interval: Clopper–Pearson's
equal-tailed interval for p from the count of "yes" (binomial), mapped through q = 2p − 1/2 and
clipped to [0, 1] (coverage ≥ 95 % for every q, since the map is increasing).

References: [War65] S. L. Warner, "Randomized response: a survey technique for eliminating
evasive answer bias", JASA 60 (1965); the two-coin form as in Dwork & Roth, "The algorithmic
foundations of differential privacy" (2014), §3.2; Clopper & Pearson, Biometrika 26 (1934).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scipy import stats

from dpcore.interfaces.classroom import ClassroomError, MAX_TITLE

#: The round's key in the rounds table (where a mechanism's name goes).
COINS = "coins"
#: Warner's two-coin design is ln 3-LDP: P(yes | yes) / P(yes | no) = (3/4) / (1/4).
EPSILON = math.log(3)


def yes_probability(q: float) -> float:
    """P(a student taps "yes") when a share ``q`` of the class truly answers yes."""
    return q / 2 + 1 / 4


def check_prompt(prompt) -> str:
    """A coins or number round's question as stored, or ClassroomError saying what is wrong."""
    text = str(prompt or "").strip()
    if not text:
        raise ClassroomError("This round needs a question to ask.")
    if len(text) > MAX_TITLE:
        raise ClassroomError(f"The question has {len(text):,} characters; at most "
                             f"{MAX_TITLE} fit on a phone. Shorten it.")
    return text


@dataclass(frozen=True)
class CoinsEstimate:
    """The class's share of true "yes" from ``yes`` of ``n`` taps, with its exact interval."""

    n: int
    yes: int
    share: float                   # 2p̂ − 1/2 (unbiased; may fall outside [0, 1])
    low: float                     # exact 95 % interval for the share, within [0, 1]
    high: float

    @property
    def shown(self) -> float:
        """The estimate clipped to the possible shares [0, 1]."""
        return min(max(self.share, 0.0), 1.0)


def clopper_pearson(ones: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """The equal-tailed exact interval for a binomial probability from ``ones`` of ``n``."""
    if n < 1 or not 0 <= ones <= n:
        raise ValueError(f"Need 0 ≤ yes ≤ n and n ≥ 1; got yes = {ones}, n = {n}.")
    alpha = 1 - confidence
    low = 0.0 if ones == 0 else float(stats.beta.ppf(alpha / 2, ones, n - ones + 1))
    high = 1.0 if ones == n else float(stats.beta.ppf(1 - alpha / 2, ones + 1, n - ones))
    return low, high


def estimate(yes: int, n: int, confidence: float = 0.95) -> CoinsEstimate:
    """Estimate q = 2p − 1/2 from ``yes`` "yes" taps of ``n``, with the Clopper–Pearson interval
    for p mapped to q."""
    p_low, p_high = clopper_pearson(yes, n, confidence)
    clip = lambda q: min(max(q, 0.0), 1.0)     # noqa: E731
    return CoinsEstimate(n, yes, 2 * yes / n - 0.5, clip(2 * p_low - 0.5), clip(2 * p_high - 0.5))
