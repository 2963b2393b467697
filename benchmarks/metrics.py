"""Metric speed: from Python dicts to per-query values, ours against pytrec_eval, ir_measures and ranx in one run.

10,000 queries x 100 retrieved documents x 5 measures (nDCG@10, AP@100, R@100, RR, P@10),
judgments graded 0..3, on two data sets: "distinct" (every score distinct; about half the
judged documents retrieved) and "ties" (two-decimal scores, so most documents share a score
with another, as real engines' rounded scores do; a third of the judged documents not
retrieved). Every tool starts
from the same dicts (qrels {qid: {doc: grade}}, run {qid: {doc: score}}) and ends with a
value per query and measure; building the tool's own structures (pytrec_eval's evaluator,
ranx's Qrels/Run) is timed. Ours is timed twice: from the ranked lists the harness really
holds (the adapter's order), and from the score dicts (`compute_from_scores`: trec_eval's
order, score descending in single precision then docno descending, without sorting each run).

"first" is the first call in this process (imports excluded; numba's JIT compile for ranx
included, unless its on-disk cache already holds it); "warm" is the median of --rounds
later calls, the tools taking turns each round. Ratios are time / pytrec_eval's time on the
same row (below 1.0x = faster than pytrec_eval). Values are cross-checked: ours against
pytrec_eval to 1e-9, the peers' largest difference printed.

    python -m benchmarks.metrics [--queries 10000] [--depth 100] [--rounds 5] [--seed 0] [--data distinct,ties]

Targets: ours within 1.0x of pytrec_eval, warm, on both data sets (docs/performance.md, "Metric
speed, beside pytrec_eval, ir_measures and ranx").
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable

from benchmarks.arguments import at_least, names_from
from harness.scoring.metrics import compute_from_scores, compute_many, parse_metric, trec_eval_order

# (ours, pytrec_eval, ir_measures, ranx) spellings of the five measures.
MEASURES = (("ndcg@10", "ndcg_cut_10", "nDCG@10", "ndcg@10"),
            ("ap@100", "map_cut_100", "AP@100", "map@100"),
            ("recall@100", "recall_100", "R@100", "recall@100"),
            ("rr", "recip_rank", "RR", "mrr"),
            ("precision@10", "P_10", "P@10", "precision@10"))

Values = dict[str, dict[str, float]]  # {qid: {our measure name: value}}


def generate(queries: int, depth: int, seed: int) -> tuple[dict, dict]:
    """(qrels, run) as plain dicts; scores strictly decreasing so every tool reads one order."""
    rng = random.Random(seed)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for number in range(queries):
        qid = f"q{number:05d}"
        docs = [f"doc{rng.randrange(10_000_000):07d}" for _ in range(depth * 2)]
        docs = list(dict.fromkeys(docs))
        retrieved = docs[:depth]
        run[qid] = {doc: float(depth - position) + rng.random() * 0.5 for position, doc in enumerate(retrieved)}
        unretrieved = docs[depth:]
        judged = (rng.sample(retrieved, rng.randint(1, min(15, len(retrieved))))
                  + rng.sample(unretrieved, rng.randint(0, min(15, len(unretrieved)))))
        qrels[qid] = {doc: rng.choice((0, 0, 1, 1, 2, 3)) for doc in judged}
    return qrels, run


def generate_ties(queries: int, depth: int, seed: int) -> tuple[dict, dict]:
    """(qrels, run) with two-decimal scores (ties everywhere) and a third of the judged documents not retrieved."""
    rng = random.Random(seed)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for number in range(queries):
        qid = f"q{number:05d}"
        docs = list(dict.fromkeys(f"doc{rng.randrange(10_000_000):07d}" for _ in range(depth * 2)))
        retrieved, unretrieved = docs[:depth], docs[depth:]
        run[qid] = {doc: round(rng.uniform(0.0, 1.0), 2) for doc in retrieved}
        judged_retrieved = rng.randint(1, min(15, len(retrieved)))  # as many as in `generate`
        judged = (rng.sample(retrieved, judged_retrieved)
                  + rng.sample(unretrieved, min(len(unretrieved), judged_retrieved // 2)))
        qrels[qid] = {doc: rng.choice((0, 0, 1, 1, 2, 3)) for doc in judged}
    return qrels, run


DATA_SETS = {"distinct": generate, "ties": generate_ties}


def ours_from_lists(qrels: dict, ranked: dict) -> Values:
    measures = tuple(parse_metric(ours) for ours, *_ in MEASURES)
    return {qid: compute_many(measures, ranked[qid], qrels.get(qid, {})) for qid in ranked}


def ours_from_scores(qrels: dict, run: dict) -> Values:
    measures = tuple(parse_metric(ours) for ours, *_ in MEASURES)
    return {qid: compute_from_scores(measures, scores, qrels.get(qid, {})) for qid, scores in run.items()}


def pytrec_eval_tool() -> Callable[[dict, dict], Values] | str:
    try:
        import pytrec_eval
    except ImportError as exc:
        return f"not installed ({exc}); pip install pytrec-eval-terrier"
    names = {trec: ours for ours, trec, _, _ in MEASURES}

    def run_pytrec_eval(qrels: dict, run: dict) -> Values:
        evaluated = pytrec_eval.RelevanceEvaluator(qrels, set(names)).evaluate(run)
        return {qid: {names[trec]: value for trec, value in row.items()} for qid, row in evaluated.items()}
    return run_pytrec_eval


def ir_measures_tool() -> Callable[[dict, dict], Values] | str:
    try:
        import ir_measures
    except ImportError as exc:
        return f"not installed ({exc}); pip install ir_measures"
    measures = [ir_measures.parse_measure(ir) for _, _, ir, _ in MEASURES]
    names = {str(measure): ours for measure, (ours, *_) in zip(measures, MEASURES)}

    def run_ir_measures(qrels: dict, run: dict) -> Values:
        values: Values = {}
        for metric in ir_measures.iter_calc(measures, qrels, run):
            values.setdefault(metric.query_id, {})[names[str(metric.measure)]] = metric.value
        return values
    return run_ir_measures


def ranx_tool() -> Callable[[dict, dict], Values] | str:
    try:
        import ranx
    except ImportError as exc:
        return f"not installed ({exc}); pip install ranx"
    names = [ranx_name for *_, ranx_name in MEASURES]

    def run_ranx(qrels: dict, run: dict) -> Values:
        ranx_qrels, ranx_run = ranx.Qrels(qrels), ranx.Run(run)
        ranx.evaluate(ranx_qrels, ranx_run, names, return_mean=False, make_comparable=True)
        # Run.scores holds the per-query values evaluate() computed: {measure: {qid: value}}.
        per_measure = ranx_run.scores
        return {qid: {ours: float(per_measure[ranx_name][qid]) for ours, *_, ranx_name in MEASURES}
                for qid in ranx_run.keys()}
    return run_ranx


def timed(function: Callable[[], Values]) -> tuple[float, Values]:
    start = time.perf_counter()
    values = function()
    return time.perf_counter() - start, values


def largest_difference(a: Values, b: Values) -> float:
    return max(abs(a[qid][name] - b.get(qid, {}).get(name, 0.0)) for qid in a for name in a[qid])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.metrics", description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=at_least(1), default=10_000)
    parser.add_argument("--depth", type=at_least(1), default=100)
    parser.add_argument("--rounds", type=at_least(1), default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data", type=names_from(tuple(DATA_SETS)), default=list(DATA_SETS),
                        help=f"data sets to run, comma-separated (default: {','.join(DATA_SETS)})")
    args = parser.parse_args(argv)
    worst = 0
    for name in args.data:
        worst = max(worst, measure(name, args))
    return worst


def measure(name: str, args: argparse.Namespace) -> int:
    """Time every tool on one data set and print its table; 1 when ours differs from pytrec_eval."""
    qrels, run = DATA_SETS[name](args.queries, args.depth, args.seed)
    # The order trec_eval reads (score descending, ties by docno descending): not timed.
    ranked = {qid: trec_eval_order(scores) for qid, scores in run.items()}

    tools: dict[str, Callable[[], Values] | str] = {
        "ours (ranked lists)": lambda: ours_from_lists(qrels, ranked),
        "ours (score dicts)": lambda: ours_from_scores(qrels, run),
    }
    for label, factory in (("pytrec_eval", pytrec_eval_tool), ("ir_measures", ir_measures_tool), ("ranx", ranx_tool)):
        tool = factory()
        tools[label] = tool if isinstance(tool, str) else (lambda tool=tool: tool(qrels, run))
    runnable = {label: tool for label, tool in tools.items() if not isinstance(tool, str)}

    first: dict[str, float] = {}
    results: dict[str, Values] = {}
    for label, tool in runnable.items():
        first[label], results[label] = timed(tool)
    warm: dict[str, list[float]] = {label: [] for label in runnable}
    for _ in range(args.rounds):
        for label, tool in runnable.items():
            warm[label].append(timed(tool)[0])
    medians = {label: statistics.median(times) for label, times in warm.items()}

    tied = sum(len(scores) - len(set(scores.values())) for scores in run.values()) / max(1, sum(map(len, run.values())))
    print(f"\n{name}: {args.queries} queries x {args.depth} retrieved x {len(MEASURES)} measures "
          f"({', '.join(ours for ours, *_ in MEASURES)}); {tied:.0%} of retrieved documents tied with an "
          f"earlier one; warm = median of {args.rounds} rounds")
    reference = "pytrec_eval" if "pytrec_eval" in runnable else None
    print(f"{'tool':<22}{'first s':>10}{'vs pytrec':>11}{'warm s':>10}{'vs pytrec':>11}{'us/query':>10}"
          f"{'max |diff|':>13}")
    for label, tool in tools.items():
        if isinstance(tool, str):
            print(f"{label:<22}{tool}")
            continue
        ratio_first = f"{first[label] / first[reference]:.2f}x" if reference else "-"
        ratio_warm = f"{medians[label] / medians[reference]:.2f}x" if reference else "-"
        difference = (f"{largest_difference(results[reference], results[label]):.1e}"
                      if reference and label != reference else "-")
        print(f"{label:<22}{first[label]:>10.3f}{ratio_first:>11}{medians[label]:>10.3f}{ratio_warm:>11}"
              f"{medians[label] / args.queries * 1e6:>10.1f}{difference:>13}")
    if reference:
        for label in ("ours (ranked lists)", "ours (score dicts)"):
            difference = largest_difference(results[reference], results[label])
            if difference > 1e-9:
                print(f"MISMATCH: {label} differs from pytrec_eval by {difference:.3e}")
                return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
