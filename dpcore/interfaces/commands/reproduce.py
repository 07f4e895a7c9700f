"""``reproduce-thesis``: the thesis's chapter 5 experiments rerun into a self-contained HTML report
(drawn by the repository's ``report`` package) with the CSV behind every figure and table.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from dpcore.data import datasets
from dpcore.data.od import ODMatrix
from dpcore.interfaces import arguments
from dpcore.limits import SEED, TRIALS
from dpcore.interfaces.commands.common import (
    _duration,
    _import_file,
    PRIVATE_NOTE,
    _progress,
    _scheduler,
    _add_scheduler,
)


def _load_for_report(args) -> ODMatrix:
    """``--dataset`` is a bundled key or a file to import."""
    if args.dataset in datasets.DATASETS:
        return datasets.load(args.dataset)
    args.file, args.format, args.level, args.zones = args.dataset, "auto", args.level, None
    return _import_file(args).matrix


def _cmd_reproduce_thesis(args) -> int:
    from dpcore import grids
    from dpcore.evaluation import thesis

    epsilons = grids.parse_grid(args.epsilons)
    scheduler = _scheduler(args)
    od = _load_for_report(args)
    try:  # plotly draws the report; dpcore itself only makes its data
        from report import thesis_html
    except ImportError as error:
        raise OSError(f"the report needs the repository's report package and plotly "
                      f"(python3 -m pip install -r requirements.txt): {error}") from None
    chapter = thesis.run(od, epsilons=epsilons, trials=args.trials, seed=args.seed,
                         n_jobs=args.jobs, scheduler=scheduler, progress=_progress,
                         source=datasets.DATASETS.get(args.dataset), protocol=args.protocol)
    private = args.dataset not in datasets.DATASETS   # the user's own table
    path = thesis_html.write(chapter, Path(args.out), private=private)
    verdicts = thesis.summary(chapter)
    tallies = []
    for name, rows in verdicts.groupby("Protocol", sort=False):
        tally = rows["Verdict"].value_counts()
        facts = tally.get("data alike", 0) + tally.get("data differ", 0)
        tallies.append(f"{name}: {tally.get('agrees', 0)} agree with the thesis, "
                       f"{tally.get('differs', 0)} differ, {facts} data facts, "
                       f"{tally.get('not checked', 0)} not checked, "
                       f"{tally.get('cannot tell', 0)} whose check cannot tell a planted break")
    print(f"reproduce-thesis: {chapter.table.attrs['jobs_done']:,} releases on {od.name} in "
          f"{_duration(chapter.seconds)}; {len(chapter.figures)} figures and "
          f"{len(chapter.tables)} tables ({'; '.join(tallies)}) → "
          f"{path} (and their CSVs in {args.out})" + (f"; {PRIVATE_NOTE}" if private else ""))
    return 0


def add(commands: argparse._SubParsersAction) -> None:
    """The ``reproduce-thesis`` subcommand."""
    thesis = commands.add_parser(
        "reproduce-thesis", help="rerun the thesis's chapter 5 experiments into an HTML report",
        description="Reruns the experiments of the thesis's chapter 5 (central and local "
                    "mechanisms, ε grid, trials, county and ED level, post-processing, the ED "
                    "subsets, rank tables, running times) and writes report.html (self-contained, "
                    "works offline) with the CSV behind every figure and table.")
    thesis.add_argument("--dataset", default="ireland_ed", metavar="KEY|FILE",
                        help="a bundled dataset (ireland_ed: both levels, the default; "
                             "ireland_county: county level only) or a CSV file to import")
    thesis.add_argument("--level", help="level of a POWSCAR or LODES file (as for --file)")
    thesis.add_argument("--epsilons", default="0.5,1,1.5,2,2.5,3,3.5,4,4.5,5", metavar="E1,E2,…")
    thesis.add_argument("--trials", type=arguments.number(TRIALS, "--trials"), default=10)
    thesis.add_argument("--seed", type=arguments.number(SEED, "--seed"), default=0)
    thesis.add_argument("--protocol", choices=("written", "run", "both"), default="both",
                        help="the thesis as written (chapter 3's definitions), as run (what its "
                             "code computed, defects included), or both side by side (default)")
    thesis.add_argument("--jobs", type=arguments.jobs, default=-1,
                        help="worker processes without --scheduler (default -1: every core)")
    _add_scheduler(thesis)
    thesis.add_argument("--out", required=True, metavar="DIR")
    thesis.set_defaults(handler=_cmd_reproduce_thesis)
