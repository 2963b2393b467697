"""Graded contracts on memory-hard: which changes of BM25's settings pass, which changes fail, by the real gate.

    python -m benchmarks.graded_contracts              # memory-hard, 9 BM25 settings: 72 ordered pairs
    python -m benchmarks.graded_contracts --set memory-hard

BM25 (the adapter's own index, adapters/bm25_index.py) ranks every query of the set in this
process under 9 settings: its defaults (k1 0.9, b 0.4), k1 0.6, 1.2, 1.5, b 0.3, 0.75, the
plural stemmer, stop words, and stemmer with stop words. Each of the 72 ordered pairs is gated
by `harness.gating.gates.check` (the function every run decides through), the first setting as
the baseline: once under the set's graded rule (exact McNemar on the discordant contracts,
alpha 0.05) and once under the strict rule with `--known-contract-failures` (every new break
fails). Targets: every pair that improves recall@10 passes the graded rule; a constructed run
breaking 10 more contracts than it fixes fails (the defaults' run with 10 further contracts
broken, and, for each number of fixes c, 10 + c broken against c fixed: the largest c that
still fails is printed). The shipped baselines of memory-hard (baselines/companions/*.json:
BM25, the embedder, the hybrid) are paired too, each against the others, from their recorded
breaks.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SET = "memory-hard"
SETTINGS = {"defaults": {}, "k1 0.6": {"k1": 0.6}, "k1 1.2": {"k1": 1.2}, "k1 1.5": {"k1": 1.5},
            "b 0.3": {"b": 0.3}, "b 0.75": {"b": 0.75}, "stem": {"stem": True}, "stopwords": {"stopwords": True},
            "stem+stopwords": {"stem": True, "stopwords": True}}
MORE_BROKEN = 10
K = 10
RECALL = "recall@10"


def bm25_run(query_set, fields):
    """The SetResult of BM25 with `fields` over every query of `query_set`, as the adapter would answer."""
    from adapters.bm25_index import BM25Index, BM25Settings
    from harness.scoring.evaluate import Answer, evaluate_set

    index = BM25Index.build([doc.id for doc in query_set.documents], [doc.text for doc in query_set.documents],
                            BM25Settings(use_cache=False, **fields))
    answers = {}
    for query in query_set.queries:
        hits = index.search(query.query, K)
        answers[query.qid] = Answer(tuple(doc for doc, _ in hits), tuple(score for _, score in hits), 0.001)
    return evaluate_set(query_set, answers, k=K)


def baseline_entry(result):
    """The run as a baseline records it, read back as the gate reads it."""
    from harness.gating.baseline import Baseline, build_baseline

    provenance = {"started": None, "backend": {"label": "bm25", "argv": ["python", "-m", "adapters.bm25"]}}
    return Baseline.from_document(build_baseline([result], provenance), Path("baseline.json")).sets[result.name]


def contract_gate(result, entry, *, graded: bool):
    from harness.gating.gates import check

    gates = check([result], {result.name: entry}, latency_gated=False, known_contract_failures=not graded,
                  graded_contracts={result.name} if graded else ())
    [gate] = [g for g in gates if g.gate == "contract"]
    return gate


def with_more_broken(result, count: int):
    """`result` with the passing contracts of its first `count` gated queries that have one broken."""
    queries, left = [], count
    for query in result.queries:
        gated = query.outcome not in ("xfail", "xpass")
        if left and gated and query.contracts and all(c.passed for c in query.contracts):
            first, *rest = query.contracts
            query = dataclasses.replace(query, contracts=(dataclasses.replace(first, passed=False), *rest))
            left -= 1
        queries.append(query)
    return dataclasses.replace(result, queries=tuple(queries))


def largest_fixes_still_failing(more: int) -> int:
    """The largest c for which more + c broken against c fixed is significant (exact McNemar, alpha 0.05)."""
    from harness.gating.gates import CONTRACT_ALPHA
    from harness.scoring.stats import mcnemar_exact

    return max(c for c in range(0, 1000) if mcnemar_exact(more + c, c) < CONTRACT_ALPHA)


def shipped_pairs(name: str) -> list[tuple[str, str, int, int, float]]:
    """(baseline, candidate, broken now, fixed now, p) for each ordered pair of the shipped baselines' entries."""
    from harness.gating.baseline import Baseline
    from harness.scoring.stats import mcnemar_exact

    broken = {}
    for path in sorted((ROOT / "baselines" / "companions").glob("*.json")):
        entry = Baseline.read(path).sets.get(name)
        if entry is not None:
            broken[path.stem] = {(qid, key) for qid, row in entry.queries.items()
                                 if row.outcome not in ("xfail", "xpass") for key in row.broken}
    rows = []
    for first, second in itertools.permutations(sorted(broken), 2):
        now, fixed = broken[second] - broken[first], broken[first] - broken[second]
        rows.append((first, second, len(now), len(fixed), mcnemar_exact(len(now), len(fixed))))
    return rows


