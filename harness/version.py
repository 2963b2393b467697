"""The harness's version, in one home: `harness.__version__`, `--version`, each report's provenance, the wheel."""

__version__ = "0.1.0"
