"""adapters.http: the bridge to a local JSON endpoint, against an http.server started here on 127.0.0.1."""

import json
import socket
import subprocess
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from adapters.http import Bridge, NotLoopback, build_parser, loopback_addresses, values_at
from tests.conftest import REPO_ROOT

REPO = REPO_ROOT
DOCS = {"code": ["code/a.py", "code/b.py", "code/c.py", "code/d.py"], "notes": ["n1", "n2"]}


class Backend(BaseHTTPRequestHandler):
    """A toy search service. POST /search {q, limit, index} -> {results: [{id, score}]}; other paths misbehave."""

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.seen.append({"path": self.path, "body": body, "headers": dict(self.headers)})
        if self.path == "/search":
            ids = DOCS.get(body["index"])
            if ids is None:
                return self._send(404, {"detail": f"no index {body['index']}"})
            hits = ids[: body["limit"]]
            return self._send(200, {"results": [{"id": i, "score": 10.0 - n} for n, i in enumerate(hits)]})
        if self.path.endswith("/by-kind"):  # /<kind>/by-kind, the kind from the path
            return self._send(200, {"ids": DOCS[self.path.split("/")[1]][: body["k"]]})
        if self.path == "/ints":
            return self._send(200, {"ids": [7, 3]})
        if self.path == "/redirect":
            self.send_response(302)
            self.send_header("Location", "/search")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return None
        if self.path == "/fail":
            return self._send(500, "index exploded\n")
        if self.path == "/slow":
            self.server.release.wait(60)
            return self._send(200, {"ids": ["late"]})
        if self.path == "/not-json":
            return self._send(200, "<html>hello</html>")
        return self._send(404, "no such path")

    def do_GET(self):
        parts = urllib.parse.urlsplit(self.path)
        params = dict(urllib.parse.parse_qsl(parts.query))
        self.server.seen.append({"path": parts.path, "params": params})
        ids = DOCS[params["index"]][: int(params["limit"])]
        return self._send(200, {"ids": ids})

    def _send(self, status, payload):
        data = (payload if isinstance(payload, str) else json.dumps(payload)).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Backend)
    httpd.seen = []
    httpd.release = threading.Event()
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.release.set()
    httpd.shutdown()
    httpd.server_close()
    thread.join(10)


def url(server, path):
    return f"http://127.0.0.1:{server.server_address[1]}{path}"


def bridge_run(args, requests, env_extra=None):
    """Run `python -m adapters.http ARGS` as a child, feed the requests; return (status, banner, replies, stderr)."""
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), **(env_extra or {})}
    lines = "".join(json.dumps(r) + "\n" for r in requests)
    done = subprocess.run([sys.executable, "-m", "adapters.http", *args], input=lines, capture_output=True,
                          text=True, cwd=REPO, env=env, timeout=120)
    out = [json.loads(line) for line in done.stdout.splitlines()]
    return done.returncode, (out[0] if out else None), out[1:], done.stderr


MAPPING = ["--query-field", "q", "--k-field", "limit", "--kind-field", "index",
           "--ids-path", "results.*.id", "--scores-path", "results.*.score"]


def test_post_with_field_mapping_ids_and_scores(server):
    status, banner, replies, _ = bridge_run(["--url", url(server, "/search"), *MAPPING],
                                            [{"kind": "code", "query": "parse cfg", "k": 2, "qid": "q1"},
                                             {"kind": "notes", "query": "ünïcode 🚀", "k": 10}])
    assert status == 0
    assert banner["ready"] is True and banner["index"] == {"url": url(server, "/search"), "method": "POST"}
    assert replies == [{"qid": "q1", "ids": ["code/a.py", "code/b.py"], "scores": [10.0, 9.0]},
                       {"ids": ["n1", "n2"], "scores": [10.0, 9.0]}]
    assert [seen["body"] for seen in server.seen] == [{"q": "parse cfg", "limit": 2, "index": "code"},
                                                      {"q": "ünïcode 🚀", "limit": 10, "index": "notes"}]


def test_get_with_query_parameters_extra_fields_and_headers(server):
    status, _, replies, _ = bridge_run(
        ["--url", url(server, "/get?lang=en"), "--method", "GET", "--query-field", "q", "--k-field", "limit",
         "--kind-field", "index", "--extra", '{"mode": "hybrid", "debug": false}'],
        [{"kind": "code", "query": "a b&c=d", "k": 3}])
    assert status == 0
    assert replies == [{"ids": ["code/a.py", "code/b.py", "code/c.py"]}]
    assert server.seen[0]["path"] == "/get"
    # The URL's own parameter kept, the query text escaped and decoded back intact, non-strings as JSON.
    assert server.seen[0]["params"] == {"lang": "en", "q": "a b&c=d", "limit": "3", "index": "code",
                                        "mode": "hybrid", "debug": "false"}


