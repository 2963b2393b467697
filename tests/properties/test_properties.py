"""Property tests (hypothesis): the response parser, the set loader and the recall gate on generated input.

Metric properties live in tests/properties/test_metrics_properties.py. No deadlines: timing is not
asserted; a parser that hung would hang the test run, which CI notices.
"""

from __future__ import annotations

import json
import math
import shutil
import tempfile
from fractions import Fraction
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.gating.baseline import Baseline, build_baseline, read_baseline
from harness.errors import BaselineError, ProtocolError, SetError
from harness.gating.gates import check
from harness.gating.policy import GatePolicy
from harness.adapter.protocol import Response, decode_response
from harness.records import QuerySet
from harness.sets.loader import load_set
from tests.conftest import TINY_SET
from tests.builders import PROVENANCE, baseline_numbers, set_result

SETTINGS = settings(deadline=None, max_examples=300, suppress_health_check=[HealthCheck.too_slow])

# -- protocol response parser -------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=12)
id_lists = st.lists(st.sampled_from(["a", "b", "c", "d", "", "é", "a\n"]) | st.integers() | st.none(), max_size=12)
response_objects = st.fixed_dictionaries(
    {}, optional={"ids": id_lists | json_values,
                  "scores": st.lists(st.floats(allow_nan=True) | st.integers() | st.booleans(), max_size=12) | json_values,
                  "error": st.text(max_size=5) | json_values,
                  "qid": st.sampled_from(["q1", "q2"]) | json_values})


def lines_from_objects(obj) -> bytes:
    return json.dumps(obj, allow_nan=True).encode("utf-8")


response_lines = (st.binary(max_size=200)
                  | response_objects.map(lines_from_objects)
                  | json_values.map(lines_from_objects)
                  | st.integers(1, 200_000).map(lambda depth: b'{"ids": ' + b"[" * depth + b"]" * depth + b"}"))


def check_valid_response(response: Response, k: int) -> None:
    """What the protocol (docs/adapters.md) promises about any response the parser lets through."""
    assert isinstance(response, Response)
    if response.error is not None:
        assert isinstance(response.error, str) and response.ids == () and response.scores is None
        return
    assert all(type(doc_id) is str for doc_id in response.ids)
    assert len(response.ids) <= k and len(set(response.ids)) == len(response.ids)
    if response.scores is not None:
        assert len(response.scores) == len(response.ids)
        assert all(type(s) is float and math.isfinite(s) for s in response.scores)
        assert all(a >= b for a, b in zip(response.scores, response.scores[1:]))


@SETTINGS
@given(line=response_lines, k=st.integers(1, 20))
def test_response_parser_returns_a_valid_response_or_raises_protocol_error(line, k):
    try:
        response = decode_response(line, qid="q1", k=k)
    except ProtocolError as error:
        message = str(error)
        assert message.startswith("query q1: ") and "\n" not in message
        return
    check_valid_response(response, k)


@SETTINGS
@given(obj=response_objects, k=st.integers(1, 20))
def test_an_echoed_qid_other_than_the_request_s_is_refused(obj, k):
    line = lines_from_objects(obj)
    try:
        decode_response(line, qid="q1", k=k)
    except ProtocolError:
        return
    assert obj.get("qid") in (None, "q1")  # accepted: no echo, or the right one


# -- set loader on mutated copies of the tiny set ---------------------------------------------------

SET_FILES = ("set.json", "queries.jsonl", "corpus.jsonl")


def byte_mutation():
    """A function bytes -> bytes: flip, delete, insert, truncate, duplicate a line, or a pathological line."""
    position = st.floats(0, 1)
    return st.one_of(
        st.tuples(st.just("flip"), position, st.integers(0, 255)),
        st.tuples(st.just("delete"), position, st.integers(1, 40)),
        st.tuples(st.just("insert"), position, st.binary(min_size=1, max_size=12)),
        st.tuples(st.just("truncate"), position, st.none()),
        st.tuples(st.just("duplicate-line"), position, st.none()),
        st.tuples(st.just("replace-line"), position, st.sampled_from(
            [b"[" * 100_000, b'{"a": ' * 50_000, b"x" * ((1 << 20) + 1), b"\xff\xfe", b"{}", b"[]", b"null",
             b'{"qid": "\\ud800", "query": "q"}'])),
    )


def apply_mutation(data: bytes, mutation) -> bytes:
    kind, where, arg = mutation
    at = int(where * len(data))
    if kind == "flip":
        return data[:at] + bytes([arg]) + data[at + 1:]
    if kind == "delete":
        return data[:at] + data[at + arg:]
    if kind == "insert":
        return data[:at] + arg + data[at:]
    if kind == "truncate":
        return data[:at]
    lines = data.split(b"\n")
    index = min(int(where * len(lines)), len(lines) - 1)
    if kind == "duplicate-line":
        return b"\n".join(lines[:index + 1] + lines[index:])
    return b"\n".join(lines[:index] + [arg] + lines[index + 1:])


