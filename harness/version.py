"""The harness's version, in one home: `harness.__version__`, `--version`, each report's provenance, the wheel;
and whether the `harness` package imported is this distribution's at all."""

from __future__ import annotations

import sys

__version__ = "0.1.0"
DISTRIBUTION = "retrieval-gate"  # what harness/__init__.py marks itself with (`__distribution__`)


def foreign_package() -> str | None:
    """Why the imported `harness` package is not retrieval-gate's, or None when it is.

    A PyPI distribution also named `harness` installs a package of that name into the same
    site-packages: its `__init__.py` replaces ours, and `harness.gate` becomes an AttributeError.
    Our own modules (this one, the command line, the pytest plugin) may still be there to say so.
    """
    package = sys.modules.get("harness")
    if package is None or getattr(package, "__distribution__", None) == DISTRIBUTION:
        return None
    try:
        from importlib.metadata import packages_distributions
        owners = [name for name in packages_distributions().get("harness", [])
                  if name.lower().replace("_", "-") != DISTRIBUTION]
    except Exception:  # noqa: BLE001 - broken metadata must not hide the message itself
        owners = []
    other = owners[0] if owners else "harness"
    return (f"the package 'harness' imported from {getattr(package, '__file__', None) or '?'} is not "
            f"{DISTRIBUTION}'s: another distribution named {other!r} installs a package of the same name over it; "
            f"pip uninstall {other}, then pip install --force-reinstall {DISTRIBUTION}")
