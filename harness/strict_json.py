"""Strict JSON, in and out: NaN, Infinity, integers too large for a float and lone surrogates refused.

The one home of that rule for every file the harness writes or reads as JSON (reports,
baselines, policies, sets) and for the wire protocol's lines (harness/adapter/protocol.py),
so a value one side writes is a value the other side reads.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import TypeGuard

from harness.fsutil import open_regular


class NotStrictJSON(ValueError):
    """A literal strict JSON has no place for (NaN, Infinity, an integer too large for a float)."""


def _refuse_constant(name: str) -> float:
    raise NotStrictJSON(f"{name} is not a JSON number")


MAX_INT_DIGITS = 300  # 10**300 still converts to a float; a longer integer crashes float() and math.isfinite


def _bounded_int(text: str) -> int:
    if len(text) > MAX_INT_DIGITS:
        raise NotStrictJSON(f"an integer of {len(text.lstrip('-'))} digits is too large")
    return int(text)


# json.loads raising NotStrictJSON on a refused literal (ValueError on malformed JSON). The hooks
# run only on integer and NaN/Infinity literals; the C scanner does the rest as json.loads does.
strict_decode = json.JSONDecoder(parse_constant=_refuse_constant, parse_int=_bounded_int).decode


# A \uD800-\uDFFF escape in raw JSON text: the only way it can carry a lone surrogate (UTF-8 bytes
# cannot). Searched on the raw line first, so clean lines (nearly all) pay one regex scan, no walk.
SURROGATE_ESCAPE_BYTES = re.compile(rb"\\u[dD][89a-fA-F]")
SURROGATE_ESCAPE_TEXT = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")  # a str holding one (never a valid pair: json joins those) is no UTF-8


def lone_surrogate_at(value: object) -> str | None:
    """Where in a decoded JSON value a string (or key) holds a lone surrogate: `'ids'[2]`, or None.

    Such a string cannot be written as UTF-8 (reports, corpora, the wire): callers refuse it
    where it enters, naming this path.
    """
    return refused_at(value, lambda item: isinstance(item, str) and _SURROGATE.search(item) is not None)


def refused_at(value: object, refused: Callable[[object], bool], path: str = "", root: str = "the value") -> str | None:
    """Where in a decoded JSON value the first value or key `refused` holds is: `'ids'[2]`, `'a'.b`, `a key of
    'a'`, `root` for the value itself; None when there is none."""
    if refused(value):
        return path or root
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        if isinstance(key, str) and refused(key):
            return f"a key of {path or 'the object'}"
        found = refused_at(item, refused, f"{path}[{key}]" if isinstance(key, int) else f"{path}.{key}" if path
                           else repr(key), root)
        if found:
            return found
    return None


def strict_json_dumps(document: object, *, what: str = "document", **options: object) -> str:
    """json.dumps that refuses what strict JSON readers reject: NaN and Infinity, lone surrogates.

    `what` names the document in the ValueError ("report", "baseline"); `options` go to
    json.dumps (indent, ensure_ascii...). Use it for every file the harness writes as JSON.
    """
    try:
        text = json.dumps(document, allow_nan=False, **options)  # type: ignore[arg-type]
    except ValueError as exc:
        raise ValueError(f"{what}: cannot be written as strict JSON: {exc} (NaN or Infinity in a value)") from None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(f"{what}: cannot be written as strict JSON: lone surrogate near "
                         f"{text[max(0, exc.start - 30):exc.start]!r}") from None
    return text


def read_json_file(path: Path, error: type[Exception], label: str | None = None, what: str = "JSON") -> object:
    """Parse a JSON file strictly; every way it can fail is one `error` line naming the file.

    `what` names the document in the message ("corrupt baseline, not valid JSON ...").
    Refused: a path that is not a regular file (FIFO, device, directory), text that is not
    UTF-8, NaN/Infinity literals, integers of more than MAX_INT_DIGITS digits, nesting past
    the parser's recursion limit.
    """
    label = label or str(path)
    with open_regular(Path(path), error, label) as handle:
        try:
            raw = handle.read()
        except OSError as exc:
            raise error(f"{label}: cannot read: {exc.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise error(f"{label}: {what} is not valid UTF-8") from None
    try:
        return strict_decode(text)
    except NotStrictJSON as exc:
        raise error(f"{label}: {what}, not valid strict JSON ({exc})") from None
    except ValueError as exc:
        raise error(f"{label}: {what}, not valid JSON ({exc})") from None
    except RecursionError:
        raise error(f"{label}: {what}, JSON nested too deeply") from None


def read_settings_file(path: Path | None, default: Path, error: type[Exception], what: str) -> object | None:
    """A settings file parsed strictly (`read_json_file`): `path` when given (it must exist), else
    `default` when present; None when neither is there (the caller's defaults apply)."""
    if path is None and not default.exists():
        return None
    path = default if path is None else path
    if not path.exists():
        raise error(f"{path}: {what} file not found")
    return read_json_file(path, error, what=what)


def is_finite_number(value: object) -> TypeGuard[int | float]:
    """A JSON number the gates can compute with: not a bool, finite, within +-1e300.

    The bound is checked first: math.isfinite overflows on an integer past the float range.
    """
    return (isinstance(value, (int, float)) and not isinstance(value, bool) and -1e300 <= value <= 1e300
            and math.isfinite(value))
