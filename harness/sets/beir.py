"""BEIR interchange: turn a BEIR dataset folder into a format-1 query set (docs/sets.md)."""

from __future__ import annotations

import json
import os
import secrets
import shutil
from dataclasses import dataclass
from pathlib import Path

from harness.sets.corpus import MAX_LINE_BYTES, _label, content_sha256, iter_jsonl
from harness.errors import SetError, UsageError
from harness.fsutil import atomic_write_text, open_regular
from harness.strict_json import strict_json_dumps
from harness.records import Document, Query
from harness.sets.loader import MAX_GRADE, SET_FORMAT, check_sets_dir, compute_pins, load_set, safe_name_problem

CATEGORY = "beir"
SOURCE = "beir"
DEFAULT_K = 10
QRELS_HEADER = ("query-id", "corpus-id", "score")
_HEADER_TEXT = "\t".join(QRELS_HEADER)


@dataclass(frozen=True)
class BeirImport:
    """What an import wrote and what it left out, for the command to print."""

    path: Path
    documents: int
    queries: int
    judgments: int
    skipped_documents: int  # empty title and text: nothing to index
    skipped_queries: int  # no judgment >= 1 in the split's qrels
    dropped_nonrelevant: int  # qrels rows with grade <= 0
    dropped_unknown_documents: int  # qrels rows naming a document absent (or skipped) from the corpus

    def summary(self) -> str:
        return (f"{self.queries} queries, {self.documents} documents, {self.judgments} judgments; "
                f"skipped {self.skipped_queries} query(ies) without a relevant judgment and "
                f"{self.skipped_documents} empty document(s); dropped {self.dropped_nonrelevant} "
                f"grade <= 0 rows and {self.dropped_unknown_documents} rows naming no corpus document")


def split_for(split_name: str) -> str:
    """Our split for a BEIR qrels split: `test` is what BEIR reports on, so it is held-out;
    any other (`dev`, `train`) is development."""
    return "held-out" if split_name == "test" else "development"


def convert_beir(folder: Path, name: str, sets_dir: Path, *, split_name: str = "test") -> BeirImport:
    """Convert a BEIR folder (corpus.jsonl, queries.jsonl, qrels/<split_name>.tsv) into a set.

    - Documents: `_id` -> id; `title` is kept as the title, and the text is
      `title + "\\n\\n" + text` when a title exists (so lexical and embedding backends see
      it), else `text`. Documents with neither are skipped (counted).
    - Judgments: rows with grade <= 0 are dropped (a set lists relevant documents only);
      rows naming a document not in the corpus (or skipped) are dropped (counted), since a
      set's judged ids must be corpus documents. When any are, recall can read higher than
      BEIR's published figures, which keep such documents in the denominator.
    - Queries: those with no remaining judgment are skipped (counted; BEIR's queries.jsonl
      holds every split's queries). Category "beir", source "beir", split `split_for(split_name)`.
    - set.json: format 1, kind = name, revision 1, k 10, pins computed.
    An existing sets_dir/name is never touched (UsageError). Files are written into a temporary
    folder beside it, loaded back with `load_set`, then moved into place in one rename.
    Problems in the BEIR files raise SetError naming file:line:field.
    """
    # The name becomes a folder name and the adapter's `kind`: the one safe-name rule of the loader.
    problem = safe_name_problem(name)
    if problem:
        raise UsageError(f"--name: {problem}")
    if split_name in ("", ".", "..") or "/" in split_name or "\\" in split_name:
        raise UsageError(f"split: {split_name!r} is not a qrels file name")
    check_sets_dir(sets_dir)
    target = sets_dir / name
    if target.exists():
        raise UsageError(f"{target}: already exists; choose another --name or remove it yourself")
    for required in ("corpus.jsonl", "queries.jsonl", f"qrels/{split_name}.tsv"):
        if not (folder / required).is_file():
            raise UsageError(f"{folder / required}: missing; a BEIR folder holds corpus.jsonl, queries.jsonl "
                             f"and qrels/{split_name}.tsv")
    documents, skipped_documents = _read_corpus(folder / "corpus.jsonl")
    texts = _read_queries(folder / "queries.jsonl")
    qrels, dropped_nonrelevant, dropped_unknown = _read_qrels(folder / "qrels" / f"{split_name}.tsv", texts, documents)
    split = split_for(split_name)
    queries = [Query(qid=qid, query=text, relevant=qrels[qid], category=CATEGORY, split=split, source=SOURCE)
               for qid, text in texts.items() if qrels.get(qid)]
    if not queries:
        raise SetError(f"{_label(folder / 'qrels' / f'{split_name}.tsv')}: no query has a relevant judgment "
                       f"(grade >= 1) on a corpus document")
    result = BeirImport(
        path=target, documents=len(documents), queries=len(queries),
        judgments=sum(len(q.relevant) for q in queries), skipped_documents=skipped_documents,
        skipped_queries=len(texts) - len(queries), dropped_nonrelevant=dropped_nonrelevant,
        dropped_unknown_documents=dropped_unknown)
    meta = {
        "format": SET_FORMAT, "name": name, "kind": name, "revision": 1,
        "description": (f"Imported from the BEIR folder {folder.resolve().name} (qrels/{split_name}.tsv): "
                        f"{result.summary()}."),
        "k": DEFAULT_K, "corpus": {"source": "jsonl", "path": "corpus.jsonl"},
        "pins": compute_pins(queries, documents),
    }
    _write_set(target, meta, documents, queries)
    return result


