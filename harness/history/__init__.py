"""The gate over time: the history store, its series, change points, slow drift and bisect (docs/history.md)."""
