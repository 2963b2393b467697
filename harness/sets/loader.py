"""Load and validate a format-1 query set (set.json + queries.jsonl + corpus), pins included."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Collection, Sequence
from pathlib import Path

from harness.strict_json import is_finite_number, lone_surrogate_at, read_json_file
from harness.sets.corpus import _label, check_corpus_source, corpus_hash, iter_jsonl, load_corpus
from harness.sets import evidence
from harness.errors import SetError
from harness.records import CONTRACT_RULES, Document, Query, QuerySet, RankBefore
from harness.quoting import field_key, preview

SET_FORMAT = 1
SPLITS = ("development", "held-out")
MAX_SET_K = 10_000  # the same bound as --k: no response may carry more ids
REQUIRED_QUERY_FIELDS = ("qid", "query", "relevant", "category", "split", "source")
OPTIONAL_QUERY_FIELDS = ("group", "forbid", "rank_before", "no_relevant", "outcome",
                         "measure_only", "max_score", "notes") + evidence.QUERY_FIELDS
OUTCOMES = ("xfail",)
# The lowest relevant grade: scoring.metrics.RELEVANCE_LEVEL (trec_eval's -l 1), restated here because
# sets/ imports no later stage (tests/unit/sets/test_sets.py checks the two agree); 0 = judged non-relevant.
RELEVANT_GRADE = 1
MAX_GRADE = 1000  # grades are small integers; nDCG sums them as gains, and one past float range makes it NaN
MAX_SCORE_LIMIT = 1e12  # a `max_score` contract bound beyond this is a typo, not a score an adapter gives
# A name that becomes a file or folder name (a set's name and kind, an import's --name): plain
# letters, digits, '.', '_', '-', starting with a letter or digit, never '..'.
SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
SAFE_NAME_RULE = "1-100 letters, digits, '.', '_' or '-', starting with a letter or digit, without '..'"


def safe_name_problem(value: object) -> str | None:
    """Why `value` cannot be used as a file name (set name, kind, import --name), or None."""
    if not isinstance(value, str) or not value:
        return "must be a non-empty string"
    if not SAFE_NAME.fullmatch(value) or ".." in value:
        return f"{preview(value, 60)} must be {SAFE_NAME_RULE} (it becomes a file name)"
    return None


def safe_name(value: object, field: str, where: str = "") -> str:
    """`value` when it is a safe file name (see SAFE_NAME), else SetError `where: field: why`."""
    problem = safe_name_problem(value)
    if problem is None and isinstance(value, str):  # the first rule: a non-empty string
        return value
    raise SetError(f"{where + ': ' if where else ''}{field}: {problem}")


def check_sets_dir(sets_dir: Path) -> None:
    """SetError `--sets-dir PATH: why` when `sets_dir` exists but is not a folder (a file, a device).

    A missing folder is left to the caller (no sets found, or created by an import).
    """
    try:
        if sets_dir.exists() and not sets_dir.is_dir():
            raise SetError(f"--sets-dir {sets_dir}: is not a folder (where named sets live: DIR/NAME/set.json)")
    except OSError as exc:  # a name too long, no permission to look
        raise SetError(f"--sets-dir {sets_dir}: cannot be examined: {exc.strerror}") from None


def sets_in(sets_dir: Path) -> list[Path]:
    """The set folders (NAME/set.json) directly under `sets_dir`, sorted; none when it is not a folder."""
    try:
        return sorted(p.parent for p in sets_dir.glob("*/set.json")) if sets_dir.is_dir() else []
    except OSError:  # a name too long, no permission to look
        return []


def sets_found(sets_dir: Path, shipped: Path | None) -> list[Path]:
    """Every set under `sets_dir`, or under `shipped` when `sets_dir` holds none: `all` without a baseline."""
    return sets_in(sets_dir) or (sets_in(shipped) if shipped is not None else [])


def find_sets(names: list[str], sets_dir: Path, *, shipped: Path | None = None,
              recorded: Collection[str] | None = None) -> list[Path]:
    """Resolve `--set` values: a set folder path, a set name (under `sets_dir`, else under `shipped`), or `all`.

    `all`: the `recorded` names (those a baseline records) when given, each looked up as a name is;
    else every set under `sets_dir`, or under `shipped` when `sets_dir` holds none.
    """
    if not names:
        raise SetError("no set named: give --set NAME (or --set all)")
    found: list[Path] = []
    for name in names:
        if name != "all" and _holds_set(Path(name)):
            found.append(Path(name))
            continue
        check_sets_dir(sets_dir)
        if name == "all" and recorded is not None:
            found.extend(_named(each, sets_dir, shipped) for each in sorted(recorded))
        elif name == "all":
            candidates = sets_found(sets_dir, shipped)
            if not candidates:
                raise SetError(f"{sets_dir}: no sets found (expected {sets_dir}/NAME/set.json)")
            found.extend(_named_alike(folder) for folder in candidates)
        else:
            found.append(_named(name, sets_dir, shipped))
    unique: list[Path] = []
    for folder in found:
        if folder.resolve() not in {f.resolve() for f in unique}:
            unique.append(folder)
    if len(unique) > 1:
        # Two folders, one set name: both would run and the baseline would keep one. Refused here,
        # from set.json alone, before any corpus is loaded.
        first: dict[str, Path] = {}
        for folder in unique:
            meta_path = folder / "set.json"
            name = _read_meta(meta_path, _label(meta_path))["name"]
            if name in first:
                raise SetError(f"{_label(meta_path)}: name: {name!r} is also the name of the set in "
                               f"{first[name]}; two sets in one run need different names")
            first[name] = folder
    return unique


def _named(name: str, sets_dir: Path, shipped: Path | None) -> Path:
    """The folder of the set `name`: the team's (`sets_dir`) first, then the shipped one."""
    for folder in (sets_dir / name, *((shipped / name,) if shipped is not None else ())):
        if _holds_set(folder):
            return _named_alike(folder)
    available = sorted(p.name for p in sets_in(sets_dir))
    also = (f"; shipped: {', '.join(p.name for p in sets_in(shipped)) or 'none'}"
            if shipped is not None and not same_folder(shipped, sets_dir) else "")
    raise SetError(f"set {name!r}: no {sets_dir / name / 'set.json'} (available: {', '.join(available) or 'none'}{also})")