def value_mutation():
    """Replace or drop one field of one JSON line, or add one under an arbitrary name, with an arbitrary JSON value."""
    return st.tuples(st.sampled_from(SET_FILES), st.floats(0, 1), st.floats(0, 1),
                     st.sampled_from(["replace", "drop", "add"]), json_values,
                     st.text(max_size=6) | st.sampled_from(["x\ny", "\r", " ", ""]))


def apply_value_mutation(folder: Path, mutation) -> None:
    name, line_at, field_at, action, value, new_key = mutation
    path = folder / name
    if name == "set.json":
        objects = [json.loads(path.read_text())]
    else:
        objects = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    target = objects[min(int(line_at * len(objects)), len(objects) - 1)]
    keys = sorted(target)
    key = keys[min(int(field_at * len(keys)), len(keys) - 1)]
    if action == "drop":
        del target[key]
    elif action == "add":
        target[new_key] = value
    else:
        target[key] = value
    if name == "set.json":
        path.write_text(json.dumps(objects[0]))
    else:
        path.write_text("\n".join(json.dumps(obj) for obj in objects) + "\n")


def load_or_set_error(folder: Path) -> None:
    """The only two outcomes allowed: a loaded set, or one SetError line."""
    try:
        loaded = load_set(folder, offline=True)
    except SetError as error:
        assert str(error) and "\n" not in str(error), repr(str(error))
        return
    assert isinstance(loaded, QuerySet) and loaded.queries and loaded.documents


@settings(deadline=None, max_examples=250, suppress_health_check=[HealthCheck.too_slow])
@given(target=st.sampled_from(SET_FILES), mutations=st.lists(byte_mutation(), min_size=1, max_size=3))
def test_set_loader_on_byte_mutations_loads_or_raises_one_set_error(target, mutations):
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch) / "tiny"
        shutil.copytree(TINY_SET, folder)
        data = (folder / target).read_bytes()
        for mutation in mutations:
            data = apply_mutation(data, mutation)
        (folder / target).write_bytes(data)
        load_or_set_error(folder)


@settings(deadline=None, max_examples=250, suppress_health_check=[HealthCheck.too_slow])
@given(mutation=value_mutation())
def test_set_loader_on_field_mutations_loads_or_raises_one_set_error(mutation):
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch) / "tiny"
        shutil.copytree(TINY_SET, folder)
        apply_value_mutation(folder, mutation)
        load_or_set_error(folder)


# -- the recall gate on random baseline / current pairs ------------------------------------------

# One query = (category, relevant count r, hits at baseline, hits now): recall is hits / r, so every
# mean is an exact fraction and the reference below decides "more than 2 points" without floats.
query_rows = st.integers(1, 4).flatmap(lambda r: st.tuples(
    st.sampled_from(["a", "b", "c"]), st.just(r), st.integers(0, r), st.integers(0, r)))


def reference_recall_failures(rows) -> set[str | None]:
    """Scopes (None = overall, else a category) that fail under the discount rule, decided exactly: the
    set when its mean recall dropped by more than 2 points; a category when it did, and still does with
    its worst-changed query set back to its baseline value (categories.rule discount, discount_queries 1)."""
    scopes: dict[str | None, list[tuple[Fraction, Fraction]]] = {None: []}
    for category, relevant, before, now in rows:
        pair = (Fraction(before, relevant), Fraction(now, relevant))
        scopes[None].append(pair)
        scopes.setdefault(category, []).append(pair)
    failing = set()
    for scope, pairs in scopes.items():
        losses = sorted((b - n for b, n in pairs), reverse=True)
        drop = sum(losses) / len(pairs)
        without_worst = sum(losses[1:]) / len(pairs)
        if drop > Fraction(2, 100) and (scope is None or without_worst > Fraction(2, 100)):
            failing.add(scope)
    return failing


@settings(deadline=None, max_examples=300)
@given(rows=st.lists(query_rows, min_size=1, max_size=40))
def test_recall_gate_fails_exactly_when_a_scope_drops_more_than_two_points(rows):
    baseline, current = set_result(rows, 2), set_result(rows, 3)
    entry = baseline_numbers([baseline])["s"]
    with mock.patch("harness.gating.gates.RESAMPLES", 200):  # the CI in the message only; pass/fail ignores it
        gates = check([current], {"s": entry}, policy=GatePolicy(category_rule="discount"))
    failed = [g for g in gates if not g.passed]
    assert all(g.gate == "recall" for g in failed), [g.message for g in failed]
    assert {g.category for g in failed} == reference_recall_failures(rows)
    # and a category's drop beyond the limit that does not fail is said as a warning, never passed silently
    for gate in gates:
        if gate.gate == "recall" and gate.category is not None and gate.passed and gate.change is not None \
                and -gate.change > 0.02 + 1e-9:
            assert gate.status == "warn" and "without its worst query" in gate.message


