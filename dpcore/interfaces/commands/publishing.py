"""``publish`` (OpenDP's noise, a manifest, a ledger entry; the audit record and the methods'
comparison outside --out), ``lodes-records`` (a published folder as LODES OD records) and
``ledger`` (the budget ledger listed and its keyed chain checked; ``--migrate`` once).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from dpcore import confidential, export
from dpcore.data import datasets, importers, views
from dpcore.data.od import ODMatrix
from dpcore.interfaces import (
    arguments,
    ledger,
    lodes_export,
    publish,
    publish_compare,
    published_domain,
)
from dpcore.limits import DELTA, EPSILON, FINE_SHARE, SEED, TRIALS
from dpcore.interfaces.commands.common import (
    EXIT_INVALID_INPUT,
    _SEVERITY,
    _InvalidInput,
    _say,
    _duration,
    _read_file,
    _load,
    _csv_list,
    _view,
    _progress,
    _add_view,
    _add_input,
)


def _domain(args) -> published_domain.Domain | None:
    """The published domain the options name, checked before any data is loaded (None: the
    bundled dataset's own geography, or the data's zones with ``--domain-from-data``)."""
    if args.domain_zones:
        try:
            domain = published_domain.of_zones_file(_read_file(args.domain_zones),
                                                    Path(args.domain_zones).name)
        except importers.ImportFailed as failure:
            for notice in failure.notices:
                _say(notice, error=True)
            raise _InvalidInput from None
        for notice in sorted(domain.notices, key=lambda n: _SEVERITY[n.level]):
            _say(notice)
        return domain
    if args.domain_dataset:
        return published_domain.of_dataset(args.domain_dataset)
    if args.domain_codes:
        return published_domain.of_codes(args.domain_codes)
    if args.file and not args.domain_from_data:
        raise ValueError("publishing a file needs its domain (the zones a release can contain) "
                         "from a public source: --domain-zones ZONES.csv, --domain-dataset KEY "
                         "(a bundled geography) or --domain-codes A,B,…. "
                         f"{published_domain.DATA_DERIVED_RISK} To take the zones from the data "
                         "all the same, add --domain-from-data.")
    return None


def _cmd_publish(args) -> int:
    """Publish into ``--out`` (release.csv and manifest.json only); what is computed from the
    confidential table (``--audit``, ``--compare-out``) goes outside it, marked as such."""
    method = args.method or (publish.WLS if args.levels else publish.FLAT)
    if method == publish.TOPDOWN and args.mechanism != publish.GAUSSIAN:
        raise ValueError("TopDown publishes with the discrete Gaussian (zCDP): use --mechanism "
                         "gaussian or leave it out")
    mechanism = publish.GAUSSIAN if method == publish.TOPDOWN else args.mechanism
    delta = args.delta
    if delta is None and mechanism == publish.GAUSSIAN:
        delta = publish.DEFAULT_DELTA
        _say(f"note: no --delta given: using δ = {delta:g}, the page's default (give --delta to "
             "choose another)")
    options = dict(delta=delta or 0.0, neighbours=args.neighbours)
    # Settings, the domain and the private files' places are checked before the data is loaded.
    label = ledger.check_label(args.label)
    shares = publish.parse_shares(args.shares) if args.shares is not None else None
    publish.calibrate(mechanism, args.epsilon, options["delta"], args.neighbours)
    postprocess_key = args.postprocess or ("base" if method == publish.WLS else "base_pos")
    if args.audit:
        confidential.check_place(args.audit, args.out, "--audit")
    if args.compare and not args.compare_out:
        raise ValueError("--compare measures the methods against the confidential table: name "
                         "where its results go with --compare-out PATH.csv, outside --out")
    if args.compare_out:
        if not args.compare:
            raise ValueError("--compare-out is where --compare N writes: give --compare too")
        confidential.check_place(args.compare_out, args.out, "--compare-out")
    epsilons = (_csv_list(args.compare_epsilons, "--compare-epsilons", numbers=True)
                if args.compare_epsilons is not None else [args.epsilon])
    domain = _domain(args)
    data = _load(args)
    if domain is None:
        domain = (published_domain.of_dataset(args.dataset, data) if args.dataset
                  else published_domain.of_data(data))
    od = views.select(published_domain.apply(data, domain), _view(args))
    options["source"] = publish.input_entry(label, _view(args), domain.manifest_entry())

    def progress(done, total):
        if sys.stderr.isatty():
            print(f"\r{done:,}/{total:,} cells", end="" if done < total else "\n",
                  file=sys.stderr, flush=True)

    started = time.perf_counter()
    if method == publish.TOPDOWN:
        if publish.exact_total(args.neighbours, not args.area):
            _say(f"note: {publish.TOPDOWN_TOTAL} (--neighbours add_remove)")
        result = publish.publish_topdown(od, args.epsilon, shares=shares, progress=progress,
                                         whole_table=not args.area, **options)
    elif method == publish.WLS:
        result = publish.publish_levels(od, args.mechanism, args.epsilon,
                                        fine_share=args.fine_share, postprocess=postprocess_key,
                                        progress=progress, **options)
    else:
        result = publish.publish(od, args.mechanism, args.epsilon, postprocess=postprocess_key,
                                 progress=progress, **options)
    entry = ledger.record(ledger.LedgerStore(), result, label, f"{method} ({mechanism})")
    csv_path, manifest_path = result.write(args.out)
    print(result.manifest["guarantee"])
    if not domain.public:
        _say(f"warning: the domain was taken from the data. {published_domain.DATA_DERIVED_RISK}",
             error=True)
    print(f"publish: {len(result.table):,} rows in {_duration(time.perf_counter() - started)} → "
          f"{csv_path}, {manifest_path}; ledger entry {entry.number}"
          + ("" if label else " (unlabelled: give --label to group it with others about the "
                              "same people)"))
    if args.audit:
        files = [args.file] + ([args.zones] if args.zones else []) if args.file else \
            datasets.DATASETS[args.dataset].files
        path = confidential.write(args.audit, confidential.json_text(
            publish.audit_record(od, files)), args.out, "--audit")
        print(f"private audit record (NOT FOR PUBLICATION: keep it apart) → {path}")
    if args.compare:
        _compare(args, od, epsilons, options["delta"] or publish.DEFAULT_DELTA)
    return 0


def _compare(args, od: ODMatrix, epsilons: list[float], delta: float) -> None:
    """Flat, WLS and TopDown side by side at the chosen budget (seeded simulated releases,
    measured against the confidential table: written outside --out, marked private)."""
    results = publish_compare.compare(od, epsilons, delta, trials=args.compare,
                                      seed=args.seed, neighbours=args.neighbours,
                                      whole_table=not args.area, progress=_progress)
    path = confidential.write(args.compare_out, confidential.csv_bytes(results), args.out,
                              "--compare-out")
    side = publish_compare.table(results, args.epsilon if args.epsilon in epsilons
                                 else epsilons[0])
    print(side.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    print(f"comparison (NOT FOR PUBLICATION: measured against the confidential table): "
          f"{args.compare} releases per method and ε → {path}")


def _cmd_lodes_records(args) -> int:
    """Write a published folder as LODES OD records beside an unchanged copy of its manifest
    (the guarantee and settings of the counts the records hold)."""
    records, _, level = lodes_export.published_records(args.folder)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    export.write_safe_csv(records, out / "od.csv")
    source, copy = Path(args.folder) / "manifest.json", out / "manifest.json"
    if source.resolve() != copy.resolve():
        copy.write_bytes(source.read_bytes())
    which = f" (the {level}; the other levels are its sums)" if level else ""
    _say(f"{len(records):,} LODES records{which} → {out / 'od.csv'}, manifest → {copy}; the "
         "age, earnings and industry columns are empty (see docs/ONTHEMAP.md)")
    return 0


def _cmd_ledger(args) -> int:
    store = ledger.LedgerStore(args.folder)
    if args.migrate:
        return _migrate_ledger(store)
    check = store.check()
    if check.refusal is not None:
        _say(f"ledger ({store.path}): REFUSED — {check.refusal.for_operator()}", error=True)
        return EXIT_INVALID_INPUT
    entries = check.entries
    problems = check.problems + ledger.check_anchors(entries, args.verify or [])
    shown = ledger.table(entries)
    print(shown.to_string(index=False) if len(shown) else
          "No entry is left to show." if problems else "No publication recorded yet.")
    print(ledger.totals_by_label(entries).to_string(
        index=False, float_format=lambda v: f"{v:.4g}", na_rep="") if entries else "")
    anchors = f"; {len(args.verify)} published folder(s) checked" if args.verify else ""
    if problems:
        _say(f"ledger ({store.path}): TAMPERED — "
             + "; ".join(problem.for_operator() for problem in problems), error=True)
    else:
        print(f"ledger ({store.path}): intact, {len(entries)} entries, keyed chain and head "
              f"record agree{anchors}")
    if args.out:
        export.write_safe_csv(shown, args.out)
    return 0 if not problems else EXIT_INVALID_INPUT


def _migrate_ledger(store: ledger.LedgerStore) -> int:
    """``ledger --migrate``: the operator moves an earlier version's unkeyed ledger (once)."""
    try:
        entries = store.migrate()
    except ledger.Refused as refusal:
        _say(f"ledger ({store.path}): {refusal}", error=True)
        return EXIT_INVALID_INPUT
    print(ledger.table(entries).to_string(index=False))
    print(f"ledger ({store.path}): moved {len(entries) - 1} entries of the unkeyed ledger into "
          "the keyed one; entry 1 records the migration. Check above that they are your "
          "publications: the unkeyed table had no key, so anyone who could write the database "
          "could have written it.")
    return 0


