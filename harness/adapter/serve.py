"""The adapter side of protocol v1: `serve(search)` turns a search function into an adapter.

One implementation of the loop for our reference adapters and for backend teams:
read a request line, answer one flushed line, survive exceptions, exit cleanly on EOF.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable, Mapping, Sequence
from typing import BinaryIO, TypeVar, Union

from harness.errors import ProtocolError
from harness.adapter.protocol import decode_request, encode_banner, encode_progress, encode_response

Hit = Union[str, tuple[str, float], tuple[str, float, "tuple[int, int] | None"]]
SearchFunction = Callable[[str, str, int], Sequence[Hit]]
IndexT = TypeVar("IndexT")


class UnknownKind(LookupError):
    """Raise from a search function for a kind it does not serve; answered as an error reply."""


def index_for(indexes: Mapping[str, IndexT], kind: str) -> IndexT:
    """The index serving `kind`; an unknown kind raises UnknownKind (an error reply, the loop goes on)."""
    index = indexes.get(kind)
    if index is None:
        raise UnknownKind(f"this adapter serves {sorted(indexes)}")
    return index


def report_progress(stage: str, done: int, total: int | None = None, *, stdout: BinaryIO | None = None) -> None:
    """Tell the harness how far start-up has got: one progress line on stdout, before `serve()`.

    Call it while indexing or embedding, e.g. every few hundred documents:
    `report_progress("embedding memory", 1200, 6778)`. The harness logs it, shows a progress
    bar on a terminal, and counts the start-up timeout as the longest silence between lines.
    """
    _write(stdout if stdout is not None else sys.stdout.buffer, encode_progress(stage, done, total))


def serve(search: SearchFunction, banner: dict[str, object] | None = None, *,
          stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> int:
    """Answer requests from stdin with `search(kind, query, k)` until EOF; return exit status 0.

    `search` returns ids, or (id, score) pairs, best first; more than k are cut to k.
    A hit may also be `(id, score, (start, end))`: the window of the document's text the
    backend would show (characters, end exclusive; None for the whole document), sent as
    `passages` (protocol.py).
    Any exception becomes `{"ids": [], "error": "..."}` for that query and the loop goes on;
    the traceback goes to stderr, which the harness keeps as the adapter's log.
    """
    reader = stdin if stdin is not None else sys.stdin.buffer
    writer = stdout if stdout is not None else sys.stdout.buffer
    if banner is not None:
        _write(writer, encode_banner(**banner))
    for line in reader:
        if not line.strip():
            continue
        _write(writer, _answer(search, line))
    return 0


def _answer(search: SearchFunction, line: bytes) -> bytes:
    try:
        request = decode_request(line)
    except ProtocolError as exc:
        return encode_response([], error=str(exc))
    qid = request.qid  # echoed, so the harness can tell an answer given to the wrong query
    try:
        hits = list(search(request.kind, request.query, request.k))[: request.k]
    except UnknownKind as exc:
        return encode_response([], error=f"unknown kind {request.kind!r}: {exc}", qid=qid)
    except Exception as exc:  # the loop must survive a failing backend call
        traceback.print_exc(file=sys.stderr)
        return encode_response([], error=f"{type(exc).__name__}: {exc}", qid=qid)
    if hits and not isinstance(hits[0], str):
        ids = [str(hit[0]) for hit in hits]
        scores = [float(hit[1]) for hit in hits]
        passages = ([_window(hit[2]) if len(hit) > 2 else None for hit in hits]
                    if any(len(hit) > 2 for hit in hits) else None)  # (id, score, window): docs/adapters.md, "Passages"
        return encode_response(ids, scores, qid=qid, passages=passages)
    return encode_response([str(doc_id) for doc_id in hits], qid=qid)


def _window(window: object) -> tuple[int, int] | None:
    """A hit's window as two ints (a list from JSON too); None: the whole document."""
    if window is None:
        return None
    if not isinstance(window, Sequence) or len(window) != 2:
        raise ProtocolError(f"a hit's window must be (start, end) or None, got {window!r:.60}")
    return int(window[0]), int(window[1])


def _write(writer: BinaryIO, data: bytes) -> None:
    writer.write(data)
    writer.flush()
