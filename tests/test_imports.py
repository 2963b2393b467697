"""harness/ imports only the standard library, and the import direction of STYLE.md holds."""

import ast
import sys
from pathlib import Path

HARNESS = Path(__file__).resolve().parent.parent / "harness"
PURE_MODULES = ("metrics", "gates", "report", "evaluate", "protocol", "stats", "compare", "html_report", "junit")
FORBIDDEN_IN_PURE = {"subprocess", "os", "harness.runner", "harness.run", "harness.cli"}


def imported_modules(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "import_module" and node.args:
            if isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                found.append((node.lineno, node.args[0].value))
    return found


def test_harness_imports_only_the_standard_library():
    allowed = set(sys.stdlib_module_names) | {"harness", "__future__"}
    offenders = [f"{path.name}:{line}: {name}"
                 for path in sorted(HARNESS.rglob("*.py"))
                 for line, name in imported_modules(path) if name.split(".")[0] not in allowed]
    assert offenders == []


def test_the_check_itself_catches_a_third_party_import(tmp_path):
    sample = tmp_path / "bad.py"
    sample.write_text("import numpy\nfrom requests import get\n")
    names = [name for _, name in imported_modules(sample)]
    assert names == ["numpy", "requests"]
    assert not set(names) & set(sys.stdlib_module_names)


def test_pure_modules_do_not_reach_for_processes_or_the_filesystem():
    offenders = [f"{name}.py:{line}: {module}"
                 for name in PURE_MODULES
                 for line, module in imported_modules(HARNESS / f"{name}.py") if module in FORBIDDEN_IN_PURE]
    assert offenders == []


def test_nothing_imports_the_cli():
    offenders = [f"{path.name}:{line}" for path in HARNESS.rglob("*.py") if path.name not in ("cli.py", "__main__.py")
                 for line, module in imported_modules(path) if module == "harness.cli"]
    assert offenders == []
