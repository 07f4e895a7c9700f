"""The release pipeline: the seeding rule, the settings, one release scored, the command line."""

import shlex

import numpy as np
import pandas as pd
import pytest

from dpcore import mechanisms, release, seeding
from dpcore.data import datasets, views
from dpcore.interfaces import cli
from dpcore.mechanisms import postprocess
from dpcore.release import ReleaseSpec, RunSettings
from dpcore.scoring import metrics
from tests.downloads import read_private_csv


# -------------------------------------------------------------------------------------- seeding
def test_a_stream_depends_on_seed_purpose_and_every_coordinate():
    first = seeding.generator(3, "release", "laplace", 1.0, 0).random(4)
    assert np.array_equal(first, seeding.generator(3, "release", "laplace", 1.0, 0).random(4))
    for other in [(4, "release", "laplace", 1.0, 0), (3, "subsample", "laplace", 1.0, 0),
                  (3, "release", "grr", 1.0, 0), (3, "release", "laplace", 1.0 + 2**-52, 0),
                  (3, "release", "laplace", 1.0, 1)]:
        assert not np.array_equal(first, seeding.generator(*other).random(4)), other


def test_the_stream_is_the_documented_seed_sequence():
    import zlib
    expected = np.random.default_rng(np.random.SeedSequence(7, spawn_key=(
        zlib.crc32(b"release"), zlib.crc32(b"oue"), int(np.float64(0.5).view(np.uint64)), 2)))
    assert np.array_equal(seeding.generator(7, "release", "oue", 0.5, 2).random(3),
                          expected.random(3))


@pytest.mark.parametrize("seed", [-1, 1.5, True, "3"])
def test_a_seed_must_be_a_whole_number_at_least_zero(seed):
    with pytest.raises(ValueError, match="seed"):
        seeding.generator(seed, "release")


# ------------------------------------------------------------------------------------- settings
def test_unknown_or_misplaced_parameters_are_errors_naming_them():
    with pytest.raises(TypeError, match="threshold"):
        ReleaseSpec("laplace", 1.0, {"threshold": "tight"}).build()
    with pytest.raises(ValueError, match="'delta' parameter"):
        ReleaseSpec("gaussian", 1.0, {"delta": 2.0}).build()
    with pytest.raises(ValueError, match="ε"):
        ReleaseSpec("laplace", 1.0, {"epsilon": 2.0}).build()


def test_run_settings_give_each_mechanism_only_what_it_declares():
    settings = RunSettings("toy_town", views.LEVEL_AS_LOADED, (), ("laplace", "gaussian", "hm"),
                           2.0, 1e-7, "add_remove", (("hm", (("t", 2),)),), "base_pos", 5)
    assert settings.spec("laplace") == ReleaseSpec("laplace", 2.0, {"neighbours": "add_remove"},
                                                   ("base_pos",), 5, 0)
    assert dict(settings.spec("gaussian").params) == {"delta": 1e-7, "neighbours": "add_remove"}
    assert dict(settings.spec("hm").params) == {"t": 2}


# -------------------------------------------------------------------------------------- release
def test_a_release_is_post_processed_and_scored_in_one_place(toy):
    spec = ReleaseSpec("oue", 1.0, postprocess=("base", "post_pos", "base_cut", "significance_cut"), seed=4)
    result = release.run(toy, spec)
    truth = toy.to_dense()
    raw = mechanisms.build("oue", epsilon=1.0).release(truth, spec.generator())
    np.testing.assert_array_equal(result.raw, raw)
    variance = postprocess.zero_cell_variance(spec.build(), toy.n, toy.domain_size)
    for method in spec.postprocess:
        expected = postprocess.apply(method, raw, toy.n, variance)
        np.testing.assert_array_equal(result.outputs[method].released, expected)
        # Post-Pos answers aggregate queries from the raw release
        score = metrics.compute(truth, expected, toy, raw=raw if method == "post_pos" else None)
        assert dict(result.outputs[method].metrics) == pytest.approx(score, nan_ok=True)
    assert result.released is result.outputs["base"].released
    assert not result.released.flags.writeable and not result.raw.flags.writeable
    tidy = result.tidy()
    assert list(tidy.columns) == release.TIDY_COLUMNS
    assert len(tidy) == 4 * len(metrics.METRICS) and set(tidy["trial"]) == {0}


