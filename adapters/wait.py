"""`--wait-for URL-or-seconds` of the HTTP bridge: wait, bounded, until the local service answers.

A number of seconds waits until the `--url`'s server answers any HTTP request (a `HEAD /`; any
status counts: something is listening and speaking HTTP); a URL (http://, loopback only, as
`--url`) waits until a GET of it answers 2xx, for at most URL_WAIT_SECONDS. Every call goes
through the bridge's own opener (loopback only, no proxies, no redirects). While waiting, one
progress line a second tells the harness start-up is alive; a service that never comes up is
ServiceDown: one line and exit 3, as the harness reports a backend that failed.
"""

from __future__ import annotations

import argparse
import math
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass

from .startup import AdapterStartupError

MAX_WAIT_SECONDS = 600.0   # the longest --wait-for N accepted
URL_WAIT_SECONDS = 120.0   # how long --wait-for URL waits (the harness's default start-up silence)
POLL_SECONDS = 0.25        # pause between two attempts
PROBE_TIMEOUT_SECONDS = 2.0  # one attempt's connect-and-answer time, at most what is left
EXIT_SERVICE_DOWN = 3


class ServiceDown(AdapterStartupError):
    """The service did not come up within the wait: exit 3 (the backend failed)."""

    exit_code = EXIT_SERVICE_DOWN


@dataclass(frozen=True)
class WaitFor:
    """What to wait for: `url` (None: the --url's server answering at all) and for how long."""

    seconds: float
    url: str | None = None


def parse_wait_for(text: str) -> WaitFor:
    """`--wait-for`'s value: seconds in (0, MAX_WAIT_SECONDS], or an http:// URL; argparse error otherwise."""
    if text.startswith("http://"):
        return WaitFor(URL_WAIT_SECONDS, text)
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds or an http:// URL, got {text!r}") from None
    if not (0 < seconds <= MAX_WAIT_SECONDS):
        raise argparse.ArgumentTypeError(f"seconds must be > 0 and at most {MAX_WAIT_SECONDS:g}, got {text}")
    return WaitFor(seconds)


def wait_for_service(wait: WaitFor, service_url: str, opener: urllib.request.OpenerDirector, *,
                     progress: Callable[[str, int, int], None] | None = None,
                     clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> None:
    """Return once the service answers; ServiceDown with the last reason when `wait.seconds` pass first.

    `progress(stage, done, total)` (default: the harness's progress line) is called at most
    once a second of waiting; `clock` and `sleep` are the time it waits in (tests pass their own).
    """
    if progress is None:
        from harness.adapter import report_progress as progress
    target = wait.url or _root(service_url)
    stage = f"waiting for {target}"
    started = clock()
    deadline = started + wait.seconds
    total = math.ceil(wait.seconds)
    reported = -1
    while True:
        left = deadline - clock()
        reason = _probe(opener, target, need_success=wait.url is not None, timeout=min(PROBE_TIMEOUT_SECONDS, max(left, 0.01)))
        if reason is None:
            return
        waited = clock() - started
        if waited >= wait.seconds:
            raise ServiceDown(f"{target} did not come up within {wait.seconds:g} s (--wait-for): {reason}")
        if int(waited) > reported:
            reported = int(waited)
            progress(stage, min(reported, total), total)
        sleep(min(POLL_SECONDS, max(deadline - clock(), 0)))


def _root(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, "/", "", ""))


def _probe(opener: urllib.request.OpenerDirector, url: str, *, need_success: bool, timeout: float) -> str | None:
    """None when the service answered as needed, else why not (one phrase)."""
    request = urllib.request.Request(url, method="GET" if need_success else "HEAD")
    try:
        with opener.open(request, timeout=timeout) as response:
            status = response.status
    except urllib.error.HTTPError as exc:
        status = exc.code
    except urllib.error.URLError as exc:
        reason = exc.reason
        return reason.strerror if isinstance(reason, OSError) and reason.strerror else str(reason)
    except (OSError, ValueError) as exc:  # a timeout, a reset, a garbled status line
        return f"{type(exc).__name__}: {exc}"
    if need_success and not 200 <= status < 300:
        return f"HTTP {status}"
    return None
