"""Today's disclosure control, run beside the DP mechanisms: **not differentially private**.

Statistics offices publish commuting tables with small-cell suppression (the CSO's POWSCAR 2016
hid ED flows of fewer than 10 people), rounding (to base 3, 5 or 10, deterministic or random) and
cell-key perturbation (the ONS's Census 2021 tables). None of them has a privacy budget: ε is
accepted, because every release is built with one, and ignored (``uses_epsilon = False``, so the
release's random stream does not depend on it either, see :mod:`dpcore.release`). Their privacy
rests on assumptions about the attacker; Learn's differencing lesson shows what breaks them.

* :class:`SmallCellSuppression` — counts below a threshold published as 0;
* :class:`Rounding` — every count rounded to the nearest multiple of a base (halves up);
* :class:`RandomRounding` — unbiased random rounding: up with probability (remainder / base);
* :class:`CellKey` — the ONS cell-key method (Fraser & Wooton, "A proposed method for
  confidentialising tabular output to protect against differencing", UNECE work session on
  statistical data confidentiality, 2005; the ONS ``cell-key-perturbation`` package): each person
  has a fixed record key, uniform on 0–255; a cell's key is the sum of its people's record keys
  mod 256; the published count is the count plus the perturbation a table (the *ptable*) lists for
  that count and cell key; published counts below a threshold are suppressed (0 here).
"""

from __future__ import annotations

import functools
import importlib.metadata

import numpy as np
import pandas as pd

from dpcore.mechanisms import register
from dpcore.mechanisms.base import BASELINE, EPSILON, Mechanism, Param
from dpcore.mechanisms.central import _as_counts

_NOT_DP = ("**Not differentially private.** ε does not apply: the same table gives the same kind "
           "of output whatever ε is chosen.")

THRESHOLD = Param("threshold", "Suppress counts below", 10, int, low=1, high=1000,
                  help="Counts below this are published as 0 (the CSO suppressed ED flows of "
                       "fewer than 10 people).")
BASE = Param("base", "Rounding base", 5, int, choices=(3, 5, 10),
             help="Counts are published as multiples of this base.")


class Baseline(Mechanism):
    """A disclosure-control method applied by the office to exact counts (not DP)."""

    model = BASELINE
    uses_epsilon = False

    def simulate(self, items, d, rng):
        counts = np.bincount(np.asarray(items, dtype=np.int64), minlength=d)
        return self.release(counts, rng)


class DeterministicBaseline(Baseline):
    """A method without randomness: its error is all bias (``expected`` is the release)."""

    def variance(self, counts, n=None, d=None):
        return np.zeros(np.shape(counts))

    def expected(self, counts):
        return self.release(counts, None)


@register
class SmallCellSuppression(DeterministicBaseline):
    """Counts below the threshold published as 0 (the cell shown as suppressed)."""

    key = "suppression"
    name = "Small-cell suppression (not DP)"
    params = (EPSILON, THRESHOLD)
    references = ("Hundepool et al., Statistical Disclosure Control, Wiley 2012, ch. 5 "
                  "(cell suppression in frequency tables).",)

    def release(self, counts, rng):
        counts = _as_counts(counts)
        return np.where(counts >= self.threshold, counts, 0).astype(float)

    def explain(self):
        return (f"**Small-cell suppression.** Every count below {self.threshold} is withheld "
                "(published here as 0); the others are exact. The CSO published POWSCAR 2016 "
                "this way.\n\n" + _NOT_DP)


@register
class Rounding(DeterministicBaseline):
    """Every count rounded to the nearest multiple of the base (halves rounded up)."""

    key = "rounding"
    name = "Rounding (not DP)"
    params = (EPSILON, BASE)
    references = ("Hundepool et al., Statistical Disclosure Control, Wiley 2012, ch. 5 "
                  "(rounding of frequency tables).",)

    def release(self, counts, rng):
        counts = _as_counts(counts)
        return self.base * np.floor(counts / self.base + 0.5)

    def explain(self):
        return (f"**Rounding to base {self.base}.** Every count becomes the nearest multiple of "
                f"{self.base}: at most {self.base // 2} commuters off, always the same way for "
                "the same count.\n\n" + _NOT_DP)


@register
class RandomRounding(Baseline):
    """Unbiased random rounding: c = q·b + r goes up to (q+1)·b with probability r/b, else down
    to q·b; mean c, variance r(b − r)."""

    key = "random_rounding"
    name = "Random rounding (not DP)"
    params = (EPSILON, BASE)
    references = ("Fellegi, On the question of statistical confidentiality, JASA 1972 "
                  "(unbiased random rounding).",)

    def release(self, counts, rng):
        counts = _as_counts(counts)
        down = self.base * np.floor(counts / self.base)
        up = rng.random(counts.size) < (counts - down) / self.base
        return down + self.base * up

    def variance(self, counts, n=None, d=None):
        remainder = np.asarray(counts, dtype=float) % self.base
        return remainder * (self.base - remainder)

    def explain(self):
        return (f"**Random rounding to base {self.base}.** A count $c = qb + r$ is published as "
                f"$(q+1)b$ with probability $r/b$ and as $qb$ otherwise (b = {self.base}): right "
                "on average, variance $r(b-r)$, and a new draw at every release.\n\n" + _NOT_DP)


# -------------------------------------------------------------------------------- cell key
KEY_RANGE = 256  # record and cell keys 0–255, as in the ONS package
ONS_10_5, NOISY_14 = "ons_10_5", "noisy_14pct"
PTABLE = Param("ptable", "Perturbation table", NOISY_14, str, choices=(NOISY_14, ONS_10_5),
               help="noisy_14pct: a table of ±1/±2 perturbations that change about 14 % of cells "
                    "(as the ONS reported for Census 2021). ons_10_5: the table shipped with the "
                    "ONS package (counts below 10 to 0, the rest rounded to base 5; no noise).")
