"""Wire protocol v1: encode and decode the JSON lines exchanged with an adapter. No processes here.

Request  `{"kind": "code", "query": "parse a config file", "k": 10, "qid": "code-017"}`
Response `{"ids": ["pkg/a.py", ...], "scores": [2.5, ...]?, "error": "message"?, "qid": "code-017"?}`
         (an echoed `qid` must be the request's: it catches answers out of step)
         `"passages": [{"start": 0, "end": 480}, null, ...]?` parallel to `ids`: the window of
         the document's text the backend would show (characters, end exclusive), or null for
         the whole document; bounds against the corpus and --max-window: adapter/windows.py
Banner   `{"ready": true, "name": ..., "version": ..., "model": ..., "index": ..., "index_bytes": ...}`
         (optional, first line, before any request is read; `index_bytes`, optional, an integer
         >= 0: the size of the index the adapter built or loaded, a resource figure)
Progress `{"progress": {"stage": "embedding memory", "done": 1200, "total": 6778}}` (optional,
         any number of lines before the banner while the adapter starts: `stage` a non-empty
         string, `done` an integer >= 0, `total` an integer >= done or absent/null when unknown)
"""

from __future__ import annotations

import json
import math
from json.encoder import encode_basestring
from typing import NamedTuple

from harness.errors import ProtocolError
from harness.strict_json import (MAX_INT_DIGITS, SURROGATE_ESCAPE_BYTES, SURROGATE_ESCAPE_TEXT, NotStrictJSON,
                                 lone_surrogate_at, refused_at, strict_decode)
from harness.quoting import preview

PROTOCOL_VERSION = 1

# Built once: json.dumps/loads with options build a new encoder per call, which costs
# microseconds per query on the hot path (benchmarks/overhead.py).
_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


BANNER_TEXT_FIELDS = ("name", "version", "model")  # formatted as text by check-adapter and reports
_STRING = encode_basestring  # a JSON string literal, non-ASCII kept (as ensure_ascii=False)


# NamedTuples, not dataclasses: immutable all the same, and several times cheaper to build on
# the per-query hot path (benchmarks/overhead.py).
class Request(NamedTuple):
    kind: str
    query: str
    k: int
    qid: str | None = None


class Response(NamedTuple):
    """One decoded answer. `error` set means the adapter declined the query."""

    ids: tuple[str, ...]
    scores: tuple[float, ...] | None = None
    error: str | None = None
    passages: tuple[tuple[int, int] | None, ...] | None = None  # per hit (docs/adapters.md, "Passages")


def encode_request(request: Request) -> bytes:
    """One request line, newline-terminated, UTF-8 (non-ASCII kept as is).

    Formatted directly with the JSON string encoder: the same bytes as json.dumps(...,
    ensure_ascii=False, separators=(",", ":")) at a fraction of the cost (tests check both agree).
    """
    kind, query, k, qid = request
    if type(k) is not int:
        raise TypeError(f"k must be an int, got {k!r}")
    echo = "" if qid is None else f',"qid":{_STRING(qid)}'
    return f'{{"kind":{_STRING(kind)},"query":{_STRING(query)},"k":{k}{echo}}}\n'.encode("utf-8")


def decode_request(line: bytes | str) -> Request:
    """Adapter side: parse one request line; raise ProtocolError naming the bad field."""
    obj = _load_object(line, None)
    kind, query, k, qid = obj.get("kind"), obj.get("query"), obj.get("k"), obj.get("qid")
    if not isinstance(kind, str) or not kind:
        raise ProtocolError("request: 'kind' must be a non-empty string")
    if not isinstance(query, str):
        raise ProtocolError("request: 'query' must be a string")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ProtocolError("request: 'k' must be an integer >= 1")
    if qid is not None and not isinstance(qid, str):
        raise ProtocolError("request: 'qid' must be a string when present")
    return Request(kind=kind, query=query, k=k, qid=qid)


def encode_response(ids: list[str] | tuple[str, ...], scores: list[float] | None = None,
                    error: str | None = None, qid: str | None = None,
                    passages: list[tuple[int, int] | None] | None = None) -> bytes:
    """Adapter side: one response line. An error reply carries an empty id list; `qid` echoes the request's."""
    payload: dict[str, object] = {"qid": qid} if qid is not None else {}
    payload["ids"] = list(ids)
    if scores is not None:
        payload["scores"] = [float(s) for s in scores]
    if passages is not None:
        payload["passages"] = [None if p is None else {"start": int(p[0]), "end": int(p[1])} for p in passages]
    if error is not None:
        payload["error"] = error
    return (_ENCODE(payload) + "\n").encode("utf-8")


