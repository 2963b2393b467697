"""Argv in, exit code out: one module per command; nothing imports this package."""
