"""A realistic benchmark corpus built at run time from the man pages installed on this machine (never committed).

Each English page under /usr/share/man/man1..man8 (gzip or plain roff) becomes one
document: the page name and its text with roff markup stripped, the NAME section's
one-line description removed, cut to `max_chars` characters. That description
("ls - list directory contents" -> "list directory contents") is the page's query, with
the page as its single relevant document, so the query never appears verbatim in it.
Pages that only redirect (`.so`) or are shorter than 200 characters are skipped. Order is
stable: sorted section, then file name. Falls back to nothing (empty list) when the machine
has no man pages; callers then use benchmarks/stdlib_corpus.py.
"""

from __future__ import annotations

import gzip
import re
from dataclasses import dataclass
from pathlib import Path

MAN_ROOT = Path("/usr/share/man")
SECTIONS = ("man1", "man8", "man5", "man7", "man2", "man3", "man4", "man6")
MIN_CHARS = 200

_FONT = re.compile(r"\\f(\[[^\]]*\]|\(..|.)")
_REGISTER = re.compile(r"\\(n|\*)(\[[^\]]*\]|\(..|.)|\\s[-+]?\d+|\\[hvwo]'[^']*'")
_ESCAPE = re.compile(r"\\(\(..|\[[^\]]*\]|[-&|^/,~0 e%:])")
_NAME_LINE = re.compile(r"^(?P<names>.+?)\s+\\?-\s+(?P<what>.+)$")


@dataclass(frozen=True, slots=True)
class ManDoc:
    id: str      # e.g. "man1/ls.1"
    text: str    # name + stripped page text, without the NAME description, <= max_chars
    query: str   # the NAME description


def _plain(line: str) -> str:
    line = _REGISTER.sub("", _FONT.sub("", line))
    line = line.replace("\\-", "-").replace("\\(aq", "'").replace("\\(dq", '"')
    return _ESCAPE.sub(lambda match: "-" if match.group(1) == "-" else " ", line).replace("\\", "")


def parse_page(raw: str) -> tuple[str, str] | None:
    """(description, body text) of one roff page, or None for a redirect or a page without a NAME line."""
    lines = raw.splitlines()
    if lines and lines[0].startswith(".so "):
        return None
    body: list[str] = []
    description = None
    in_name = False
    for line in lines:
        if line.startswith(('.\\"', "'")):
            continue  # comments, and control lines in the no-break form
        if line.startswith("."):
            macro, _, rest = line[1:].partition(" ")
            if macro in ("SH", "Sh"):
                heading = rest.strip().strip('"')
                in_name = heading.upper() == "NAME"
                if not in_name:
                    body.append(heading)
                continue
            if macro in ("B", "I", "BR", "IR", "RB", "RI", "BI", "IB", "SM", "Nm", "Nd", "Fl", "Ar", "It"):
                text = _plain(rest.replace('"', ""))
                if in_name and macro == "Nd" and description is None:
                    description = text.strip()
                elif not in_name:
                    body.append(text)
            continue
        text = _plain(line).strip()
        if not text:
            continue
        if in_name and description is None:
            match = _NAME_LINE.match(text)
            if match:
                description = match.group("what").strip()
                continue
        if not in_name:
            body.append(text)
    if not description:
        return None
    return description, " ".join(part for part in body if part)


def _read(path: Path) -> str | None:
    try:
        data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    except (OSError, EOFError, gzip.BadGzipFile):
        return None
    return data.decode("utf-8", errors="replace")


def load_docs(limit: int, max_chars: int = 4000, root: Path = MAN_ROOT) -> list[ManDoc]:
    """At most `limit` documents, in the stable order described above; ids and queries unique."""
    docs: list[ManDoc] = []
    seen_queries: set[str] = set()
    for section in SECTIONS:
        folder = root / section
        if not folder.is_dir():
            continue
        for path in sorted(folder.iterdir()):
            raw = _read(path) if path.is_file() else None
            parsed = parse_page(raw) if raw else None
            if parsed is None:
                continue
            description, body = parsed
            name = path.name[:-3] if path.suffix == ".gz" else path.name
            text = f"{name.rsplit('.', 1)[0]} {body}"[:max_chars]
            key = description.lower()
            if len(text) < MIN_CHARS or len(description.split()) < 2 or key in seen_queries:
                continue  # a repeated description would have several right answers
            seen_queries.add(key)
            docs.append(ManDoc(id=f"{section}/{name}", text=text, query=description))
            if len(docs) >= limit:
                return docs
    return docs


if __name__ == "__main__":
    found = load_docs(1_000_000)
    lengths = sorted(len(doc.text) for doc in found)
    print(f"{len(found)} man pages usable; text length median {lengths[len(lengths) // 2] if lengths else 0}, "
          f"at {4000} chars: {sum(length == 4000 for length in lengths)}")
    for doc in found[:3]:
        print(doc.id, "|", doc.query, "|", doc.text[:150])
