"""How text from outside (a file, an adapter's line, a key) appears inside one error line: quoted, cut.

One home for both rules, so every message stays on one line whatever it quotes: `preview`
quotes a value with repr (NUL, newlines, escapes and lone surrogates come out escaped) and
cuts it; `field_key` shows a key as it is when that is safe, else quoted.
"""

from __future__ import annotations


def preview(value: object, limit: int = 80) -> str:
    """`value` quoted on one line: text (bytes decoded, invalid UTF-8 replaced) cut to `limit` characters."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", errors="replace").rstrip("\r\n")
    if not isinstance(value, str):
        text = repr(value)
        return text if len(text) <= limit else text[:limit] + "..."
    return repr(value if len(value) <= limit else value[:limit] + "...")


def field_key(name: str) -> str:
    """A key as an error line names it (`sets.code.k`): as is when printable and trimmed, else quoted."""
    return name if name and name.isprintable() and name.strip() == name else repr(name)