def _read_corpus(path: Path) -> tuple[dict[str, Document], int]:
    label = _label(path)
    documents: dict[str, Document] = {}
    seen: set[str] = set()
    skipped = 0
    for number, obj in iter_jsonl(path, label):
        where = f"{label}:{number}"
        doc_id = _id(obj, where)
        if doc_id in seen:
            raise SetError(f"{where}: _id: {doc_id!r} appears twice")
        seen.add(doc_id)
        title, body = _string(obj, "title", where), _string(obj, "text", where)
        text = f"{title}\n\n{body}" if title.strip() and body.strip() else (body if body.strip() else title)
        if not text.strip():
            skipped += 1
            continue
        document = Document(id=doc_id, text=text, sha256=content_sha256(text), title=title)
        if len(_corpus_line(document).encode("utf-8")) > MAX_LINE_BYTES:
            raise SetError(f"{where}: text: longer than the {MAX_LINE_BYTES} bytes a corpus line may hold")
        documents[doc_id] = document
    if not documents:
        raise SetError(f"{label}: no document with a title or text")
    return documents, skipped


def _read_queries(path: Path) -> dict[str, str]:
    label = _label(path)
    texts: dict[str, str] = {}
    lines: dict[str, int] = {}
    for number, obj in iter_jsonl(path, label):
        where = f"{label}:{number}"
        qid = _id(obj, where)
        if qid in texts:
            raise SetError(f"{where}: _id: {qid!r} already used on line {lines[qid]}")
        texts[qid] = _string(obj, "text", where)
        if not texts[qid].strip():
            raise SetError(f"{where}: text: must be a non-empty string")
        lines[qid] = number
    return texts


