"""`python -m adapters.http --url http://127.0.0.1:PORT/PATH`: bridge protocol v1 to a local JSON search endpoint.

Each request becomes one HTTP call (POST with a JSON body, or GET with query parameters)
whose field names are configurable, and the answer's ids (and scores) are read at
configurable paths such as `results.*.id`. Standard library only (urllib).

Safety rules, because a CI job must never reach past the machine it runs on: the URL's
host is resolved once, at start, and must resolve to loopback addresses only (a name that
also resolves to a LAN address is refused); every call then connects to those pinned
addresses and never resolves the name again, so a name that re-binds later (DNS rebinding)
cannot send a call elsewhere; proxy environment variables are ignored; redirects are never followed (a 3xx is an error reply); every
call has a timeout. Failures become `error` replies; the bridge itself keeps running.
"""

from __future__ import annotations

import argparse
import http.client
import ipaddress
import json
import socket
import sys
import urllib.error
import urllib.parse
import urllib.request

from .startup import AdapterStartupError
from .wait import MAX_WAIT_SECONDS, URL_WAIT_SECONDS, parse_wait_for, wait_for_service

NAME = "http"
VERSION = "1.0.0"
DEFAULT_TIMEOUT_SECONDS = 10.0    # per HTTP call: connect, and each read while waiting for the answer
MAX_BODY_BYTES = 16 * 1024 * 1024  # longest answer body read
ERROR_BODY_CHARS = 200            # how much of an error page goes into the error reply
KIND_PLACEHOLDER = "{kind}"


class BridgeError(Exception):
    """One call failed (HTTP status, timeout, unreadable answer); its message becomes the error reply."""


class UrlError(AdapterStartupError):
    """--url cannot be used (scheme, host, port)."""


class NotLoopback(UrlError):
    """The URL's host resolves to an address outside loopback."""


def loopback_addresses(host: str, port: int) -> list[tuple[int, tuple]]:
    """(family, sockaddr) for every address `host` resolves to; NotLoopback unless all are loopback.

    Every address must be loopback, not just one: a name resolving to 127.0.0.1 and to a
    LAN address could otherwise be reached on the LAN one by a later connection.
    """
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise NotLoopback(f"cannot resolve host {host!r}: {exc.strerror}") from None
    addresses = []
    for family, _, _, _, sockaddr in infos:
        address = ipaddress.ip_address(sockaddr[0].split("%", 1)[0])
        if not address.is_loopback:
            raise NotLoopback(f"host {host!r} resolves to {address}, which is not a loopback address; "
                              "adapters.http only talks to services on this machine")
        addresses.append((family, sockaddr))
    if not addresses:
        raise NotLoopback(f"host {host!r} resolves to no address")
    return addresses


Addresses = list[tuple[int, tuple]]


class _PinnedConnection(http.client.HTTPConnection):
    """An HTTP connection to the loopback addresses checked at start, whatever the name resolves to now.

    `pinned` is set on a subclass per bridge (`_pinned_connection`); the Host header still
    names the URL's host, so a virtual-host service answers as it would by name.
    """

    pinned: Addresses = []

    def connect(self) -> None:
        last_error: OSError | None = None
        for family, sockaddr in self.pinned:
            sock = socket.socket(family, socket.SOCK_STREAM)
            if isinstance(self.timeout, (int, float)):  # urllib passes ours; never block forever
                sock.settimeout(self.timeout)
            try:
                sock.connect(sockaddr)
            except OSError as exc:
                sock.close()
                last_error = exc
                continue
            self.sock = sock
            return
        raise last_error or OSError("no address to connect to")


