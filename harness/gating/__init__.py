"""Pass or fail: baselines, budgets and the gates."""
