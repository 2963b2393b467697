"""Evidence fields of a set (harness/sets/evidence.py): valid ones load, each defect is one SetError line."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest

from harness.errors import SetError
from harness.sets.loader import load_set
from harness.sets.materialise import materialise_corpora
from tests.builders import PAGE, query, span, write_set
from tests.conftest import REPO_ROOT

REPO = REPO_ROOT
def test_a_set_with_evidence_loads(tmp_path):
    loaded = load_set(write_set(tmp_path / "ev", [query(forbid_stale_before_current=True)], passages={
        "window": 40, "overlap": 10}))
    first = loaded.queries[0]
    assert [s.label for s in first.evidence] == ["current", "stale"]
    assert first.evidence[0].start == 6 and first.evidence[0].end == 27  # "Setup\n" is 6 characters
    assert first.intent == "current" and first.canonical == ("page",) and first.forbid_stale_before_current
    assert loaded.extra["passages"] == {"window": 40, "overlap": 10}
    paths = materialise_corpora([loaded], tmp_path)
    assert json.loads((tmp_path / "ev.passages.json").read_text()) == {"window": 40, "overlap": 10}
    assert paths["ev"].name == "ev.jsonl"


def test_drift_names_query_document_and_offset(tmp_path):
    drifted = query(evidence=[{**span("The limit is 500 now."), "text": "The limit is 900 now."}])
    with pytest.raises(SetError) as caught:
        load_set(write_set(tmp_path / "ev", [drifted], pin=False), check_pins=False)
    message = str(caught.value)
    assert "queries.jsonl:1: evidence[0]: span text drifted in 'page' at offset 6 (query q1)" in message
    assert "\n" not in message and caught.value.exit_code == 2


def test_drift_is_exit_2_from_the_command_line(tmp_path):
    folder = write_set(tmp_path / "ev", [query()])
    (folder / "corpus.jsonl").write_text(json.dumps({"id": "page", "text": PAGE.replace("500", "600")}) + "\n"
                                         + json.dumps({"id": "other", "text": "unrelated"}) + "\n")
    completed = subprocess.run([sys.executable, "-m", "harness", "sets", "verify", str(folder)],
                               capture_output=True, text=True, timeout=60, cwd=REPO)
    assert completed.returncode == 2
    assert "evidence[0]: span text drifted in 'page' at offset 6 (query q1)" in completed.stderr


@pytest.mark.parametrize("changes, message", [
    ({"evidence": [{**span("The limit is 500 now."), "label": "old"}]},
     r"evidence\[0\]: label: 'old' is not one of current, stale, mixed, neither, unjudgeable"),
    ({"evidence": [{**span("The limit is 500 now."), "end": 3}]}, r"evidence\[0\]: end: must be greater than start"),
    ({"evidence": [{**span("The limit is 500 now."), "supports_answer": "yes"}]},
     r"evidence\[0\]: supports_answer: must be true or false"),
    ({"evidence": [{k: v for k, v in span("The limit is 500 now.").items() if k != "doc"}]},
     r"evidence\[0\]: doc: missing"),
    ({"evidence": [{**span("The limit is 500 now."), "doc": "nope"}]}, r"evidence\[0\]: doc 'nope' is not in the corpus"),
    ({"evidence": [{**span("The limit is 500 now."), "start": 60, "end": 81}]}, r"evidence\[0\]: end 81 is past the end"),
    ({"intent": "future"}, r"intent: 'future' is not one of current, historical"),
    ({"intent": "historical"}, r"intent: historical queries must name an ISO date"),
    ({"canonical": ["other"]}, r"canonical: 'other' is not one of the query's relevant ids"),
    ({"forbid_stale_before_current": True, "evidence": [span("The limit is 500 now.")]},
     r"forbid_stale_before_current: the query has no span labelled stale"),
])
def test_bad_evidence_fields(tmp_path, changes, message):
    with pytest.raises(SetError, match=r"queries.jsonl:1: " + message):
        load_set(write_set(tmp_path / "ev", [query(**changes)], pin=False), check_pins=False)


def test_historical_group_must_name_the_same_dates(tmp_path):
    english = query("q-en", query="What was the limit on 2024-01-01?", intent="historical", group="g")
    italian = query("q-it", query="Qual era il limite il 2024-02-01?", intent="historical", group="g")
    with pytest.raises(SetError, match=r"queries.jsonl:2: query: names dates \['2024-02-01'\] but q-en in group 'g'"):
        load_set(write_set(tmp_path / "ev", [english, italian], pin=False), check_pins=False)
    italian["query"] = "Qual era il limite il 2024-01-01?"
    assert len(load_set(write_set(tmp_path / "ok", [english, italian])).queries) == 2
    mixed = query("q-x", intent="current", group="g")
    with pytest.raises(SetError, match=r"queries.jsonl:3: intent: 'current' differs from 'historical'"):
        load_set(write_set(tmp_path / "bad", [english, italian, mixed], pin=False), check_pins=False)


def test_bad_passages_hint(tmp_path):
    with pytest.raises(SetError, match=r"set.json: passages: must be"):
        load_set(write_set(tmp_path / "ev", [query()], pin=False, passages={"window": 10, "overlap": 10}),
                 check_pins=False)


def test_the_shipped_wiki_set_is_what_its_generator_builds():
    # sets/wiki/build.py computes every offset; the committed files must be its output.
    spec = importlib.util.spec_from_file_location("wiki_build", REPO / "sets" / "wiki" / "build.py")
    build = importlib.util.module_from_spec(spec)
    sys.modules["wiki_build"] = build  # dataclasses look their module up there
    try:
        spec.loader.exec_module(build)
    finally:
        del sys.modules["wiki_build"]
    corpus, queries = build.build()
    lines = (REPO / "sets" / "wiki" / "queries.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in lines] == queries
    loaded = load_set(REPO / "sets" / "wiki")
    assert len(loaded.documents) == len(corpus) >= 50 and len(loaded.queries) >= 60
    assert {q.intent for q in loaded.queries} == {"current", "historical"}