def add(commands: argparse._SubParsersAction) -> None:
    """The ``publish``, ``lodes-records`` and ``ledger`` subcommands."""
    out = commands.add_parser("publish", help="publish a release with OpenDP's noise and a "
                                              "manifest (not seeded)")
    _add_input(out, required=True)
    _add_view(out)
    out.add_argument("--method", choices=list(publish.METHODS),
                     help="flat: one level; wls: this level and its parent, least squares; "
                          "topdown: every level by TopDown (InfTDA, discrete Gaussian). "
                          "Default flat (wls with --levels)")
    out.add_argument("--mechanism", default=publish.GAUSSIAN, choices=list(publish.MECHANISMS),
                     help="noise of flat and wls (default gaussian; topdown: gaussian only)")
    out.add_argument("--epsilon", type=arguments.number(EPSILON, "--epsilon"), required=True)
    out.add_argument("--delta", type=arguments.number(DELTA, "--delta"),
                     help="for gaussian (default 1e-6, as on the page)")
    out.add_argument("--label", metavar="TEXT",
                     help="who the data is about, for the budget ledger (e.g. \"Kildare commuters "
                          "2016\"): publications with one label compose; shown to everyone "
                          "using this server, so never a file name")
    out.add_argument("--neighbours", default="substitution",
                     choices=["substitution", "add_remove"])
    out.add_argument("--postprocess", choices=list(publish.POSTPROCESS),
                     help="base (keep negatives) or base_pos (negatives to 0); default base_pos, "
                          "base with --levels")
    out.add_argument("--levels", action="store_true",
                     help="the same as --method wls")
    out.add_argument("--fine-share", type=arguments.number(FINE_SHARE, "--fine-share"),
                     default=0.5,
                     help="with --levels: the zones' share of ε (default 0.5)")
    out.add_argument("--shares", metavar="S1,S2,…",
                     help="with --method topdown: each level's share of ρ, top level first, "
                          "each ≥ 1e-6, adding up to 1 (default even)")
    out.add_argument("--compare", type=arguments.number(TRIALS, "--compare"), metavar="RELEASES",
                     help="also measure flat, WLS and TopDown side by side at this budget over "
                          "this many seeded simulated releases each (into --compare-out)")
    out.add_argument("--compare-out", metavar="PATH.csv",
                     help="where --compare writes, outside --out: it is measured against the "
                          "confidential table, NOT FOR PUBLICATION")
    out.add_argument("--compare-epsilons", metavar="E1,E2,…",
                     help="with --compare: the ε values to compare at (default: --epsilon)")
    out.add_argument("--seed", type=arguments.number(SEED, "--seed"), default=0,
                     help="seed of --compare's releases (the publication itself is never "
                          "seeded)")
    out.add_argument("--out", required=True, metavar="DIR",
                     help="directory for release.csv and manifest.json (nothing else goes "
                          "there)")
    domain = out.add_mutually_exclusive_group()
    domain.add_argument("--domain-zones", metavar="PATH",
                        help="the published domain: a public zones file (zone[, parent]) "
                             "listing the zones a release can contain (may be the --zones file)")
    domain.add_argument("--domain-dataset", choices=list(datasets.DATASETS), metavar="KEY",
                        help="the published domain: a bundled dataset's geography")
    domain.add_argument("--domain-codes", metavar="A,B,…",
                        help="the published domain: these zone codes (origins and destinations)")
    domain.add_argument("--domain-from-data", action="store_true",
                        help="take the domain from the data's zones, accepting that this "
                             "publishes which zones have commuters")
    out.add_argument("--audit", metavar="PATH",
                     help="also write a private audit record (SHA-256 of the input, number of "
                          "commuters) here, outside --out: NOT FOR PUBLICATION")
    out.set_defaults(handler=_cmd_publish)

    records = commands.add_parser("lodes-records", help="a published folder's release as LODES "
                                                         "OD records, with its manifest")
    records.add_argument("folder", metavar="PUBLISHED_DIR",
                         help="a folder written by publish (release.csv and manifest.json)")
    records.add_argument("--out", required=True, metavar="DIR",
                         help="directory for od.csv (LODES OD layout) and a copy of manifest.json")
    records.set_defaults(handler=_cmd_lodes_records)

    book = commands.add_parser("ledger", help="every publication recorded in the budget ledger, "
                                              "the totals per label and the keyed chain's check "
                                              "(exit 1 when tampered with)")
    book.add_argument("--folder", metavar="DIR", help="folder of the app's database (default: "
                                                      "$DPCORE_CLASSROOM_DIR or the cache)")
    book.add_argument("--out", metavar="OUT.csv", help="also write the entries as CSV")
    task = book.add_mutually_exclusive_group()
    task.add_argument("--verify", nargs="+", metavar="DIR",
                      help="published folders whose manifests anchor the ledger: check that the "
                           "entry each names is still there, unchanged")
    task.add_argument("--migrate", action="store_true",
                      help="move the unkeyed ledger of a version before the keyed one into a "
                           "keyed ledger that has no entry yet (once; entry 1 records it). Check "
                           "the entries it prints: the unkeyed table could be anyone's")
    book.set_defaults(handler=_cmd_ledger)
