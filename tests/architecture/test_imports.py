"""Architecture rules: harness/ imports only the standard library, and imports point one way.

The stages (docs/design.md): `sets`, `adapter`, `scoring`, `gating`, `report`, then the API
(`harness.api`) and `commands` on top. Shared mechanisms (errors, fsutil, records, text) sit
below every stage and import none of them.
"""

import ast
import sys
from pathlib import Path
from tests.conftest import REPO_ROOT

HARNESS = REPO_ROOT / "harness"
BASE = {"child", "errors", "fsutil", "interrupts", "measured", "process_memory", "quoting", "records", "rerun", "shipped",
        "strict_json", "text", "version", "watchdog", "__init__"}
# package -> the packages it may import (besides itself and the shared base modules)
ALLOWED = {
    "base": set(),
    "facade": {"api", "report"},  # harness/__init__.py: `harness.gate` and `harness.Report`, imported lazily
    "sets": set(),
    "scoring": set(),
    "gating": {"scoring"},
    "report": {"scoring", "gating", "sets"},
    "adapter": {"sets", "scoring"},
    "shipped": set(),  # harness/shipped.py: where the shipped sets and baselines live
    "layout": {"sets", "adapter", "gating"},  # harness/layout.py: the team's folders, config and defaults
    "api": {"sets", "adapter", "scoring", "gating", "report", "layout"},
    # the gate over time (docs/history.md): the store reads reports and baselines, bisect runs the API
    "history": {"sets", "adapter", "scoring", "gating", "report", "layout", "api"},
    "commands": {"sets", "adapter", "scoring", "gating", "report", "api", "layout", "history"},
    "__main__": {"commands"},
    "pytest_plugin": {"api", "report"},  # harness/pytest_plugin.py: the fixture calls them lazily
}
NO_PROCESSES = ("scoring", "report")
PROCESS_MODULES = {"subprocess", "multiprocessing", "harness.child", "harness.watchdog", "harness.adapter.driver",
                   "harness.adapter.probe", "harness.adapter.asking"}


def imported_modules(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "harness":
                found.extend((node.lineno, f"harness.{alias.name}") for alias in node.names)
            else:
                found.append((node.lineno, node.module))
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "import_module" and node.args:
            if isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                found.append((node.lineno, node.args[0].value))
    return found


def package_of(module: str) -> str:
    """The stage a `harness.x.y` module (or a harness/ file path's dotted name) belongs to."""
    parts = module.split(".")
    if len(parts) == 1:
        return "facade"
    if parts[1] in BASE:
        return "base"
    return parts[1]


def harness_files():
    for path in sorted(HARNESS.rglob("*.py")):
        dotted = "harness." + ".".join(path.relative_to(HARNESS).with_suffix("").parts)
        yield path, dotted.removesuffix(".__init__")


# The exceptions: --executor ray (optional extra [ray]) imports Ray, inside functions, in this module only;
# the pytest plugin imports pytest, which is what loads it; the statistics' numpy engine imports numpy,
# and `stats` and `compare` import that module only inside functions, after checking numpy is installed,
# falling back to pure Python (the same numbers) without it.
THIRD_PARTY_ALLOWED = {"harness.adapter.ray_executor": {"ray"}, "harness.pytest_plugin": {"pytest"},
                       "harness.scoring.numpy_engine": {"numpy"}}


def test_harness_imports_only_the_standard_library():
    allowed = set(sys.stdlib_module_names) | {"harness", "__future__"}
    offenders = [f"{path.name}:{line}: {name}"
                 for path, dotted in harness_files()
                 for line, name in imported_modules(path)
                 if name.split(".")[0] not in allowed | THIRD_PARTY_ALLOWED.get(dotted, set())]
    assert offenders == []


def test_ray_is_imported_lazily_and_nowhere_else():
    import ast
    path = HARNESS / "adapter" / "ray_executor.py"
    top_level = [node for node in ast.parse(path.read_text(encoding="utf-8")).body
                 if isinstance(node, (ast.Import, ast.ImportFrom))]
    assert not [node for node in top_level for alias in node.names
                if (getattr(node, "module", None) or alias.name).split(".")[0] == "ray"]
    users = [dotted for path, dotted in harness_files() for _, name in imported_modules(path)
             if name.split(".")[0] == "ray"]
    assert set(users) == {"harness.adapter.ray_executor"}


def test_numpy_is_imported_by_its_engine_only_and_that_engine_lazily():
    users = {dotted for path, dotted in harness_files() for _, name in imported_modules(path)
             if name.split(".")[0] == "numpy"}
    assert users == {"harness.scoring.numpy_engine"}
    top_level_users = [dotted for path, dotted in harness_files()
                       for node in ast.parse(path.read_text(encoding="utf-8")).body
                       if isinstance(node, (ast.Import, ast.ImportFrom))
                       for name in ([node.module] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names])
                       if name == "harness.scoring.numpy_engine"
                       or (name == "harness.scoring" and any(a.name == "numpy_engine" for a in node.names))]
    assert top_level_users == []  # `import harness` never pays for (or needs) numpy


