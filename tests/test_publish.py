"""Publishing: OpenDP's noise has the spread it should, two publishes differ, the manifest says
everything, consistent levels sum exactly (the ledger: tests/test_ledger.py)."""

import json
import math

import numpy as np
import pytest
from scipy import stats

from dpcore import mechanisms
from dpcore.data import datasets, views
from dpcore.interfaces import cli, publish, published_domain
from dpcore.mechanisms.base import ADD_REMOVE
from tests.huge import huge_matrix

ALPHA = 1e-4  # family-wise false-failure rate of each statistical check
#: A manifest input (the domain's entry is what the manifest needs; the tests' data vary).
SOURCE = publish.input_entry("test", views.View(), {"source": published_domain.BUNDLED})
CELLS = 20_000


def discrete_laplace_moments(scale: float) -> tuple[float, float]:
    """Variance and excess kurtosis of the two-sided geometric law P(z) ∝ α^|z|, α = e^{−1/s},
    summed exactly over |z| ≤ 60·s (the tail beyond is below 10⁻²⁶)."""
    z = np.arange(-int(60 * scale) - 1, int(60 * scale) + 2)
    p = np.exp(-np.abs(z) / scale)
    p /= p.sum()
    variance = float(np.sum(p * z ** 2))
    return variance, float(np.sum(p * z ** 4)) / variance ** 2 - 3


def assert_spread(noise: np.ndarray, variance: float, excess_kurtosis: float) -> None:
    """Mean 0 and sample variance within the z-bound of their sampling distributions: s²/σ² has
    standard error √(2/(N−1) + κ/N); the mean σ/√N (two checks: Bonferroni α/2 each)."""
    n = noise.size
    z = stats.norm.isf(ALPHA / 4)
    assert abs(noise.mean()) <= z * math.sqrt(variance / n)
    ratio = noise.var(ddof=1) / variance
    assert abs(ratio - 1) <= z * math.sqrt(2 / (n - 1) + excess_kurtosis / n), ratio


@pytest.mark.parametrize("epsilon,neighbours", [(1.0, "substitution"), (0.3, ADD_REMOVE)])
def test_discrete_laplace_noise_spread(epsilon, neighbours):
    noise = publish.calibrate(publish.DISCRETE_LAPLACE, epsilon, neighbours=neighbours)
    sensitivity = 2 if neighbours == "substitution" else 1
    assert noise.scale == pytest.approx(sensitivity / epsilon, rel=1e-6)
    assert noise.measurement.map(sensitivity) <= epsilon
    counts = np.full(CELLS, 1000, dtype=np.int64)
    released = publish.noisy(noise, counts)
    assert released.dtype == np.int64
    variance, kurtosis = discrete_laplace_moments(noise.scale)
    assert noise.variance == pytest.approx(variance, rel=1e-9)
    assert_spread(released - counts, variance, kurtosis)


def test_gaussian_noise_spread_and_zcdp():
    noise = publish.calibrate(publish.GAUSSIAN, 1.0, 1e-6)
    assert noise.rho == pytest.approx(1 / noise.scale ** 2, rel=1e-9)  # ρ = Δ₂²/(2σ²), Δ₂ = √2
    released = publish.noisy(noise, np.zeros(CELLS, dtype=np.int64))
    assert_spread(released.astype(float), noise.scale ** 2, 0.0)


def test_two_publishes_differ_and_are_integers():
    od = datasets.load("ireland_county")
    a = publish.publish(od, publish.DISCRETE_LAPLACE, 1.0, postprocess="base", source=SOURCE)
    b = publish.publish(od, publish.DISCRETE_LAPLACE, 1.0, postprocess="base", source=SOURCE)
    assert not np.array_equal(a.released["fine"], b.released["fine"])
    assert (a.released["fine"] - od.to_dense()).std() > 1