def test_kind_in_the_path_and_a_header(server):
    status, _, replies, _ = bridge_run(["--url", url(server, "/{kind}/by-kind"), "--kind-field", "",
                                        "--header", "Authorization: Bearer local-token"],
                                       [{"kind": "notes", "query": "x", "k": 1}])
    assert status == 0 and replies == [{"ids": ["n1"]}]
    assert server.seen[0]["path"] == "/notes/by-kind"
    assert server.seen[0]["body"] == {"query": "x", "k": 1}  # no kind field
    assert server.seen[0]["headers"]["Authorization"] == "Bearer local-token"


def test_proxy_variables_are_ignored(server, monkeypatch):
    proxy = {"http_proxy": "http://127.0.0.1:1", "HTTP_PROXY": "http://127.0.0.1:1", "all_proxy": "http://127.0.0.1:1"}
    # Plain urllib honours them (and so fails: nothing listens on port 1), which is what the bridge must not do.
    for name, value in proxy.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    with pytest.raises(urllib.error.URLError):
        urllib.request.build_opener().open(url(server, "/get?index=code&limit=1&q=x"), timeout=10)
    assert server.seen == []
    status, _, replies, _ = bridge_run(["--url", url(server, "/search"), *MAPPING],
                                       [{"kind": "code", "query": "x", "k": 1}], env_extra=proxy)
    assert status == 0 and replies == [{"ids": ["code/a.py"], "scores": [10.0]}]


def test_failures_become_error_replies_and_the_bridge_goes_on(server):
    requests = [{"kind": "code", "query": "x", "k": 2}]
    cases = {
        "/redirect": "HTTP 302 redirect to '/search' from POST {url} refused: adapters.http never follows redirects",
        "/fail": "HTTP 500 from POST {url}: 'index exploded'",
        "/slow": "no HTTP answer within 0.5 s from POST {url}",
        "/not-json": "answer from POST {url} is not UTF-8 JSON",
    }
    for path, expected in cases.items():
        status, _, replies, stderr = bridge_run(["--url", url(server, path), "--timeout", "0.5"], requests * 2)
        assert status == 0, stderr
        assert len(replies) == 2  # one error reply per request; the loop survived the first
        for reply in replies:
            assert reply["ids"] == []
            assert expected.format(url=url(server, path)) in reply["error"]
    # The redirect was not followed: /search was never called.
    assert all(seen["path"] != "/search" for seen in server.seen)


def test_unknown_kind_and_unreachable_port_are_error_replies(server):
    status, _, replies, _ = bridge_run(["--url", url(server, "/search"), *MAPPING],
                                       [{"kind": "nope", "query": "x", "k": 2}])
    assert status == 0 and "HTTP 404" in replies[0]["error"] and "no index nope" in replies[0]["error"]
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        free_port = sock.getsockname()[1]  # bound, never listening: connections are refused
        status, _, replies, _ = bridge_run(["--url", f"http://127.0.0.1:{free_port}/x"],
                                           [{"kind": "code", "query": "x", "k": 1}])
    assert status == 0 and "Connection refused" in replies[0]["error"]


def test_integer_ids_become_strings_and_bad_paths_are_named(server):
    status, _, replies, _ = bridge_run(["--url", url(server, "/ints")], [{"kind": "code", "query": "x", "k": 5}])
    assert replies == [{"ids": ["7", "3"]}]
    status, _, replies, _ = bridge_run(["--url", url(server, "/search"), *MAPPING[:6], "--ids-path", "hits.*.id"],
                                       [{"kind": "code", "query": "x", "k": 5}])
    assert "answer path 'hits.*.id': the answer has no 'hits'" in replies[0]["error"]


