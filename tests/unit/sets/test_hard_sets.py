"""The structural promises of the generated companion sets (docs/sets.md, "dedupe-hard"), counted from
the committed files themselves, and each generator reproducing them byte for byte."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections import defaultdict

import pytest

from tests.conftest import REPO_ROOT

SETS = REPO_ROOT / "sets"
# The near-miss rule of docs/sets.md, restated here: lower-case words minus this stop list.
STOP = frozenset("a an the of to in on at by for with from as is are be my me it its if when once after over "
                 "under into and or this that something every very lots".split())


def _rows(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _words(text):
    return {word for word in re.findall(r"[a-z0-9]+", text.lower()) if word not in STOP}


def _relevant(query):
    return {doc for doc, grade in query["relevant"].items() if grade >= 1}


def _check_counts(queries, minimum_queries):
    assert len(queries) >= minimum_queries
    assert len({q["qid"] for q in queries}) == len(queries)
    by_category = defaultdict(list)
    for query in queries:
        by_category[query["category"]].append(query)
    for category, members in by_category.items():
        assert len(members) >= 20, category
        assert {q["split"] for q in members} == {"development", "held-out"}, category
    groups = defaultdict(list)
    for query in queries:
        if "group" in query:
            groups[query["group"]].append(query)
    assert groups and all(len(members) >= 2 for members in groups.values())
    for members in groups.values():  # a paraphrase group asks one thing, in one split
        assert len({q["split"] for q in members}) == 1
        assert len({frozenset(_relevant(q)) for q in members}) == 1
    return by_category


@pytest.mark.parametrize("name", ["dedupe-hard"])
def test_the_generator_rebuilds_the_committed_files_byte_for_byte(tmp_path, name):
    copy = tmp_path / name
    copy.mkdir()
    shutil.copy(SETS / name / "build.py", copy / "build.py")
    subprocess.run([sys.executable, str(copy / "build.py")], check=True, capture_output=True, timeout=120)
    for file_name in ("corpus.jsonl", "queries.jsonl"):
        assert (copy / file_name).read_bytes() == (SETS / name / file_name).read_bytes(), file_name


def test_dedupe_hard_keeps_its_promises():
    corpus = {row["id"]: row["text"] for row in _rows(SETS / "dedupe-hard" / "corpus.jsonl")}
    queries = _rows(SETS / "dedupe-hard" / "queries.jsonl")
    assert len(corpus) >= 1000 and len(set(corpus.values())) == len(corpus)  # distinct titles
    by_category = _check_counts(queries, 300)
    assert set(by_category) == {"reworded", "partial-overlap", "error-code", "many-duplicates"}
    corpus_words = {doc: _words(text) for doc, text in corpus.items()}
    for query in queries:
        words = _words(query["query"])
        judged_zero = {doc for doc, grade in query["relevant"].items() if grade == 0}
        # every near-miss distractor built for the query is judged not relevant
        named = query["notes"].removeprefix("near-miss distractors: ").split()
        assert named and set(named) <= judged_zero, query["qid"]
        # and so is every title that holds at least half of the query's words without being a duplicate
        lexical = {doc for doc, title_words in corpus_words.items()
                   if doc not in _relevant(query) and 2 * len(words & title_words) >= len(words)}
        assert lexical <= judged_zero, query["qid"]
        # a distractor shares vocabulary with the query (two of its three parts are worded alike)
        assert all(len(words & corpus_words[doc]) >= 2 for doc in named), query["qid"]
    for query in by_category["reworded"]:  # the duplicates share no word with a reworded title
        assert not any(_words(query["query"]) & _words(corpus[doc]) for doc in _relevant(query)), query["qid"]
    for query in by_category["error-code"]:  # the code is what ties them
        code = re.search(r"LX-\d+", query["query"]).group()
        assert all(code in corpus[doc] for doc in _relevant(query))
        assert not any(code in corpus[doc] for doc in corpus if doc not in _relevant(query))
    assert all(len(_relevant(q)) == 3 for q in by_category["many-duplicates"])