def test_manifest_and_files(tmp_path):
    code = cli.main(["publish", "--dataset", "toy_town", "--mechanism", "gaussian", "--epsilon",
                     "2", "--delta", "1e-7", "--out", str(tmp_path)])
    assert code == 0
    text = (tmp_path / "manifest.json").read_text()
    manifest = json.loads(text)
    assert "sha256" not in text and "hash" not in text
    assert manifest["input"]["label"] == "unlabelled"  # no --label
    assert manifest["input"]["domain"]["source"] == published_domain.BUNDLED
    assert manifest["levels"][0]["cells"] == datasets.load("toy_town").domain_size
    released = np.loadtxt(tmp_path / "release.csv", delimiter=",", skiprows=1, usecols=2)
    assert manifest["total"]["value"] == released.sum()
    assert "not published" in manifest["total"]["how"]
    assert manifest["epsilon"] == 2 and manifest["delta"] == 1e-7
    assert manifest["rho_zcdp"] > 0 and manifest["opendp_version"] == publish.opendp_version()
    assert "substitution" in manifest["neighbouring_relation"]
    assert manifest["privacy_unit"] == publish.PRIVACY_UNIT
    assert manifest["post_processing"] == publish.POSTPROCESS["base_pos"]
    assert "ε = 2" in manifest["guarantee"] and "δ = 1e-07" in manifest["guarantee"]
    assert manifest["date"].endswith("+00:00")
    lines = (tmp_path / "release.csv").read_text().splitlines()
    assert lines[0] == "origin,destination,count,margin_of_error_95"
    assert "true" not in lines[0]  # the truth is never published
    margin = manifest["levels"][0]["margin_of_error_95"]
    assert {line.rsplit(",", 1)[1] for line in lines[1:]} == {str(margin)}
    assert manifest["margin_of_error"]["column"] == "margin_of_error_95"


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="publishing supports"):
        publish.calibrate("oue", 1.0)
    with pytest.raises(ValueError, match="'delta' parameter of the Gaussian mechanism must be in"):
        publish.calibrate(publish.GAUSSIAN, 1.0)
    with pytest.raises(ValueError, match="leave δ out"):
        publish.calibrate(publish.DISCRETE_LAPLACE, 1.0, 1e-6)
    od = datasets.load("toy_town")
    with pytest.raises(ValueError, match="the others use the true total"):
        publish.publish(od, publish.DISCRETE_LAPLACE, 1.0, postprocess="norm", source=SOURCE)


@pytest.mark.parametrize("postprocess", ["base", "base_pos"])
def test_consistent_levels_sum_exactly(postprocess):
    od = datasets.load("ireland_ed").subset_by_parent(["Leitrim"])
    result = publish.publish_levels(od, publish.DISCRETE_LAPLACE, 1.0, fine_share=0.7,
                                    postprocess=postprocess, source=SOURCE)
    groups, parent = publish._parent_cells(od)
    fine, coarse = result.released["fine"], result.released["parent"]
    assert fine.dtype == np.int64 and coarse.dtype == np.int64
    np.testing.assert_array_equal(np.bincount(groups, weights=fine, minlength=coarse.size),
                                  coarse)
    levels = result.manifest["levels"]
    assert [lv["epsilon"] for lv in levels] == pytest.approx([0.7, 0.3])
    assert "70% fine / 30% parent" in result.manifest["consistency"]
    assert set(result.table["level"]) == {"fine level", "parent level"}  # roles, no names
    assert [lv["name"] for lv in result.manifest["levels"]] == ["fine level", "parent level"]


def test_least_squares_variances_match_theory():
    """Least squares on simulated noise: the error variance at each level is the closed form
    (chi-square-type bound on the sample variance of normal noise, α split over two checks)."""
    rng = np.random.default_rng(4)
    m, parents, runs = 6, 50, 400
    groups = np.repeat(np.arange(parents), m)
    vf, vc = 4.0, 1.5
    fine_err, coarse_err = [], []
    for _ in range(runs):
        f, c = least = publish.least_squares(rng.normal(0, math.sqrt(vf), m * parents),
                                             rng.normal(0, math.sqrt(vc), parents), groups,
                                             vf, vc)
        np.testing.assert_allclose(np.bincount(groups, weights=f), c)
        fine_err.append(least[0][::m])   # one child per parent: independent across parents
        coarse_err.append(least[1])
    want_fine, want_coarse = publish.level_variances(np.full(parents, m), vf, vc)
    for errors, want in ((np.concatenate(fine_err), want_fine),
                         (np.concatenate(coarse_err), want_coarse)):
        n = errors.size
        z = stats.norm.isf(ALPHA / 4)
        assert abs(errors.var() / want - 1) <= z * math.sqrt(2 / n)
    assert want_coarse < vc and want_fine < vf


def test_integer_consistent_rounding():
    fine = np.array([0.4, 0.4, 0.4, 2.9, -1.2, 5.5])
    groups = np.array([0, 0, 0, 1, 1, 1])
    coarse = np.array([1.2, 7.2])
    out = publish.integer_consistent(fine, coarse, groups)
    np.testing.assert_array_equal(np.bincount(groups, weights=out), [1, 7])
    assert np.all(np.abs(out - fine) < 1)


def test_a_huge_domain_is_refused_before_any_noise_is_drawn():
    """6.4·10⁷ cells: a published table needs a noisy value for every cell, so it is refused
    with the reason and what to do (not a DomainTooLargeError after minutes of OpenDP)."""
    od = huge_matrix()
    assert "every one of them" in publish.too_large(od)
    assert publish.too_large(datasets.load("ireland_ed")) is None
    for call in (publish.publish, publish.publish_levels):
        with pytest.raises(ValueError, match="choose some areas in the sidebar or roll up"):
            call(od, publish.DISCRETE_LAPLACE, 1.0, source=SOURCE)


