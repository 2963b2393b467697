"""`python -m benchmarks.calibrate_ann`: does a calibrated baseline make the gate honest for a non-deterministic backend?

The backend is the ANN reference adapter's index (adapters/ann.py `HnswIndex`: HNSW over the embedder's vectors)
with a small graph and low effort (`--m 4 --ef-construction 16 --ef-search 10` by default), over the memory-hard set,
where another seed gives other rankings. The corpus and the queries are embedded once, as the adapter embeds them
(`adapters.onnx_embed`); each "run" builds the graph with its own seed, answers every query, writes the rankings as a
TREC run file and has the harness evaluate and gate it (`harness.api.run_gate` with the run file, as
`python -m harness --run-file` does: the quality gates alone, latency is not this benchmark's subject).

1. A baseline from one run (seed 1000), then `calibrate`'s computation over `--calibration-runs` runs (seeds 1..5)
   written into it (`calibrate_runs`, `write_calibration`: what `python -m harness calibrate` does).
2. A/A: `--runs` runs with a fresh seed each, gated against the calibrated baseline; target: at most 2 of 40 fail.
   The same rankings gated against the uncalibrated baseline are counted beside it.
3. A drop of 1.5x the calibrated detectable effect (the overall scope's calibrated limit: the smallest loss the
   calibrated gate fails on): a degraded variant whose queries in a fixed subset answer nothing, the subset
   chosen so the expected overall recall@10 loss is 1.5x that limit; `--runs` runs with fresh seeds; target:
   caught (a quality gate fails) in at least 32 of 40.

A/A runs count as failing when any gate fails, decided with --known-contract-failures (contracts the baseline's run
broke are known, as for any embedder); the quality and contract gates' shares are printed beside. Another seed breaks
other queries' contracts: the calibration records how many break per run, and the contract gate allows for it.
A drop run counts as caught when a quality gate fails (the drop is a quality drop).

Prints each count beside its target and the command that made it. `--quick`: 10 runs each, 3 calibration runs.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.arguments import at_least
from harness.gating.gates import gate_name

REPO = Path(__file__).resolve().parent.parent
SET = "memory-hard"
TARGET_FALSE_ALARMS, TARGET_CAUGHT, TARGET_RUNS = 2, 32, 40
EFFECT_MULTIPLE = 1.5


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.calibrate_ann", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=at_least(1), default=TARGET_RUNS, help="A/A runs and drop runs (default 40)")
    parser.add_argument("--calibration-runs", type=at_least(2), default=5, help="runs calibrated over (default 5)")
    parser.add_argument("--alpha", type=float, default=0.01, help="calibrate's --alpha (default 0.01)")
    parser.add_argument("--m", type=at_least(2), default=4)
    parser.add_argument("--ef-construction", type=at_least(1), default=16)
    parser.add_argument("--ef-search", type=at_least(1), default=10)
    parser.add_argument("--quick", action="store_true", help="10 runs each, 3 calibration runs")
    args = parser.parse_args(argv)
    if args.quick:
        args.runs, args.calibration_runs = 10, 3
    with tempfile.TemporaryDirectory(prefix="calibrate-ann-") as folder:
        return Bench(args, Path(folder)).run(argv if argv is not None else sys.argv[1:])


class Bench:
    def __init__(self, args: argparse.Namespace, folder: Path) -> None:
        import numpy as np

        from adapters import ann, onnx_embed
        from harness import api
        from harness.layout import resolve
        from harness.sets.materialise import materialise_corpora

        self.args, self.folder = args, folder
        self.sets_dir = REPO / "sets"
        self.baseline = folder / "baseline.json"
        self.plain = folder / "plain.json"
        layout = resolve(sets_dir=self.sets_dir, baseline=None)
        self.inputs = api.load_inputs([SET], layout=layout, offline=True, k=None, gated=False)
        self.query_set = self.inputs.query_sets[0]
        started = time.monotonic()
        paths = materialise_corpora(self.inputs.query_sets, folder / "corpus")
        embedder, _ = onnx_embed.build_embedder(onnx_embed_args(onnx_embed))
        exact, _ = onnx_embed.build_indexes(embedder, paths, use_cache=True)
        self.corpus = exact[self.query_set.kind]
        self.vectors = {q.qid: embedder.embed_query(q.query) for q in self.query_set.queries}
        self.k = self.query_set.k
        self.np, self.ann, self.api = np, ann, api
        print(f"embedded {len(self.corpus.ids)} documents and {len(self.vectors)} queries of {SET} in "
              f"{time.monotonic() - started:.1f} s", flush=True)

    def rankings(self, seed: int, degraded: frozenset[str] = frozenset()) -> dict[str, list[tuple[str, float]]]:
        """Every query's answer from the graph built with `seed`; a degraded query answers nothing."""
        index = self.ann.HnswIndex(self.corpus.ids, self.corpus.matrix, m=self.args.m,
                                   ef_construction=self.args.ef_construction, ef_search=self.args.ef_search, seed=seed)
        answers = {}
        for qid, vector in self.vectors.items():
            answers[qid] = [] if qid in degraded else index.search(vector, self.k)
        return answers

    def measure(self, seed: int, degraded: frozenset[str] = frozenset()):
        """The harness's report of one run (its rankings read from a TREC run file), not yet gated."""
        run_file = self.folder / "run.txt"
        with run_file.open("w", encoding="utf-8") as out:
            for qid, hits in self.rankings(seed, degraded).items():
                for rank, (doc_id, score) in enumerate(hits, 1):
                    out.write(f"{qid} Q0 {doc_id} {rank} {score:.6f} ann-{seed}\n")
        options = self.api.RunOptions(log_path=self.folder / "run.log")
        return self.api.run_gate(self.inputs, run_file=run_file, options=options)

    def gated(self, report, baseline: Path) -> tuple[bool, bool]:
        """(a quality gate fails, another gate fails) against `baseline`, decided by the one gating function."""
        from harness.layout import resolve

        inputs = self.api.load_inputs([SET], layout=resolve(sets_dir=self.sets_dir, baseline=baseline), offline=True,
                                      k=None)
        decided = self.api.decided_report(report.sets, inputs, report.provenance, None, k=None,
                                          known_contract_failures=True)
        failed = {gate.gate for gate in decided.gates if gate.status == "fail"}
        quality = {gate_name(metric) for metric in inputs.policy.metrics}
        return bool(failed & quality), bool(failed - quality)

    def run(self, argv: list[str]) -> int:
        from harness.gating.baseline import Baseline, build_baseline, write_baseline, write_calibration
        from harness.gating.calibration import calibrate_runs
        from harness.gating.policy import GatePolicy

        started = time.monotonic()
        first = self.measure(1000)
        document = build_baseline(list(first.sets), first.provenance.to_dict())
        write_baseline(self.plain, document, merge=False)
        write_baseline(self.baseline, document, merge=False)
        metrics = GatePolicy().metrics
        runs = [self.measure(seed).sets[0].numbers() for seed in range(1, self.args.calibration_runs + 1)]
        write_calibration(self.baseline, {SET: calibrate_runs(runs, metrics, alpha=self.args.alpha,
                                                              rebuild="seed")})
        calibration = Baseline.read(self.baseline).calibration[SET]
        overall = calibration.noise(metrics[0])
        limit = GatePolicy().drop_limit + calibration.allowance(overall)
        print(f"calibrated over {calibration.runs} runs: {calibration.summary()}")
        for scope, by_metric in calibration.quality.items():
            noise = by_metric[metrics[0]]
            print(f"  {scope:28s} sd {noise.sd * 100:5.2f} points, limit 2.00 + {calibration.allowance(noise) * 100:.2f}")

        calibrated_fails = plain_fails = other_fails = plain_other_fails = any_fails = plain_any_fails = 0
        for index in range(self.args.runs):
            report = self.measure(2000 + index)
            quality, other = self.gated(report, self.baseline)
            calibrated_fails, other_fails, any_fails = (calibrated_fails + quality, other_fails + other,
                                                        any_fails + (quality or other))
            quality, other = self.gated(report, self.plain)
            plain_fails, plain_other_fails, plain_any_fails = (plain_fails + quality, plain_other_fails + other,
                                                               plain_any_fails + (quality or other))
        degraded, expected = degraded_queries(runs, EFFECT_MULTIPLE * limit, metrics[0])
        caught, drops = 0, []
        base_mean = first.sets[0].aggregates.overall.means[metrics[0]]
        for index in range(self.args.runs):
            report = self.measure(3000 + index, degraded)
            drops.append(base_mean - report.sets[0].aggregates.overall.means[metrics[0]])
            caught += self.gated(report, self.baseline)[0]
        target_aa = round(TARGET_FALSE_ALARMS * self.args.runs / TARGET_RUNS, 1)
        target_caught = round(TARGET_CAUGHT * self.args.runs / TARGET_RUNS, 1)
        print(f"\n{SET}, HNSW m={self.args.m} ef_construction={self.args.ef_construction} "
              f"ef_search={self.args.ef_search}, alpha {self.args.alpha:g} per gated scope")
        print(f"A/A runs with a fresh seed failing: calibrated {any_fails} of {self.args.runs} "
              f"(target at most {target_aa:g}); uncalibrated {plain_any_fails} of {self.args.runs}")
        print(f"  a quality gate: calibrated {calibrated_fails}, uncalibrated {plain_fails}; the contract gate "
              f"(--known-contract-failures): calibrated {other_fails}, uncalibrated {plain_other_fails}")
        print(f"detectable effect (overall calibrated limit) {limit * 100:.2f} points; degraded variant: "
              f"{len(degraded)} queries answer nothing, expected drop {expected * 100:.2f} points "
              f"({EFFECT_MULTIPLE:g}x: {EFFECT_MULTIPLE * limit * 100:.2f}); measured drop mean "
              f"{sum(drops) / len(drops) * 100:.2f}, min {min(drops) * 100:.2f} points")
        print(f"drop caught by a quality gate: {caught} of {self.args.runs} (target at least {target_caught:g})")
        met = any_fails <= target_aa and caught >= target_caught
        print(f"{'met' if met else 'NOT met'}; {time.monotonic() - started:.0f} s; command: "
              f"python -m benchmarks.calibrate_ann {' '.join(argv)}".rstrip())
        return 0

def degraded_queries(runs, target: float, metric: str) -> tuple[frozenset[str], float]:
    """Scored queries, in a fixed pseudo-random order (sha256 of the id), taken until their mean value over the
    calibration runs, summed over the scored count, reaches `target`: the expected loss of losing them."""
    scored = [row for row in runs[0].queries.values() if row.scored]
    order = sorted(scored, key=lambda row: hashlib.sha256(row.qid.encode()).hexdigest())
    chosen, expected = [], 0.0
    for row in order:
        if expected >= target:
            break
        mean = sum(run.queries[row.qid].metrics.get(metric, 0.0) for run in runs) / len(runs)
        if mean > 0:
            chosen.append(row.qid)
            expected += mean / len(scored)
    return frozenset(chosen), expected


def onnx_embed_args(onnx_embed) -> argparse.Namespace:
    """The adapter's default model options, as `python -m adapters.ann` parses them."""
    parser = argparse.ArgumentParser()
    onnx_embed.add_model_arguments(parser)
    return parser.parse_args(["--offline"])


if __name__ == "__main__":
    sys.exit(main())
