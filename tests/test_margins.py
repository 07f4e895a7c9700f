"""The 95 % margin of error in release.csv (dpcore.evaluation.margins): the stated coverage holds
(exact law for flat publishes, simulation of the method for WLS), and the column depends on
nothing confidential (the same for neighbouring tables)."""

import math

import numpy as np
import pytest
from scipy import stats

from dpcore.data import datasets, views
from dpcore.evaluation import margins
from dpcore.interfaces import publish, published_domain
from dpcore.mechanisms import topdown

SOURCE = publish.input_entry("test", views.View(), {"source": published_domain.BUNDLED})
ALPHA = 1e-4   # false-failure rate of each statistical check


def noise_law(mechanism: str, scale: float) -> tuple[np.ndarray, np.ndarray]:
    """Support and mass of OpenDP's discrete Laplace (P ∝ e^{−|z|/s}) or discrete Gaussian
    (P ∝ e^{−z²/2s²}) noise, over a support whose tail mass is below 10⁻²⁰."""
    reach = int(60 * scale) + 5
    z = np.arange(-reach, reach + 1)
    log_mass = -np.abs(z) / scale if mechanism == publish.DISCRETE_LAPLACE \
        else -z.astype(float) ** 2 / (2 * scale ** 2)
    mass = np.exp(log_mass - log_mass.max())
    return z, mass / mass.sum()


def covered(mechanism: str, scale: float, margin: int) -> float:
    z, mass = noise_law(mechanism, scale)
    return float(mass[np.abs(z) <= margin].sum())


@pytest.mark.parametrize("mechanism", [publish.DISCRETE_LAPLACE, publish.GAUSSIAN])
@pytest.mark.parametrize("scale", [0.4, 1.0, 2.0, 3.3, 10.0, 57.1])
def test_flat_margin_is_the_smallest_whole_number_covering_95_percent(mechanism, scale):
    """From OpenDP's accuracy functions, checked against the noise's exact law."""
    m = margins.noise_margin(mechanism, scale)
    assert covered(mechanism, scale, m) >= 0.95
    assert m == 0 or covered(mechanism, scale, m - 1) < 0.95


def publish_flat_many(od, mechanism, epsilon, delta, postprocess, repeats):
    errors, margin = [], None
    for _ in range(repeats):
        result = publish.publish(od, mechanism, epsilon, delta=delta, postprocess=postprocess,
                                 source=SOURCE)
        errors.append(result.released["fine"] - od.to_dense())
        margin = result.manifest["levels"][0][margins.COLUMN]
        listed = result.table[margins.COLUMN]
        assert (listed == margin).all() and listed.dtype.kind == "i"
    return np.concatenate(errors), margin


@pytest.mark.parametrize("mechanism, delta", [(publish.DISCRETE_LAPLACE, 0.0),
                                              (publish.GAUSSIAN, 1e-6)])
def test_flat_publishes_cover_the_truth_at_the_stated_rate(mechanism, delta):
    """Raw counts: coverage is the law's P[|noise| ≤ m] (binomial check, both sides); counts
    clipped at 0: at least that (one-sided), on a table with many small counts where clipping
    matters."""
    od = datasets.load("ireland_county")
    errors, m = publish_flat_many(od, mechanism, 0.5, delta, "base", 3)
    scale = publish.calibrate(mechanism, 0.5, delta).scale
    p = covered(mechanism, scale, m)
    inside = np.count_nonzero(np.abs(errors) <= m)
    assert stats.binomtest(inside, errors.size, p).pvalue > ALPHA
    clipped, m_clipped = publish_flat_many(od, mechanism, 0.5, delta, "base_pos", 3)
    assert m_clipped == m
    inside = np.count_nonzero(np.abs(clipped) <= m)
    assert stats.binomtest(inside, clipped.size, p, alternative="less").pvalue > ALPHA