@pytest.mark.parametrize("epsilon", ["1e-15", "1e-16"])
def test_budgets_opendp_cannot_calibrate_are_refused_with_the_range(tmp_path, capsys, epsilon):
    """ε this small used to end in OpenDP's traceback; ε's one declared range refuses it first."""
    code = cli.main(["publish", "--dataset", "toy_town", "--mechanism", "discrete_laplace",
                     "--epsilon", epsilon, "--out", str(tmp_path / "out")])
    assert code == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert "--epsilon must be in [1e-06, 20]" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_an_opendp_refusal_to_calibrate_is_a_message(monkeypatch):
    import opendp.prelude as dp

    def refuse(*_args):
        raise dp.OpenDPException("FailedFunction", "scale overflows")
    monkeypatch.setattr(publish, "_calibrated", refuse)
    with pytest.raises(ValueError, match="OpenDP cannot calibrate Discrete Laplace.* at ε = 0.001"
                                         ": scale overflows.*choose a larger ε"):
        publish.calibrate(publish.DISCRETE_LAPLACE, 0.001)


def test_an_opendp_failure_while_drawing_is_a_message():
    import opendp.prelude as dp

    def refuse(_):
        raise dp.OpenDPException("FailedFunction", "sum overflowed i64")
    noise = publish.calibrate(publish.DISCRETE_LAPLACE, 1.0)
    broken = publish.Noise(noise.mechanism, 1.0, 0.0, noise.neighbours, noise.scale, None, refuse)
    with pytest.raises(ValueError, match="OpenDP could not draw the noise at ε = 1.*overflowed"):
        publish.noisy(broken, np.zeros(3, dtype=np.int64))


def test_declared_codes_are_split_deduplicated_and_bounded():
    domain = published_domain.of_codes("A, B;C\nA  D")
    assert list(domain.origins.ids) == ["A", "B", "C", "D"] and domain.public
    assert domain.manifest_entry() == {"source": published_domain.CODES,
                                       "description": "4 declared zone codes",
                                       "origins": 4, "destinations": 4}
    with pytest.raises(ValueError, match="at least two"):
        published_domain.of_codes(" A ")
    with pytest.raises(ValueError, match="use a zones file instead"):
        published_domain.of_codes("A," * published_domain.MAX_CODES_CHARS)
    data = published_domain.of_data(datasets.load("toy_town"))
    assert not data.public
    assert data.manifest_entry()["warning"] == published_domain.DATA_DERIVED_RISK


def test_the_total_is_the_release_s_own_and_exact_beyond_64_bits():
    total = publish._total(np.array([2 ** 62, 2 ** 62, 5], dtype=np.int64), ADD_REMOVE)
    assert total["value"] == 2 ** 63 + 5
    assert "add/remove" in total["how"] and "not published exactly" in total["how"]


@pytest.mark.parametrize("epsilon, delta, neighbours", [(1.0, 1e-6, "substitution"),
                                                        (0.1, 1e-6, ADD_REMOVE),
                                                        (5.0, 1e-9, "substitution")])
def test_the_page_states_how_much_noisier_a_gaussian_publish_is_than_planned(epsilon, delta,
                                                                              neighbours):
    """Issue 30: Explore and the planner simulate the analytic Gaussian, Publish draws OpenDP's
    zCDP-calibrated discrete Gaussian, 5–9 % wider at the same (ε, δ); the sentence's numbers
    are those two σ."""
    published = publish.calibrate(publish.GAUSSIAN, epsilon, delta, neighbours).scale
    planned = mechanisms.build("gaussian", epsilon=epsilon, delta=delta,
                               neighbours=neighbours).sigma
    assert 1.04 < published / planned < 1.10
    sentence = publish.gaussian_gap_sentence(epsilon, delta, neighbours)
    assert f"σ = {published:.4g}" in sentence and f"σ = {planned:.4g}" in sentence
    assert f"{100 * (published / planned - 1):.1f} % above" in sentence


@pytest.mark.parametrize("epsilon, delta", [(1.0, 1e-6), (0.5, 1e-9), (3.0, 1e-5)])
def test_the_guarantee_states_how_delta_grows_for_a_group(epsilon, delta):
    """Issue 42: "for a group of k people the bound holds with kε" left out that a Gaussian
    publish's δ grows to k·e^((k−1)ε)·δ [DR14, Thm 2.2]; the example is recomputed here."""
    gaussian = publish.Noise(publish.GAUSSIAN, epsilon, delta, ADD_REMOVE, 1.0, 0.1, None)
    text = publish.guarantee_text(gaussian)
    k = publish.GROUP_EXAMPLE
    assert "k·e^((k−1)ε)·δ" in text
    assert f"for k = {k}, ε = {k * epsilon:g} and δ = {k * math.exp((k - 1) * epsilon) * delta:.3g}" \
        in text
    laplace = publish.Noise(publish.DISCRETE_LAPLACE, epsilon, 0.0, ADD_REMOVE, 1.0, None, None)
    assert publish.guarantee_text(laplace).endswith("holds with kε (group privacy).")