def _read_qrels(path: Path, texts: dict[str, str], documents: dict[str, Document]
                ) -> tuple[dict[str, dict[str, int]], int, int]:
    """qid -> {docid: grade >= 1}, plus the counts of dropped non-relevant and unknown-document rows."""
    label = _label(path)
    qrels: dict[str, dict[str, int]] = {}
    seen: dict[tuple[str, str], int] = {}
    nonrelevant = unknown = 0
    header_seen = False
    with open_regular(path, SetError, label) as handle:  # a FIFO would block the import forever
        try:
            raw_lines = handle.read().splitlines()
        except OSError as exc:
            raise SetError(f"{label}: cannot read: {exc.strerror}") from None
    for number, raw in enumerate(raw_lines, start=1):
        where = f"{label}:{number}"
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise SetError(f"{where}: line is not valid UTF-8") from None
        if not line.strip():
            continue
        if not header_seen:
            line = line.lstrip("\ufeff")  # a byte-order mark some editors put first
        fields = [field.strip() for field in line.split("\t")]
        if not header_seen:
            if tuple(fields) != QRELS_HEADER:
                raise SetError(f"{where}: expected the header {_HEADER_TEXT!r} (tab-separated) as the first line")
            header_seen = True
            continue
        if len(fields) != 3:
            raise SetError(f"{where}: expected 3 tab-separated fields query-id, corpus-id, score; got {len(fields)}")
        qid, doc_id, score = fields
        try:
            grade = int(score)
        except ValueError:
            raise SetError(f"{where}: score: {score!r} is not an integer") from None
        if grade > MAX_GRADE:
            raise SetError(f"{where}: score: {grade} is above the largest grade a set may hold ({MAX_GRADE})")
        if qid not in texts:
            raise SetError(f"{where}: query-id: {qid!r} is not in queries.jsonl")
        if (qid, doc_id) in seen:
            raise SetError(f"{where}: corpus-id: {doc_id!r} already judged for query {qid!r} "
                           f"on line {seen[qid, doc_id]}")
        seen[qid, doc_id] = number
        if grade <= 0:
            nonrelevant += 1
        elif doc_id not in documents:
            unknown += 1
        else:
            qrels.setdefault(qid, {})[doc_id] = grade
    if not header_seen:
        raise SetError(f"{label}: empty; expected the header {_HEADER_TEXT!r} and judgment rows")
    return qrels, nonrelevant, unknown


def _id(obj: dict, where: str) -> str:
    value = obj.get("_id")
    # BEIR ids are strings; a few exports write numbers, which mean the same id.
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not value.strip():
        raise SetError(f"{where}: _id: must be a non-empty string")
    return value


def _string(obj: dict, field: str, where: str) -> str:
    value = obj.get(field, "")
    if value is None:
        return ""
    if not isinstance(value, str):
        raise SetError(f"{where}: {field}: must be a string")
    return value


def _corpus_line(document: Document) -> str:
    row = {"id": document.id, "title": document.title, "text": document.text} if document.title \
        else {"id": document.id, "text": document.text}
    return json.dumps(row, ensure_ascii=False)


def _query_line(query: Query) -> str:
    return json.dumps({"qid": query.qid, "query": query.query, "relevant": query.relevant,
                       "category": query.category, "split": query.split, "source": query.source},
                      ensure_ascii=False)


def _write_set(target: Path, meta: dict, documents: dict[str, Document], queries: list[Query]) -> None:
    """Write into a fresh temporary folder beside `target`, check it loads, then rename it into place."""
    # mkdir (not mkdtemp, which makes it private to us) so the set gets the user's usual permissions.
    staging = target.parent / f".{target.name}.{secrets.token_hex(6)}.tmp"
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        staging.mkdir()
    except OSError as exc:  # a read-only folder, a file on the path: the user's environment, not a bug
        raise UsageError(f"--sets-dir {target.parent}: cannot create the set there: {exc.strerror}") from None
    try:
        atomic_write_text(staging / "corpus.jsonl", "".join(_corpus_line(d) + "\n" for d in documents.values()))
        atomic_write_text(staging / "queries.jsonl", "".join(_query_line(q) + "\n" for q in queries))
        atomic_write_text(staging / "set.json", strict_json_dumps(meta, what="set.json", indent=1, ensure_ascii=False) + "\n")
        load_set(staging)  # what we wrote must load; a failure here is our bug, not the user's data
        if target.exists():  # created by someone else while we converted
            raise UsageError(f"{target}: already exists; choose another --name or remove it yourself")
        os.rename(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
