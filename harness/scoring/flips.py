"""Flips: queries whose relevant documents in the top 10 differ between two runs (lost or gained).

The one definition every output uses: the recall gate lists the queries that lost a relevant
document, `compare` and the HTML page list losses and gains.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Flip:
    set_name: str
    qid: str
    query: str
    lost: tuple[str, ...]    # relevant ids found in the base run's top 10, not in the other's
    gained: tuple[str, ...]  # and the other way round

    def to_dict(self) -> dict[str, object]:
        """As a report keeps it under its set (the query text is the set's own row)."""
        return {"qid": self.qid, "lost": list(self.lost), "gained": list(self.gained)}

    def change_text(self) -> str:
        """`lost d1, d2; gained d3`, as the text outputs list a flip."""
        return "; ".join(f"{word} {', '.join(ids)}" for word, ids in (("lost", self.lost), ("gained", self.gained))
                         if ids)


def find_flips(set_name: str, base_found: Mapping[str, Sequence[str]], found: Mapping[str, Sequence[str]],
               queries: Mapping[str, str] | None = None) -> list[Flip]:
    """Flips over the qids in both runs, by qid; `queries` gives each qid's text for display.

    `base_found` / `found` map qid -> the relevant ids each run found (best first); the order of
    `lost` and `gained` follows the run they come from.
    """
    flips = []
    for qid in sorted(set(base_found) & set(found)):
        before, now = list(base_found[qid]), list(found[qid])
        lost = tuple(doc_id for doc_id in before if doc_id not in now)
        gained = tuple(doc_id for doc_id in now if doc_id not in before)
        if lost or gained:
            flips.append(Flip(set_name, qid, (queries or {}).get(qid, ""), lost, gained))
    return flips