def simulate_wls(children_per_parent, truth_fine, mechanism, fine_scale, coarse_scale,
                 variances, postprocess, rng):
    """One WLS publish by the method's own functions, with NumPy noise of the publish's law."""
    groups = np.repeat(np.arange(len(children_per_parent)), children_per_parent)
    truth_coarse = np.bincount(groups, weights=truth_fine, minlength=len(children_per_parent))

    def noise(scale, size):
        if mechanism == publish.GAUSSIAN:
            return margins.discrete_gaussian(rng, scale, size)
        p = 1 - math.exp(-1 / scale)
        return rng.geometric(p, size) - rng.geometric(p, size)
    fine, coarse = publish.least_squares(truth_fine + noise(fine_scale, truth_fine.size),
                                         truth_coarse + noise(coarse_scale, truth_coarse.size),
                                         groups, *variances)
    fine = publish.integer_consistent(fine, coarse, groups)
    if postprocess == "base_pos":
        fine = np.maximum(fine, 0)
    coarse = np.bincount(groups, weights=fine, minlength=truth_coarse.size)
    return fine - truth_fine, coarse - truth_coarse, groups


@pytest.mark.parametrize("mechanism", [publish.DISCRETE_LAPLACE, publish.GAUSSIAN])
@pytest.mark.parametrize("postprocess", ["base", "base_pos"])
def test_wls_margins_cover_at_least_95_percent_on_any_table(mechanism, postprocess):
    """Parents of 1, 3, 12 and 60 fine cells, on a table with empty, small and large counts
    (not the zero stand-in): over repeated publishes each group's fine cells and parents are
    within their margins at least 95 % of the time (one-sided binomial checks, Bonferroni)."""
    children = np.array([1, 3, 12, 60])
    rng = np.random.default_rng(11)
    truth = rng.choice([0, 0, 1, 4, 250], size=children.sum()).astype(float)
    fine_noise = publish.calibrate(mechanism, 0.5, 5e-7 if mechanism == publish.GAUSSIAN else 0)
    coarse_noise = publish.calibrate(mechanism, 0.5, 5e-7 if mechanism == publish.GAUSSIAN else 0)
    fine_margin, coarse_margin = margins.wls(
        children, mechanism, fine_noise.scale, coarse_noise.scale, fine_noise.variance,
        coarse_noise.variance, postprocess)
    assert np.isnan(coarse_margin).all() == (postprocess == "base_pos")
    runs = 1500
    fine_in = np.zeros(children.size)
    coarse_in = np.zeros(children.size)
    for _ in range(runs):
        fine_error, coarse_error, groups = simulate_wls(
            children, truth, mechanism, fine_noise.scale, coarse_noise.scale,
            (fine_noise.variance, coarse_noise.variance), postprocess, rng)
        fine_in += np.bincount(groups, weights=np.abs(fine_error) <= fine_margin[groups])
        coarse_in += np.abs(coarse_error) <= coarse_margin
    checks = 2 * children.size
    for count, trials in zip(fine_in, runs * children):
        assert stats.binomtest(int(count), int(trials), 0.95,
                               alternative="less").pvalue > ALPHA / checks
    if postprocess == "base":
        for count in coarse_in:
            assert stats.binomtest(int(count), runs, 0.95,
                                   alternative="less").pvalue > ALPHA / checks
    # and not absurdly wide: a fine cell's margin is at most its own noise's plus 1 (rounding)
    assert (fine_margin <= margins.noise_margin(mechanism, fine_noise.scale) + 1).all()


def test_wls_publish_writes_the_margins_by_parent_size():
    od = datasets.load("ireland_ed").subset_by_parent(["Leitrim", "Longford"])
    result = publish.publish_levels(od, publish.DISCRETE_LAPLACE, 1.0, postprocess="base",
                                    source=SOURCE)
    table = result.table
    assert table[margins.COLUMN].notna().all()
    entry = result.manifest["margin_of_error"]
    assert entry["column"] == margins.COLUMN and "stand-in" in entry["how"]
    by_size = result.manifest["levels"][0][margins.COLUMN]["by_cells_in_parent"]
    assert set(table.loc[table["level"] == "fine level", margins.COLUMN]) <= set(by_size.values())
    clipped = publish.publish_levels(od, publish.DISCRETE_LAPLACE, 1.0, postprocess="base_pos",
                                     source=SOURCE)
    parents = clipped.table["level"] == "parent level"
    assert clipped.table.loc[parents, margins.COLUMN].isna().all()
    assert clipped.table.loc[~parents, margins.COLUMN].notna().all()
    assert "clipped" in clipped.manifest["margin_of_error"]["note"]
    assert "rows without one" in margins.sentence(clipped.table,
                                                  clipped.manifest["margin_of_error"])