def _named_alike(folder: Path) -> Path:
    """`folder`, a set found by its name in a sets folder, once its set.json names it alike; else SetError.

    A set is looked up by name (`--set NAME`, and `--set all` through the names a baseline records):
    a folder renamed away from its set.json name would be found under one name and recorded under the other.
    """
    meta_path = folder / "set.json"
    name = _read_meta(meta_path, _label(meta_path))["name"]
    if name != folder.name:
        raise SetError(f"{_label(meta_path)}: name: {preview(name, 60)}, but its folder is {preview(folder.name, 60)}; "
                       f"sets are found by name: rename one so they agree")
    return folder


def same_folder(a: Path, b: Path) -> bool:
    """True when the two paths name one folder (links resolved); False when either cannot be resolved."""
    try:
        return a.resolve() == b.resolve()
    except (OSError, RuntimeError):
        return False


def _holds_set(folder: Path) -> bool:
    """True when `folder/set.json` is a file; False for anything else, a name too long included."""
    try:
        return (folder / "set.json").is_file()
    except (OSError, ValueError):  # ENAMETOOLONG, EACCES; ValueError: a NUL in the name
        return False


def protected_files(query_sets: Sequence[QuerySet]) -> dict[str, Path]:
    """The files a run reads for each set (set.json, queries.jsonl, a jsonl corpus), by label.

    For `fsutil.check_outputs(..., protected=...)`: no output may be one of them.
    """
    files: dict[str, Path] = {}
    for query_set in query_sets:
        folder = Path(query_set.path)
        files[f"set {query_set.name}: set.json"] = folder / "set.json"
        files[f"set {query_set.name}: queries.jsonl"] = folder / "queries.jsonl"
        corpus_file = query_set.extra.get("corpus_file")
        if isinstance(corpus_file, str):
            files[f"set {query_set.name}: corpus"] = folder / corpus_file
    return files


