"""The structural promises of the generated companion sets (docs/sets.md, "dedupe-hard" and "memory-hard"),
counted from the committed files themselves, and each generator reproducing them byte for byte."""

from __future__ import annotations

import importlib.util
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


def _words(text, stop=STOP):
    return {word for word in re.findall(r"[a-z0-9]+", text.lower()) if word not in stop}


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


@pytest.mark.parametrize("name", ["dedupe-hard", "memory-hard", "wiki-hard"])
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
    assert len(corpus) >= 3000 and len(set(corpus.values())) == len(corpus)  # distinct titles
    by_category = _check_counts(queries, 1000)  # the size its detection figure needs (docs/sets.md)
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


def _builder(name):
    """The set's generator as a module, for its word lists and tables (nothing is written)."""
    spec = importlib.util.spec_from_file_location(f"build_{name.replace('-', '_')}", SETS / name / "build.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # a generator's dataclasses look their module up while being defined
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


# Singular head nouns that end in "s" (the agreement check below would take them for plurals).
SINGULAR_IN_S = {"access", "address"}


def test_dedupe_hard_titles_agree_in_number():
    """A title is "component symptom condition": each component a singular subject, each symptom a verb
    phrase in the third person singular ("Push alert drains the battery", never "Push alerts quits")."""
    build = _builder("dedupe-hard")
    for phrasings in build.COMPONENTS:
        for component in phrasings:
            head = component.split()[-1].lower()
            assert not head.endswith("s") or head in SINGULAR_IN_S, component
    for phrasings in build.SYMPTOMS:
        for symptom in phrasings:
            assert symptom.split()[0].endswith("s"), symptom


def _date(text):
    return re.search(r"\d{4}-\d{2}-\d{2}", text).group()


def _scope(text):
    return re.search(r"([A-Z][a-z]+) (production|staging)", text).groups()


def _share(queries, holds):
    return sum(1 for query in queries if holds(query)) / len(queries)


# The contract styles of the founding memory set (docs/sets.md, "memory-hard"), each a predicate on a query row.
STYLES = {
    "multi-fact paraphrase": lambda q: q["category"] == "paraphrase" and len(_relevant(q)) >= 2,
    "negative probe": lambda q: q.get("no_relevant", False) and "max_score" in q,
    "xfail": lambda q: q.get("outcome") == "xfail",
    "measure_only": lambda q: q.get("measure_only", False),
    "forbid": lambda q: "forbid" in q,
    "rank_before": lambda q: "rank_before" in q,
}


def test_memory_hard_carries_every_contract_style_of_the_founding_set_at_its_share_or_more():
    founding = _rows(SETS / "memory" / "queries.jsonl")
    hard = _rows(SETS / "memory-hard" / "queries.jsonl")
    for style, holds in STYLES.items():
        assert _share(founding, holds) > 0, style  # the founding set has every style
        assert _share(hard, holds) >= _share(founding, holds), style


def test_memory_hard_keeps_its_promises():
    corpus = {row["id"]: row["text"] for row in _rows(SETS / "memory-hard" / "corpus.jsonl")}
    queries = _rows(SETS / "memory-hard" / "queries.jsonl")
    by_category = _check_counts(queries, 300)
    assert set(by_category) == {"current", "reworded", "previous-value", "supersession", "scope", "paraphrase",
                                "identifier", "negative", "unanswerable"}
    for query in queries:  # what a contract names is a distractor: judged, and judged not relevant
        named = set(query.get("forbid", []))
        if "rank_before" in query:
            named.add(query["rank_before"]["after"])
            assert query["relevant"][query["rank_before"]["before"]] == 1
        assert all(query["relevant"].get(doc) == 0 for doc in named), query["qid"]
    for query in by_category["current"] + by_category["reworded"] + by_category["supersession"]:
        (current,) = _relevant(query)
        assert " from " in corpus[current]  # the current fact is the last move of its chain
    for query in by_category["supersession"]:  # a known gap: the stale first decision, worded as the question
        (current,) = _relevant(query)
        (stale,) = query["forbid"]
        assert query["outcome"] == "xfail" and " still " in query["query"]
        assert corpus[stale].startswith("Decision ") and _date(corpus[stale]) < _date(corpus[current])
        if "rank_before" in query:
            assert _date(corpus[query["rank_before"]["after"]]) < _date(corpus[current])
    for query in by_category["reworded"] + by_category["paraphrase"]:  # never names the environment
        assert not {"production", "staging"} & set(query["query"].lower().split()), query["qid"]
    for query in by_category["previous-value"]:  # the move to today's value and the fact it replaced
        older, newer = sorted(_relevant(query), key=lambda doc: _date(corpus[doc]))
        assert _date(corpus[older]) < _date(corpus[newer])
        (stranger,) = query["forbid"]  # another scope's first decision, not naming today's value
        assert corpus[stranger].startswith("Decision ") and _scope(corpus[stranger]) != _scope(corpus[newer])
        if "rank_before" in query:  # in a chain of three, today's move above the stale first decision
            stale = query["rank_before"]["after"]
            assert query["rank_before"]["before"] == newer and _date(corpus[stale]) < _date(corpus[older])
    for query in by_category["scope"]:
        (answer,) = _relevant(query)
        project, environment = _scope(corpus[answer])
        other = "staging" if environment == "production" else "production"
        assert project in query["query"]
        if "rank_before" not in query:  # the twin with the environment paraphrased carries no contract
            assert environment not in query["query"] and "forbid" not in query, query["qid"]
            continue
        # the same project's other environment ranks below; another project's other environment stays out
        assert f"{project} {other}" in corpus[query["rank_before"]["after"]], query["qid"]
        (stranger,) = query["forbid"]
        assert _scope(corpus[stranger])[0] != project and _scope(corpus[stranger])[1] == other, query["qid"]
    for query in by_category["paraphrase"]:  # two or more current facts of the project named
        assert len(_relevant(query)) >= 2
        assert all(_scope(corpus[doc])[0] in query["query"] for doc in _relevant(query)), query["qid"]
    for query in by_category["identifier"]:  # the rule's number ties them; its twins differ in it
        rule = re.search(r"ALR-\d+", query["query"]).group()
        (answer,) = _relevant(query)
        assert [doc for doc, text in corpus.items() if rule in text] == [answer]
        twins = [doc for doc, grade in query["relevant"].items() if grade == 0]
        assert len(twins) == 2 and all(corpus[doc].split(" fires when ")[1].rsplit(" and notifies", 1)[0]
                                       == corpus[answer].split(" fires when ")[1].rsplit(" and notifies", 1)[0]
                                       for doc in twins)
    corpus_words = {word for text in corpus.values() for word in re.findall(r"[a-z0-9]+", text.lower())}
    for query in by_category["negative"]:  # off topic: no word of it (nor its singular) in memory
        assert query["no_relevant"] and query["measure_only"] and query["relevant"] == {}
        words = set(re.findall(r"[a-z0-9]+", query["query"].lower()))
        assert not (words | {word.removesuffix("s") for word in words}) & corpus_words, query["qid"]
    for query in by_category["unanswerable"]:  # a project memory never heard of
        assert query["no_relevant"] and query["outcome"] == "xfail" and query["relevant"] == {}
        (project,) = re.findall(r"\b([A-Z][a-z]+) (?:production|staging)\b", query["query"])
        assert project not in " ".join(corpus.values()), query["qid"]


def test_every_companion_the_gate_names_is_a_set_recorded_in_each_companion_baseline():
    """A drop the founding set cannot tell is confirmed "on <companion>" (gates.COMPANION_SETS): that set must
    exist, and `bash .ci/gate companions <backend>` must gate it for every reference backend."""
    from harness.gating.gates import COMPANION_SETS

    assert set(COMPANION_SETS) == {"code", "dedupe", "memory", "wiki"}  # every founding set has its companion
    for founding, companion in COMPANION_SETS.items():
        assert (SETS / founding / "set.json").is_file() and (SETS / companion / "set.json").is_file(), companion
        for baseline in ("current.json", "onnx.json", "hybrid.json"):
            recorded = json.loads((REPO_ROOT / "baselines" / "companions" / baseline).read_text(encoding="utf-8"))
            assert companion in recorded["sets"], (baseline, companion)