class _PinnedHandler(urllib.request.HTTPHandler):
    def __init__(self, addresses: Addresses) -> None:
        super().__init__()
        for _, sockaddr in addresses:  # the rule, restated where the sockets are made
            if not ipaddress.ip_address(sockaddr[0].split("%", 1)[0]).is_loopback:
                raise NotLoopback(f"{sockaddr[0]} is not a loopback address")
        self.connection = type("PinnedConnection", (_PinnedConnection,), {"pinned": list(addresses)})

    def http_open(self, req: urllib.request.Request):
        return self.do_open(self.connection, req)


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """Refuse every redirect: urllib then raises HTTPError with the 3xx status."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


def build_opener(addresses: Addresses) -> urllib.request.OpenerDirector:
    """urllib without proxies (an empty ProxyHandler ignores *_proxy variables) or redirects, every
    connection made to `addresses` (the loopback addresses `check_url` returned), never to a fresh lookup."""
    return urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirects(), _PinnedHandler(addresses))


def values_at(document: object, path: str) -> list[object]:
    """The values at a dotted `path`; `*` stands for every item of a list, a number for one item.

    A path without `*` must lead to a list, which is returned (`ids` -> the list under "ids");
    with `*`, the values reached are returned in order (`results.*.id` -> each result's id).
    """
    parts = path.split(".")
    values = [document]
    for depth, part in enumerate(parts):
        where = ".".join(parts[:depth]) or "the answer"
        found: list[object] = []
        for value in values:
            if part == "*":
                if not isinstance(value, list):
                    raise BridgeError(f"answer path {path!r}: {where} is not a list")
                found.extend(value)
            elif isinstance(value, dict) and part in value:
                found.append(value[part])
            elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
                found.append(value[int(part)])
            else:
                raise BridgeError(f"answer path {path!r}: {where} has no {part!r}")
        values = found
    if "*" in parts:
        return values
    if not isinstance(values[0], list):
        raise BridgeError(f"answer path {path!r} is not a list")
    return values[0]


class Bridge:
    """Turns (kind, query, k) into one HTTP call and its JSON answer into ranked ids."""

    def __init__(self, args: argparse.Namespace, addresses: Addresses | None = None) -> None:
        """`addresses`: the loopback addresses `check_url(args.url)` returned (resolved here when None)."""
        self.url = args.url
        self.method = args.method
        self.fields = {"query": args.query_field, "k": args.k_field, "kind": args.kind_field}
        self.extra = args.extra
        self.headers = dict(args.header)
        self.ids_path = args.ids_path
        self.scores_path = args.scores_path
        self.timeout = args.timeout
        self.opener = build_opener(addresses if addresses is not None else check_url(args.url))

    def search(self, kind: str, query: str, k: int) -> list[str] | list[tuple[str, float]]:
        request = self._request(kind, query, k)
        answer = self._call(request)
        raw_ids = values_at(answer, self.ids_path)
        ids = [_as_id(value, self.ids_path) for value in raw_ids]
        if self.scores_path is None:
            return ids
        scores = values_at(answer, self.scores_path)
        if len(scores) != len(ids):
            raise BridgeError(f"answer has {len(ids)} ids at {self.ids_path!r} but {len(scores)} scores "
                              f"at {self.scores_path!r}")
        for score in scores:
            if isinstance(score, bool) or not isinstance(score, (int, float)):
                raise BridgeError(f"answer path {self.scores_path!r}: score {json.dumps(score)} is not a number")
        return list(zip(ids, (float(score) for score in scores)))

    def _request(self, kind: str, query: str, k: int) -> urllib.request.Request:
        url = self.url.replace(KIND_PLACEHOLDER, urllib.parse.quote(kind, safe=""))
        payload: dict[str, object] = dict(self.extra)
        for role, value in (("query", query), ("k", k), ("kind", kind)):
            if self.fields[role]:
                payload[self.fields[role]] = value
        headers = {"Accept": "application/json", **self.headers}
        if self.method == "GET":
            params = {name: value if isinstance(value, str) else json.dumps(value) for name, value in payload.items()}
            parts = urllib.parse.urlsplit(url)
            query_string = "&".join(filter(None, [parts.query, urllib.parse.urlencode(params)]))
            return urllib.request.Request(urllib.parse.urlunsplit(parts._replace(query=query_string)),
                                          headers=headers, method="GET")
        body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        return urllib.request.Request(url, data=body, method="POST",
                                      headers={"Content-Type": "application/json", **headers})

    def _call(self, request: urllib.request.Request) -> object:
        where = f"{request.get_method()} {self.url}"
        try:
            with self.opener.open(request, timeout=self.timeout) as response:
                body = response.read(MAX_BODY_BYTES + 1)
        except urllib.error.HTTPError as exc:
            if 300 <= exc.code < 400:
                raise BridgeError(f"HTTP {exc.code} redirect to {exc.headers.get('Location')!r} from {where} "
                                  "refused: adapters.http never follows redirects") from None
            raise BridgeError(f"HTTP {exc.code} from {where}: {_error_body(exc)}") from None
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, TimeoutError):
                raise BridgeError(f"no HTTP answer within {self.timeout:g} s from {where}") from None
            reason = exc.reason.strerror if isinstance(exc.reason, OSError) and exc.reason.strerror else exc.reason
            raise BridgeError(f"cannot reach {where}: {reason}") from None
        except TimeoutError:
            raise BridgeError(f"no HTTP answer within {self.timeout:g} s from {where}") from None
        except (http.client.HTTPException, OSError) as exc:
            raise BridgeError(f"HTTP call {where} failed: {type(exc).__name__}: {exc}") from None
        if len(body) > MAX_BODY_BYTES:
            raise BridgeError(f"answer from {where} is larger than {MAX_BODY_BYTES} bytes")
        try:
            return json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise BridgeError(f"answer from {where} is not UTF-8 JSON: {body[:80]!r}") from None


def _as_id(value: object, path: str) -> str:
    """Ids are strings; integer ids are written in decimal, which is how a corpus would spell them."""
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise BridgeError(f"answer path {path!r}: id {json.dumps(value)} is not a string or an integer")


def _error_body(error: urllib.error.HTTPError) -> str:
    try:
        text = error.read(ERROR_BODY_CHARS * 4).decode("utf-8", errors="replace")
    except OSError:
        text = ""
    text = " ".join(text.split())
    return repr(text[:ERROR_BODY_CHARS] + ("..." if len(text) > ERROR_BODY_CHARS else "")) if text else "(empty body)"


def check_url(url: str) -> Addresses:
    """The loopback addresses to pin for an http:// URL whose host resolves to loopback only.

    Raises UrlError (scheme, host, port) or NotLoopback (any address outside loopback).
    """
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != "http":
        raise UrlError(f"--url {url!r}: only http:// URLs are supported")
    if not parts.hostname:
        raise UrlError(f"--url {url!r}: no host")
    if KIND_PLACEHOLDER in parts.netloc:
        raise UrlError(f"--url {url!r}: {KIND_PLACEHOLDER} may appear in the path or query, not the host")
    try:
        port = parts.port or 80
    except ValueError:
        raise UrlError(f"--url {url!r}: the port is not a number from 0 to 65535") from None
    return loopback_addresses(parts.hostname, port)


def _header(text: str) -> tuple[str, str]:
    name, sep, value = text.partition(":")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"expected 'Name: value', got {text!r}")
    return name.strip(), value.strip()


def _json_object(text: str) -> dict:
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object, got {text!r}")
    return value


def _seconds(text: str) -> float:
    value = float(text)
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=f"python -m {__package__}.http", description=__doc__.splitlines()[0].split(": ", 1)[1],
        epilog=f"example: python -m {__package__}.http --url http://127.0.0.1:8080/search --query-field q "
               "--k-field limit --kind-field index --ids-path results.*.id --scores-path results.*.score")
    parser.add_argument("--url", required=True,
                        help=f"the endpoint, http:// on a loopback host; {KIND_PLACEHOLDER} in the path is "
                             "replaced by the request's kind")
    parser.add_argument("--method", choices=("POST", "GET"), default="POST",
                        help="POST a JSON body (default) or GET with query parameters")
    request = parser.add_argument_group("request fields ('' leaves one out)")
    request.add_argument("--query-field", default="query", help="field carrying the query text (default: query)")
    request.add_argument("--k-field", default="k", help="field carrying k (default: k)")
    request.add_argument("--kind-field", default="kind", help="field carrying the kind (default: kind)")
    request.add_argument("--extra", type=_json_object, default={}, metavar="JSON",
                         help="constant fields sent with every call, as a JSON object")
    request.add_argument("--header", type=_header, action="append", default=[], metavar="'NAME: VALUE'",
                         help="an HTTP header sent with every call (repeatable)")
    answer = parser.add_argument_group("answer paths (dotted; * for every item of a list)")
    answer.add_argument("--ids-path", default="ids", help="where the ranked ids are (default: ids)")
    answer.add_argument("--scores-path", default=None, help="where their scores are (default: none)")
    parser.add_argument("--timeout", type=_seconds, default=DEFAULT_TIMEOUT_SECONDS, metavar="S",
                        help=f"seconds allowed per HTTP call (default: {DEFAULT_TIMEOUT_SECONDS:g}); keep it "
                             "below the harness's --timeout so a slow call becomes an error reply")
    parser.add_argument("--wait-for", type=parse_wait_for, default=None, metavar="SECONDS|URL",
                        help=f"before the banner, wait until the --url's server answers (at most SECONDS, "
                             f"{MAX_WAIT_SECONDS:g} at most) or until a GET of URL answers 2xx (at most "
                             f"{URL_WAIT_SECONDS:g} s); exit 3 if it never does (adapters/wait.py)")
    parser.add_argument("--name", default=NAME, help="backend name for the ready banner (default: http)")
    parser.add_argument("--version", dest="backend_version", default=VERSION,
                        help="backend version for the ready banner")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Check the URL (exit 2 unless loopback), print the banner, answer requests until EOF."""
    from .startup import run_adapter

    args = build_parser().parse_args(argv)
    return run_adapter(NAME, lambda: prepare(args))


def prepare(args: argparse.Namespace):
    """Check the options and the URL; returns (search, banner). Raises AdapterStartupError."""
    if not args.query_field:
        raise AdapterStartupError("--query-field cannot be empty")
    bridge = Bridge(args, check_url(args.url))  # resolved once, here; every call goes to these addresses
    if args.wait_for is not None:
        # a health URL elsewhere on this machine gets its own pinned loopback addresses
        opener = bridge.opener if args.wait_for.url is None else build_opener(check_url(args.wait_for.url))
        wait_for_service(args.wait_for, args.url, opener)
    banner = {"name": args.name, "version": args.backend_version,
              "index": {"url": args.url, "method": args.method}, "bridge": f"adapters.http {VERSION}"}
    return bridge.search, banner


if __name__ == "__main__":
    sys.exit(main())
