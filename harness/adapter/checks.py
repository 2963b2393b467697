"""The conformance suite `check-adapter` runs against a live adapter (the command prints their table).

Each check asks the adapter real requests through the lenient driver (harness.adapter.probe:
each violation is attributed to its check, a dead or desynchronised adapter restarted, so one
failure never hides the others) and reports pass / FAIL / n/a with a one-line detail; the exit
status is 0 when nothing failed, 1 otherwise, 2 on usage errors.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import EXIT_GATE_FAILED, ProtocolError
from harness.adapter.protocol import Request, decode_response
from harness.adapter.probe import Exchange, LiveAdapter, shorten
from harness.adapter.check_inputs import CORPUS_TEXTS, UNICODE_QUERIES, Corpus, long_query
from harness.adapter.windows import DEFAULT_MAX_WINDOW, check_windows
from harness.scoring.evaluate import ranking_change
from harness.text import plural

PROG = "python -m harness check-adapter"
DEFAULT_QUERIES = 2000
DEFAULT_LOG = Path(".retrieval-gate/check-adapter.log")
EXIT_CHECK_FAILED = EXIT_GATE_FAILED  # 1: at least one check failed
PIPELINED_REQUESTS = 8          # requests written at once by the order check
LONG_QUERY_CHARS = 10_000
LARGE_K = 1000
UNKNOWN_KIND = "check-adapter-no-such-kind"
SHOWN_QUERIES = 5               # at most this many queries named in one detail
PASS, FAIL, NOT_JUDGED = "pass", "FAIL", "n/a"

# (name, what it asserts): the table's order, and the only list of check names.
CHECKS = (
    ("banner", "the ready banner and progress lines, if printed, are well-formed"),
    ("answers", "the queries asked get id lists, not error replies"),
    ("order", f"{PIPELINED_REQUESTS} pipelined requests are answered in request order"),
    ("ids", "every answer: a JSON object, ids unique strings, at most k, valid scores"),
    ("known-ids", "every id returned is a document id of <kind>.jsonl in $HARNESS_CORPUS_DIR"),
    ("k-range", f"k=1 and k={LARGE_K} are answered"),
    ("unicode", "accents, CJK, emoji, right-to-left and combining-mark queries are answered"),
    ("empty-query", "an empty query is answered (an empty list is fine)"),
    ("long-query", f"a {LONG_QUERY_CHARS:,}-character query is answered"),
    ("unknown-kind", "an unknown kind gets an error reply and the adapter lives on"),
    ("endurance", "N queries in a row are answered; resident memory growth reported"),
    ("timeout", "every answer arrives within the timeout"),
    ("determinism", "the same queries asked twice get the same ranking"),
    ("passages", "windows, when answers show them, lie inside their documents and within the window limit"),
)

# -- the checks -------------------------------------------------------------------------------

@dataclass(frozen=True)
class CheckResult:
    name: str
    result: str
    detail: str


@dataclass
class Suite:
    """What the checks share: the adapter, the kind asked and the answers kept across checks."""

    adapter: LiveAdapter
    kind: str
    corpus: Corpus
    queries: int
    max_rss_growth_mib: float | None
    first_pass: list[Exchange] = field(default_factory=list)   # determinism, also the order reference

    def request(self, qid: str, query: str, k: int = 10, kind: str | None = None) -> Request:
        return Request(kind=kind or self.kind, query=query, k=k, qid=qid)


def check_answers(suite: Suite) -> tuple[str, str]:
    """The queries of the first pass (the set's, or the checker's) must get id lists: an error reply fails a run."""
    answered = [e for e in suite.first_pass if e.line is not None]
    refused = [e for e in answered if e.reply().get("error") is not None]
    if not answered:
        return NOT_JUDGED, "no query was answered"
    if refused:
        named = "; ".join(f"{e.request.query!r}: {shorten(str(e.reply()['error']))}" for e in refused[:2])
        return (FAIL, f"{len(refused)} of {len(answered)} queries got an error reply "
                      f"(a run stops at the first, exit 3): {named}")
    return PASS, f"{plural(len(answered), 'query', 'queries')} answered with id lists"


def check_order(suite: Suite) -> tuple[str, str]:
    """Pipeline requests whose one-at-a-time answers are known; an answer matching another request's is out of order."""
    reference = suite.first_pass[:PIPELINED_REQUESTS]
    if any(e.outcome() is not None for e in reference):
        return NOT_JUDGED, "the one-at-a-time answers are not all id lists (see answers)"
    piped = suite.adapter.ask([suite.request(f"order-{n}", e.request.query) for n, e in enumerate(reference, 1)])
    failed = [e for e in piped if e.failure is not None]
    if failed:
        return FAIL, f"query {failed[0].label}: {failed[0].failure}"
    expected = [e.ranking() for e in reference]
    got = [e.ranking() for e in piped]
    if len(set(k for k in expected if k is not None)) < 2:
        return NOT_JUDGED, "answers to different queries are alike; order not observable"
    swapped = [f"answer {n} matches request {expected.index(key) + 1}"
               for n, key in enumerate(got, 1) if key != expected[n - 1] and key in expected]
    if swapped:
        return FAIL, "answers out of request order: " + "; ".join(swapped[:SHOWN_QUERIES])
    unmatched = sum(key != want for key, want in zip(got, expected))
    if unmatched:
        return (NOT_JUDGED, f"{unmatched} of {len(got)} pipelined answers differ from the "
                            "one-at-a-time answers to any request (see determinism)")
    return PASS, f"{len(got)} pipelined requests answered in order"


