"""Plain words: content and stop words (set statistics, the BM25 adapter), a count in words, a list's first few."""

from __future__ import annotations

import re
from collections.abc import Sequence

# A small English stop list (function words only). Content words are what is left.
STOP_WORDS = frozenset("""
a about above after again against all am an and any are as at be because been before being
below between both but by can could did do does doing down during each few for from further
had has have having he her here hers herself him himself his how i if in into is it its
itself just me more most my myself no nor not now of off on once only or other our ours
ourselves out over own same she should so some such than that the their theirs them
themselves then there these they this those through to too under until up very was we were
what when where which while who whom why will with would you your yours yourself yourselves
""".split())

_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def words(text: str) -> list[str]:
    """Lowercased Unicode words; underscores and punctuation separate words."""
    return [match.group(0) for match in _WORD.finditer(text.lower())]


def plural(n: int, word: str, many: str | None = None) -> str:
    """`1 query`, `2 queries`: a count and its noun, singular for exactly one (`many`: the plural when not word + s)."""
    return f"{n} {word}" if n == 1 else f"{n} {many or word + 's'}"


def shortlist(items: Sequence[str], shown: int = 5, *, counted: bool = False, separator: str = ", ") -> str:
    """The first `shown` items joined, then ` ...` when some are left out (`counted`: ` (+N more)`, N of them)."""
    left = len(items) - shown
    return separator.join(items[:shown]) + ((f" (+{left} more)" if counted else " ...") if left > 0 else "")


def content_words(text: str) -> set[str]:
    """The set of words of `text` that are not English stop words."""
    return {word for word in words(text) if word not in STOP_WORDS}
