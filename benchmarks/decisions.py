"""What a verdict is worth: the gate's error rates per category rule and sample size, on real backend variants.

    python -m benchmarks.decisions            # 9 BM25 settings + 2 degraded copies, 6 draws per size
    python -m benchmarks.decisions --quick    # 5 settings, 4 draws, no degraded copies: under 2 minutes

Every variant answers every query of the design sets (code-agent, memory-hard, dedupe-hard) and
of the held-out sets (code, memory, dedupe, wiki: the shipped originals, never used to choose
the rule) once, through the harness's own API (`harness.gate`, the built-in BM25 adapter with
its flags, baseline None: measured, not gated); a degraded copy is a variant's rankings with the
top hit removed from a seeded share of its queries, written as a TREC run file in a temp folder
and measured through `harness.gate(run_file=...)`. The per-query rows stay in memory.

Then, per set and ordered pair (baseline variant, candidate variant), and per sample size (50,
120 queries: random subsets of the set's scored queries, `--draws` of them, the same subsets for
every pair, seed fixed; and the whole set), the subset's rows of both variants become a
SetResult and SetNumbers (aggregated by harness.scoring.evaluate.aggregate, as a run does) and
the real gating code decides (`harness.gating.gates.check`, latency not gated) under each rule:

- founding: only the set's recall@10 drop beyond 2 points fails (categories.gate false);
- discount: the previous default (categories.rule "discount", discount_queries 1);
- holm: today's default (categories.rule "holm": a category fails only beyond the limit AND
  significant with Holm over the run's category tests).

The verdict is FAIL when a recall gate fails (contracts, counts and latency are left out: they
are the same under every rule). The truth is the change of recall@10 over the whole set between
the two variants: a drop of more than 2 points is a regression, a rise of more than 2 points an
improvement. Printed per rule and size: false alarms (FAIL while the whole set did not drop
more than 2 points), improvements that fail (FAIL while it rose more than 2), misses (PASS or
WARN while it dropped more than 2), with counts and percentages, beside the targets the default
rule is held to: at 120 queries, holm's false alarms at most the founding rule's plus 1 point, its failing
improvements at most 1 %, its misses at most the founding rule's; on whole sets, no same-backend
improvement over 2 points fails.
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmarks.arguments import at_least

ROOT = Path(__file__).resolve().parents[1]
DESIGN_SETS = ("code-agent", "memory-hard", "dedupe-hard")
HELD_OUT_SETS = ("code", "memory", "dedupe", "wiki")
# BM25 settings (`python -m adapters.bm25 --help`; defaults k1 0.9, b 0.4): one or two settings moved.
SETTINGS = {"default": [], "k1 0.6": ["--k1", "0.6"], "k1 1.5": ["--k1", "1.5"], "b 0.2": ["--b", "0.2"],
            "b 0.75": ["--b", "0.75"], "stem": ["--stem"], "stopwords": ["--stopwords"],
            "stem stopwords": ["--stem", "--stopwords"], "k1 1.2 b 0.75": ["--k1", "1.2", "--b", "0.75"]}
QUICK_SETTINGS = ("default", "k1 1.5", "b 0.75", "stem", "stopwords")
# Degraded copies of the default: the top hit removed from this share of queries (seeded).
DEGRADED = {"default, top hit cut on 5 %": 0.05, "default, top hit cut on 15 %": 0.15}
SIZES = (50, 120)
LIMIT = 0.02  # the founding limit: 2 points
SLACK = 1e-9
RULES = ("founding", "discount", "holm")
SEED = 38


@dataclass
class Tally:
    """One rule at one sample size: decided pairs by truth, and the FAILs among them."""

    regressions: int = 0
    missed: int = 0
    improvements: int = 0
    improvements_failed: int = 0
    not_drops: int = 0
    false_alarms: int = 0

    def add(self, truth: float, failed: bool) -> None:
        if truth < -LIMIT - SLACK:
            self.regressions += 1
            self.missed += not failed
            return
        self.not_drops += 1
        self.false_alarms += failed
        if truth > LIMIT + SLACK:
            self.improvements += 1
            self.improvements_failed += failed


def percent(part: int, whole: int) -> float:
    return 100.0 * part / whole if whole else 0.0


def policies() -> dict[str, object]:
    from harness.gating.policy import GatePolicy

    return {"founding": GatePolicy(gate_categories=False), "discount": GatePolicy(category_rule="discount"),
            "holm": GatePolicy(category_rule="holm")}


def measure(sets: Sequence[str], variants: Mapping[str, list[str]]) -> dict[str, dict[str, object]]:
    """variant -> set name -> SetResult, each variant asked once through harness.gate (ungated)."""
    import harness

    results: dict[str, dict[str, object]] = {}
    for name, flags in variants.items():
        report = harness.gate(list(sets), backend=[sys.executable, "-m", "adapters.bm25", *flags], baseline=None,
                              sets_dir=ROOT / "sets")
        results[name] = {result.name: result for result in report.sets}
    return results


def degrade(results: Mapping[str, object], share: float, seed: int, folder: Path, sets: Sequence[str]) -> dict:
    """A copy of a variant's rankings with the top hit removed from `share` of each set's queries, measured
    through a TREC run file (`harness.gate(run_file=...)`)."""
    import harness

    rng = random.Random(seed)
    path = folder / f"degraded-{seed}.run"
    lines = []
    for set_name in sets:
        for query in results[set_name].queries:
            ids = list(query.ids)
            if ids and rng.random() < share:
                ids = ids[1:]
            for rank, doc_id in enumerate(ids, 1):
                lines.append(f"{set_name}:{query.qid} Q0 {doc_id} {rank} {100 - rank} degraded")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    report = harness.gate(list(sets), run_file=path, baseline=None, sets_dir=ROOT / "sets")
    return {result.name: result for result in report.sets}


def subset(result, qids: frozenset[str] | None):
    """The SetResult of `result` over the scored queries in `qids` (None: the whole set), aggregated as a run is."""
    from harness.scoring.evaluate import aggregate

    if qids is None:
        return result
    rows = tuple(q for q in result.queries if q.qid in qids)
    return dataclasses.replace(result, queries=rows, query_count=len(rows), aggregates=aggregate(rows))


def verdict(base, now, policy) -> bool:
    """Whether the real gating code fails `now` against `base` on a recall gate."""
    from harness.gating.gates import check

    gates = check([now], {now.name: base.numbers()}, latency_gated=False, policy=policy)
    return any(not gate.passed for gate in gates if gate.gate == "recall")


def recall(result) -> float:
    return result.aggregates.overall.means["recall@10"]


def decide_set(by_variant: Mapping[str, object], sizes: Sequence[int], draws: int, seed: int,
               tallies: dict[tuple[str, str, str], Tally], family: str, same_backend: Sequence[str]) -> int:
    """Decide every ordered pair of variants of one set at each size; returns the decisions made."""
    rules = policies()
    names = list(by_variant)
    first = by_variant[names[0]]
    scored = [q.qid for q in first.queries if q.scored]
    rng = random.Random(seed)
    samples: list[tuple[str, frozenset[str] | None]] = []
    for size in sizes:
        if size < len(scored):
            samples += [(str(size), frozenset(rng.sample(scored, size))) for _ in range(draws)]
    samples.append(("whole", None))
    decisions = 0
    for size, qids in samples:
        cut = {name: subset(by_variant[name], qids) for name in names}
        for base_name in names:
            for now_name in names:
                if base_name == now_name:
                    continue
                truth = recall(by_variant[now_name]) - recall(by_variant[base_name])
                kind = "settings" if base_name in same_backend and now_name in same_backend else "degraded"
                groups = [kind, "all"] + (["from default"] if kind == "settings" and base_name == "default" else [])
                for rule in RULES:
                    failed = verdict(cut[base_name], cut[now_name], rules[rule])
                    for group in groups:
                        tallies.setdefault((family, group, rule, size), Tally()).add(truth, failed)
                decisions += 1
    return decisions


def table(tallies: Mapping[tuple, Tally], family: str, group: str, sizes: Sequence[str]) -> list[str]:
    lines = [f"{'rule':<9} {'size':>5} {'pairs':>6}  {'false alarms':>17}  {'improvements failing':>21}  "
             f"{'misses':>15}"]
    for rule in RULES:
        for size in sizes:
            tally = tallies.get((family, group, rule, size))
            if tally is None:
                continue
            pairs = tally.not_drops + tally.regressions
            lines.append(
                f"{rule:<9} {size:>5} {pairs:>6}  "
                f"{tally.false_alarms:>5}/{tally.not_drops:<5} {percent(tally.false_alarms, tally.not_drops):5.1f} %  "
                f"{tally.improvements_failed:>5}/{tally.improvements:<5} "
                f"{percent(tally.improvements_failed, tally.improvements):8.1f} %  "
                f"{tally.missed:>4}/{tally.regressions:<4} {percent(tally.missed, tally.regressions):5.1f} %")
    return lines


def targets(tallies: Mapping[tuple, Tally], family: str, group: str, size: str) -> list[str]:
    """The issue's targets for the holm rule against the founding rule, met or not."""
    holm, founding = tallies.get((family, group, "holm", size)), tallies.get((family, group, "founding", size))
    whole = tallies.get((family, group, "holm", "whole"))
    lines = []
    if holm and founding:
        fa_h, fa_f = percent(holm.false_alarms, holm.not_drops), percent(founding.false_alarms, founding.not_drops)
        imp = percent(holm.improvements_failed, holm.improvements)
        mi_h, mi_f = percent(holm.missed, holm.regressions), percent(founding.missed, founding.regressions)
        lines += [
            f"  at {size}: holm false alarms {fa_h:.1f} % <= founding {fa_f:.1f} % + 1: {_met(fa_h <= fa_f + 1 + SLACK)}",
            f"  at {size}: holm improvements failing {imp:.1f} % <= 1 %: {_met(imp <= 1 + SLACK)}",
            f"  at {size}: holm misses {mi_h:.1f} % <= founding {mi_f:.1f} %: {_met(mi_h <= mi_f + SLACK)}"]
    if whole:
        lines.append(f"  whole sets: holm improvements failing {whole.improvements_failed} of {whole.improvements} "
                     f"(target 0): {_met(whole.improvements_failed == 0)}")
    return lines


