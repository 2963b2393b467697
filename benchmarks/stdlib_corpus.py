"""A benchmark corpus nobody here wrote: the functions and classes of installed Python code.

Every function and class (documented or not) of the standard library, and optionally of
the installed site-packages, becomes a document: its qualified name, its parameter
names and its docstring (if any). Documented items also give a query, the first
sentence of their docstring, whose single relevant document is the item itself.
Undocumented items are real distractors that make the corpus larger without inventing
text. Order is stable: sorted files, source order within a file.
"""

from __future__ import annotations

import ast
import sys
import sysconfig
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

SOURCES = ("stdlib", "site-packages")


@dataclass(frozen=True, slots=True)
class DocItem:
    id: str            # e.g. "stdlib/json/decoder.py::JSONDecoder.decode"
    text: str          # name, parameters and full docstring
    query: str | None  # the first docstring sentence; None for an undocumented item


def stdlib_root() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def site_packages_root() -> Path:
    return Path(sysconfig.get_paths()["purelib"])


def _skip(rel: str) -> bool:
    """Test suites are left out: thousands of near-identical test_* functions are not docs."""
    parts = rel.split("/")
    return (rel.startswith(("site-packages/", "test/", "idlelib/idle_test/"))
            or any(part in ("tests", "test", "testing") for part in parts[:-1])
            or parts[-1].startswith("test_"))


def iter_items(source: str = "stdlib") -> Iterator[DocItem]:
    """Yield the items of one source ("stdlib" or "site-packages") in a stable order."""
    root = stdlib_root() if source == "stdlib" else site_packages_root()
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if _skip(rel):
            continue
        try:
            tree = ast.parse(path.read_bytes())
        except (SyntaxError, ValueError, RecursionError, OSError):
            continue
        yield from _items_in(tree, f"{source}/{rel}")


def _items_in(tree: ast.AST, rel: str, prefix: str = "") -> Iterator[DocItem]:
    for node in getattr(tree, "body", []):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            name = prefix + node.name
            doc = ast.get_docstring(node) or ""
            query = _first_sentence(doc)
            params = " ".join(_parameters(node))
            yield DocItem(id=f"{rel}::{name}", text=f"{name.replace('.', ' ')} {params}\n{doc}".strip(),
                          query=query)
            if isinstance(node, ast.ClassDef):
                yield from _items_in(node, rel, prefix=name + ".")


def _parameters(node: ast.AST) -> list[str]:
    if isinstance(node, ast.ClassDef):
        return [base.id for base in node.bases if isinstance(base, ast.Name)]
    arguments = node.args  # type: ignore[attr-defined]
    every = arguments.posonlyargs + arguments.args + arguments.kwonlyargs
    names = [arg.arg for arg in every if arg.arg not in ("self", "cls")]
    for extra in (arguments.vararg, arguments.kwarg):
        if extra is not None:
            names.append(extra.arg)
    return names


def _first_sentence(doc: str) -> str | None:
    """The docstring's first sentence if it is a usable query (>= 20 chars of docstring, >= 3 words)."""
    if len(doc) < 20:
        return None
    first = doc.strip().split("\n\n")[0].split(". ")[0].replace("\n", " ").strip()
    return first if len(first.split()) >= 3 else None


def load_items(limit: int | None = None, sources: tuple[str, ...] = ("stdlib",)) -> list[DocItem]:
    """At most `limit` items (all when None) from `sources`, in order; ids are unique."""
    items: list[DocItem] = []
    seen: set[str] = set()
    for source in sources:
        for item in iter_items(source):
            if item.id in seen:
                continue
            seen.add(item.id)
            items.append(item)
            if limit is not None and len(items) >= limit:
                return items
    return items


if __name__ == "__main__":
    for source in SOURCES:
        items = load_items(sources=(source,))
        documented = sum(item.query is not None for item in items)
        print(f"{source}: {len(items)} items, {documented} with a query-worthy docstring "
              f"(python {sys.version.split()[0]})")
