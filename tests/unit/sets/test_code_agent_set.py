"""The shipped code-agent set keeps its structural promises, counted from its files (not through the loader)."""

from __future__ import annotations

import collections
import fnmatch
import json

from tests.conftest import REPO_ROOT

SET = REPO_ROOT / "sets" / "code-agent"
GRADES = {0, 1, 2}  # tempting but not answering, helps, answers


def _meta() -> dict:
    return json.loads((SET / "set.json").read_text(encoding="utf-8"))


def _queries() -> list[dict]:
    return [json.loads(line) for line in (SET / "queries.jsonl").read_text(encoding="utf-8").splitlines()]


def test_at_least_300_questions_each_written_as_an_agent_asks():
    queries = _queries()
    assert len(queries) >= 300
    assert len({q["qid"] for q in queries}) == len(queries)
    assert {q["source"] for q in queries} == {"agent"}


def test_every_category_holds_20_questions_in_both_splits():
    per_category = collections.defaultdict(collections.Counter)
    for q in _queries():
        per_category[q["category"]][q["split"]] += 1
    assert len(per_category) >= 2
    for category, splits in per_category.items():
        assert sum(splits.values()) >= 20, category
        assert splits["development"] >= 1 and splits["held-out"] >= 1, (category, splits)


def test_the_corpus_is_the_code_sets_so_its_fetch_and_cache_are_shared():
    # The archive cache is keyed by each package's sha256: the same packages, hashes and globs mean
    # the same cached archives and the same documents. A kind of its own lets a backend tell the two
    # sets apart (the hybrid's fusion is tuned per set: adapters/fusion_tuned.json).
    code = json.loads((REPO_ROOT / "sets" / "code" / "set.json").read_text(encoding="utf-8"))
    meta = _meta()
    assert meta["corpus"] == code["corpus"]
    assert meta["kind"] == "code-agent" != code["kind"]


def test_every_judged_file_is_graded_0_1_or_2_pinned_and_inside_the_corpus_globs():
    meta = _meta()
    include = meta["corpus"]["include"]
    for q in _queries():
        grades = q["relevant"]
        assert set(grades.values()) <= GRADES, q["qid"]
        assert max(grades.values()) >= 1, q["qid"]  # a question nobody can answer is not scored here
        for doc in grades:
            assert doc in meta["pins"], (q["qid"], doc)
            assert any(fnmatch.fnmatch(doc, pattern) for pattern in include), (q["qid"], doc)


def test_grade_0_distractors_exist_and_no_paraphrase_grades_them_relevant():
    # A distractor shares the question's words (another package's redirect code, a similar error
    # message) and is judged not relevant; the same question asked in other words cannot make it one.
    queries = _queries()
    judged = collections.defaultdict(dict)  # intent (group, else the query) -> doc -> grades given
    for q in queries:
        for doc, grade in q["relevant"].items():
            judged[q.get("group", q["qid"])].setdefault(doc, set()).add(grade)
    distractors = sum(1 for q in queries for grade in q["relevant"].values() if grade == 0)
    assert distractors >= 20
    for intent, docs in judged.items():
        for doc, grades in docs.items():
            assert not (0 in grades and max(grades) >= 1), (intent, doc)


def test_a_group_shares_its_split_and_an_italian_twin_its_original_judgments():
    groups = collections.defaultdict(list)
    for q in _queries():
        if "group" in q:
            groups[q["group"]].append(q)
    assert groups
    for name, members in groups.items():
        assert len(members) >= 2, name
        assert len({q["split"] for q in members}) == 1, name  # no paraphrase leaks across the splits
        english = [q for q in members if q["category"] != "italian"]
        assert english, name
        for twin in (q for q in members if q["category"] == "italian"):
            assert any(twin["relevant"] == q["relevant"] for q in english), twin["qid"]
