"""How releases are judged: metrics, ranks, summaries, flows, experiments."""