def main(argv: list[str] | None = None) -> int:
    from harness.errors import HarnessError
    from harness.sets.loader import find_sets, load_set

    parser = argparse.ArgumentParser(prog="python -m benchmarks.graded_contracts", description=__doc__.splitlines()[0])
    parser.add_argument("--set", default=SET, help=f"a set name or folder (default {SET})")
    args = parser.parse_args(argv)
    try:
        [folder] = find_sets([args.set], ROOT / "sets")
        query_set = dataclasses.replace(load_set(folder), contracts="graded")
    except HarnessError as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return exc.exit_code

    runs = {name: bm25_run(query_set, fields) for name, fields in SETTINGS.items()}
    entries = {name: baseline_entry(run) for name, run in runs.items()}
    gated = sum(len(q.contracts) for q in runs["defaults"].queries if q.outcome not in ("xfail", "xpass"))
    print(f"# {query_set.name}: {gated} hard contracts on gated (non-xfail) queries; BM25 under {len(runs)} settings")
    print(f"{'baseline':<16}{'candidate':<16}{'recall pts':>11}{'broken':>8}{'now':>5}{'fixed':>6}{'p':>8}"
          f"{'graded':>8}{'strict':>8}")
    improved = improved_pass = graded_fail = strict_fail = 0
    for first, second in itertools.permutations(runs, 2):
        run, entry = runs[second], entries[first]
        change = (run.aggregates.overall.means[RECALL] - entry.aggregates.overall.means[RECALL]) * 100
        graded = contract_gate(run, entry, graded=True)
        strict = contract_gate(run, entry, graded=False)
        now = len(graded.flipped)
        held = {(q.qid, c.key) for q in run.queries if q.outcome not in ("xfail", "xpass") for c in q.contracts
                if c.passed}
        fixed = sum(1 for qid, row in entry.queries.items() for key in row.broken if (qid, key) in held)
        improved += change > 1e-9
        improved_pass += change > 1e-9 and graded.passed
        graded_fail += not graded.passed
        strict_fail += not strict.passed
        print(f"{first:<16}{second:<16}{change:>+11.2f}{int(graded.current or 0):>8}{now:>5}{fixed:>6}"
              f"{graded.p_value or 1.0:>8.3f}{graded.status:>8}{strict.status:>8}")
    pairs = len(runs) * (len(runs) - 1)
    print(f"improvements of recall@10 passing the graded rule: {improved_pass} of {improved} "
          f"(target: all); graded FAIL {graded_fail} of {pairs} pairs; strict (--known-contract-failures) "
          f"FAIL {strict_fail} of {pairs}")

    constructed = with_more_broken(runs["defaults"], MORE_BROKEN)
    gate = contract_gate(constructed, entries["defaults"], graded=True)
    print(f"constructed: the defaults with {MORE_BROKEN} more contracts broken, none fixed: {gate.status.upper()} "
          f"(target FAIL), p={gate.p_value:.5f}")
    print(f"{MORE_BROKEN} more broken than fixed fails while at most {largest_fixes_still_failing(MORE_BROKEN)} "
          f"are fixed (exact McNemar, alpha 0.05); more discordant contracts than that and it is noise")
    print("# the shipped baselines of the set, each pair (broken now / fixed now against the first):")
    for first, second, now, fixed, p_value in shipped_pairs(query_set.name):
        verdict = "FAIL" if now > fixed and p_value < 0.05 else "PASS"
        print(f"{first:<16}{second:<16}broken now {now:>3}, fixed now {fixed:>3}, p={p_value:.3g}: {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