def test_topdown_margins_are_the_fit_s_bound():
    od = datasets.load("ireland_ed").subset_by_parent(["Leitrim"])
    result = publish.publish_topdown(od, 1.0, delta=1e-6, source=SOURCE)
    levels = result.manifest["levels"]
    bounds = topdown.error_bound([lv["scale"] for lv in levels], [lv["cells"] for lv in levels],
                                 0.05)
    assert [lv[margins.COLUMN] for lv in levels] == [math.floor(b) for b in bounds]
    for lv in levels:
        rows = result.table[result.table["level"] == lv["name"]]
        assert (rows[margins.COLUMN] == lv[margins.COLUMN]).all()
    assert "bound" in result.manifest["margin_of_error"]["how"]


@pytest.mark.parametrize("method", ["flat", "wls", "topdown"])
def test_the_margin_column_is_the_same_for_neighbouring_tables(method):
    """One commuter moved (substitution neighbours): every cell's margin and the manifest's
    margin entries are identical — they come from public parameters only."""
    od = datasets.load("ireland_ed").subset_by_parent(["Leitrim"])
    dense = od.to_dense().copy()
    first, second = np.flatnonzero(dense)[:2]
    dense[first] -= 1
    dense[second] += 1
    neighbour = type(od).from_dense(od.name, od.origins, od.destinations,
                                    dense.reshape(od.n_origins, od.n_destinations))
    assert neighbour.n == od.n and np.abs(neighbour.to_dense() - od.to_dense()).sum() == 2
    columns, entries = [], []
    for table in (od, neighbour):
        if method == "flat":
            result = publish.publish(table, publish.DISCRETE_LAPLACE, 1.0, source=SOURCE)
        elif method == "wls":
            result = publish.publish_levels(table, publish.GAUSSIAN, 1.0, delta=1e-6,
                                            source=SOURCE)
        else:
            result = publish.publish_topdown(table, 1.0, delta=1e-6, source=SOURCE)
        rows = result.table.copy()
        if "level" not in rows:
            rows["level"] = "fine"
        key = rows["level"].astype(str) + "|" + rows["origin"].astype(str) + "|" + \
            rows["destination"].astype(str)
        columns.append(dict(zip(key, rows[margins.COLUMN])))
        entries.append((result.manifest["margin_of_error"],
                        [lv[margins.COLUMN] for lv in result.manifest["levels"]]))
    assert entries[0] == entries[1]
    shared = set(columns[0]) & set(columns[1])
    assert len(shared) > 10
    assert all(columns[0][k] == columns[1][k] for k in shared)


@pytest.mark.parametrize("sigma, cells", [(0.4, 3), (0.7, 5), (3.0, 3)])
def test_the_sum_of_discrete_gaussians_is_drawn_from_its_exact_law(sigma, cells):
    """The law the WLS simulation draws sibling sums from is the convolution power of the
    discrete Gaussian's mass (exact even at σ < 1, where it is not a discrete Gaussian)."""
    support, mass = margins._gaussian_sum_law(sigma, 1)
    convolved, low = mass, support[0]
    for _ in range(cells - 1):
        convolved, low = np.convolve(convolved, mass), low + support[0]
    direct = dict(zip(range(low, low + convolved.size), convolved))
    values, law = margins._gaussian_sum_law(sigma, cells)
    assert max(abs(direct.get(v, 0.0) - p) for v, p in zip(values.tolist(), law)) < 1e-14
    assert law.sum() == pytest.approx(1.0)
