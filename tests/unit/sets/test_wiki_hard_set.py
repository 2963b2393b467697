"""The structural promises of the generated `wiki-hard` set, counted from the committed files themselves (its
generator's byte-for-byte rebuild is checked with the other generated sets, in test_hard_sets.py)."""

from __future__ import annotations

import json
import re
from collections import defaultdict

from harness.sets.loader import load_set
from tests.conftest import REPO_ROOT
from tests.unit.sets.test_hard_sets import STOP as NEAR_MISS_STOP
from tests.unit.sets.test_hard_sets import _builder, _words

SET = REPO_ROOT / "sets" / "wiki-hard"
# The near-miss stop list of tests/unit/sets/test_hard_sets.py, plus the question and auxiliary words a question
# needs whatever it asks ("how", "does", "which"): a reworded question may share none of the rest with its page.
STOP = NEAR_MISS_STOP | frozenset("what which who whom how does do did can could may might will would should i we you "
                                   "they them their our us there where why much many while been was were has have "
                                   "had until through".split())
# The Italian function words a question needs whatever it asks ("per" and "di" also occur in the English pages).
STOP_IT = frozenset("a al alla che chi ci come con cosa da dal del dell della di dopo dove e è fin finché i il in "
                    "la le li lo mi non o per più prima quale quando quanta quante quanto se si su un una".split())
DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
SETTING_ID = re.compile(r"QL-\d+")


def _rows(name):
    return [json.loads(line) for line in (SET / name).read_text(encoding="utf-8").splitlines()]


def _corpus():
    return {row["id"]: row for row in _rows("corpus.jsonl")}


def _page(query):
    (page,) = [doc for doc in query["relevant"] if doc.startswith("page-")]
    return page


def test_the_set_loads_with_its_pins():
    loaded = load_set(SET)
    assert loaded.name == "wiki-hard" and loaded.kind == "wiki-hard" and loaded.k == 10
    assert len(loaded.queries) == len(_rows("queries.jsonl"))


def test_counts_splits_and_groups():
    queries = _rows("queries.jsonl")
    assert 1300 <= len(queries) <= 1400
    assert len({q["qid"] for q in queries}) == len(queries)
    by_category = defaultdict(list)
    for query in queries:
        by_category[query["category"]].append(query)
    assert set(by_category) == {"current-fact", "reworded", "historical", "identifier"}
    for category, members in by_category.items():
        for split in ("development", "held-out"):
            assert sum(1 for q in members if q["split"] == split) >= 20, (category, split)
    assert 0.45 <= sum(1 for q in queries if q["split"] == "held-out") / len(queries) <= 0.55
    groups = defaultdict(list)
    for query in queries:
        groups[query["group"]].append(query)
    for members in groups.values():  # a group asks one thing: one split, one answer, one intent
        assert len({q["split"] for q in members}) == 1
        assert len({json.dumps(q["relevant"], sort_keys=True) for q in members}) == 1
        assert len({q["intent"] for q in members}) == 1
    # every question in English and Italian, as in the founding set: the current value asked worded like the page
    # and reworded, each with its Italian twin (one group); the value on a past date; the value by its setting ID
    twins = {"current-fact": ["paraphrase", "synthetic", "translation", "translation"],
             "historical": ["synthetic", "translation"], "identifier": ["synthetic", "translation"]}
    for category, sources in twins.items():
        for query in by_category[category]:
            assert sorted(q["source"] for q in groups[query["group"]]) == sources, query["qid"]


def test_every_span_is_its_text_at_its_offsets():
    corpus = _corpus()
    for query in _rows("queries.jsonl"):
        assert query["canonical"] == [_page(query)]
        labels = set()
        for span in query["evidence"]:
            assert corpus[span["doc"]]["text"][span["start"]:span["end"]] == span["text"], query["qid"]
            assert span["supports_answer"] == (span["label"] in {"current", "stale", "mixed"})
            labels.add(span["label"])
        expected = {"current", "stale", "mixed"} if query["intent"] == "current" else {"current", "mixed", "neither"}
        assert expected <= labels <= expected | {"unjudgeable"}, query["qid"]


def test_every_setting_id_is_in_exactly_one_page_and_asked_by_it():
    corpus = _corpus()
    seen = defaultdict(list)
    for doc, row in corpus.items():
        for setting_id in SETTING_ID.findall(row["text"]):
            seen[setting_id].append(doc)
    assert len(seen) >= 190 and all(len(docs) == 1 for docs in seen.values())
    for query in _rows("queries.jsonl"):
        if query["category"] == "identifier":
            (setting_id,) = SETTING_ID.findall(query["query"])
            assert seen[setting_id] == [_page(query)] and set(query["relevant"]) == {_page(query)}


def test_a_reworded_question_shares_no_content_word_with_its_page_but_the_service_name():
    corpus = _corpus()
    reworded = [q for q in _rows("queries.jsonl") if q["category"] == "reworded"]
    assert len(reworded) >= 40 and {q["source"] for q in reworded} == {"paraphrase", "translation"}
    for query in reworded:
        page = corpus[_page(query)]
        service = page["title"].split()[0]
        assert service in query["query"], query["qid"]
        words = _words(query["query"], STOP) - STOP_IT
        assert words & _words(page["text"], STOP) == {service.lower()}, query["qid"]


def test_a_historical_question_asks_about_a_date_before_the_change():
    corpus = _corpus()
    historical = [q for q in _rows("queries.jsonl") if q["category"] == "historical"]
    for query in historical:
        page = _page(query)
        assert set(query["relevant"]) == {page, page.replace("page-", "note-", 1)}
        (asked,) = DATE.findall(query["query"])
        changed = re.search(r"## History\n\nUntil (\d{4}-\d{2}-\d{2}) ", corpus[page]["text"]).group(1)
        assert asked < changed, query["qid"]
    # about half the topics are asked on a past date, each in English and Italian
    topics = {_page(q) for q in _rows("queries.jsonl") if q["category"] == "identifier"}
    assert 0.4 <= len({_page(q) for q in historical}) / len(topics) <= 0.6
    assert len(historical) == 2 * len({_page(q) for q in historical})


def test_pages_of_one_setting_differ_only_in_service_values_dates_and_id():
    """Masking the service's name, the setting's values, the dates and the id leaves one text per setting (the
    near misses of each other), apart from the hedged comment some pages carry."""
    build = _builder("wiki-hard")
    corpus = _corpus()
    services = [name for name, _ in build.SERVICES]
    for setting in build.SETTINGS:
        masked = set()
        for service in services:
            text = corpus[f"page-{service.lower()}-{setting.key}"]["text"]
            text = re.sub(r"## Comments\n\n[^\n]*\n\n", "", text)
            text = DATE.sub("<date>", SETTING_ID.sub("<id>", text)).replace(service, "<service>")
            for value in sorted(setting.values, key=len, reverse=True):
                text = text.replace(value, "<value>")
            masked.add(text)
        assert len(masked) == 1, setting.key
    hedged = sum("## Comments" in corpus[f"page-{s.lower()}-{setting.key}"]["text"]
                 for s in services for setting in build.SETTINGS)
    assert 0.08 <= hedged / (len(services) * len(build.SETTINGS)) <= 0.2