def _met(ok: bool) -> str:
    return "met" if ok else "NOT MET"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.decisions", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="5 BM25 settings, no degraded copies, 4 draws per size")
    parser.add_argument("--draws", type=at_least(1), default=None, help="random subsets per size (default 6; "
                                                                       "--quick 4)")
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args(argv)
    draws = args.draws or (4 if args.quick else 6)
    chosen = {name: SETTINGS[name] for name in (QUICK_SETTINGS if args.quick else SETTINGS)}
    started = time.monotonic()
    tallies: dict[tuple, Tally] = {}
    command = "python -m benchmarks.decisions" + (" --quick" if args.quick else "") + (
        f" --draws {args.draws}" if args.draws else "") + (f" --seed {args.seed}" if args.seed != SEED else "")
    decisions = 0
    for family, sets, sizes in (("design", DESIGN_SETS, SIZES), ("held-out", HELD_OUT_SETS, SIZES[:1])):
        measured = measure(sets, chosen)
        if not args.quick:
            with tempfile.TemporaryDirectory(prefix="decisions-") as folder:
                for offset, (name, share) in enumerate(DEGRADED.items()):
                    measured[name] = degrade(measured["default"], share, args.seed + offset, Path(folder), sets)
        for position, set_name in enumerate(sets):
            by_variant = {name: results[set_name] for name, results in measured.items()}
            decisions += decide_set(by_variant, sizes, draws, args.seed + position, tallies, family, list(chosen))
    print(f"{command}: {len(chosen)} BM25 settings" + ("" if args.quick else f" + {len(DEGRADED)} degraded copies")
          + f", {draws} draws per size, {decisions} ordered pairs x samples decided under {len(RULES)} rules "
          f"in {time.monotonic() - started:.0f} s")
    for family, sets, sizes in (("design", DESIGN_SETS, ("50", "120", "whole")),
                                ("held-out", HELD_OUT_SETS, ("50", "whole"))):
        for group in ("settings", "from default", "all"):
            if group == "all" and args.quick:
                continue
            what = {"settings": "one BM25 setting changed (every ordered pair of settings)",
                    "from default": "the usual pull request (the default baseline, one setting moved)",
                    "all": "settings and degraded copies"}[group]
            print(f"\n{family} sets ({', '.join(sets)}), {what}; truth: whole-set recall@10 change")
            print("\n".join(table(tallies, family, group, sizes)))
            if group == "settings":
                print("targets:")
                print("\n".join(targets(tallies, family, group, "120" if family == "design" else "50")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
