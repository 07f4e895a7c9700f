"""How releases are judged: summaries, flows, experiments, the ε planner, the thesis report."""
