"""How good: metrics, per-query evaluation, statistics, comparison. Never starts a process."""
