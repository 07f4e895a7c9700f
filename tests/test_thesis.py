"""The thesis's chapter 5 in one command: dpcore.evaluation.thesis (the sweep, figures' data, rank tables) and
report.thesis_html (one self-contained HTML file), and ``python -m dpcore reproduce-thesis``."""

import re
import threading

import numpy as np
import pandas as pd
import pytest

from dpcore import release
from dpcore.data import datasets, importers, views
from dpcore.evaluation import ranks, thesis
from dpcore.interfaces import cli
from report import thesis_html

EPSILONS = (0.5, 5.0)


@pytest.fixture(scope="module")
def county_chapter():
    return thesis.run(datasets.load("ireland_county"), epsilons=EPSILONS, trials=2, seed=3)


def test_levels_of_ed_data_are_county_ed_and_the_two_equal_domain_subsets():
    od = datasets.load("ireland_ed")
    lv = thesis.levels(od)
    assert [s.label for s in lv.scenarios] == ["County", "ED", "Dublin City (ED)",
                                               "Cavan and Leitrim (ED)"]
    sizes = [views.select(od, s.view).domain_size for s in lv.subsets]
    assert sizes == [162 * 162, 162 * 162]  # the thesis's |X_D| = |X_R| = 26,244
    assert thesis.levels(datasets.load("ireland_county")).scenarios == (lv.coarse.__class__(
        "County", views.View()),)


def test_stability_histogram_gets_the_thesis_delta():
    od = datasets.load("ireland_county")
    specs = dict(thesis.mechanism_specs(od))
    assert specs["stability_histogram"] == {"delta": 1 / (2 * od.n)}
    assert all(params == {} for key, params in specs.items() if key != "stability_histogram")


def test_chapter_has_every_figure_and_table(county_chapter):
    refs = [f.ref for f in county_chapter.figures]
    assert refs == ["Thesis figure 5.2", "Thesis figure 5.3", "Thesis figure 5.7",
                    "Thesis figure 5.8", "Thesis figure 5.10 (County level)",
                    "All mechanisms compared"]
    assert [t.ref for t in county_chapter.tables] == [
        "Thesis table 5.1", "Thesis table 5.2", "Thesis sections 5.1.2, 5.2.2, 5.4.3"]
    for figure in county_chapter.figures:
        assert len(figure.data) and (figure.data["trials"] == 2).all()
        assert (figure.data["low"] <= figure.data["mean"]).all()
        assert "2 trial(s)" in figure.caption and figure.ref in figure.caption
    by_pp = county_chapter.figures[4].data
    assert set(by_pp["postprocess"]) == set(thesis.POSTPROCESS)
    assert set(by_pp["mechanism"]) == set(thesis.MECHANISMS)


def test_rank_tables_rank_the_sweeps_trial_zero_release(county_chapter):
    od = datasets.load("ireland_county")
    truth = od.to_dense()
    table = county_chapter.tables[1].data  # ε = 5
    assert list(table["True rank"]) == list(range(1, 11))
    # Laplace noise of scale 2/5 cannot reorder county counts hundreds apart (thesis table 5.2).
    assert list(table["Laplace"]) == list(range(1, 11))
    spec = release.ReleaseSpec("grr", 5.0, {}, (thesis.MAIN_POSTPROCESS,), 3, 0)
    released = release.run(od, spec, true_counts=truth, score=False).released
    expected = ranks.rank_pairs(truth, released, 10)["released_rank"]
    assert list(table["Generalised randomised response (direct encoding)"]) == list(expected)
    sweep = county_chapter.table
    row = sweep[(sweep["mechanism"] == "grr") & (sweep["epsilon"] == 5.0)
                & (sweep["trial"] == 0) & (sweep["postprocess"] == "base_pos")
                & (sweep["metric"] == "rmse")]
    assert row["value"].item() == pytest.approx(np.sqrt(np.mean((released - truth) ** 2)))


def test_a_stopped_run_has_no_tables_and_leaves_no_rank_thread_running():
    """The rank tables' releases run in a thread beside the sweep; Stop ends both."""
    cancel = threading.Event()
    chapter = thesis.run(datasets.load("ireland_county"), epsilons=EPSILONS, trials=2, seed=3,
                         progress=lambda done, total: cancel.set(), cancel=cancel)
    assert chapter.table.attrs["cancelled"] and chapter.table.attrs["jobs_done"] == 1
    assert chapter.tables == [] and chapter.figures == []
    assert not [t for t in threading.enumerate() if t.name.startswith("thesis-ranks")]


def test_rank_releases_stop_when_asked():
    od = datasets.load("ireland_county")
    stop = threading.Event()
    stop.set()
    lv = thesis.levels(od)
    assert thesis._rank_tables(od, lv, thesis.mechanism_specs(od), 0, "", stop) == []


def test_report_is_one_offline_html_with_every_figure(county_chapter, tmp_path):
    path = thesis_html.write(county_chapter, tmp_path)
    text = path.read_text(encoding="utf-8")
    assert text.count("plotly.js v") == 1  # plotly.js inlined once, in the head
    bundle = re.search(r"<script>(.*?)</script>", text, re.S)
    assert "plotly.js v" in bundle.group(1)
    page = text[:bundle.start()] + text[bundle.end():]  # its strings name map servers it never
    assert not re.search(r"<script[^>]*\bsrc\b|<link\b|https?://", page)  # calls here
    assert text.count('class="plotly-graph-div"') == len(county_chapter.figures)
    for figure in county_chapter.figures:
        assert f'id="{thesis.slug(figure.ref)}"' in text
        frame = pd.read_csv(tmp_path / f"{thesis.slug(figure.ref)}.csv")
        assert {"mechanism", "epsilon", "mean", "low", "high"} <= set(frame.columns)
    assert (tmp_path / "table_5.1.csv").exists() and (tmp_path / "sweep.csv").exists()


def test_zone_names_from_a_file_are_escaped_and_formula_safe(tmp_path):
    rows = ["origin,destination,count", "<img src=x onerror=alert(1)>,=HYPERLINK(1),900"] + [
        f"Z{i},Z{j},{(i * 7 + j) % 13 + 1}" for i in range(5) for j in range(5)]
    od = importers.import_od("\n".join(rows).encode(), "evil.csv").matrix
    chapter = thesis.run(od, epsilons=(5.0,), trials=1, seed=1)
    text = thesis_html.write(chapter, tmp_path).read_text(encoding="utf-8")
    assert "<img src=x" not in text and "&lt;img src=x onerror=alert(1)&gt;" in text
    table = pd.read_csv(tmp_path / "table_5.2.csv", keep_default_na=False)
    assert table["Commute"].iloc[0].startswith("<img")
    assert not table["Commute"].str.startswith(("=", "+", "-", "@")).any()


def test_cli_writes_the_report(capsys, tmp_path):
    code = cli.main(["reproduce-thesis", "--dataset", "toy_town", "--epsilons", "1,5",
                     "--trials", "1", "--out", str(tmp_path)])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "releases on Toy town" in out and (tmp_path / "report.html").exists()


@pytest.mark.parametrize("argv, message", [
    (["--scheduler", "10.0.0.1:8786"], "tcp://host:8786"),
    (["--epsilons", "0,1"], "outside"),
    (["--trials", "0"], "--trials"),
    (["--dataset", "missing.csv"], "cannot read missing.csv"),
])
def test_cli_rejects_bad_options_with_a_message(capsys, tmp_path, argv, message):
    code = cli.main(["reproduce-thesis", *argv, "--out", str(tmp_path)])
    assert code == cli.EXIT_USAGE and message in capsys.readouterr().err
