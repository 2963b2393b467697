"""harness.adapter.serve: the adapter-side loop, in-process and as a real child process."""

import io
import json
import subprocess
import sys
import textwrap

from harness.adapter import UnknownKind, serve


def run_serve(search, lines, banner=None):
    stdin = io.BytesIO("".join(line + "\n" for line in lines).encode())
    stdout = io.BytesIO()
    assert serve(search, banner, stdin=stdin, stdout=stdout) == 0
    return [json.loads(line) for line in stdout.getvalue().decode().splitlines()]


def test_answers_in_order_cut_to_k_and_with_scores():
    def search(kind, query, k):
        if query == "pairs":
            return [("a", 3.0), ("b", 1.0), ("c", 0.5)]
        return ["x", "y", "z"]
    replies = run_serve(search, ['{"kind":"c","query":"ids","k":2}', '{"kind":"c","query":"pairs","k":2}'])
    assert replies == [{"ids": ["x", "y"]}, {"ids": ["a", "b"], "scores": [3.0, 1.0]}]


def test_the_request_qid_is_echoed():
    replies = run_serve(lambda kind, query, k: ["a"], ['{"kind":"c","query":"q","k":1,"qid":"code-017"}',
                                                        '{"kind":"nope","query":"q","k":1,"qid":"x-1"}'])
    assert replies[0] == {"qid": "code-017", "ids": ["a"]}
    assert replies[1]["qid"] == "x-1"


def test_banner_first_then_answers():
    replies = run_serve(lambda kind, query, k: [], ['{"kind":"c","query":"q","k":1}'], banner={"name": "t"})
    assert replies[0]["ready"] is True and replies[0]["name"] == "t"
    assert replies[1] == {"ids": []}


def test_exceptions_and_bad_requests_become_error_replies_and_the_loop_survives():
    def search(kind, query, k):
        if kind == "nope":
            raise UnknownKind("serves only code")
        if query == "boom":
            raise RuntimeError("index corrupt")
        return ["ok"]
    replies = run_serve(search, ['{"kind":"nope","query":"q","k":1}', '{"kind":"c","query":"boom","k":1}',
                                 'not json', '', '{"kind":"c","query":"fine","k":1}'])
    assert "unknown kind 'nope'" in replies[0]["error"]
    assert "RuntimeError: index corrupt" in replies[1]["error"]
    assert "not JSON" in replies[2]["error"]
    assert replies[3] == {"ids": ["ok"]}
    assert len(replies) == 4  # the blank line got no reply


def test_real_process_exits_cleanly_on_eof(tmp_path):
    script = tmp_path / "adapter.py"
    script.write_text(textwrap.dedent("""
        from harness.adapter import serve
        raise SystemExit(serve(lambda kind, query, k: [query.upper()]))
    """))
    completed = subprocess.run([sys.executable, str(script)], input=b'{"kind":"c","query":"hi","k":3}\n',
                               capture_output=True, timeout=30)
    assert completed.returncode == 0
    assert json.loads(completed.stdout) == {"ids": ["HI"]}


def test_index_for_names_the_kinds_served():
    from harness.adapter import index_for
    indexes = {"code": "code-index", "memory": "memory-index"}
    assert index_for(indexes, "code") == "code-index"
    replies = run_serve(lambda kind, query, k: [index_for(indexes, kind)], ['{"kind":"dedupe","query":"q","k":1}'])
    assert replies[0]["error"] == "unknown kind 'dedupe': this adapter serves ['code', 'memory']"


def test_hit_windows_from_a_tuple_or_a_json_list_and_a_malformed_one_named():
    import pytest
    from harness.errors import ProtocolError

    def search(kind, query, k):
        return [("a", 2.0, (0, 5)), ("b", 1.0, [3, 9]), ("c", 0.5, None)] if query == "ok" else [("a", 1.0, (1, 2, 3))]
    replies = run_serve(search, ['{"kind":"c","query":"ok","k":3}'])
    assert replies == [{"ids": ["a", "b", "c"], "scores": [2.0, 1.0, 0.5],
                        "passages": [{"start": 0, "end": 5}, {"start": 3, "end": 9}, None]}]
    with pytest.raises(ProtocolError, match=r"a hit's window must be \(start, end\) or None, got \(1, 2, 3\)"):
        run_serve(search, ['{"kind":"c","query":"bad","k":1}'])
