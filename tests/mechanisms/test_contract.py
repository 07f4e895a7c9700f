"""The contract every registered mechanism keeps, checked for every key in the registry.

In the spirit of scikit-learn's common estimator checks (``sklearn.utils.estimator_checks``): the
keys come from ``dpcore.mechanisms.names()`` when the tests are collected, so a mechanism registered
later is run through every check below without editing this file. A new *local* randomiser fails
the ε-LDP audit until its exact output distribution is written down in
``tests/mechanisms/output_distributions.py`` (the audit refuses to skip it).

Checks: metadata and shared parameter declarations; parameter validation through the class and
through ``build`` (range, choices, type, unknown names); ``release`` shape, dtype, finiteness and
input left alone; determinism for a seed; bad counts; ``explain``/``describe``; ``variance`` and
the mean (``expected`` or the truth) against many releases; ``simulate`` against ``release``; the
exact ε-LDP output-ratio audit of local randomisers.

Statistical checks use fixed seeds and tolerances derived from the sampling distributions (see
``stat_checks``): each call has a family-wise false-failure rate of ALPHA = 1e-4 (the variance
checks asymptotically, through the normal approximation of a sample variance), so the whole file
(about 95 such calls in the default profile, 65 more with ``slow``) fails falsely with probability
about 1% (1.6% with ``slow``) for a random seed (``DPCORE_TEST_SEED``) — and, the seed being
fixed, either always or never.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpcore.mechanisms import base, build, get, names
from tests.mechanisms.output_distributions import output_distribution
from tests.mechanisms.stat_checks import (
    assert_exact_ldp,
    assert_fits,
    assert_same_moments,
    assert_unbiased,
    assert_variance_any_law,
)

KEYS = names()
LOCAL_KEYS = names(model=base.LOCAL)
EPSILONS = [0.1, 1.0, 10.0]

#: Toy count vectors: no one, one busy cell, a spread over a few hundred cells (n = 3,289).
VECTORS = {"zeros": np.zeros(5, dtype=np.int64),
           "single": np.array([0, 25]),
           "spread": (np.arange(300) * 7919) % 23}
#: Domains below this size may be refused by a parameter that must fit the domain (top-k's k,
#: dBitFlip's d_b); the refusal must then name that parameter and the domain size.
SMALL_DOMAIN = 10


def shared_declaration(name: str) -> base.Param | None:
    """The one shared declaration of ε, δ or the neighbouring relation, if ``name`` is one."""
    return {"epsilon": base.EPSILON, "delta": base.DELTA, "neighbours": base.NEIGHBOURS}.get(name)


# ---------------------------------------------------------------------------------- metadata
@pytest.mark.parametrize("key", KEYS)
def test_metadata_and_shared_declarations(key):
    cls = get(key)
    assert cls.key == key and isinstance(cls.name, str) and cls.name.strip()
    assert cls.model in (base.CENTRAL, base.LOCAL, base.SHUFFLED, base.BASELINE)
    assert cls.references and all(isinstance(r, str) and r.strip() for r in cls.references)
    assert cls.approximation is None or cls.approximation.strip()
    declared = [p.name for p in cls.params]
    assert declared[0] == "epsilon" and len(set(declared)) == len(declared)
    for param in cls.params:   # ε, δ and neighbours are declared once, in base, for everyone
        shared = shared_declaration(param.name)
        assert shared is None or param is shared, f"{key} redeclares the shared '{param.name}'"
    assert cls.uses_delta == ("delta" in declared)
    mech = cls()                # every default passes its own declaration
    assert mech.settings == {p.name: p.default for p in cls.params}
    bits = mech.bits_per_user(300)
    if cls.model in (base.CENTRAL, base.BASELINE):
        assert bits is None
    else:
        assert bits > 0


# ------------------------------------------------------------------------ parameter validation
def invalid_values(param: base.Param) -> list[tuple[str, object, type, list[str]]]:
    """(label, value, error, fragments the message must contain) for one declared parameter."""
    name, interval = f"'{param.name}'", param.interval()
    cases = [("none", None, TypeError, [name]), ("bool", True, TypeError, [name])]
    if param.choices is not None:
        numbers = [c for c in param.choices if base._is_number(c)]
        only_numbers = len(numbers) == len(param.choices)
        cases.append(("not-a-choice", "not-a-choice", TypeError if only_numbers else ValueError,
                      [name, interval]))
        if numbers:
            cases.append(("number-not-a-choice", max(numbers) + 1, ValueError, [name, interval]))
        else:
            cases.append(("number-for-a-word", 1, TypeError, [name]))
        return cases
    cases += [("string", "1", TypeError, [name]), ("nan", math.nan, ValueError, [name, interval]),
              ("infinite", math.inf, ValueError, [name, interval])]
    if param.low is not None:
        below = param.low if param.low_open else param.low - 1
        cases.append(("below", below, ValueError, [name, interval]))
    if param.high is not None:
        above = param.high if param.high_open else param.high + 1
        cases.append(("above", above, ValueError, [name, interval]))
    if param.kind is int:
        cases.append(("fraction", (param.low or 0) + 1.5, ValueError, [name, interval]))
    return cases


INVALID = [pytest.param(key, p.name, value, error, fragments, id=f"{key}-{p.name}-{label}")
           for key in KEYS for p in get(key).params
           for label, value, error, fragments in invalid_values(p)]
VIA = {"class": lambda key, **values: get(key)(**values), "build": build}


@pytest.mark.parametrize("via", VIA)
@pytest.mark.parametrize("key, name, value, error, fragments", INVALID)
def test_invalid_parameter_value_is_refused_naming_it(key, name, value, error, fragments, via):
    with pytest.raises(error) as raised:
        VIA[via](key, **{name: value})
    message = str(raised.value)
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} missing from {message!r}"


@pytest.mark.parametrize("via", VIA)
@pytest.mark.parametrize("key", KEYS)
def test_unknown_parameter_is_refused_naming_it(key, via):
    with pytest.raises((TypeError, ValueError), match="'sensitivity'"):
        VIA[via](key, sensitivity=2.0)


def accepted_values(param: base.Param) -> list:
    """Every choice, or the closed ends of the range: the stated interval must not be too narrow."""
    if param.choices is not None:
        return list(param.choices)
    ends = [] if param.low is None or param.low_open else [param.low]
    return ends + ([] if param.high is None or param.high_open else [param.high])


@pytest.mark.parametrize("key, name", [pytest.param(k, p.name, id=f"{k}-{p.name}")
                                       for k in KEYS for p in get(k).params])
def test_values_inside_the_stated_interval_are_accepted(key, name):
    (param,) = [p for p in get(key).params if p.name == name]
    for value in accepted_values(param):
        assert getattr(build(key, **{name: value}), name) == value


# ------------------------------------------------------------------------------------ release
def release_or_refusal(mech, counts, rng):
    """The release, or None when the mechanism refuses this (small) domain with a ValueError that
    names the parameter that does not fit it and the domain size."""
    try:
        return mech.release(counts, rng)
    except ValueError as error:
        message = str(error)
        named = [p.name for p in mech.params if f"'{p.name}'" in message]
        assert len(counts) < SMALL_DOMAIN, f"refused a domain of {len(counts)} cells: {message}"
        assert named and str(len(counts)) in message, f"unclear refusal: {message}"
        return None


@pytest.mark.parametrize("vector", VECTORS)
@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("key", KEYS)
def test_release_shape_dtype_finite_and_input_untouched(key, epsilon, vector, seed):
    counts = VECTORS[vector].copy()
    out = release_or_refusal(get(key)(epsilon=epsilon), counts, np.random.default_rng(seed))
    np.testing.assert_array_equal(counts, VECTORS[vector])
    if out is None:
        return
    assert isinstance(out, np.ndarray) and out.shape == counts.shape and out.dtype == np.float64
    assert np.isfinite(out).all()


@pytest.mark.parametrize("key", KEYS)
def test_same_seed_same_release_other_seed_other_release(key, seed):
    """Also: no global random state is read, and whole-number float counts act like integers."""
    mech, counts = get(key)(), VECTORS["spread"]
    np.random.seed(0)
    first = mech.release(counts, np.random.default_rng(seed))
    np.random.seed(1)
    np.testing.assert_array_equal(first, mech.release(counts, np.random.default_rng(seed)))
    np.testing.assert_array_equal(first, mech.release(counts.astype(float),
                                                      np.random.default_rng(seed)))
    items, d = np.repeat(np.arange(len(counts)), counts), len(counts)
    sim = mech.simulate(items, d, np.random.default_rng(seed))
    np.testing.assert_array_equal(sim, mech.simulate(items, d, np.random.default_rng(seed)))
    variance = mech.variance(counts)
    if variance is not None and not variance.any():  # a deterministic (not DP) baseline
        assert mech.model == base.BASELINE
        np.testing.assert_array_equal(first, mech.release(counts, np.random.default_rng(seed + 1)))
        return
    assert not np.array_equal(first, mech.release(counts, np.random.default_rng(seed + 1)))
    assert not np.array_equal(sim, mech.simulate(items, d, np.random.default_rng(seed + 1)))


@pytest.mark.parametrize("key", KEYS)
def test_bad_counts_get_a_clear_message(key, rng):
    mech = get(key)()
    with pytest.raises(ValueError, match="cell 12"):
        mech.release(np.where(np.arange(20) == 12, -1, 3), rng)
    with pytest.raises(ValueError, match="one-dimensional"):
        mech.release(np.ones((4, 5), dtype=np.int64), rng)
    with pytest.raises(ValueError, match="(?i)finite|whole"):
        mech.release(np.array([1.0, np.nan] * 10), rng)


@pytest.mark.parametrize("key", LOCAL_KEYS)
def test_reports_outside_the_domain_are_refused_naming_the_person(key, rng):
    with pytest.raises(ValueError, match="item 7 of person 1"):
        get(key)().perturb(np.array([0, 7]), 5, rng)


# ------------------------------------------------------------------------------------- texts
@pytest.mark.parametrize("key", KEYS)
def test_explain_and_describe(key):
    """explain(): markdown with a formula about this instance (its ε), never a docstring."""
    mech = get(key)(epsilon=0.7)
    text = mech.explain()
    assert isinstance(text, str) and text.strip()
    assert "ε" in text or "\\varepsilon" in text
    if mech.model == base.BASELINE:  # ε does not apply: the text must say so, not quote ε
        assert "Not differentially private" in text
    else:
        assert "0.7" in text and "$" in text and "In plain words" in text
    docstrings = {(c.__doc__ or "").strip() for c in type(mech).__mro__} - {""}
    assert not any(doc in text for doc in docstrings), "a docstring is shown as page text"
    line = mech.describe()
    assert f"[{key}]" in line and "\n" not in line and "epsilon=0.7" in line


# ----------------------------------------------------------------- variance and mean by simulation
#: Zeros, ties, a heavy cell; every non-zero cell at least 60 (×10 at ε = 0.1) so that no estimate
#: is a rare-event mixture (a cell near a suppression threshold needs far more runs: the stability
#: histogram's tests cover that regime with its exact probabilities).
VARIANCE_COUNTS = np.array([0, 0, 60, 60, 0, 250, 90, 0, 120, 0, 65, 400, 0, 80, 0, 0, 1500, 0, 70,
                            0])
RUNS = 2000
WITH_VARIANCE = [k for k in KEYS if get(k)().variance(VARIANCE_COUNTS) is not None]


def variance_counts(epsilon: float) -> np.ndarray:
    return VARIANCE_COUNTS * max(1, round(1 / epsilon))


@pytest.mark.parametrize("epsilon", [0.5, 3.0, 20.0])
@pytest.mark.parametrize("key", WITH_VARIANCE)
def test_variance_of_some_cells_given_the_tables_n_and_d(key, epsilon):
    """A cell's variance depends on its count and the table's n and d only: evaluated at some of
    the cells with n and d given, it is the whole table's (the planner relies on this to evaluate
    a table of 9.8 M cells at its few hundred distinct counts). Also the exact mean, if any."""
    mech, counts = get(key)(epsilon=epsilon), VARIANCE_COUNTS
    some = [0, 5, 11, 16, 18]
    n, d = int(counts.sum()), len(counts)
    np.testing.assert_allclose(mech.variance(counts[some], n=n, d=d), mech.variance(counts)[some],
                               rtol=1e-12)
    if hasattr(mech, "expected"):
        np.testing.assert_allclose(mech.expected(counts[some]), mech.expected(counts)[some],
                                   rtol=1e-12)


@pytest.mark.parametrize("epsilon", [1.0, 2.0, pytest.param(0.1, marks=pytest.mark.slow),
                                     pytest.param(10.0, marks=pytest.mark.slow)])
@pytest.mark.parametrize("key", WITH_VARIANCE)
def test_variance_and_mean_against_many_releases(key, epsilon, seed):
    """Mean: against ``expected(counts)`` for mechanisms that declare their bias, else the truth;
    per cell, z with the theoretical variance, Bonferroni (``assert_unbiased``). Variance: per cell
    and in total, z with fourth-moment standard errors (``assert_variance_any_law``). Each check's
    family-wise false-failure rate is 1e-4."""
    mech, counts = get(key)(epsilon=epsilon), variance_counts(epsilon)
    variance = mech.variance(counts)
    assert variance.shape == counts.shape and (variance >= 0).all()
    rng = np.random.default_rng(seed)
    samples = np.stack([mech.release(counts, rng) for _ in range(RUNS)])
    expected = mech.expected(counts) if hasattr(mech, "expected") else counts
    if not variance.any():  # deterministic: every release is the expected table
        np.testing.assert_array_equal(samples, np.broadcast_to(expected, samples.shape))
        return
    assert_unbiased(samples, expected, variance)
    assert_variance_any_law(samples, variance)


# ---------------------------------------------------------------- per-user protocol vs release
#: Regular as VARIANCE_COUNTS: a few people in a cell make the stability histogram's estimate a
#: rare-event mixture that one sampler may show once in 1,500 runs and the other never.
SIM_COUNTS = np.array([0, 150, 60, 60, 0, 80, 70, 163, 0, 90, 65, 100])       # n = 838
SIM_RUNS = 1500


@pytest.mark.parametrize("epsilon, scale", [(1.0, 1), pytest.param(4.0, 10, marks=pytest.mark.slow)])
@pytest.mark.parametrize("key", KEYS)
def test_simulate_agrees_with_release(key, epsilon, scale, seed):
    """Per cell, means (Welch z) and variances (fourth-moment z) agree, false-failure rate 1e-4.

    Only per-cell laws are a registry-wide promise: subset selection, dBitFlip and Apple's sketches
    state that their fast release drops the correlation between cells (the sketches also the fixed
    hash family's collision term, ``tests/mechanisms/test_sketches.py``), and local hashing's
    ``simulate`` runs a real,
    only pairwise-independent hash family whose sums over cells legitimately differ from the
    idealised release (OLH at ε = 4: variance of the total 8.8k vs 12.8k). Joint laws are tested
    per mechanism where they are promised (GRR, Hadamard)."""
    mech, counts = get(key)(epsilon=epsilon), SIM_COUNTS * scale
    rng = np.random.default_rng(seed)
    items = rng.permutation(np.repeat(np.arange(len(counts)), counts))
    fast = np.stack([mech.release(counts, rng) for _ in range(SIM_RUNS)])
    slow = np.stack([mech.simulate(items, len(counts), rng) for _ in range(SIM_RUNS)])
    assert_same_moments(fast, slow)


# ------------------------------------------------------------------------- exact ε-LDP audit
@pytest.mark.parametrize("d", [2, 3, 5])
@pytest.mark.parametrize("epsilon", [0.5, 1.0, 2.0])
@pytest.mark.parametrize("key", LOCAL_KEYS)
def test_local_randomiser_is_exactly_epsilon_ldp(key, epsilon, d):
    """max over outputs y and inputs x, x' of P[x→y]/P[x'→y] is at most e^ε (float slack 1e-9 in
    the log) and equals the loss the mechanism is known to attain (ε, or less where stated)."""
    mech = get(key)(epsilon=epsilon)
    definition = output_distribution(mech, d)
    P, loss = definition.P, definition.loss
    assert P.shape[0] == d and loss <= epsilon
    assert_exact_ldp(P, epsilon, attained=loss == epsilon)
    assert_exact_ldp(P, loss)


CLIENT_REPORTS_PER_CELL = 8000


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 2.0])
@pytest.mark.parametrize("key", LOCAL_KEYS)
def test_local_client_sends_reports_from_the_audited_distribution(key, epsilon, seed):
    """The audit above is about the mechanism as implemented: its real client's reports, from every
    cell of a 5-cell domain, fit P[x, ·] (one chi-square over all (x, report code) pairs,
    false-failure rate 1e-4; local hashing by the code (H(v), y), see ``output_distributions``)."""
    mech, d = get(key)(epsilon=epsilon), 5
    definition = output_distribution(mech, d)
    items = np.repeat(np.arange(d), CLIENT_REPORTS_PER_CELL)
    reports = mech.perturb(items, d, np.random.default_rng(seed), **definition.public)
    codes = np.asarray(definition.encode(reports), dtype=np.int64)
    probabilities = definition.code_probabilities()
    outputs = probabilities.shape[1]
    assert ((codes >= 0) & (codes < outputs)).all(), "a report outside the enumerated outputs"
    assert_fits(items * outputs + codes, probabilities.ravel() / d)