@pytest.mark.parametrize("target, message", [
    ("http://192.0.2.1:8080/search", "host '192.0.2.1' resolves to 192.0.2.1, which is not a loopback address"),
    ("http://10.0.0.1/search", "resolves to 10.0.0.1, which is not a loopback address"),
    ("http://0.0.0.0:80/", "resolves to 0.0.0.0, which is not a loopback address"),
    ("https://127.0.0.1/search", "only http:// URLs are supported"),
    ("http://127.0.0.1:99999/", "the port is not a number"),
    ("http://{kind}.local/", "{kind} may appear in the path or query, not the host"),
])
def test_non_loopback_or_bad_urls_exit_2_before_any_request(target, message):
    status, banner, replies, stderr = bridge_run(["--url", target], [{"kind": "code", "query": "x", "k": 1}])
    assert status == 2
    assert banner is None and replies == []
    assert stderr.startswith("http: error: ") and message in stderr
    assert len(stderr.splitlines()) == 1


def test_loopback_hosts_by_name_and_ipv6_are_accepted():
    assert loopback_addresses("localhost", 80)
    assert all(sockaddr[0] == "::1" for _, sockaddr in loopback_addresses("::1", 80))
    assert loopback_addresses("127.0.0.2", 80)  # the whole 127/8 block is loopback


def test_every_resolved_address_must_be_loopback(monkeypatch):
    def resolver(host, port, *args, **kwargs):
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port)),
                (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.9.8.7", port))]
    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    with pytest.raises(NotLoopback, match="resolves to 10.9.8.7"):
        loopback_addresses("search.internal", 80)


@pytest.fixture
def loopback_only_sockets(monkeypatch):
    """Every socket connect in this test must go to loopback: a non-loopback address fails the test
    before a packet leaves (so a fake resolver's LAN answer can never become traffic)."""
    attempts = []
    real_connect = socket.socket.connect

    def connect(sock, address):
        attempts.append(address)
        import ipaddress
        if not ipaddress.ip_address(address[0].split("%", 1)[0]).is_loopback:
            raise AssertionError(f"a connection to {address} was attempted")
        return real_connect(sock, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    return attempts


def fake_dns(monkeypatch, answers):
    """socket.getaddrinfo answering `answers(call_number)` (IPv4 addresses) for every name; the calls made."""
    calls = []

    def resolver(host, port, *args, **kwargs):
        calls.append(host)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port)) for address in answers(len(calls))]
    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    return calls


def test_a_name_resolving_to_loopback_and_lan_is_refused_at_start(server, monkeypatch, loopback_only_sockets):
    fake_dns(monkeypatch, lambda call: ["127.0.0.1", "192.168.1.20"])
    by_name = f"http://search.test:{server.server_address[1]}/search"
    with pytest.raises(NotLoopback, match="resolves to 192.168.1.20"):
        Bridge(build_parser().parse_args(["--url", by_name, *MAPPING]))
    assert loopback_only_sockets == [] and server.seen == []


def test_a_name_rebound_after_the_start_check_is_never_looked_up_again(server, monkeypatch, loopback_only_sockets):
    """Resolved once at start; later a rebinding DNS says LAN (or loopback and LAN): the bridge keeps
    asking the pinned loopback address, and the name is never resolved again."""
    calls = fake_dns(monkeypatch, lambda call: ["127.0.0.1"] if call == 1 else ["127.0.0.1", "10.0.0.7"]
                     if call == 2 else ["10.0.0.7"])
    bridge = Bridge(build_parser().parse_args(["--url", f"http://search.test:{server.server_address[1]}/search",
                                               *MAPPING]))
    for _ in range(3):
        assert bridge.search("code", "x", 1) == [("code/a.py", 10.0)]
    assert calls == ["search.test"]  # the start check only
    assert len(server.seen) == 3
    assert {address[0] for address in loopback_only_sockets} == {"127.0.0.1"}


def test_pinned_addresses_outside_loopback_are_refused_where_sockets_are_made(loopback_only_sockets):
    args = build_parser().parse_args(["--url", "http://127.0.0.1:9/search"])
    with pytest.raises(NotLoopback, match="10.1.2.3 is not a loopback address"):
        Bridge(args, [(socket.AF_INET, ("10.1.2.3", 9))])
    assert loopback_only_sockets == []


@pytest.mark.parametrize("document, path, expected", [
    ({"ids": ["a", "b"]}, "ids", ["a", "b"]),
    ({"results": [{"id": "a"}, {"id": "b"}]}, "results.*.id", ["a", "b"]),
    ({"data": {"hits": [{"doc": {"key": 1}}, {"doc": {"key": 2}}]}}, "data.hits.*.doc.key", [1, 2]),
    ({"pages": [["a", "b"], ["c"]]}, "pages.0", ["a", "b"]),
    ({"results": []}, "results.*.id", []),
])
def test_values_at(document, path, expected):
    assert values_at(document, path) == expected
