"""A benchmark corpus nobody here wrote: functions and classes with docstrings from the installed stdlib.

Each item becomes a document (qualified name + docstring + signature words); its first
docstring sentence is a query whose single relevant document is the item itself.
"""

from __future__ import annotations

import ast
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class DocItem:
    id: str     # e.g. "json/decoder.py::JSONDecoder.decode"
    text: str   # the item's name and full docstring
    query: str  # the first sentence of the docstring


def stdlib_root() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def iter_items(root: Path | None = None):
    """Yield DocItems in a stable order (sorted files, source order within a file)."""
    root = root or stdlib_root()
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(("site-packages/", "test/", "idlelib/idle_test/")) or "/tests/" in rel:
            continue
        try:
            tree = ast.parse(path.read_bytes())
        except (SyntaxError, ValueError):
            continue
        yield from _items_in(tree, rel)


def _items_in(tree: ast.AST, rel: str, prefix: str = ""):
    for node in getattr(tree, "body", []):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            name = prefix + node.name
            doc = ast.get_docstring(node)
            if doc and len(doc) >= 20:
                first = doc.strip().split("\n\n")[0].split(". ")[0].replace("\n", " ").strip()
                if len(first.split()) >= 3:
                    yield DocItem(id=f"{rel}::{name}", text=f"{name.replace('.', ' ')}\n{doc}", query=first)
            if isinstance(node, ast.ClassDef):
                yield from _items_in(node, rel, prefix=name + ".")


def load_items(limit: int | None = None) -> list[DocItem]:
    """At most `limit` items (all when None); ids are unique."""
    items: list[DocItem] = []
    seen: set[str] = set()
    for item in iter_items():
        if item.id in seen:
            continue
        seen.add(item.id)
        items.append(item)
        if limit is not None and len(items) >= limit:
            break
    return items


if __name__ == "__main__":
    items = load_items()
    print(f"{len(items)} documented items under {stdlib_root()} (python {sys.version.split()[0]})")
