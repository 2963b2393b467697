"""Passage mode for the reference adapters: fixed character windows with overlap, documents ranked by their best window.

A document of n characters is cut into windows of `window` characters starting every
`window - overlap` characters (the last one ends at n; a short document is one window). Each
window is indexed as its own text; a query ranks windows, each document takes the score of its
best window, and that window is returned with the hit as `(id, score, (start, end))`, the
excerpt the backend would show (docs/adapters.md, "Passages").

When to window a kind: `--passages on` always, `off` never, `auto` (default) when the harness
wrote `<kind>.passages.json` beside the corpus (a set asks for it in set.json; docs/sets.md).
"""

from __future__ import annotations

import argparse
import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

DEFAULT_WINDOW = 800  # characters: about 200 tokens, inside the embedder's 256
DEFAULT_OVERLAP = 200
MODES = ("auto", "on", "off")
# What an embedder reads of a document longer than one window: its first --max-length tokens
# (the rest is never seen), or every window, the document scoring as its best window.
LONG_DOCUMENTS = ("first", "windows")
HINT_SUFFIX = ".passages.json"
Hit = tuple[str, float, tuple[int, int]]


@dataclass(frozen=True, slots=True)
class WindowSettings:
    window: int = DEFAULT_WINDOW
    overlap: int = DEFAULT_OVERLAP

    def check(self) -> None:
        if self.window < 1:
            raise ValueError(f"--window-chars: must be >= 1, got {self.window}")
        if not 0 <= self.overlap < self.window:
            raise ValueError(f"--window-overlap: must be >= 0 and less than --window-chars ({self.window}), "
                             f"got {self.overlap}")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """--passages auto|on|off, --window-chars N, --window-overlap N."""
    group = parser.add_argument_group("passages (docs/adapters.md)")
    group.add_argument("--passages", choices=MODES, default="auto",
                       help="rank documents by their best fixed window and return it with each hit: "
                            "'auto' (default) when the set asks for it (<kind>.passages.json), 'on' always, 'off' never")
    group.add_argument("--window-chars", type=int, default=None, metavar="N",
                       help=f"window length in characters (default: the set's, else {DEFAULT_WINDOW})")
    group.add_argument("--window-overlap", type=int, default=None, metavar="N",
                       help=f"characters consecutive windows share (default: the set's, else {DEFAULT_OVERLAP})")


def add_long_documents_argument(parser: argparse.ArgumentParser, default: str) -> None:
    """--long-documents first|windows, for the adapters that embed (their defaults differ; docs/performance.md)."""
    parser.add_argument("--long-documents", choices=LONG_DOCUMENTS, default=default,
                        help="what the embedder reads of a document longer than a window: 'first', its first "
                             "--max-length tokens only; 'windows', every window (--window-chars, "
                             "--window-overlap), the document scoring as its best one; hits show windows only "
                             f"in passage mode (default: {default})")


def embedder_windows(args: argparse.Namespace, paths: dict[str, Path],
                     shown: dict[str, WindowSettings]) -> dict[str, WindowSettings]:
    """The kinds the embedder reads window by window: those in passage mode (`shown`), and with
    `--long-documents windows` (unless `--passages off`) every other kind, whose short documents
    are one window each."""
    if args.long_documents != "windows" or args.passages == "off":
        return dict(shown)
    default = sized(args, {}, "--window-chars/--window-overlap")
    return {kind: shown.get(kind, default) for kind in paths}


def without_windows(hits: Sequence[tuple]) -> list[tuple]:
    """Hits as (id, score) pairs: for a kind read by window that is not in passage mode."""
    return [hit[:2] for hit in hits]