def test_the_check_itself_catches_a_third_party_import(tmp_path):
    sample = tmp_path / "bad.py"
    sample.write_text("import numpy\nfrom requests import get\n")
    names = [name for _, name in imported_modules(sample)]
    assert names == ["numpy", "requests"]
    assert not set(names) & set(sys.stdlib_module_names)


def test_every_stage_is_known_to_the_rules():
    stages = {package_of(dotted) for _, dotted in harness_files()}
    assert stages <= set(ALLOWED), stages - set(ALLOWED)


def test_imports_point_one_way():
    offenders = []
    for path, dotted in harness_files():
        here = package_of(dotted)
        for line, module in imported_modules(path):
            if not module.startswith("harness"):
                continue
            there = package_of(module)
            if there not in (here, "base") and there not in ALLOWED[here]:
                offenders.append(f"{path.relative_to(HARNESS)}:{line}: {here} imports {module}")
    assert offenders == []


def test_only_the_package_facade_imports_from_it_and_only_modules():
    """`from harness import NAME` in harness/ names a module, never a name the facade (harness/__init__.py)
    defines: the facade imports the API, so a name taken from it would close a circle (the version lives in
    harness/version.py for this)."""
    modules = {dotted for _, dotted in harness_files()}
    offenders = [f"{path.relative_to(HARNESS)}:{line}: {module}" for path, dotted in harness_files()
                 for line, module in imported_modules(path)
                 if module.count(".") == 1 and module.startswith("harness.") and module not in modules]
    assert offenders == []


def test_the_rule_catches_an_upward_import():
    assert "commands" not in ALLOWED["scoring"] and package_of("harness.commands.cli") == "commands"
    assert package_of("harness") == "facade" and package_of("harness.errors") == "base" and package_of("harness.scoring.metrics") == "scoring"


def test_scoring_and_report_never_start_processes():
    offenders = [f"{path.relative_to(HARNESS)}:{line}: {module}"
                 for path, dotted in harness_files() if package_of(dotted) in NO_PROCESSES
                 for line, module in imported_modules(path) if module in PROCESS_MODULES]
    assert offenders == []


def test_nothing_imports_the_commands():
    offenders = [f"{path.relative_to(HARNESS)}:{line}" for path, dotted in harness_files()
                 if package_of(dotted) not in ("commands", "__main__")
                 for line, module in imported_modules(path) if package_of(module) == "commands"]
    assert offenders == []


def test_adapter_authors_import_serve_from_harness_adapter():
    from harness.adapter import serve
    assert callable(serve)


def module_graph() -> dict[str, set[str]]:
    """harness module -> the harness modules it imports anywhere in its file (lazy imports included).

    The package facade (harness/__init__.py) is left out: it imports the API lazily by design.
    """
    modules = {dotted for _, dotted in harness_files()} - {"harness"}
    graph: dict[str, set[str]] = {}
    for path, dotted in harness_files():
        if dotted == "harness":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        targets = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and node.module.startswith("harness"):
                names = [f"{node.module}.{alias.name}" for alias in node.names]
                targets |= {name for name in names if name in modules} or {node.module}
            elif isinstance(node, ast.Import):
                targets |= {alias.name for alias in node.names if alias.name.startswith("harness.")}
        graph[dotted] = {t for t in targets if t in modules and t != dotted}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every import circle, each once, as the path that closes it."""
    found, done = [], set()

    def visit(node: str, path: list[str]) -> None:
        for target in sorted(graph.get(node, ())):
            if target in path:
                circle = path[path.index(target):] + [target]
                if frozenset(circle) not in done:
                    done.add(frozenset(circle))
                    found.append(circle)
            elif target not in seen:
                seen.add(target)
                visit(target, path + [target])

    for start in sorted(graph):
        seen = {start}
        visit(start, [start])
    return found


def test_no_import_circles_even_through_lazy_imports():
    assert cycles(module_graph()) == []


def test_the_circle_check_finds_a_circle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]
