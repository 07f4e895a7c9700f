"""``plan``: the smallest ε at which each mechanism meets a metric's target
(:mod:`dpcore.evaluation.planner`) or every analysis answer meets a margin
(:mod:`dpcore.analyses.planning`); ε is chosen on the true table, so the CSV is marked not for
publication.
"""

from __future__ import annotations

import argparse
import math
import time

from dpcore import confidential, mechanisms, release
from dpcore.data import views
from dpcore.analyses import planning, share_targets
from dpcore.evaluation import planner
from dpcore.interfaces import arguments, publish, publish_targets, topdown_targets
from dpcore.interfaces.ledger import role_names
from dpcore.limits import DELTA, PASS_PROBABILITY, SEED, TRIALS
from dpcore.mechanisms import postprocess
from dpcore.scoring import metrics
from dpcore.interfaces.commands.common import (
    _duration,
    _load,
    _view,
    PRIVATE_NOTE,
    _progress,
    _mechanism_specs,
    _add_view,
    _add_input,
)


def _cmd_plan(args) -> int:
    specs = _mechanism_specs(args)
    if args.postprocess not in postprocess.METHODS:
        raise ValueError(f"unknown post-processing {args.postprocess!r}; valid keys: "
                         f"{', '.join(postprocess.METHODS)}")
    if (args.metric is None) == (args.answers is None):
        raise ValueError("give a target: --metric (with --target), or --answers with --within")
    if args.answers is not None:
        return _plan_answers(args, specs)
    target = planner.Target(args.metric, float("nan") if args.target is None else args.target,
                            args.probability)
    od = views.select(_load(args), _view(args))
    started = time.perf_counter()
    answers = planner.plan(od, specs, target, postprocess=args.postprocess, trials=args.trials,
                           seed=args.seed, force_search=args.search, progress=_progress)
    confidential.write_csv(planner.plan_table(answers), args.out)  # ε chosen on the true table
    print(planner.sentence(answers, lambda key: mechanisms.get(key).name))
    print(f"plan: {len(answers)} mechanism(s) in {_duration(time.perf_counter() - started)} "
          f"→ {args.out} ({PRIVATE_NOTE})")
    return 0


def _plan_answers(args, specs) -> int:
    """``plan --answers``: the smallest ε per mechanism (raw releases) and for a publish at which
    every answer meets the margin: flat (OpenDP's discrete Laplace), or TopDown with the level
    shares of ρ that need the least ε (and the even split's ε beside them). Targets on shares
    (:mod:`dpcore.analyses.share_targets`): the mechanisms and the flat publish."""
    if args.within is None:
        raise ValueError("--answers needs --within: commuters (50) or a percentage (2%)")
    if args.answers_level != "fine" and args.method != publish.TOPDOWN:
        raise ValueError("--answers-level parent plans a TopDown publish: add --method topdown")
    if args.answers in share_targets.FAMILIES:
        if args.method == publish.TOPDOWN:
            raise ValueError("targets on shares are planned for the mechanisms and a flat "
                             "publish (the delta method's intervals); a TopDown folder's shares "
                             "are ranges over its bounds: leave out --method topdown")
        target = share_targets.parse_target(args.answers, args.within, args.km)
        plan_mechanisms = share_targets.plan
    else:
        target = planning.parse_target(args.answers, args.within)
        plan_mechanisms = planning.plan
    od = views.select(_load(args), _view(args))
    started = time.perf_counter()
    truth = release.true_values(od)
    plans = plan_mechanisms(od, truth, specs, target)
    if args.method == publish.TOPDOWN:
        proposal = topdown_targets.plan(od, target, level=f"{args.answers_level} level",
                                        delta=publish.DEFAULT_DELTA if args.delta is None
                                        else args.delta)
        plans += proposal.plans()
        top = role_names(len(proposal.shares), top_first=True)[0]
        print(f"TopDown: proposed shares {', '.join(f'{s:g}' for s in proposal.shares)} "
              f"({top} first) of ρ" if math.isfinite(proposal.best.epsilon) else
              f"TopDown: no split of ρ meets the target at ε ≤ {planning.EPSILON_RANGE[1]:g}")
    else:
        plans.append(publish_targets.plan(od, truth, publish.DISCRETE_LAPLACE, target))
    confidential.write_csv(planning.table(plans), args.out)   # ε chosen on the true table
    for plan in plans:
        print(f"{plan.mechanism}: ε = {plan.epsilon:.4g} ({plan.method})")
    print(f"plan: {target.describe()}: {len(plans)} answer(s) in "
          f"{_duration(time.perf_counter() - started)} → {args.out} ({PRIVATE_NOTE})")
    return 0


def add(commands: argparse._SubParsersAction) -> None:
    """The ``plan`` subcommand."""
    plan = commands.add_parser("plan", help="the smallest ε at which each mechanism meets a "
                                            "target")
    _add_input(plan, required=True)
    _add_view(plan)
    plan.add_argument("--mechanisms", required=True, metavar="K1,K2,…")
    plan.add_argument("--metric", choices=[planner.CHECKS, *metrics.METRICS],
                      help=f"a metric, or '{planner.CHECKS}' (every planner check passes)")
    plan.add_argument("--answers", choices=[*planning.FAMILIES, *share_targets.FAMILIES],
                      help="instead of --metric: a family of analysis answers (inflow, outflow, "
                           "live_and_work of every zone, or every OD pair; or every zone's "
                           "share_within --km or share_live_and_work), each of whose 95 %% "
                           "intervals must be within --within")
    plan.add_argument("--within", metavar="MARGIN",
                      help="with --answers: commuters (50) or a percentage of each answer (2%%); "
                           "for a share, percentage points (2 = ±2 points)")
    plan.add_argument("--km", type=arguments.real("--km"), default=10.0,
                      help="with --answers share_within: the distance (default 10)")
    plan.add_argument("--method", choices=[publish.FLAT, publish.TOPDOWN], default=publish.FLAT,
                      help="with --answers: the publish planned beside the mechanisms — flat "
                           "(OpenDP discrete Laplace, default) or topdown (proposes each level's "
                           "share of ρ)")
    plan.add_argument("--answers-level", choices=["fine", "parent"], default="fine",
                      help="with --method topdown: the level the answers are asked at (the "
                           "zones, or their parents; default fine)")
    plan.add_argument("--target", type=arguments.real("--target"),
                      help="the metric's threshold (not used with 'checks')")
    plan.add_argument("--probability", type=arguments.number(PASS_PROBABILITY, "--probability"),
                      default=0.9,
                      help="pass probability a searched answer must reach (default 0.9)")
    plan.add_argument("--postprocess", default="base",
                      help=f"one of {', '.join(postprocess.METHODS)} (default base)")
    plan.add_argument("--delta", type=arguments.number(DELTA, "--delta"),
                      help="δ for the mechanisms that use one")
    plan.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                      help="a parameter of the mechanisms that declare it (repeatable)")
    plan.add_argument("--trials", type=arguments.number(TRIALS, "--trials"), default=20,
                      help="releases per searched ε")
    plan.add_argument("--seed", type=arguments.number(SEED, "--seed"), default=0)
    plan.add_argument("--search", action="store_true",
                      help="search even where a closed form exists")
    plan.add_argument("--out", required=True, metavar="OUT.csv")
    plan.set_defaults(handler=_cmd_plan)
