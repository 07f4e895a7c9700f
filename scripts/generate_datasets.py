"""Regenerate every bundled dataset in ``data/`` from ``data/calibration`` (fixed seed).

Run from the repository root: ``python scripts/generate_datasets.py``. The model is documented in
:mod:`dpcore.data.synthetic` and ``docs/DATASETS.md``; the output is identical on every run.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dpcore.data import datasets, synthetic  # noqa: E402


def main() -> int:
    county = synthetic.generate_county(synthetic.read_calibration(datasets.CALIBRATION_DIR))
    generated = {"ireland_county": county, "ireland_ed": synthetic.generate_ed(county),
                 "toy_town": synthetic.toy_town()}
    for key, od in generated.items():
        info = datasets.DATASETS[key]
        datasets.save(od, info)
        sizes = ", ".join(f"{path.name} {path.stat().st_size / 1e6:.2f} MB" for path in info.files)
        print(f"{key}: n={od.n:,} {od.n_origins:,}×{od.n_destinations:,} "
              f"nonzero={od.nonzero:,} count-1 cells={od.count_at_most(1):,} ({sizes})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