#: Cell keys per perturbation in the noisy table: 220 keys leave the count alone, 12 add ±1,
#: 6 add ±2 (36 of 256 = 14.1 % of cells changed; mean 0; variance 72/256 = 0.28).
NOISY_KEYS = {0: 220, -1: 12, 1: 12, -2: 6, 2: 6}
_ROWS = 750  # ptable rows (counts 1–750); larger counts reuse rows 501–750


def _ons_ptable_file() -> str:
    for file in importlib.metadata.files("cell-key-perturbation") or ():
        if file.name == "ptable_10_5_rule.csv":
            return str(file.locate())
    raise FileNotFoundError("the ONS package 'cell-key-perturbation' is installed without its "
                            "ptable_10_5_rule.csv; reinstall it (pip install -r requirements.txt)")


@functools.cache
def ptable(which: str) -> np.ndarray:
    """The perturbation table as an array ``[count row 0–750, cell key 0–255]`` of perturbations
    (row 0, for empty cells, is all 0: an empty cell has no records and is never published)."""
    table = np.zeros((_ROWS + 1, KEY_RANGE), dtype=np.int64)
    if which == ONS_10_5:
        frame = pd.read_csv(_ons_ptable_file())
        table[frame["pcv"].to_numpy(), frame["ckey"].to_numpy()] = frame["pvalue"].to_numpy()
    elif which == NOISY_14:
        row = np.repeat(list(NOISY_KEYS), list(NOISY_KEYS.values()))
        table[1:] = row
        # Never below 0: the smallest counts cannot lose more than they have.
        table[1:] = np.maximum(table[1:], -np.arange(1, _ROWS + 1)[:, None])
    else:
        raise ValueError(f"unknown ptable {which!r}; valid: {ONS_10_5}, {NOISY_14}")
    table.flags.writeable = False
    return table


def ptable_row(counts: np.ndarray) -> np.ndarray:
    """The ptable row of each count, the package's rule: the count itself up to 750, beyond it
    ((c − 1) mod 250) + 501, so large counts reuse rows 501–750."""
    counts = np.asarray(counts, dtype=np.int64)
    return np.where(counts <= _ROWS, counts, (counts - 1) % 250 + 501)


@register
class CellKey(Baseline):
    """ONS cell-key perturbation on aggregated counts (see the module docstring).

    On counts the cell key is drawn uniformly on 0–255 for every non-empty cell: the sum of c ≥ 1
    independent uniform record keys mod 256 is exactly uniform, so this is the method's
    distribution. ``simulate`` runs it from record keys, person by person; ``perturb`` takes given
    cell keys (a repeated table with the same people reuses them: that is the method's
    consistency).
    """

    key = "cell_key"
    name = "Cell-key perturbation (not DP)"
    params = (EPSILON, PTABLE, THRESHOLD)
    references = ("Fraser, Wooton. A proposed method for confidentialising tabular output to "
                  "protect against differencing. UNECE work session on statistical data "
                  "confidentiality, 2005.",
                  "Office for National Statistics. cell-key-perturbation (Python package), "
                  "version 3.1.0.")

    def perturb(self, counts, cell_keys) -> np.ndarray:
        """Published counts for these true counts and cell keys (threshold applied)."""
        counts = np.asarray(counts, dtype=np.int64)
        published = counts + ptable(self.ptable)[ptable_row(counts), cell_keys]
        return np.where(published >= self.threshold, published, 0).astype(float)

    def release(self, counts, rng):
        counts = _as_counts(counts)
        return self.perturb(counts, rng.integers(0, KEY_RANGE, counts.size))

    def simulate(self, items, d, rng):
        items = np.asarray(items, dtype=np.int64)
        record_keys = rng.integers(0, KEY_RANGE, items.size)
        counts = np.bincount(items, minlength=d)
        cell_keys = np.bincount(items, weights=record_keys, minlength=d).astype(np.int64)
        return self.perturb(counts, cell_keys % KEY_RANGE)

    def _moments(self, counts) -> tuple[np.ndarray, np.ndarray]:
        """Exact mean and variance of each published count over a uniform cell key (computed
        once per distinct count)."""
        values, inverse = np.unique(np.asarray(counts, dtype=np.int64), return_inverse=True)
        outcomes = self.perturb(np.repeat(values, KEY_RANGE),
                                np.tile(np.arange(KEY_RANGE), values.size)
                                ).reshape(values.size, KEY_RANGE)
        outcomes[values == 0] = 0.0
        return outcomes.mean(axis=1)[inverse], outcomes.var(axis=1)[inverse]

    def expected(self, counts):
        return self._moments(counts)[0]

    def variance(self, counts, n=None, d=None):
        return self._moments(counts)[1]

    def explain(self):
        table = ("the ONS package's shipped table *ptable_10_5_rule* (counts below 10 become 0, "
                 "the rest are rounded to base 5: no noise at all)" if self.ptable == ONS_10_5
                 else "a table of small perturbations: of the 256 cell keys, 220 leave the count "
                      "alone, 12 add +1, 12 add −1, 6 add +2 and 6 add −2 (about 14 % of cells "
                      "change, as the ONS reported for Census 2021; mean 0, variance 0.28)")
        return ("**Cell-key perturbation (ONS).** Every person carries a fixed random *record "
                "key* (0–255); a cell's *key* is the sum of its people's record keys mod 256; "
                "the published count is the true count plus the perturbation the table lists "
                f"for that count and key. Table used: {table}. Published counts below "
                f"{self.threshold} are suppressed (0 here). The same people always give the same "
                "cell the same noise, so repeating a table reveals nothing new.\n\n" + _NOT_DP)
