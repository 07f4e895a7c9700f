"""``release`` (one matrix, one mechanism), ``sweep`` (the experiment runner over a grid) and
``heavy-hitters`` (PEM or TreeHist): each writes its table beside the true counts, marked not
for publication (:func:`dpcore.confidential.write_csv`).
"""

from __future__ import annotations

import argparse
import time

from dpcore import confidential, export, mechanisms, release
from dpcore.data import views
from dpcore.evaluation import experiment
from dpcore.interfaces import arguments, lodes_export
from dpcore.limits import DELTA, EPSILON, HEAVY_HITTERS_K, SEED, TOP_K, TOP_N, TRIALS
from dpcore.mechanisms import postprocess
from dpcore.interfaces.commands.common import (
    _say,
    _duration,
    _load,
    _params,
    _csv_list,
    _view,
    PRIVATE_NOTE,
    _progress,
    _scheduler,
    _mechanism_specs,
    _add_view,
    _add_input,
    _add_scheduler,
)


def _cmd_release(args) -> int:
    params = _params(args.param, [args.mechanism])[args.mechanism]
    if args.delta is not None:
        if not mechanisms.get(args.mechanism).uses_delta:
            raise ValueError(f"{args.mechanism} is ε-DP and has no δ; leave out --delta")
        params["delta"] = args.delta
    seed = args.seed if args.seed is not None else release.fresh_seed()
    spec = release.ReleaseSpec(args.mechanism, args.epsilon, params, (args.postprocess,), seed)
    spec.build()  # a bad parameter fails before the data is loaded
    if args.postprocess not in postprocess.METHODS:
        raise ValueError(f"unknown post-processing {args.postprocess!r}; valid keys: "
                         f"{', '.join(postprocess.METHODS)}")
    od = views.select(_load(args), _view(args))
    true = release.true_values(od)
    result = release.run(od, spec, true_counts=true, score=False)
    records = (lodes_export.lodes_table(od, result.released) if args.lodes_out else None)
    frame = release.release_table(od, true, result.released, args.only_nonzero)
    confidential.write_csv(frame, args.out)  # true_count beside released_count
    written = (f"; written: {release.SPARSE_TABLE_NOTE.format(top=release.SPARSE_TOP)}"
               if result.sparse else "")
    _say(f"{args.mechanism} eps={args.epsilon:g}: released {od.domain_size} cells in "
         f"{_duration(result.seconds)} (seed {seed}, {args.postprocess}; {len(frame)} rows → "
         f"{args.out}{written}; {PRIVATE_NOTE})")
    if records is not None:   # checked before anything was written
        export.write_safe_csv(records, args.lodes_out)
        _say(f"{len(records)} LODES records → {args.lodes_out} (released counts only)")
    return 0


def _cmd_sweep(args) -> int:
    specs = _mechanism_specs(args)
    keys = [key for key, _ in specs]
    if args.delta is not None and not any(mechanisms.get(key).uses_delta for key in keys):
        raise ValueError(f"none of {', '.join(keys)} uses δ; leave out --delta")
    epsilons = _csv_list(args.epsilons, "--epsilons", numbers=True)
    methods = _csv_list(args.postprocess, "--postprocess")
    od = _load(args)

    started = time.perf_counter()
    table = experiment.run(od, specs, epsilons, postprocess=methods, trials=args.trials,
                           seed=args.seed, n_jobs=args.jobs, k=args.k, top_n=args.top_n,
                           scenarios=[experiment.Scenario("all", _view(args))],
                           progress=_progress, scheduler=_scheduler(args))
    confidential.write_csv(table, args.out)  # errors measured against the true counts
    _say(f"sweep: {len(keys)} mechanism(s) × {len(epsilons)} ε × {args.trials} trial(s) = "
         f"{table.attrs['jobs_done']} releases, {len(methods)} post-processing: {len(table):,} "
         f"rows in {_duration(time.perf_counter() - started)} → {args.out} ({PRIVATE_NOTE})")
    return 0