def decode_response(line: bytes | str, *, qid: str, k: int) -> Response:
    """Parse and validate one response line for query `qid` asked with `k`.

    Rules (protocol v1, docs/adapters.md): `ids` a list of unique strings, at most k; `scores`,
    when present, finite numbers of the same length, non-increasing; `error`, when present,
    a string (then `ids` may be absent); `qid`, when present, the query's own. Anything else
    raises ProtocolError naming the query.
    """
    obj = _load_object(line, qid)
    if SURROGATE_ESCAPE_BYTES.search(line) if isinstance(line, bytes) else SURROGATE_ESCAPE_TEXT.search(line):
        where = lone_surrogate_at(obj)
        if where is not None:
            raise ProtocolError(f"query {qid}: {where} holds a lone surrogate escape (\\ud800-\\udfff), "
                                f"not text (a string cut inside a UTF-16 pair?)")
    echoed = obj.get("qid")
    if echoed is not None and echoed != qid:
        # An adapter that echoes the qid lets a desync (answers lagging by one) be caught here.
        raise ProtocolError(f"query {qid}: answer is for query {preview(str(echoed))} "
                            f"(answers out of step with requests?)")
    error = obj.get("error")
    if error is not None:
        if not isinstance(error, str):
            raise ProtocolError(f"query {qid}: 'error' must be a string")
        return Response(ids=(), scores=None, error=error)
    ids = obj.get("ids")
    if type(ids) is not list:
        raise ProtocolError(f"query {qid}: 'ids' must be a list of strings")
    for doc_id in ids:
        if type(doc_id) is not str:
            raise ProtocolError(f"query {qid}: 'ids' must be a list of strings")
    if len(ids) > k:
        raise ProtocolError(f"query {qid}: 'ids' has {len(ids)} entries, more than k={k}")
    if len(set(ids)) != len(ids):
        first: dict[str, int] = {}  # the first id seen a second time
        repeated = next(doc_id for index, doc_id in enumerate(ids) if first.setdefault(doc_id, index) != index)
        raise ProtocolError(f"query {qid}: 'ids' repeats {repeated!r}")
    scores = obj.get("scores")
    if scores is not None:
        scores = _check_scores(scores, len(ids), qid)
    passages = obj.get("passages")
    return Response(tuple(ids), scores, None, None if passages is None else _check_passages(passages, len(ids), qid))


def decode_banner(line: bytes | str, *, check_fields: bool = False) -> dict[str, object] | None:
    """Return the banner object if `line` is a ready banner (`{"ready": true, ...}`), else None.

    A line that is a ready banner must also be strict JSON the reports can carry: NaN or
    Infinity literals, integers too large for a float and lone surrogate escapes anywhere in
    it raise ProtocolError naming the field. With `check_fields` (the run driver), `name`,
    `version` and `model` must be strings when present and `protocol` must be
    PROTOCOL_VERSION; without it (check-adapter, which reports those as a failed check) they
    are left to the caller.
    """
    obj = json_object(line)
    if obj is None or obj.get("ready") is not True:
        return None
    try:
        strict_decode(line.decode("utf-8") if isinstance(line, bytes) else line)
    except NotStrictJSON as exc:
        raise ProtocolError(f"banner: {_refused_field(line)}{exc}") from None
    except UnicodeDecodeError:
        # json.loads read the bytes with 'surrogatepass': an encoded lone surrogate got this far.
        raise ProtocolError(f"banner: line is not valid UTF-8: {preview(repr(line))}") from None
    where = lone_surrogate_at(obj)
    if where is not None:
        raise ProtocolError(f"banner: {where} holds a lone surrogate escape (\\ud800-\\udfff), not text")
    problem = banner_problem(obj) if check_fields else None
    if problem is not None:
        raise ProtocolError(problem)
    return obj


def banner_problem(banner: dict[str, object]) -> str | None:
    """What is wrong with a ready banner's fields, or None: the one rule of a run (exit 3) and of
    check-adapter (a failed check). Text fields are strings, `protocol` is this harness's (an int:
    `true` is not 1), `index_bytes` a count."""
    for name in BANNER_TEXT_FIELDS:
        if name in banner and not isinstance(banner[name], str):
            return f"banner: {name!r} must be a string, got {preview(json.dumps(banner[name]))}"
    if "index_bytes" in banner and banner_index_bytes(banner) is None:
        return ("banner: 'index_bytes' must be an integer >= 0 (bytes), got "
                f"{preview(json.dumps(banner['index_bytes']))}")
    if "protocol" in banner and (type(banner["protocol"]) is not int or banner["protocol"] != PROTOCOL_VERSION):
        return (f"banner: 'protocol' is {preview(json.dumps(banner['protocol']))}; "
                f"this harness speaks {PROTOCOL_VERSION}")
    return None


def banner_index_bytes(banner: dict[str, object] | None) -> int | None:
    """The index size a banner reported (`index_bytes`, checked by `decode_banner`), None when it reported none."""
    value = (banner or {}).get("index_bytes")
    return value if type(value) is int and value >= 0 else None


def _refused_field(text: bytes | str) -> str:
    """`'scores'[1]: ` for the first refused literal of a line, found on the error path only ("" if unknown)."""
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError):
        return ""
    found = refused_at(obj, lambda value: (isinstance(value, float) and not math.isfinite(value))
                       or (type(value) is int and len(str(abs(value))) > MAX_INT_DIGITS), root="")
    return f"{found}: " if found else ""


class Progress(NamedTuple):
    """One start-up progress line: how far `stage` has got (`total` None when unknown)."""

    stage: str
    done: int
    total: int | None = None