def judgments_hash(queries: Sequence[Query]) -> str:
    """sha256 over the canonical JSON of every query's judgments, in qid order.

    Covers what scoring and gating depend on besides the documents (which pins cover): qid,
    relevant grades, category, split, whether it is scored, and every contract (forbid,
    rank_before, no_relevant, max_score, xfail, measure_only). The query text and notes are
    not included: rewording a query is not a gold edit.
    """
    digest = hashlib.sha256()
    for query in sorted(queries, key=lambda q: q.qid):
        row = {"qid": query.qid, "relevant": dict(sorted(query.relevant.items())), "category": query.category,
               "split": query.split, "scored": query.scored, "group": query.group, "forbid": list(query.forbid),
               "rank_before": [[rule.before, rule.after] for rule in query.rank_before],
               "no_relevant": query.no_relevant, "xfail": query.xfail, "measure_only": query.measure_only,
               "max_score": query.max_score}
        digest.update(json.dumps(row, sort_keys=True, ensure_ascii=True, separators=(",", ":")).encode("ascii"))
        digest.update(b"\n")
    return digest.hexdigest()


def load_set(folder: Path, *, offline: bool = False, check_pins: bool = True) -> QuerySet:
    """Read, validate and cross-check a set; every problem is one SetError line."""
    meta_path = folder / "set.json"
    where = _label(meta_path)
    meta = _read_meta(meta_path, where)
    documents = load_corpus(meta["corpus"], folder, where, offline=offline)
    by_id = {doc.id: doc for doc in documents}
    queries = _read_queries(folder / "queries.jsonl", by_id)
    if check_pins:
        check_pinned(meta.get("pins"), queries, by_id, where)
    extra: dict[str, object] = {"pins": meta.get("pins", {}), "passages": evidence.passage_hint(meta, where)}
    if meta["corpus"]["source"] == "jsonl":
        extra["corpus_file"] = meta["corpus"]["path"]  # for protected_files: outputs must not overwrite it
    return QuerySet(
        name=meta["name"], kind=meta["kind"], revision=meta["revision"],
        description=meta.get("description", ""), k=meta["k"], path=str(folder),
        queries=tuple(queries), documents=tuple(documents), corpus_hash=corpus_hash(documents),
        corpus_source=meta["corpus"]["source"], extra=extra, judgments_hash=judgments_hash(queries),
        contracts=meta.get("contracts", CONTRACT_RULES[0]),
    )


def referenced_ids(query: Query) -> set[str]:
    """Every document id a query names: relevant, forbidden and ordered ones."""
    ids = set(query.relevant) | set(query.forbid)
    for rule in query.rank_before:
        ids.update((rule.before, rule.after))
    return ids | evidence.evidence_ids(query)


def compute_pins(queries: list[Query] | tuple[Query, ...], by_id: dict[str, Document]) -> dict[str, str]:
    """The pins a set should carry now: content sha256 of every referenced document."""
    ids = sorted(set().union(*(referenced_ids(q) for q in queries)) if queries else set())
    return {doc_id: by_id[doc_id].sha256 for doc_id in ids}


def check_pinned(pins: object, queries: list[Query], by_id: dict[str, Document], where: str) -> None:
    """Reject drift: every referenced id pinned, and its content unchanged since pinning."""
    if not isinstance(pins, dict):
        raise SetError(f"{where}: pins: missing; run `{_pin_command(where)}` to record them")
    for query in queries:
        for doc_id in sorted(referenced_ids(query)):
            pinned = pins.get(doc_id)
            if not isinstance(pinned, str):
                raise SetError(f"{where}: pins: {doc_id!r} (named by query {query.qid}) is not pinned; run "
                               f"`{_pin_command(where)}` to record it")
            actual = by_id[doc_id].sha256
            if pinned != actual:
                raise SetError(
                    f"{where}: pins: {doc_id!r} changed since the gold was written "
                    f"(pinned {pinned[:12]}, corpus {actual[:12]}); review its queries, then "
                    f"`{_pin_command(where)}`")


