"""adapters.http --wait-for: waits, bounded, for a local service (an http.server on 127.0.0.1 started here).

The time waited is the test's own clock: `sleep` advances it, and starts the service when the
test says, so no test depends on how fast the machine is.
"""

import json
import socket
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from adapters.http import build_opener, build_parser, check_url
from adapters.wait import MAX_WAIT_SECONDS, URL_WAIT_SECONDS, ServiceDown, WaitFor, parse_wait_for, wait_for_service
from tests.conftest import REPO_ROOT


class Service(BaseHTTPRequestHandler):
    """/health answers 503 until `ready_after` calls have been made, then 200; /search answers ids."""

    def do_HEAD(self):
        self.server.calls.append(("HEAD", self.path))
        self._send(404, b"")

    def do_GET(self):
        self.server.calls.append(("GET", self.path))
        health = sum(1 for _, path in self.server.calls if path == "/health")
        self._send(200 if health > self.server.ready_after else 503, b"{}")

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        self._send(200, json.dumps({"ids": ["a", "b"]}).encode())

    def _send(self, status, body):
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def log_message(self, *args):
        pass


class LateService:
    """A port reserved now (bound, not listening: a connection is refused) where a service starts on demand."""

    def __init__(self, ready_after=0):
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.socket.bind(("127.0.0.1", 0))
        self.port = self.socket.getsockname()[1]
        self.ready_after = ready_after
        self.server = None

    def url(self, path="/search"):
        return f"http://127.0.0.1:{self.port}{path}"

    def start(self):
        self.socket.close()
        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Service)
        self.server.calls, self.server.ready_after = [], self.ready_after
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
        self.socket.close()


@pytest.fixture
def service():
    late = LateService()
    yield late
    late.close()


class Clock:
    """Time that moves only when the waiter sleeps; `on_sleep(n)` runs at the n-th sleep."""

    def __init__(self, on_sleep=None):
        self.now, self.sleeps, self.on_sleep = 0.0, 0, on_sleep or (lambda n: None)

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.sleeps += 1
        self.now += seconds
        self.on_sleep(self.sleeps)


def test_a_service_that_starts_later_is_waited_for(service):
    clock = Clock(on_sleep=lambda n: service.start() if n == 3 else None)
    seen = []
    wait_for_service(WaitFor(10.0), service.url(), build_opener(check_url(service.url())), clock=clock, sleep=clock.sleep,
                     progress=lambda *line: seen.append(line))
    assert clock.sleeps == 3 and service.server.calls == [("HEAD", "/")]  # any answer is up, even a 404
    assert seen == [(f"waiting for {service.url('/')}", 0, 10)]  # at most one progress line a second


def test_a_health_url_is_waited_for_until_it_answers_2xx(service):
    service.ready_after = 2
    service.start()
    clock = Clock()
    wait_for_service(WaitFor(URL_WAIT_SECONDS, service.url("/health")), service.url(), build_opener(check_url(service.url())),
                     clock=clock, sleep=clock.sleep, progress=lambda *line: None)
    assert service.server.calls == [("GET", "/health")] * 3 and clock.sleeps == 2


def test_a_service_that_never_comes_up_is_service_down_with_the_reason(service):
    clock = Clock()
    seen = []
    with pytest.raises(ServiceDown) as down:
        wait_for_service(WaitFor(2.0), service.url(), build_opener(check_url(service.url())), clock=clock, sleep=clock.sleep,
                         progress=lambda *line: seen.append(line))
    assert down.value.exit_code == 3
    assert str(down.value).startswith(f"{service.url('/')} did not come up within 2 s (--wait-for): ")
    assert "refused" in str(down.value).lower()
    assert clock.now == 2.0 and [done for _, done, _ in seen] == [0, 1]


def test_the_bridge_exits_3_in_one_line_when_the_service_never_comes_up(service):
    done = subprocess.run([sys.executable, "-m", "adapters.http", "--url", service.url(), "--wait-for", "0.5"],
                          input="", capture_output=True, text=True, cwd=REPO_ROOT, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO_ROOT)})
    assert done.returncode == 3
    assert done.stderr.startswith("http: error: ") and "did not come up within 0.5 s" in done.stderr
    assert len(done.stderr.splitlines()) == 1
    assert all('"progress"' in line for line in done.stdout.splitlines())  # no banner


def test_the_bridge_waits_then_answers(service):
    service.start()
    done = subprocess.run([sys.executable, "-m", "adapters.http", "--url", service.url(), "--wait-for", "5",
                           "--name", "my-search", "--version", "2.1"],
                          input=json.dumps({"kind": "code", "query": "x", "k": 2}) + "\n", capture_output=True,
                          text=True, cwd=REPO_ROOT, timeout=60, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO_ROOT)})
    assert done.returncode == 0, done.stderr
    banner, reply = [json.loads(line) for line in done.stdout.splitlines()]
    assert (banner["name"], banner["version"]) == ("my-search", "2.1") and reply == {"ids": ["a", "b"]}


def test_a_wait_url_off_this_machine_is_refused_before_waiting(service):
    done = subprocess.run([sys.executable, "-m", "adapters.http", "--url", service.url(),
                           "--wait-for", "http://192.0.2.1/health"], input="", capture_output=True, text=True,
                          cwd=REPO_ROOT, timeout=60, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO_ROOT)})
    assert done.returncode == 2 and "not a loopback address" in done.stderr and done.stdout == ""


@pytest.mark.parametrize("text", ["0", "-1", "nan", "inf", str(MAX_WAIT_SECONDS + 1), "soon", "https://127.0.0.1/"])
def test_bad_wait_values_are_usage_errors(text, capsys):
    with pytest.raises(SystemExit) as stopped:
        build_parser().parse_args(["--url", "http://127.0.0.1:1/", "--wait-for", text])
    assert stopped.value.code == 2 and "--wait-for" in capsys.readouterr().err


def test_wait_values():
    assert parse_wait_for("30") == WaitFor(30.0)
    assert parse_wait_for("http://127.0.0.1:8080/health") == WaitFor(URL_WAIT_SECONDS, "http://127.0.0.1:8080/health")
