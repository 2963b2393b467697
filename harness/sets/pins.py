"""Re-pin a set: record in set.json the content hash of every document its queries name."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from harness.fsutil import atomic_write_text
from harness.sets.loader import compute_pins, load_set


@dataclass(frozen=True)
class PinUpdate:
    meta_path: Path
    pinned: int                # documents pinned now
    changed: tuple[str, ...]   # ids whose pin was added, changed or removed (empty: set.json untouched)


def repin_set(folder: Path, *, offline: bool = False) -> PinUpdate:
    """Recompute the pins of the set in `folder` and rewrite its set.json (atomically) when they changed."""
    query_set = load_set(folder, offline=offline, check_pins=False)
    meta_path = folder / "set.json"
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    pins = compute_pins(query_set.queries, {doc.id: doc for doc in query_set.documents})
    old = meta.get("pins") or {}
    changed = tuple(sorted(doc_id for doc_id in set(pins) | set(old) if pins.get(doc_id) != old.get(doc_id)))
    if changed:
        meta["pins"] = pins
        atomic_write_text(meta_path, json.dumps(meta, indent=1, ensure_ascii=False) + "\n")
    return PinUpdate(meta_path, len(pins), changed)