def _pin_command(where: str) -> str:
    """The command that pins the set whose set.json is `where` (its folder is its name)."""
    name = Path(where).parent.name
    return f"python -m harness sets pin {name if name and name not in ('.', '..') else 'NAME'}"


def _read_meta(path: Path, where: str) -> dict:
    meta = read_json_file(path, SetError, where, what="set.json")
    if not isinstance(meta, dict):
        raise SetError(f"{where}: must be a JSON object")
    if meta.get("format") != SET_FORMAT:
        raise SetError(f"{where}: format: expected {SET_FORMAT}, got {meta.get('format')!r}")
    for field, kind in (("name", str), ("kind", str), ("revision", int), ("k", int), ("corpus", dict)):
        value = meta.get(field)
        if not isinstance(value, kind) or isinstance(value, bool) or (kind is str and not value):
            raise SetError(f"{where}: {field}: missing or not a {kind.__name__}")
    check_corpus_source(meta["corpus"], where)
    if not 1 <= meta["k"] <= MAX_SET_K:
        raise SetError(f"{where}: k: must be between 1 and {MAX_SET_K}")
    if not 0 <= meta["revision"] <= 10**15:
        raise SetError(f"{where}: revision: must be an integer between 0 and 10**15")
    # The name and the kind become file names (results, baselines, `<kind>.jsonl` corpora): checked here, once.
    safe_name(meta["name"], "name", where)
    safe_name(meta["kind"], "kind", where)
    if "description" in meta and not isinstance(meta["description"], str):
        raise SetError(f"{where}: description: must be a string")
    if lone_surrogate_at(meta.get("description", "")) is not None:
        raise SetError(f"{where}: description: holds a lone surrogate (\\ud800-\\udfff escape), not text")
    if "contracts" in meta and meta["contracts"] not in CONTRACT_RULES:
        raise SetError(f"{where}: contracts: must be one of {', '.join(CONTRACT_RULES)}, got {meta['contracts']!r}")
    return meta


def read_set_metadata(folder: Path) -> tuple[dict, list[Query]]:
    """set.json and the queries, validated on their own, without loading (or fetching) the corpus."""
    meta_path = folder / "set.json"
    return _read_meta(meta_path, _label(meta_path)), _read_queries(folder / "queries.jsonl", None)


def _read_queries(path: Path, by_id: dict[str, Document] | None) -> list[Query]:
    label = _label(path)
    queries: list[Query] = []
    seen: dict[str, int] = {}
    for number, obj in iter_jsonl(path, label):
        query = _parse_query(obj, f"{label}:{number}", number)
        if query.qid in seen:
            raise SetError(f"{label}:{number}: qid: {query.qid!r} already used on line {seen[query.qid]}")
        seen[query.qid] = number
        if by_id is not None:
            evidence.check_against_corpus(query, by_id, f"{label}:{number}")
        for doc_id in sorted(referenced_ids(query)):
            if by_id is not None and doc_id not in by_id:
                field = "relevant" if doc_id in query.relevant else ("forbid" if doc_id in query.forbid else "rank_before")
                raise SetError(f"{label}:{number}: {field}: id {doc_id!r} is not in the corpus")
        queries.append(query)
    if not queries:
        raise SetError(f"{label}: no queries")
    evidence.check_groups(queries, label)
    return queries


