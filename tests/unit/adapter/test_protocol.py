"""Protocol v1 encoding and validation (docs/adapters.md): every malformed response is a ProtocolError."""

import json

import pytest

from harness.errors import ProtocolError
from harness.adapter.protocol import (Request, decode_banner, decode_request, decode_response, encode_banner,
                              encode_request, encode_response)


def test_request_round_trip_keeps_unicode_and_qid():
    line = encode_request(Request(kind="code", query="città 東京 🚀", k=10, qid="code-017"))
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert json.loads(line) == {"kind": "code", "query": "città 東京 🚀", "k": 10, "qid": "code-017"}
    assert decode_request(line) == Request("code", "città 東京 🚀", 10, "code-017")


def test_request_without_qid_omits_it():
    assert "qid" not in json.loads(encode_request(Request("memory", "q", 1)))


@pytest.mark.parametrize("line, field", [
    (b'{"kind": "", "query": "q", "k": 1}', "kind"),
    (b'{"kind": "x", "query": 3, "k": 1}', "query"),
    (b'{"kind": "x", "query": "q", "k": 0}', "'k'"),
    (b'{"kind": "x", "query": "q", "k": true}', "'k'"),
    (b'{"kind": "x", "query": "q", "k": 1, "qid": 5}', "qid"),
    (b'[1, 2]', "not a JSON object"),
])
def test_bad_requests_name_the_field(line, field):
    with pytest.raises(ProtocolError, match=field):
        decode_request(line)


def test_valid_response_with_scores():
    response = decode_response(b'{"ids": ["a", "b"], "scores": [2.0, 2.0]}', qid="q1", k=2)
    assert response.ids == ("a", "b") and response.scores == (2.0, 2.0) and response.error is None


def test_error_reply_needs_no_ids():
    assert decode_response(b'{"error": "index not loaded"}', qid="q1", k=5).error == "index not loaded"


@pytest.mark.parametrize("line, message", [
    (b"loading index...", "not JSON"),
    (b'"just a string"', "not a JSON object"),
    (b'{"ids": "a"}', "'ids' must be a list of strings"),
    (b'{"ids": ["a", 1]}', "'ids' must be a list of strings"),
    (b'{"nothing": 1}', "'ids' must be a list of strings"),
    (b'{"ids": ["a", "b", "c"]}', "more than k=2"),
    (b'{"ids": ["a", "a"]}', "repeats 'a'"),
    (b'{"ids": ["a", "b"], "scores": [1.0]}', "as long as"),
    (b'{"ids": ["a", "b"], "scores": [1.0, NaN]}', "NaN is not a JSON number"),
    (b'{"ids": ["a"], "scores": [Infinity]}', "Infinity is not a JSON number"),
    (b'{"ids": ["a", "b"], "scores": [1.0, 2.0]}', "non-increasing"),
    (b'{"ids": ["a"], "scores": ["high"]}', "finite numbers"),
    (b'{"error": 42}', "'error' must be a string"),
    (b'\xff\xfe{"ids": []}', "not valid UTF-8"),
])
def test_bad_responses_name_the_query_and_rule(line, message):
    with pytest.raises(ProtocolError) as caught:
        decode_response(line, qid="code-017", k=2)
    assert "query code-017" in str(caught.value)
    assert message in str(caught.value)


def test_a_repeated_id_named_is_the_first_one_seen_twice():
    with pytest.raises(ProtocolError, match="repeats 'a'"):  # 'a' repeats at position 3, before 'b' does at 4
        decode_response(b'{"ids": ["b", "a", "a", "b"]}', qid="q", k=10)


def test_banner_detection():
    banner = encode_banner(name="bm25", version="1")
    assert decode_banner(banner) == {"ready": True, "protocol": 1, "name": "bm25", "version": "1"}
    assert decode_banner(b'{"ids": []}') is None
    assert decode_banner(b'{"ready": "yes"}') is None
    assert decode_banner(b"not json") is None


def test_encode_response_round_trip():
    line = encode_response(["x", "y"], [3, 1.5])
    assert decode_response(line, qid="q", k=2).scores == (3.0, 1.5)
    assert decode_response(encode_response([], error="boom"), qid="q", k=2).error == "boom"


@pytest.mark.parametrize("request_", [
    Request("code", 'say "hi"\\ and\n tab\t', 10, "code-017"),
    Request("memory", "città 東京 🚀 \u2028 \x00", 1),
    Request("k", "", 10_000, ""),
])
def test_fast_request_encoding_equals_json_dumps(request_):
    payload = {"kind": request_.kind, "query": request_.query, "k": request_.k}
    if request_.qid is not None:
        payload["qid"] = request_.qid
    expected = json.dumps(payload, ensure_ascii=False, separators=(",", ":")) + "\n"
    assert encode_request(request_) == expected.encode("utf-8")
    assert decode_request(encode_request(request_)) == request_


