"""Check the windows an answer shows against the corpus and the --max-window limit.

The protocol module checks their shape; only here is the document text known. A window past
the end of its document, or longer than the limit (so a backend cannot earn exposed-evidence
credit by showing everything), is a protocol error of the adapter: exit 3 (docs/adapters.md, "Passages").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from harness.errors import ProtocolError

DEFAULT_MAX_WINDOW = 2000  # characters; --max-window


def check_windows(ids: Sequence[str], passages: Sequence[tuple[int, int] | None] | None,
                  lengths: Mapping[str, int], max_window: int, qid: str) -> None:
    """Raise ProtocolError for the first window out of its document or longer than `max_window`.

    `lengths` maps document id to its text length in characters; an id not in the corpus is
    only held to the window limit (it cannot expose evidence anyway). A `null` window (the
    whole document) counts as the document's length: in an answer that shows windows, a long
    document shown whole would be the "show everything" the limit forbids. An answer without
    `passages` shows whole documents: its visible figures are its full-source ones.
    """
    if passages is None:
        return
    for rank, (doc_id, window) in enumerate(zip(ids, passages), start=1):
        if window is None:
            whole = lengths.get(doc_id, 0)
            if whole > max_window:
                raise ProtocolError(f"query {qid}: passages: null (the whole of {doc_id!r}, rank {rank}, {whole} "
                                    f"characters) is longer than --max-window {max_window}; show a window")
            continue
        start, end = window
        if end - start > max_window:
            raise ProtocolError(f"query {qid}: passages: window {start}-{end} of {doc_id!r} (rank {rank}) is "
                                f"{end - start} characters, more than --max-window {max_window}")
        length = lengths.get(doc_id)
        if length is not None and end > length:
            raise ProtocolError(f"query {qid}: passages: window {start}-{end} of {doc_id!r} (rank {rank}) ends "
                                f"past the document ({length} characters)")
