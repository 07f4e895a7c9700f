"""CPU seconds the thesis report spends on its computed data notes (issue 28: the report must
stay within 3 minutes): the count profiles of each whole level, the notes of figures 5.2 and 5.3
under both protocols (cold cache: each law is evaluated once, then cached), and those of figures
5.4, 5.9 and 5.11 once per protocol setting the report judges (``--builds``, 12 by default: two
protocols, each with every switch toggled, and the other protocol).

CPU time of this process, so other work on the machine does not count. Run from the repository
root: ``python bench/bench_thesis_reasons.py [--dataset ireland_ed] [--builds 12]``.
"""

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
import pandas as pd

from dpcore.data import datasets, views
from dpcore.evaluation import thesis
from dpcore.evaluation.thesis import reasons
from dpcore.mechanisms.count_profile import CountProfile


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", default="ireland_ed")
    parser.add_argument("--builds", type=int, default=12)
    args = parser.parse_args()
    od = datasets.load(args.dataset)
    lv = thesis.levels(od)
    started = time.process_time()
    profiles = {s.label: CountProfile.of_matrix(views.select(od, s.view)) for s in lv.whole}
    profiled = time.process_time()
    # the figures' summaries as the notes read them (their means are not needed for the cost)
    measured = pd.DataFrame([{"mechanism": key, "scenario": level, "epsilon": epsilon,
                              "mean": np.nan, "sd": np.nan, "trials": 10}
                             for key in thesis.CENTRAL for level in profiles
                             for epsilon in (0.5, 5.0)])
    for opendp in (True, False):
        for metric in ("rmse", "max_error_freq"):
            reasons.central_note(metric, profiles, opendp, measured)
    central = time.process_time()
    truth = views.select(od, lv.coarse.view).to_dense()
    trials = pd.DataFrame([{"mechanism": key, "variant": "run", "zeros": 0, "zeros_cut": 0}
                           for key in thesis.MECHANISMS])
    for _ in range(args.builds):
        reasons.local_zeros_note(truth, trials, thesis.THESIS_ZEROS_5_9, 5.0,
                                 reasons.SHORT_NAMES)
        reasons.stability_zeros_note(truth, trials, 96, 5.0)
        reasons.base_cut_note(truth, trials, (363, 782), 5.0)
    zeros = time.process_time()
    print(f"dataset {od.name}: levels {', '.join(profiles)}")
    print(f"count profiles: {profiled - started:.2f} s CPU")
    print(f"notes of figures 5.2 and 5.3, both protocols (cold cache): "
          f"{central - profiled:.2f} s CPU")
    print(f"notes of figures 5.4, 5.9 and 5.11 × {args.builds}: {zeros - central:.2f} s CPU")
    print(f"total: {zeros - started:.2f} s CPU")


if __name__ == "__main__":
    main()