def exact_drops(rows) -> dict[str | None, bool]:
    """Per scope (None = overall), whether its mean recall dropped by more than 2 points (exact fractions)."""
    scopes: dict[str | None, list[Fraction]] = {None: []}
    for category, relevant, before, now in rows:
        scopes[None].append(Fraction(before - now, relevant))
        scopes.setdefault(category, []).append(Fraction(before - now, relevant))
    return {scope: sum(losses) / len(losses) > Fraction(2, 100) for scope, losses in scopes.items()}


@settings(deadline=None, max_examples=150)
@given(rows=st.lists(query_rows, min_size=1, max_size=40))
def test_under_the_holm_rule_the_set_fails_by_the_founding_rule_and_a_category_only_beyond_the_limit(rows):
    # The default rule: the set fails exactly as the founding rule says; a category fails only when its drop is
    # beyond the limit, and never with 5 or fewer moved queries (the sign-flip test's smallest p is 2/2^5 > 0.05).
    baseline, current = set_result(rows, 2), set_result(rows, 3)
    gates = check([current], {"s": baseline_numbers([baseline])["s"]})  # 10,000 flips: p of 2/2^5 is never < 0.05
    failed = {g.category for g in gates if not g.passed and g.gate == "recall"}
    drops = exact_drops(rows)
    assert (None in failed) == drops[None]
    for category in failed - {None}:
        moved = sum(1 for c, _, before, now in rows if c == category and before != now)
        assert drops[category] and moved > 5, (category, moved)


@pytest.mark.parametrize("shift", [0, 1, 2])
def test_an_exact_drop_of_two_points_passes_and_four_fails(shift):
    # 50 queries in one category, `shift` of them lose their only relevant document:
    # a drop of exactly shift * 2 points (0, 2 or 4); only 4 is over the limit.
    rows = [("a", 1, 1, 1)] * (50 - shift) + [("a", 1, 1, 0)] * shift
    gates = check([set_result(rows, 3)], baseline_numbers([set_result(rows, 2)]))
    assert (not all(g.passed for g in gates)) == (shift == 2)


def test_an_endless_queries_file_is_refused_before_reading(tmp_path):
    # /dev/zero has no newline and no end: a device is refused before a byte is read.
    folder = tmp_path / "tiny"
    shutil.copytree(TINY_SET, folder)
    (folder / "queries.jsonl").unlink()
    (folder / "queries.jsonl").symlink_to("/dev/zero")
    with pytest.raises(SetError, match=r"queries\.jsonl: is a device, not a regular file"):
        load_set(folder, offline=True)


def test_a_huge_line_without_newline_is_refused_after_one_mib_not_read_whole(tmp_path):
    folder = tmp_path / "tiny"
    shutil.copytree(TINY_SET, folder)
    (folder / "queries.jsonl").write_bytes(b"x" * (3 << 20))
    with pytest.raises(SetError, match=r"queries\.jsonl:1: line is longer than 1048576 bytes"):
        load_set(folder, offline=True)


# -- baselines read back: a hand-edited value is a BaselineError, never a crash in the gates -------

@settings(deadline=None, max_examples=200)
@given(path_at=st.floats(0, 1), value=json_values)
def test_a_baseline_with_any_value_replaced_is_refused_or_gates_cleanly(tmp_path_factory, path_at, value):
    rows = [("a", 1, 1, 1), ("a", 2, 1, 0), ("b", 1, 0, 1)]
    document = build_baseline([set_result(rows, 2)], PROVENANCE)
    document = json.loads(json.dumps(document))
    # Every (container, key) inside the set entry; replace the one picked by path_at.
    slots = []

    def walk(node):
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, child in items:
            slots.append((node, key))
            walk(child)

    walk(document["sets"]["s"])
    container, key = slots[min(int(path_at * len(slots)), len(slots) - 1)]
    container[key] = value
    path = tmp_path_factory.mktemp("baseline") / "baseline.json"
    path.write_text(json.dumps(document))
    try:
        entry = read_baseline(path)["sets"]["s"]
        comparable = Baseline.read(path).comparable(set_result(rows, 3))
    except BaselineError as error:
        assert "\n" not in str(error)
        return
    with mock.patch("harness.gating.gates.RESAMPLES", 50):
        gates = check([set_result(rows, 3)], {"s": comparable})
    assert gates and entry is not None
