"""What check-adapter asks: its own small corpus and queries, or a set's, prepared as the HARNESS_CORPUS_DIR folder."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from harness.adapter.startup import CORPUS_DIR_ENV
from harness.errors import UsageError
from harness.sets.corpus import corpus_ids

DEFAULT_KIND = "check"
PLAIN_QUERY_COUNT = 12          # queries asked twice by the determinism check

# The checker's own corpus, written as <kind>.jsonl when the user gives no corpus folder:
# a few words in several scripts so the Unicode queries can match something.
CORPUS_TEXTS = (
    "Parse a configuration file in INI or TOML format and return a dictionary of settings.",
    "Retry an HTTP request with exponential backoff when the server answers 503.",
    "Validate a user password against the stored salted hash in constant time.",
    "Stream a large CSV file row by row without loading it into memory.",
    "Cache the result of an expensive function call keyed by its arguments.",
    "Render an HTML template with escaping of user-provided values.",
    "Rotate log files daily and compress the old ones with gzip.",
    "Open a database connection pool and release connections on shutdown.",
    "Schedule a background job every five minutes with a cron expression.",
    "Compute the checksum of a file with sha256 in fixed-size chunks.",
    "Send an email notification when a deployment fails.",
    "Resize an image and keep its aspect ratio.",
    "Lire le fichier de configuration et créer la façade du café à l'été.",
    "如何解析配置文件并返回设置字典。",
    "設定ファイルを読み込んで辞書を返す。",
    "كيف أقرأ ملف الإعدادات وأعيد قاموسا من القيم",
    "קריאת קובץ הגדרות והחזרת מילון ערכים",
    "Deployment 🚀 failed 🔥 on the build server; the team 👩‍💻 is on it.",
    "Tokenize camelCase and snake_case identifiers like parseConfigFile or read_settings.",
    "Merge two sorted lists into one sorted list in linear time.",
    "Translate error messages into the user's language.",
    "Measure request latency percentiles p50 and p95 over a sliding window.",
    "Serialize a dataclass to JSON and back, validating every field.",
    "Watch a directory for changes and rebuild the index when a file is modified.",
)
PLAIN_QUERIES = (
    "parse a configuration file", "retry with exponential backoff", "password hash check",
    "read a large csv file", "cache function results", "html template escaping",
    "rotate and compress logs", "database connection pool", "schedule a cron job",
    "sha256 checksum of a file", "email when deployment fails", "resize an image",
)
UNICODE_QUERIES = (
    ("accents", "café crème façade été naïve"),
    ("cjk", "解析配置文件 設定ファイル"),
    ("emoji", "deployment 🚀 failed 🔥 👩‍💻 🇫🇷"),
    ("right-to-left", "ملف الإعدادات קובץ הגדרות"),
    ("combining", "cafe\u0301 fac\u0327ade"),
)


@dataclass
class Corpus:
    """The folder given as HARNESS_CORPUS_DIR, where it came from, and the ids the kind's answers must use."""

    folder: Path
    note: str
    ids: frozenset[str] | None      # None: not judged (no file for the kind, or a stand-in corpus)
    not_judged_why: str = ""
    queries: tuple[str, ...] = PLAIN_QUERIES
    lengths: dict[str, int] | None = None  # text lengths, the passages' bounds (docs/adapters.md, "Passages")


def long_query(length: int) -> str:
    """`length` characters of real words (with an accent every so often), not one repeated letter."""
    words = "parse configuration file settings retry backoff cache résumé template connection "
    return (words * (length // len(words) + 1))[:length]


def prepare_corpus(scratch: Path, *, kind: str | None, set_name: str | None, sets_dir: Path, offline: bool,
                   corpus_dir: Path | None, shipped: Path | None = None) -> tuple[str, Corpus]:
    """The kind to ask and the corpus folder given as HARNESS_CORPUS_DIR, with a note saying where it came from.

    A set's corpus (materialised into `scratch`), a given folder, the folder inherited from
    $HARNESS_CORPUS_DIR with --kind, or the checker's own corpus written into `scratch`.
    """
    if set_name is not None:
        return _set_corpus(set_name, sets_dir, offline, kind, scratch, shipped)
    asked, kind = kind, kind or DEFAULT_KIND
    if corpus_dir is not None:
        if not corpus_dir.is_dir():
            raise UsageError(f"check-adapter: --corpus-dir {corpus_dir}: not a folder")
        return kind, _given_corpus(corpus_dir.resolve(), kind, "from --corpus-dir")
    inherited = os.environ.get(CORPUS_DIR_ENV)
    if asked is not None and inherited:
        return kind, _given_corpus(Path(inherited), kind, f"inherited from ${CORPUS_DIR_ENV}")
    path = scratch / f"{kind}.jsonl"
    ids = [f"{kind}-{n:02d}" for n in range(1, len(CORPUS_TEXTS) + 1)]
    lines = [json.dumps({"id": doc_id, "text": text}, ensure_ascii=False) for doc_id, text in zip(ids, CORPUS_TEXTS)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    note = f"written by check-adapter: {path.name}, {len(lines)} documents, deleted afterwards"
    if asked is not None:
        # A stand-in for the user's kind: an adapter serving its own index for it rightly ignores it.
        return kind, Corpus(scratch, note, None, f"{path.name} is the checker's stand-in; use --set NAME or "
                                                 "--corpus-dir DIR to check ids against a real corpus")
    return kind, Corpus(scratch, note, frozenset(ids))


def _given_corpus(folder: Path, kind: str, note: str) -> Corpus:
    path = folder / f"{kind}.jsonl"
    if not path.is_file():
        return Corpus(folder, note, None, f"no {path.name} in {folder}")
    return Corpus(folder, note, frozenset(corpus_ids(path)))


def _set_corpus(set_name: str, sets_dir: Path, offline: bool, kind: str | None, scratch: Path,
                shipped: Path | None) -> tuple[str, Corpus]:
    """Materialise a query set's corpus, as the harness does for a run, and take its kind and queries."""
    from harness.sets.materialise import materialise_corpora
    from harness.sets.loader import find_sets, load_set

    query_set = load_set(find_sets([set_name], sets_dir, shipped=shipped)[0], offline=offline)
    if kind is not None and kind != query_set.kind:
        raise UsageError(f"check-adapter: --kind {kind!r} differs from set {query_set.name}'s kind "
                         f"{query_set.kind!r}; drop --kind")
    materialise_corpora([query_set], scratch)
    queries = tuple(q.query for q in query_set.queries[:PLAIN_QUERY_COUNT]) or PLAIN_QUERIES
    note = (f"set {query_set.name} revision {query_set.revision}: {query_set.kind}.jsonl, "
            f"{len(query_set.documents)} documents, deleted afterwards")
    return query_set.kind, Corpus(scratch, note, frozenset(doc.id for doc in query_set.documents), queries=queries,
                                  lengths={doc.id: len(doc.text) for doc in query_set.documents})