def encode_progress(stage: str, done: int, total: int | None = None) -> bytes:
    """Adapter side: one progress line, printed before the banner while indexing or embedding."""
    if not isinstance(stage, str) or not stage:
        raise ValueError("progress: stage must be a non-empty string")
    if isinstance(done, bool) or not isinstance(done, int) or done < 0:
        raise ValueError(f"progress: done must be an integer >= 0, got {done!r}")
    if total is not None and (isinstance(total, bool) or not isinstance(total, int) or total < done):
        raise ValueError(f"progress: total must be an integer >= done ({done}), got {total!r}")
    payload: dict[str, object] = {"stage": stage, "done": done}
    if total is not None:
        payload["total"] = total
    return (_ENCODE({"progress": payload}) + "\n").encode("utf-8")


def decode_progress(line: bytes | str) -> Progress | None:
    """The Progress a line carries, or None when it is not a progress line.

    A line that is a JSON object with a `progress` key but malformed fields raises
    ProtocolError: it was meant as progress, so it must not be taken for an answer.
    """
    if b'"progress"' not in (line if isinstance(line, bytes) else line.encode("utf-8", "surrogatepass")):
        return None
    obj = json_object(line)
    if obj is None or "progress" not in obj:
        return None
    body = obj["progress"]
    if not isinstance(body, dict):
        raise ProtocolError("progress line: 'progress' must be an object with stage, done and total")
    stage, done, total = body.get("stage"), body.get("done"), body.get("total")
    if not isinstance(stage, str) or not stage:
        raise ProtocolError("progress line: 'stage' must be a non-empty string")
    if isinstance(done, bool) or not isinstance(done, int) or done < 0:
        raise ProtocolError(f"progress line: 'done' must be an integer >= 0, got {preview(json.dumps(done))}")
    if total is not None and (isinstance(total, bool) or not isinstance(total, int) or total < done):
        raise ProtocolError(f"progress line: 'total' must be an integer >= done, got {preview(json.dumps(total))}")
    return Progress(stage, done, total)


def encode_banner(**fields: object) -> bytes:
    """Adapter side: the optional ready banner line."""
    payload = {"ready": True, "protocol": PROTOCOL_VERSION, **fields}
    return (json.dumps(payload, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


def json_object(line: bytes | str) -> dict | None:
    """The line as a JSON object, None when it is not one (what a lenient reader of lines needs)."""
    try:
        obj = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return obj if isinstance(obj, dict) else None


def _load_object(line: bytes | str, qid: str | None) -> dict[str, object]:
    """The line as a JSON object; `qid` names the query in errors (None: a request line)."""
    where = "request" if qid is None else f"query {qid}"  # only used for messages; cheap enough
    try:
        text = line.decode("utf-8") if isinstance(line, bytes) else line
    except UnicodeDecodeError:
        raise ProtocolError(f"{where}: line is not valid UTF-8: {preview(repr(line))}") from None
    try:
        obj = strict_decode(text)
    except NotStrictJSON as exc:
        raise ProtocolError(f"{where}: {_refused_field(text)}{exc}: {preview(text)}") from None
    except RecursionError:
        raise ProtocolError(f"{where}: JSON nested too deeply for the parser") from None
    except ValueError:
        raise ProtocolError(f"{where}: line is not JSON: {preview(text)}") from None
    if not isinstance(obj, dict):
        raise ProtocolError(f"{where}: line is not a JSON object: {preview(text)}")
    return obj


def _check_scores(scores: object, n_ids: int, qid: str) -> tuple[float, ...]:
    if not isinstance(scores, list) or len(scores) != n_ids:
        raise ProtocolError(f"query {qid}: 'scores' must be a list as long as 'ids'")
    values: list[float] = []
    for score in scores:
        if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
            raise ProtocolError(f"query {qid}: 'scores' must be finite numbers, got {score!r}")
        if values and score > values[-1]:
            raise ProtocolError(f"query {qid}: 'scores' must be non-increasing")
        values.append(float(score))
    return tuple(values)


def _check_passages(passages: object, n_ids: int, qid: str) -> tuple[tuple[int, int] | None, ...]:
    """`passages` parallel to ids: each null or {"start": s, "end": e} with integers 0 <= s < e.

    The shape only: bounds against the document and the window limit need the corpus
    (harness/adapter/windows.py).
    """
    if type(passages) is not list or len(passages) != n_ids:
        raise ProtocolError(f"query {qid}: 'passages' must be a list as long as 'ids'")
    windows: list[tuple[int, int] | None] = []
    for index, passage in enumerate(passages):
        if passage is None:
            windows.append(None)
            continue
        start = passage.get("start") if type(passage) is dict else None
        end = passage.get("end") if type(passage) is dict else None
        if (type(passage) is not dict or set(passage) != {"start", "end"} or type(start) is not int
                or type(end) is not int or not 0 <= start < end):
            raise ProtocolError(f"query {qid}: 'passages'[{index}] must be null or "
                                f'{{"start": s, "end": e}} with integers 0 <= s < e, got {preview(json.dumps(passage))}')
        windows.append((start, end))
    return tuple(windows)