def check_k_range(suite: Suite) -> tuple[str, str]:
    notes, problems = [], []
    for k in (1, LARGE_K):
        exchange = suite.adapter.ask_one(suite.request(f"k-range-k{k}", suite.corpus.queries[0], k=k))
        problem = exchange.outcome()
        if problem is None:
            count = len(exchange.reply()["ids"])
            if count > k:
                problem = f"{count} ids for k={k}"
            else:
                notes.append(f"k={k}: {count} id{'s' if count != 1 else ''}")
        if problem:
            problems.append(f"k={k}: {problem}")
    if problems:
        return FAIL, _join_problems(problems, [f"k={k}" for k in (1, LARGE_K)])
    return PASS, "; ".join(notes)


def check_queries(suite: Suite, name: str, cases: list[tuple[str, str]]) -> tuple[str, str]:
    """Each (label, query) must get a usable answer; a crash restarts the adapter for the next one."""
    problems = []
    for label, query in cases:
        exchange = suite.adapter.ask_one(suite.request(f"{name}-{label}", query))
        problem = exchange.outcome()
        if problem:
            problems.append(f"{label}: {problem}")
    if problems:
        return FAIL, _join_problems(problems, [label for label, _ in cases])
    return PASS, ", ".join(label for label, _ in cases) + " answered"


def check_unknown_kind(suite: Suite) -> tuple[str, str]:
    exchange = suite.adapter.ask_one(suite.request("unknown-kind", suite.corpus.queries[0], kind=UNKNOWN_KIND))
    if exchange.failure is not None:
        return FAIL, f"kind {UNKNOWN_KIND!r}: {exchange.failure}; expected an error reply"
    reply = exchange.reply()
    if reply.get("error") is None:
        count = len(reply["ids"]) if isinstance(reply.get("ids"), list) else 0
        return FAIL, f"kind {UNKNOWN_KIND!r} answered without an 'error' ({count} ids); an unknown kind must be refused"
    after = suite.adapter.ask_one(suite.request("unknown-kind-after", suite.corpus.queries[-1]))
    problem = after.outcome()
    if problem:
        return FAIL, f"error reply given, but the next query failed: {problem}"
    return PASS, f"error reply: {shorten(str(reply['error']))}"


def check_endurance(suite: Suite) -> tuple[str, str]:
    """N queries one after another; resident memory measured after the first and after the last."""
    words = sorted({w.strip(".,;").lower() for text in CORPUS_TEXTS[:12] for w in text.split() if len(w) > 3})
    queries = [f"{words[n % len(words)]} {words[(n * 7 + 3) % len(words)]} {n}" for n in range(suite.queries)]
    start_kib = end_kib = None
    for number, query in enumerate(queries, 1):
        exchange = suite.adapter.ask_one(suite.request(f"endurance-{number}", query))
        problem = exchange.outcome()
        if problem:
            return FAIL, f"query {number} of {suite.queries} ({query!r}): {problem}"
        if number == 1:
            start_kib = suite.adapter.rss_kib()
    end_kib = suite.adapter.rss_kib()
    answered = f"{plural(suite.queries, 'query', 'queries')} answered"
    if start_kib is None or end_kib is None:
        return PASS, f"{answered}; memory not measured (no /proc)"
    growth_mib = (end_kib - start_kib) / 1024
    memory = (f"RSS {start_kib / 1024:.1f} MiB -> {end_kib / 1024:.1f} MiB ({growth_mib:+.1f} MiB, "
              "adapter process group)")
    if suite.max_rss_growth_mib is not None and growth_mib > suite.max_rss_growth_mib:
        return FAIL, f"{answered}; {memory}, more than --max-rss-growth {suite.max_rss_growth_mib:g} MiB"
    return PASS, f"{answered}; {memory}"


