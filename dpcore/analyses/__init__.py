"""The planner's questions on any release, each answer with a 95 % interval that holds.

OnTheMap's analyses (inflow/outflow/live-and-work, destination ranking, distance and direction,
paired areas, area comparison) on a selection of zones (:mod:`.selection`), computed as sums of OD
cells (:mod:`.sums`, dense or sparse), answered by :mod:`.answers`, with intervals from the
mechanism's law (:mod:`.intervals`) or, where none holds, simulated on a public stand-in
(:mod:`.simulated`); OnTheMap's synthetic releases get a debiased estimate and its interval from
the synthesizer's own law (:mod:`.synthesized`). Pure NumPy/pandas. See ``docs/ANALYSES.md``.
"""