def _parse_query(obj: dict, where: str, line: int) -> Query:
    for field in REQUIRED_QUERY_FIELDS:
        if field not in obj:
            raise SetError(f"{where}: {field}: missing")
    unknown = sorted(set(obj) - set(REQUIRED_QUERY_FIELDS) - set(OPTIONAL_QUERY_FIELDS))
    if unknown:
        raise SetError(f"{where}: {field_key(unknown[0])}: unknown field (known: {', '.join(REQUIRED_QUERY_FIELDS + OPTIONAL_QUERY_FIELDS)})")
    for field in ("qid", "query", "category", "source"):
        if not isinstance(obj[field], str) or not obj[field].strip():
            raise SetError(f"{where}: {field}: must be a non-empty string")
    if obj["split"] not in SPLITS:
        raise SetError(f"{where}: split: {obj['split']!r} is not one of {', '.join(SPLITS)}")
    relevant = _grades(obj["relevant"], where)
    no_relevant = _flag(obj, "no_relevant", where)
    # Grade 0 is an explicit non-relevant judgment (docs/sets.md, "Judged coverage"): it counts
    # as judged, never as relevant, so a query still needs one grade >= 1 unless it is a probe.
    relevant_count = sum(1 for grade in relevant.values() if grade >= RELEVANT_GRADE)
    if not relevant_count and not no_relevant:
        what = "empty" if not relevant else "only grade 0 (judged non-relevant)"
        raise SetError(f"{where}: relevant: {what}; a query needs a grade >= 1, a negative probe needs "
                       "\"no_relevant\": true")
    if relevant_count and no_relevant:
        raise SetError(f"{where}: no_relevant: true but relevant has a grade >= 1 (a probe may only carry grade 0)")
    outcome = obj.get("outcome")
    if outcome is not None and outcome not in OUTCOMES:
        raise SetError(f"{where}: outcome: {outcome!r} is not one of {', '.join(OUTCOMES)}")
    group = obj.get("group")
    if group is not None and (not isinstance(group, str) or not group):
        raise SetError(f"{where}: group: must be a non-empty string")
    max_score = obj.get("max_score")
    if max_score is not None and (not is_finite_number(max_score) or abs(max_score) > MAX_SCORE_LIMIT):
        raise SetError(f"{where}: max_score: must be a finite number between {-MAX_SCORE_LIMIT:g} "
                       f"and {MAX_SCORE_LIMIT:g}")
    return Query(
        qid=obj["qid"], query=obj["query"], relevant=relevant, category=obj["category"],
        split=obj["split"], source=obj["source"], group=group,
        forbid=_id_list(obj.get("forbid", []), where, "forbid"),
        rank_before=_rank_rules(obj.get("rank_before"), where), no_relevant=no_relevant,
        xfail=outcome == "xfail", measure_only=_flag(obj, "measure_only", where),
        max_score=float(max_score) if max_score is not None else None, line=line,
        **evidence.parse_query_fields(obj, relevant, where),
    )


def _grades(value: object, where: str) -> dict[str, int]:
    if not isinstance(value, dict):
        raise SetError(f"{where}: relevant: must be an object {{doc_id: grade}}")
    for doc_id, grade in value.items():
        if isinstance(grade, bool) or not isinstance(grade, int) or not 0 <= grade <= MAX_GRADE:
            raise SetError(f"{where}: relevant: grade of {preview(doc_id, 60)} must be an integer from 0 to {MAX_GRADE} "
                           f"(0 = judged non-relevant)")
    return dict(value)


def _flag(obj: dict, field: str, where: str) -> bool:
    value = obj.get(field, False)
    if not isinstance(value, bool):
        raise SetError(f"{where}: {field}: must be true or false")
    return value


def _id_list(value: object, where: str, field: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v and lone_surrogate_at(v) is None for v in value):
        raise SetError(f"{where}: {field}: must be a list of document ids")
    return tuple(value)


def _rank_rules(value: object, where: str) -> tuple[RankBefore, ...]:
    if value is None:
        return ()
    items = value if isinstance(value, list) else [value]
    rules = []
    for item in items:
        if (not isinstance(item, dict) or not isinstance(item.get("before"), str)
                or not isinstance(item.get("after"), str) or item["before"] == item["after"]):
            raise SetError(f"{where}: rank_before: must be {{\"before\": id, \"after\": id}} with two different ids")
        rules.append(RankBefore(before=item["before"], after=item["after"]))
    return tuple(rules)