def test_a_release_scored_later_has_the_metrics_of_one_scored_at_once(toy):
    """Pages release once and score as far as they show (dpcore.release.scored): the same
    vectors, and the same numbers as run(score=True), in full or for the summary only."""
    spec = ReleaseSpec("laplace", 1.0, postprocess=("base_pos", "post_pos"), seed=3)
    at_once = release.run(toy, spec)
    unscored = release.run(toy, spec, score=False)
    assert all(not output.metrics for output in unscored.outputs.values())
    later = release.scored(unscored, toy)
    summary = release.scored(unscored, toy, only=("rmse", "false_positive_cells"))
    for method, output in at_once.outputs.items():
        assert later.outputs[method].released is unscored.outputs[method].released
        assert dict(later.outputs[method].metrics) == pytest.approx(dict(output.metrics),
                                                                   nan_ok=True)
        assert dict(summary.outputs[method].metrics) == pytest.approx(
            {name: output.metrics[name] for name in ("rmse", "false_positive_cells")})


@pytest.mark.parametrize("methods", [("base_pos",), ("base",), ("base", "base_pos"),
                                     ("base_cut",), ("base_pos", "post_pos")])
def test_a_release_that_keeps_no_raw_vector_publishes_the_same_numbers(toy, methods):
    """keep_raw=False (a page's shared cache): the same post-processed vectors to the bit, the
    last written over the raw estimates when it acts cell by cell, and no raw vector kept —
    except for Post-Pos, whose metrics read it; the true counts are never written."""
    spec = ReleaseSpec("laplace", 1.0, postprocess=methods, seed=8)
    truth = toy.to_dense()
    before = truth.copy()
    kept = release.run(toy, spec, true_counts=truth, score=False)
    lean = release.run(toy, spec, true_counts=truth, score=False, keep_raw=False)
    for method in methods:
        np.testing.assert_array_equal(lean.outputs[method].released,
                                      kept.outputs[method].released)
        assert not lean.outputs[method].released.flags.writeable
    assert (lean.raw is None) == ("post_pos" not in methods)
    if lean.raw is not None:
        np.testing.assert_array_equal(lean.raw, kept.raw)
    np.testing.assert_array_equal(truth, before)
    scored = release.scored(lean, toy, true_counts=truth)
    assert dict(scored.metrics) == pytest.approx(dict(release.scored(kept, toy).metrics),
                                                 nan_ok=True)


def test_a_release_never_writes_over_the_true_counts(toy, monkeypatch):
    """A mechanism that returned the true counts themselves would have them clipped in place:
    the release then keeps its raw vector instead."""
    truth = toy.to_dense().astype(float)
    mechanism = mechanisms.build("laplace", epsilon=1.0)
    monkeypatch.setattr(type(mechanism), "release", lambda self, counts, rng: counts)
    spec = ReleaseSpec("laplace", 1.0, postprocess=("base_pos",))
    before = truth.copy()
    result = release.run(toy, spec, true_counts=truth, score=False, keep_raw=False)
    np.testing.assert_array_equal(truth, before)
    assert result.raw is truth


def test_significance_cut_needs_a_closed_form_variance_and_attempt_says_so(toy):
    spec = ReleaseSpec("topk", 1.0, postprocess=("significance_cut",))
    with pytest.raises(ValueError, match="significance cut"):
        release.run(toy, spec)
    failed = release.attempt(toy, spec)
    assert "significance cut" in failed.error and failed.released is None and not failed.checks


def test_the_same_spec_gives_the_same_release_on_any_trial_other_trials_differ(toy):
    spec = ReleaseSpec("laplace", 0.5, seed=9)
    again = release.run(toy, spec, score=False)
    np.testing.assert_array_equal(release.run(toy, spec).released, again.released)
    other = release.run(toy, ReleaseSpec("laplace", 0.5, seed=9, trial=1), score=False)
    assert not np.array_equal(again.released, other.released)
    assert dict(again.metrics) == {}


def test_release_table_lists_every_cell_or_only_non_zero_ones(toy):
    truth = toy.to_dense()
    released = np.where(np.arange(truth.size) % 2 == 0, 0.2, 3.0)
    full = release.release_table(toy, truth, released)
    assert len(full) == toy.domain_size
    assert list(full.columns) == ["origin", "destination", "true_count", "released_count"]
    some = release.release_table(toy, truth, released, only_nonzero=True)
    expected = np.flatnonzero((truth != 0) | (np.rint(released) != 0))
    assert len(some) == expected.size


