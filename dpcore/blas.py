"""One BLAS thread per process: the server's sessions, not OpenBLAS, use the cores.

NumPy's and SciPy's OpenBLAS start a thread per core for a dot product over a long vector, and
those threads spin, waiting for the next call, long after it returned. Every BLAS call in the
product is a level-1 product over a vector (metrics' dots, a trip-length sum), bound by memory,
not arithmetic: a second thread saves little wall time and its spinning takes the core another
session's rerun (or the page's second worker thread, ``ui/components/runs.py``) was using. At ED
level one Explore ε change used 1.24 s of CPU with two BLAS threads and 0.74 s with one, in the
same wall time (``bench/bench_ed_change_profile.py``, 2 cores). Applies to the BLAS libraries
loaded when it is called (NumPy's and SciPy's: import them first).
"""

from __future__ import annotations

from threadpoolctl import threadpool_limits


def one_thread() -> None:
    """Limit every loaded BLAS library of this process to one thread (kept until it exits)."""
    threadpool_limits(limits=1, user_api="blas")