def _cmd_heavy_hitters(args) -> int:
    from dpcore.evaluation import heavy_hitters

    if args.protocol not in heavy_hitters.PROTOCOLS:
        raise ValueError(f"unknown protocol {args.protocol!r}; choose one of "
                         f"{', '.join(heavy_hitters.PROTOCOLS)}")
    mechanisms.build("olh", epsilon=args.epsilon)  # a bad ε fails before the data is loaded
    seed = args.seed if args.seed is not None else release.fresh_seed()
    od = views.select(_load(args), _view(args))
    started = time.perf_counter()
    found = heavy_hitters.find(args.protocol, od, args.epsilon, args.k, seed)
    seconds = time.perf_counter() - started
    table = heavy_hitters.compare(od, found, args.k)
    confidential.write_csv(table, args.out)  # the true top k beside the ones found
    score = heavy_hitters.scores(od, found, args.k)
    _say(f"{args.protocol} eps={args.epsilon:g}: top {args.k} of {od.domain_size} cells in "
         f"{_duration(seconds)}, recall {score['recall']:.0%}, precision "
         f"{score['precision']:.0%} (seed {seed}; {len(table)} rows → {args.out}; {PRIVATE_NOTE})")
    return 0


def add(commands: argparse._SubParsersAction) -> None:
    """The ``release``, ``sweep`` and ``heavy-hitters`` subcommands."""
    release = commands.add_parser("release", help="release one matrix with one mechanism")
    _add_input(release, required=True)
    _add_view(release)
    release.add_argument("--mechanism", required=True, help="a key from `mechanisms`")
    release.add_argument("--epsilon", type=arguments.number(EPSILON, "--epsilon"), required=True)
    release.add_argument("--delta", type=arguments.number(DELTA, "--delta"),
                         help="for (ε, δ) mechanisms (default theirs)")
    release.add_argument("--postprocess", default="base",
                         help=f"one of {', '.join(postprocess.METHODS)} (default base)")
    release.add_argument("--seed", type=arguments.number(SEED, "--seed"),
                         help="seed of the release (default: random, printed)")
    release.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                         help="another mechanism parameter (repeatable)")
    release.add_argument("--only-nonzero", action="store_true",
                         help="write only cells whose true or rounded released count is not 0")
    release.add_argument("--out", required=True, metavar="OUT.csv")
    release.add_argument("--lodes-out", metavar="OD.csv",
                         help="also write the release as synthetic commuter records in the LODES "
                              "OD layout (needs non-negative whole numbers; see docs/ONTHEMAP.md)")
    release.set_defaults(handler=_cmd_release)

    sweep = commands.add_parser("sweep", help="run the experiment runner over a grid")
    _add_input(sweep, required=True)
    _add_view(sweep)
    sweep.add_argument("--mechanisms", required=True, metavar="K1,K2,…")
    sweep.add_argument("--epsilons", required=True, metavar="E1,E2,…")
    sweep.add_argument("--delta", type=arguments.number(DELTA, "--delta"),
                       help="δ for the mechanisms that use one")
    sweep.add_argument("--postprocess", default="base", metavar="KEY[,KEY…]",
                       help=f"from {', '.join(postprocess.METHODS)} (default base)")
    sweep.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                       help="a parameter of the mechanisms that declare it (repeatable)")
    sweep.add_argument("--trials", type=arguments.number(TRIALS, "--trials"), default=1)
    sweep.add_argument("--seed", type=arguments.number(SEED, "--seed"), default=0)
    sweep.add_argument("--jobs", type=arguments.jobs, default=1,
                       help="worker processes (-1: every core; at most the cores)")
    _add_scheduler(sweep)
    sweep.add_argument("--k", type=arguments.number(TOP_K, "--k"), default=10,
                       help="size of the top-k sets (default 10)")
    sweep.add_argument("--top-n", type=arguments.number(TOP_N, "--top-n"), default=100,
                       help="true flows ranked for Spearman/Kendall (default 100)")
    sweep.add_argument("--out", required=True, metavar="OUT.csv")
    sweep.set_defaults(handler=_cmd_sweep)

    hitters = commands.add_parser(
        "heavy-hitters", help="find the top k commutes with PEM or TreeHist (ε-LDP)",
        description="Writes the true top k and the cells found (true and estimated counts, "
                    "ranks, found/missed), the same as the Explore page at this ε and seed.")
    _add_input(hitters, required=True)
    _add_view(hitters)
    hitters.add_argument("--protocol", required=True, choices=["pem", "treehist"])
    hitters.add_argument("--epsilon", type=arguments.number(EPSILON, "--epsilon"), required=True)
    hitters.add_argument("--k", type=arguments.number(HEAVY_HITTERS_K, "--k"), default=10,
                         help="commutes to find (default 10)")
    hitters.add_argument("--seed", type=arguments.number(SEED, "--seed"),
                         help="seed (default: random, printed)")
    hitters.add_argument("--out", required=True, metavar="OUT.csv")
    hitters.set_defaults(handler=_cmd_heavy_hitters)