# -- start-up progress lines ---------------------------------------------------------------------

def test_progress_round_trip_and_unknown_total():
    from harness.adapter.protocol import Progress, decode_progress, encode_progress
    assert encode_progress("embedding memory", 1200, 6778) == \
        b'{"progress":{"stage":"embedding memory","done":1200,"total":6778}}\n'
    assert decode_progress(encode_progress("indexing", 5)) == Progress("indexing", 5, None)
    assert decode_progress(b'{"ids": ["a"]}') is None
    assert decode_progress(b'{"ready": true}') is None


@pytest.mark.parametrize("line", [
    b'{"progress": 3}', b'{"progress": {"stage": "", "done": 1}}', b'{"progress": {"stage": "x", "done": -1}}',
    b'{"progress": {"stage": "x", "done": true}}', b'{"progress": {"stage": "x", "done": 5, "total": 4}}',
])
def test_malformed_progress_is_a_protocol_error(line):
    from harness.adapter.protocol import decode_progress
    with pytest.raises(ProtocolError):
        decode_progress(line)


def test_report_progress_writes_one_flushed_line():
    import io
    from harness.adapter import report_progress
    out = io.BytesIO()
    report_progress("building index", 10, 20, stdout=out)
    assert out.getvalue().count(b"\n") == 1 and b'"done":10' in out.getvalue()


# -- values that parse but cannot be carried into a report: refused at the wire -----------------

@pytest.mark.parametrize("line, reason", [
    (rb'{"ids": ["a", "cut \ud83d"]}', r"query q: 'ids'\[1\] holds a lone surrogate escape"),
    (rb'{"ids": ["\uDE00"]}', r"query q: 'ids'\[0\] holds a lone surrogate escape"),
    (rb'{"ids": [], "error": "x\udca9"}', r"query q: 'error' holds a lone surrogate"),
    (b'{"ids": ["a"], "scores": [' + b"9" * 301 + b']}', r"query q: 'scores'\[0\]: an integer of 301 digits"),
    (b'{"ids": ["a"], "scores": [-' + b"9" * 400 + b']}', r"'scores'\[0\]: an integer of 400 digits"),
    (b'{"ids": ["a"], "scores": [Infinity]}', r"'scores'\[0\]: Infinity is not a JSON number"),
    (b'{"ids": ["a"], "qid": ' + b"1" * 5000 + b'}', r"query q: an integer of 5000 digits"),
])
def test_unrepresentable_values_are_protocol_errors_naming_query_and_field(line, reason):
    with pytest.raises(ProtocolError, match=reason) as caught:
        decode_response(line, qid="q", k=10)
    assert caught.value.exit_code == 3 and "\n" not in str(caught.value)


def test_surrogate_pairs_and_escaped_backslashes_are_text():
    # A whole pair is an emoji; "\\ud800" is a backslash followed by letters: both are fine.
    assert decode_response(rb'{"ids": ["\ud83d\ude00", "\\ud800"]}', qid="q", k=10).ids == ("\U0001f600", "\\ud800")
    assert decode_response(b'{"ids": ["a"], "scores": [' + b"9" * 300 + b']}', qid="q", k=10).scores == (float("9" * 300),)


def test_a_banner_must_be_strict_json_and_with_check_fields_well_typed():
    assert decode_banner(b'{"ready": true, "name": "x", "index": {"n": 3}}', check_fields=True)["index"] == {"n": 3}
    with pytest.raises(ProtocolError, match=r"^banner: 'index'\.avgdl: NaN is not a JSON number"):
        decode_banner(b'{"ready": true, "index": {"avgdl": NaN}}')
    with pytest.raises(ProtocolError, match=r"^banner: 'model' holds a lone surrogate"):
        decode_banner(rb'{"ready": true, "model": "m\ud800"}')
    # Types are left to check-adapter unless asked for (the run driver asks).
    assert decode_banner(b'{"ready": true, "name": 7}') == {"ready": True, "name": 7}
    with pytest.raises(ProtocolError, match=r"^banner: 'name' must be a string, got '7'"):
        decode_banner(b'{"ready": true, "name": 7}', check_fields=True)
    with pytest.raises(ProtocolError, match=r"^banner: 'protocol' is '2'; this harness speaks 1"):
        decode_banner(b'{"ready": true, "protocol": 2}', check_fields=True)
    with pytest.raises(ProtocolError, match=r"^banner: 'protocol' is 'true'; this harness speaks 1"):
        decode_banner(b'{"ready": true, "protocol": true}', check_fields=True)  # Python's True == 1
    assert decode_banner(b'{"ready": false, "x": NaN}') is None  # not a banner at all