def check_determinism(suite: Suite) -> tuple[str, str]:
    second = [suite.adapter.ask_one(suite.request(f"determinism-2-{n}", e.request.query))
              for n, e in enumerate(suite.first_pass, 1)]
    pairs = [(a, b) for a, b in zip(suite.first_pass, second) if a.outcome() is None and b.outcome() is None]
    if not pairs:
        return NOT_JUDGED, "no query was answered with ids twice"
    changes = [(a.request.query, _change(a, b)) for a, b in pairs]
    changed = [query for query, change in changes if change == "ranking"]
    tied = [query for query, change in changes if change == "tied"]
    tied_note = (f"; {len(tied)} came back with tied documents (equal scores) in another order, which the "
                 f"scores allow: {_named(tied)}" if tied else "")
    if changed:
        return (FAIL, f"{len(changed)} of {len(pairs)} queries changed ranking when "
                      f"asked again: {_named(changed)}{tied_note}")
    return PASS, f"{plural(len(pairs), 'query', 'queries')} asked twice, same rankings{tied_note}"


def _change(first: Exchange, again: Exchange) -> str | None:
    """None, "tied" (only equally scored ids moved) or "ranking", as `--repeats` judges it."""
    if first.ranking() == again.ranking():
        return None
    one, two = first.reply(), again.reply()
    if one.get("error") is not None or two.get("error") is not None:
        return "ranking"
    scores = one.get("scores")
    valid = isinstance(scores, list) and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in scores)
    return ranking_change(one["ids"], scores if valid else None, two["ids"])


def _named(queries: list[str]) -> str:
    more = f" and {len(queries) - SHOWN_QUERIES} more" if len(queries) > SHOWN_QUERIES else ""
    return ", ".join(repr(q) for q in queries[:SHOWN_QUERIES]) + more


def check_ids(suite: Suite) -> tuple[str, str]:
    """Protocol rules on every JSON answer seen by any check; passes only on answers that carry ids."""
    answered = [(e, e.line) for e in suite.adapter.exchanges if e.line is not None]
    problems = []
    with_ids = 0
    for exchange, line in answered:
        try:
            response = decode_response(line, qid=exchange.label, k=exchange.request.k)
        except ProtocolError as exc:
            problems.append(str(exc))
            continue
        with_ids += response.error is None
    if problems:
        return FAIL, f"{len(problems)} of {len(answered)} answers break the protocol; " + "; ".join(problems[:2])
    if not with_ids:
        return NOT_JUDGED, "no answer with ids to check" + (" (error replies only; see answers)" if answered else "")
    return PASS, f"{with_ids} answers well-formed"


def check_known_ids(suite: Suite) -> tuple[str, str]:
    """Ids returned for the kind must be the corpus's own spelling, or the harness scores them as misses."""
    if suite.corpus.ids is None:
        return NOT_JUDGED, suite.corpus.not_judged_why
    replies = [e.reply() for e in suite.adapter.exchanges if e.line is not None and e.request.kind == suite.kind]
    returned = [doc_id for reply in replies if reply.get("error") is None and isinstance(reply.get("ids"), list)
                for doc_id in reply["ids"] if isinstance(doc_id, str)]
    unknown = sorted({doc_id for doc_id in returned if doc_id not in suite.corpus.ids})
    if not returned:
        return NOT_JUDGED, "no id was returned"
    if unknown:
        named = ", ".join(repr(doc_id) for doc_id in unknown[:SHOWN_QUERIES])
        return (FAIL, f"{len(unknown)} distinct ids are not in {suite.kind}.jsonl ({named}); "
                      "return the corpus's ids exactly (docs/adapters.md)")
    return PASS, f"{len(set(returned))} distinct ids returned, all in {suite.kind}.jsonl"