# ---------------------------------------------------------------------------------- command line
@pytest.mark.parametrize("key, level, areas", [
    ("gaussian", views.LEVEL_AS_LOADED, ("Dublin City",)), ("hm", views.LEVEL_PARENT, ()),
    ("laplace", views.LEVEL_AS_LOADED, ("Cavan", "Leitrim"))])
def test_the_command_a_page_shows_makes_the_same_release(ed, tmp_path, capsys, key, level,
                                                         areas):
    """What Explore prints under "The same releases from the command line" runs and gives the
    release the pipeline makes for the page's settings (ED data: levels and areas included)."""
    settings = RunSettings("ireland_ed", level, areas, (key,), 0.7, 1e-8, "substitution",
                           (("hm", (("t", 2),)),), "base_pos", 12)
    out = tmp_path / "r.csv"
    command = settings.command(key, out=str(out))
    argv = shlex.split(command)
    assert argv[:3] == ["python3", "-m", "dpcore"]
    assert cli.main(argv[3:] + ["--only-nonzero"]) == 0
    od = views.select(ed, settings.view)
    expected = release.run(od, settings.spec(key), score=False).released
    table = read_private_csv(out, keep_default_na=False)
    cells = (od.origins.index_of(table["origin"].astype(str)) * od.n_destinations
             + od.destinations.index_of(table["destination"].astype(str)))
    np.testing.assert_allclose(table["released_count"], expected[cells], rtol=1e-9, atol=1e-12)
    capsys.readouterr()


def test_a_pages_releases_are_scheduled_by_the_pipeline(monkeypatch):
    """Two dense ED releases at once would pass a session's memory budget: they share one thread,
    the sparse ones take the other; with room for both, each release goes to the next free
    thread; a small domain (or one release) runs in order in the caller's thread."""
    from dpcore.data.od import MEMORY_BUDGET_BYTES

    monkeypatch.setattr(release.os, "cpu_count", lambda: 2)
    settings = RunSettings("ireland_ed", "as_loaded", (), (), 1.0, 1e-6, "substitution", (),
                           "base_pos", 0)
    keys = ["laplace", "stability_histogram", "grr", "oue", "olh", "hm"]
    specs = {key: settings.spec(key) for key in keys}
    ed, county = datasets.load("ireland_ed"), datasets.load("ireland_county")
    plan = release.schedule(ed, keys, specs, MEMORY_BUDGET_BYTES)
    assert plan.large and plan.groups == (("laplace", "hm"),
                                          ("stability_histogram", "grr", "oue", "olh"))
    roomy = release.dense_work_bytes(ed.domain_size, 2 + release.TRANSIENT_VECTORS)
    assert release.schedule(ed, keys, specs, roomy).groups == tuple((key,) for key in keys)
    assert release.schedule(ed, keys).groups == tuple((key,) for key in keys)  # rankings
    assert release.schedule(ed, ["hm"], specs, MEMORY_BUDGET_BYTES).groups == (("hm",),)
    small = release.schedule(county, keys, specs, MEMORY_BUDGET_BYTES)
    assert not small.large and small.groups == (tuple(keys),)
    monkeypatch.setattr(release.os, "cpu_count", lambda: 1)
    assert release.schedule(ed, keys, specs, MEMORY_BUDGET_BYTES).groups == (tuple(keys),)


def test_a_pages_release_keeps_only_what_it_shows():
    """:func:`release.drawn`: a dense release unscored, without its raw estimates (unless
    Post-Pos reads them), scored later to the same metrics; a sparse one scored as drawn."""
    od = datasets.load("ireland_county")
    spec = ReleaseSpec("laplace", 1.0, postprocess=("base_pos",), seed=4)
    kept = release.drawn(od, spec)
    assert kept.raw is None and kept.scorable and not kept.metrics
    full = release.run(od, spec)
    assert np.array_equal(kept.released, full.released)
    assert dict(release.scored(kept, od).metrics) == dict(full.metrics)
    assert release.drawn(od, spec.with_postprocess(("post_pos",))).raw is not None
    assert not release.attempt(od, ReleaseSpec("laplace", -1.0)).scorable
