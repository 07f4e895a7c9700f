"""The benchmarks' one entry point (run from the repository root).

    python3 -m bench --list              # every benchmark: name, quick or not, format, script
    python3 -m bench --quick             # the fast ones, with their quick settings
    python3 -m bench --only NAME [--only NAME …] [--quick]
    python3 -m bench --render            # docs/BENCHMARKS.md again from bench/results.jsonl

Each run appends its rows to ``bench/results.jsonl`` and regenerates the marked section of
``docs/BENCHMARKS.md`` (see ``bench/suite.py``). Figures belong to a quiet machine: the load
average before and after each benchmark is recorded beside its rows, so read them with it.
"""

import argparse
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import suite  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m bench", description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="list the benchmarks and stop")
    parser.add_argument("--quick", action="store_true",
                        help="the fast benchmarks (or those named by --only) with quick settings")
    parser.add_argument("--only", action="append", metavar="NAME", choices=list(suite.BY_NAME),
                        help="run this benchmark (repeatable)")
    parser.add_argument("--render", action="store_true",
                        help="only regenerate docs/BENCHMARKS.md from the results file")
    parser.add_argument("--results", type=Path, default=suite.RESULTS,
                        help="the JSON-lines results file (default bench/results.jsonl)")
    parser.add_argument("--doc", type=Path, default=suite.DOC,
                        help="the page to regenerate (default docs/BENCHMARKS.md)")
    parser.add_argument("--no-doc", action="store_true", help="record rows, leave the page")
    args = parser.parse_args(argv)
    failed: list[str] = []
    if args.list:
        for b in suite.BENCHMARKS:
            kind = ("quick" if b.quick else "full ") + (" rows " if b.rows else " own  ")
            print(f"{b.name:20} {kind} bench/{b.script}.py  {b.what}")
        return 0
    if not args.render:
        if args.only:
            chosen = [suite.BY_NAME[name] for name in args.only]
        elif args.quick:
            chosen = [b for b in suite.BENCHMARKS if b.quick]
        else:
            parser.error("say which: --list, --quick, --only NAME or --render")
        run_id = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        for b in chosen:
            print(f"== {b.name} (bench/{b.script}.py), load average {suite.load():.1f}",
                  flush=True)
            try:
                suite.append(suite.run(b, args.quick, run_id), args.results)
            except subprocess.CalledProcessError as failure:  # the others still run
                failed.append(f"{b.name} (exit code {failure.returncode})")
    if not args.no_doc:
        suite.render(args.doc, args.results)
    if failed:
        print(f"failed, no rows recorded: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