def check_passages(suite: Suite) -> tuple[str, str]:
    """`passages` in answers: bounds against the corpus and DEFAULT_MAX_WINDOW (docs/adapters.md, "Passages")."""
    shown = 0
    problems: list[str] = []
    for exchange in suite.adapter.exchanges:
        if exchange.line is None or exchange.request.kind != suite.kind:
            continue
        try:
            response = decode_response(exchange.line, qid=exchange.label, k=exchange.request.k)
        except ProtocolError:
            continue  # the ids check reports it
        if response.passages is None:
            continue
        shown += 1
        try:
            check_windows(response.ids, response.passages, suite.corpus.lengths or {}, DEFAULT_MAX_WINDOW,
                          exchange.label)
        except ProtocolError as exc:
            problems.append(str(exc))
    if not shown:
        return PASS, "no answer showed windows (optional: hits are whole documents)"
    if problems:
        return FAIL, f"{len(problems)} of {shown} answers with windows break the rules; " + "; ".join(problems[:2])
    bounds = "bounds and length" if suite.corpus.lengths else "length only (no document texts to bound them)"
    return PASS, f"{shown} answers with windows, {bounds} checked (limit {DEFAULT_MAX_WINDOW})"


def check_timeout(suite: Suite, timeout: float) -> tuple[str, str]:
    late = [e for e in suite.adapter.exchanges if e.timed_out]
    # An error reply is quick and says nothing about how fast the backend searches.
    timed = [e for e in suite.adapter.exchanges if e.line is not None and e.timed and e.outcome() is None]
    if late:
        named = "; ".join(f"query {e.label}: {e.failure}" for e in late[:SHOWN_QUERIES])
        return FAIL, f"{len(late)} request(s) got no answer in time: {named}"
    if not timed:
        return NOT_JUDGED, "no answer with ids was timed"
    slowest = max(timed, key=lambda e: e.seconds)
    return (PASS, f"slowest of {len(timed)} answers {slowest.seconds * 1000:.1f} ms "
                  f"(query {slowest.label}), limit {timeout:g} s")


def check_banner(suite: Suite) -> tuple[str, str]:
    outcome = suite.adapter.banner_outcome
    if outcome is None:
        return NOT_JUDGED, "the adapter never printed a first line"
    if outcome.problem:
        return FAIL, outcome.problem
    if outcome.banner is None:
        return (PASS, "no banner (optional; the harness then counts start-up in the first "
                      f"query); first answer after {outcome.startup_seconds:.2f} s")
    who = " ".join(str(outcome.banner[key]) for key in ("name", "version") if key in outcome.banner)
    return PASS, f"ready after {outcome.startup_seconds:.2f} s: {who or 'no name'}"


def run_suite(suite: Suite, timeout: float) -> list[CheckResult]:
    """Run every check in an order that lets each build on the last; results in table order."""
    suite.first_pass = []
    for number, query in enumerate(suite.corpus.queries, 1):
        suite.first_pass.append(suite.adapter.ask_one(suite.request(f"determinism-1-{number}", query)))
        if suite.adapter.start_failure is not None:
            # It never started: every other check would only say so again, after its own wait.
            not_run = "not run: the adapter did not start (see banner)"
            return [CheckResult("banner", FAIL, suite.adapter.start_failure),
                    *(CheckResult(name, NOT_JUDGED, not_run) for name, _ in CHECKS[1:])]
    results = {  # in the order they run
        "answers": check_answers(suite),
        "order": check_order(suite),
        "k-range": check_k_range(suite),
        "unicode": check_queries(suite, "unicode", list(UNICODE_QUERIES)),
        "empty-query": check_queries(suite, "empty-query", [("empty", "")]),
        "long-query": check_queries(suite, "long-query", [("long", long_query(LONG_QUERY_CHARS))]),
        "unknown-kind": check_unknown_kind(suite),
        "endurance": check_endurance(suite),
        "determinism": check_determinism(suite),
        "ids": check_ids(suite),
        "known-ids": check_known_ids(suite),
        "passages": check_passages(suite),
        "timeout": check_timeout(suite, timeout),
        "banner": check_banner(suite),
    }
    return [CheckResult(name, *results[name]) for name, _ in CHECKS]


def _join_problems(problems: list[str], labels: list[str]) -> str:
    """'a: why; b: why', or 'all N: why' when every case failed the same way."""
    reasons = {problem.split(": ", 1)[1] for problem in problems}
    if len(problems) == len(labels) > 1 and len(reasons) == 1:
        return f"all {len(labels)} ({', '.join(labels)}): {reasons.pop()}"
    return "; ".join(problems)
