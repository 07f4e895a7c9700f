"""``python -m dpcore analyse``: OnTheMap's analyses on the true table and one release, each
answer with its 95 % interval and how it was obtained (:mod:`dpcore.analyses`).

The parser and the command body live here so that :mod:`dpcore.interfaces.cli` only registers
them. On --dataset/--file the CSV holds the true values beside the released ones, so it carries
the not-for-publication line (:func:`dpcore.confidential.write_csv`, formula-safe);
on --release DIR (a published folder alone, :mod:`dpcore.interfaces.published_analyses`) it holds only the
release's own answers and intervals: public, formula-safe, no true column values.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from dpcore import release
from dpcore.analyses import answers, intervals, selection as sel, shares, simulated
from dpcore import confidential, export
from dpcore.interfaces import arguments, published_analyses as published
from dpcore.limits import EPSILON, SEED
from dpcore.mechanisms import postprocess

ANALYSES = ("flows", "destination", "distance", "direction", "paired", "comparison", "share-within",
            "share-live-and-work")


def add(commands: argparse._SubParsersAction, add_input, load) -> None:
    """The ``analyse`` subcommand: ``add_input`` adds --dataset/--file…, ``load`` reads them."""
    parser = commands.add_parser(
        "analyse", help="OnTheMap's analyses (inflow/outflow, destinations, distance, direction, "
                        "paired areas, area comparison, shares), true vs a release, with 95 %% "
                        "intervals")
    add_input(parser, required=False)
    parser.add_argument("--release", metavar="DIR",
                        help="a published folder (release.csv + manifest.json) instead of "
                             "--dataset/--file: its answers and intervals alone, no true values")
    parser.epilog = ("With --release, --zones PATH (zone, lat, lon[, parent]; e.g. "
                     "data/ireland_ed.zones.csv) gives the folder's zones their public positions "
                     "and parents: distance, direction, --radius, share-within and --parent.")
    parser.add_argument("--release-level", metavar="NAME",
                        help="with --release of a WLS or TopDown folder: the level answered, as "
                             "release.csv's level column names it (default \"fine level\"; "
                             "e.g. \"parent level\")")
    parser.add_argument("--mechanism", help="a key from `mechanisms` (default: the true table "
                                            "alone)")
    parser.add_argument("--epsilon", type=arguments.number(EPSILON, "--epsilon"), default=1.0)
    parser.add_argument("--seed", type=arguments.number(SEED, "--seed"), default=0)
    parser.add_argument("--postprocess", default="base",
                        help=f"one of {', '.join(postprocess.METHODS)} (default base)")
    parser.add_argument("--analysis", action="append", choices=ANALYSES, default=[],
                        help="repeatable (default: inflow, outflow and live-and-work of every "
                             "zone)")
    parser.add_argument("--side", choices=answers.SIDES, default="work",
                        help="the selection is where the commuters work or live (default work)")
    parser.add_argument("--zone", action="append", default=[], metavar="ID",
                        help="select this zone (repeatable)")
    parser.add_argument("--parent", metavar="ID", help="select every zone of this parent area")
    parser.add_argument("--radius", type=float, metavar="KM",
                        help="select the zones within KM of --around or --point")
    parser.add_argument("--around", metavar="ID", help="the zone at the centre of --radius")
    parser.add_argument("--point", metavar="LAT,LON", help="the point at the centre of --radius (write --point=LAT,LON when LAT "
                             "is negative)")
    parser.add_argument("--to", action="append", default=[], metavar="ID",
                        help="paired: the work area B (the selection is the home area A)")
    parser.add_argument("--compare", choices=("zones", "parents"), default="zones",
                        help="comparison: every zone or every parent area (default zones)")
    parser.add_argument("--km", type=float, default=10.0,
                        help="share-within: the share of the commutes shorter than KM (default 10)")
    parser.add_argument("--top", type=int, default=20, help="destination: zones kept (default 20)")
    parser.add_argument("--out", required=True, metavar="OUT.csv")
    parser.set_defaults(handler=lambda args: run(args, load))


def _selection(args, od) -> sel.Selection:
    given = sum(bool(x) for x in (args.zone, args.parent, args.radius is not None))
    if given != 1:
        raise ValueError("this analysis needs one selection: --zone (repeatable), --parent, or "
                         "--radius with --around or --point")
    if args.zone:
        return sel.zones(od, args.zone)
    if args.parent:
        return sel.parent(od, args.parent)
    if args.point:
        try:
            lat, lon = (float(x) for x in args.point.split(","))
        except ValueError:
            raise ValueError(f"--point must be LAT,LON in degrees; got {args.point!r}") from None
        return sel.radius(od, args.radius, lat=lat, lon=lon)
    return sel.radius(od, args.radius, zone=args.around)


def share_queries(args, od) -> list[shares.Share]:
    """share-within: the share of the selection's commutes shorter than --km; share-live-and-work:
    the share of its jobs (work side) or employed residents (home side) held by its residents."""
    found = []
    for name in dict.fromkeys(args.analysis):
        if name == "share-within":
            found.append(shares.within(od, _selection(args, od), args.side, args.km))
        elif name == "share-live-and-work":
            found.append(shares.live_and_work(od, _selection(args, od), args.side))
    return found


def _asked(args, od) -> tuple[list, list]:
    """The sum queries and the shares asked for (built before a release: bad input fails first)."""
    return queries(args, od), share_queries(args, od)


def _answer(args, asked, truth, released, rule):
    """Every answer asked for: the sums, then the shares (one frame, the same columns)."""
    frame = answers.evaluate(asked[0], truth, released, rule, limit=args.top)
    if not asked[1]:
        return frame
    found = shares.evaluate(asked[1], truth, released, rule)
    return found if frame.empty else pd.concat([frame, found], ignore_index=True)


def queries(args, od) -> list[answers.Query]:
    """The sum analyses asked for, on the selection given (shares: :func:`share_queries`)."""
    if not args.analysis:
        return answers.comparison(od, "zones")
    out = []
    for name in dict.fromkeys(args.analysis):
        if name.startswith("share-"):
            continue
        if name == "comparison":
            out += answers.comparison(od, args.compare)
            continue
        chosen = _selection(args, od)
        if name == "flows":
            out += answers.flows(od, chosen)
        elif name == "destination":
            out += answers.destinations(od, chosen, args.side)
        elif name == "distance":
            out += answers.distance(od, chosen, args.side)
        elif name == "direction":
            out += answers.direction(od, chosen, args.side)
        else:
            if not args.to:
                raise ValueError("paired needs the work area B: --to ID (repeatable)")
            out += answers.paired(od, chosen, sel.zones(od, args.to))
    return out


def _run_folder(args) -> int:
    """A published folder alone: its answers and intervals, a public file."""
    if args.mechanism:
        raise ValueError("--mechanism draws a release from a table; a published folder is "
                         "already one: leave --mechanism out with --release")
    if "comparison" in args.analysis and args.compare == "parents" and not args.zones:
        raise ValueError("a published folder does not say which zone lies in which parent area: "
                         "give a zones file with a parent column (--zones PATH), or compare the "
                         "zones of its parent level instead (--compare zones --release-level "
                         "\"parent level\", for a WLS or TopDown folder)")
    folder = published.load(args.release, args.release_level)
    if args.zones:
        try:
            data = Path(args.zones).read_bytes()
        except OSError as error:
            raise ValueError(f"--zones {args.zones}: cannot be read ({error.strerror})") from None
        folder = published.placed(folder, data, Path(args.zones).name)
    frame = _answer(args, _asked(args, folder.od), None, folder.values, folder.interval)
    export.write_safe_csv(frame, args.out)
    print(f"{len(frame)} answers from the published folder {args.release} "
          f"({published.KINDS[folder.kind]}, {folder.level}) → {args.out} (public: the "
          f"release's own answers and intervals); intervals: {folder.interval.method}")
    return 0


def run(args, load) -> int:
    sources = [bool(args.dataset), bool(args.file), bool(args.release)]
    if sum(sources) != 1:
        raise ValueError("give one input: --dataset, --file or --release DIR")
    if args.release:
        return _run_folder(args)
    if args.release_level:
        raise ValueError("--release-level chooses the level of a published folder: give it "
                         "with --release DIR")
    if args.postprocess not in postprocess.METHODS:
        raise ValueError(f"unknown post-processing {args.postprocess!r}; valid keys: "
                         f"{', '.join(postprocess.METHODS)}")
    if args.top < 1:
        raise ValueError(f"--top must be at least 1; got {args.top}")
    spec = None
    if args.mechanism:
        spec = release.ReleaseSpec(args.mechanism, args.epsilon, (), (args.postprocess,),
                                   args.seed)
        spec.build()   # a bad mechanism fails before the data is loaded
    od = load(args)
    asked = _asked(args, od)
    truth = release.true_values(od)
    if spec is None:
        released, rule = None, intervals.Interval(None)
    else:
        result = release.run(od, spec, true_counts=truth if not hasattr(truth, "zeros")
                             else None, score=False)
        released = result.outputs[args.postprocess].released
        rule = simulated.rule(od, spec, released, sparse=result.sparse, live=False)
    frame = _answer(args, asked, truth, released, rule)
    confidential.write_csv(frame, args.out)
    what = (f"{args.mechanism} ε={args.epsilon:g} (seed {args.seed}, {args.postprocess})"
            if spec else "the true table")
    print(f"{len(frame)} answers on {what} → {args.out}; intervals: {rule.method} "
          "(NOT FOR PUBLICATION: true values beside the released ones, its first line says so)")
    return 0