def settings_for(args: argparse.Namespace, corpus_path: Path) -> WindowSettings | None:
    """The window settings for one corpus file, or None to serve whole documents.

    Raises ValueError for a malformed hint file or bad sizes.
    """
    hint_path = corpus_path.with_name(corpus_path.stem + HINT_SUFFIX)
    hint: dict[str, object] = {}
    if args.passages == "off":
        return None
    if hint_path.is_file():
        try:
            hint = json.loads(hint_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ValueError(f"{hint_path}: not readable JSON: {exc}") from None
        if not isinstance(hint, dict):
            raise ValueError(f"{hint_path}: must be an object {{\"window\": N, \"overlap\": N}}")
    elif args.passages == "auto":
        return None
    return sized(args, hint, str(hint_path))


def sized(args: argparse.Namespace, hint: dict[str, object], where: str) -> WindowSettings:
    """--window-chars / --window-overlap, else the set's `hint`, else the defaults; checked (ValueError)."""
    window = args.window_chars if args.window_chars is not None else hint.get("window", DEFAULT_WINDOW)
    overlap = args.window_overlap if args.window_overlap is not None else hint.get("overlap", DEFAULT_OVERLAP)
    if isinstance(window, bool) or not isinstance(window, int) or isinstance(overlap, bool) or not isinstance(overlap, int):
        raise ValueError(f"{where}: window and overlap must be integers")
    settings = WindowSettings(window, overlap)
    settings.check()
    return settings


def split(length: int, settings: WindowSettings) -> list[tuple[int, int]]:
    """The (start, end) windows of a text of `length` characters; an empty text has one empty window."""
    if length <= settings.window:
        return [(0, length)]
    step = settings.window - settings.overlap
    windows = []
    start = 0
    while True:
        end = start + settings.window
        if end >= length:
            windows.append((max(0, length - settings.window), length))  # the last one ends at the text's end
            return windows
        windows.append((start, end))
        start += step


@dataclass(frozen=True)
class PassageCorpus:
    """Every window of a corpus as its own text: `owner[i]` is the document index of window i."""

    doc_ids: list[str]
    texts: list[str]  # the windows' texts
    owner: list[int]
    spans: list[tuple[int, int]]
    content_hash: str  # of the documents' hash and the settings: the windows' cache key

    @classmethod
    def build(cls, doc_ids: Sequence[str], doc_texts: Sequence[str], content_hash: str,
              settings: WindowSettings) -> PassageCorpus:
        texts, owner, spans = [], [], []
        for index, text in enumerate(doc_texts):
            for start, end in split(len(text), settings):
                texts.append(text[start:end])
                owner.append(index)
                spans.append((start, end))
        key = hashlib.sha256(f"{content_hash}:window={settings.window}:overlap={settings.overlap}".encode()).hexdigest()
        return cls(list(doc_ids), texts, owner, spans, key)

    @property
    def passage_ids(self) -> list[str]:
        """Window ids for indexes that want one per text: `<doc index>:<window number>`, unique."""
        return [f"{owner}:{number}" for number, owner in enumerate(self.owner)]


def best_windows(corpus: PassageCorpus, search: Callable[[int], Sequence[tuple[int, float]]], k: int) -> list[Hit]:
    """The top k documents by their best window: `search(depth)` returns (window index, score), best first.

    Asks for 4k windows first and four times more until k documents are found or every window
    was ranked, so a document whose windows crowd the top does not shorten the list.
    """
    total = len(corpus.texts)
    depth = min(total, max(4 * k, 1))
    while True:
        hits = collapse(corpus, search(depth), k)
        if len(hits) >= k or depth >= total:
            return hits
        depth = min(total, depth * 4)


def collapse(corpus: PassageCorpus, ranked: Sequence[tuple[int, float]], k: int) -> list[Hit]:
    """Keep each document's first (best) window, in rank order, up to k documents.

    Documents tied on score are ordered by id ascending, as the whole-document indexes order
    them (the window index would order them by its internal window ids instead).
    """
    seen: set[int] = set()
    hits: list[Hit] = []
    for window, score in ranked:
        owner = corpus.owner[window]
        if owner in seen:
            continue
        seen.add(owner)
        hits.append((corpus.doc_ids[owner], float(score), corpus.spans[window]))
        if len(hits) == k:
            break
    hits.sort(key=lambda hit: (-hit[1], hit[0]))
    return hits


def window_number(passage_id: str) -> int:
    """The window index a `PassageCorpus.passage_ids` entry names."""
    return int(passage_id.rsplit(":", 1)[1])


class Windowed:
    """An index built over a PassageCorpus's windows that answers for documents, best window each.

    `index.search(query, depth)` must return (passage id, score) best first; `query` is whatever
    the index takes (text for BM25, a vector for the embedder).
    """

    def __init__(self, corpus: PassageCorpus, index: object, settings: WindowSettings) -> None:
        self.corpus = corpus
        self.index = index
        self.settings = settings
        windows = {"window": settings.window, "overlap": settings.overlap, "count": len(corpus.texts)}
        self.provenance = {**getattr(index, "provenance", {}), "docs": len(corpus.doc_ids), "passages": windows}

    def search(self, query: object, k: int) -> list[Hit]:
        def ranked(depth: int) -> list[tuple[int, float]]:
            return [(window_number(pid), score) for pid, score in self.index.search(query, depth)]  # type: ignore[attr-defined]
        return best_windows(self.corpus, ranked, k)


def window_settings(args: argparse.Namespace, paths: dict[str, Path]) -> dict[str, WindowSettings]:
    """The kinds to serve in passage mode, with their settings (see `settings_for`)."""
    found = {}
    for kind, path in paths.items():
        settings = settings_for(args, Path(path))
        if settings is not None:
            found[kind] = settings
    return found


def attach_windows(fused: Sequence[tuple[str, float]], rankings: Sequence[Sequence[tuple]]) -> list[tuple]:
    """Give each fused hit the window of the ranking that placed it highest (hits without one stay pairs)."""
    best: dict[str, tuple[int, tuple[int, int]]] = {}
    for ranking in rankings:
        for rank, hit in enumerate(ranking):
            if len(hit) > 2 and (hit[0] not in best or rank < best[hit[0]][0]):
                best[hit[0]] = (rank, hit[2])
    if not best:
        return list(fused)
    return [(doc_id, score, best[doc_id][1]) if doc_id in best else (doc_id, score, None) for doc_id, score in fused]
