"""Tune the hybrid's fusion per corpus on the development split; report the held-out split against both parts.

    python -m benchmarks.tune_hybrid                    # the shipped and companion sets; writes nothing
    python -m benchmarks.tune_hybrid --write            # and rewrites adapters/fusion_tuned.json
    python -m benchmarks.tune_hybrid --set my-set --write --table my-fusion.json

Both parts rank every query of every set once, as the adapter serves them (adapters/hybrid.py
`build_parts`: BM25 reading documents whole, the embedder reading every window of a long one,
both by the set's windows in passage mode), in this process; every fusion configuration of
the grid (method x weight x rrf_k x candidate depth, adapters/fusion.py) is then scored from
those lists. Sets sharing a corpus (a kind and the sha256 of its `<kind>.jsonl`: the key the
adapter looks the table up by; code and code-agent) are tuned together.

The rule, on the development split only (`choose`): (1) a configuration may not break a hard
contract on a development query that both parts keep (the memory sets' negative probes:
`max_score` 0.5 rules out z-score fusion there); (2) of those, the highest URisk against the
set's better part on the development split, summed over the corpus's sets: (gains - 2 x losses)
/ queries, each query's recall@10 against that part's (Wang et al. 2012, alpha 1, as `compare`
reports it): a fusion that loses queries the better part finds pays twice; (3) then the highest
mean development recall@10; (4) of those, the simplest (`simplicity`: nearest the better part
alone, rrf, fewer candidates), unless the one with the highest development nDCG@10 ranks the
answers higher by the paired test (`ranks_answers_higher`): where recall@10 ties, where in the top
10 the answers stand is the development evidence left, as ranx's optimize_fusion optimises a
chosen metric, but a higher mean the split cannot tell from noise does not move the choice.
Held-out queries never reach `choose`. The held-out report pairs the chosen fusion with each part
(harness.scoring.stats.paired_test, groups resampled together): "no worse" when the 90% CI's lower
bound is above minus the gate's 2 points, as `compare` says it; beside it, held-out nDCG@10 of
the parts and the hybrid, and the best held-out recall@10 any configuration of the grid reaches:
an upper bound read after the choice, never used to make it. `--growth` adds what a larger
held-out split of the same kind of queries would show (`held_out_growth`).
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import statistics
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPLITS = ("development", "held-out")
WEIGHTS = tuple(round(0.05 * step, 2) for step in range(21))
RRF_KS = (2.0, 5.0, 10.0, 20.0, 60.0)
CANDIDATES = (20, 50, 100)
RISK_ALPHA = 1.0  # URisk: a loss counts 1 + alpha times
MARGIN_POINTS = 2.0  # the gate's drop limit: "no worse" at this margin
GROWTH_SIZES = (60, 120, 240, 480, 960)  # held-out split sizes `--growth` asks about
K = 10


@dataclass(frozen=True, slots=True)
class Ranked:
    """What one ranking source gives a set, query by query: recall@10 and nDCG@10 (None unscored) and its broken
    contracts."""

    recall: tuple[float | None, ...]
    broken: tuple[frozenset[str], ...]
    ndcg: tuple[float | None, ...] = ()


@dataclass
class SetRuns:
    """One set's queries, both parts' rankings and every fused configuration's outcome."""

    name: str
    key: tuple[str, str]  # (kind, corpus sha256): the tuned table's key
    queries: list  # every query of the set, in order (harness records.Query)
    lexical: list[list[tuple[str, float]]]
    semantic: list[list[tuple[str, float]]]
    parts: dict[str, Ranked] = field(default_factory=dict)  # "bm25", "embedder"
    fused: dict[object, Ranked] = field(default_factory=dict)  # FusionSettings -> Ranked


def load_sets(names: list[str]) -> list:
    """The sets to tune on, each with scored queries in both splits; a SetError otherwise (before any model loads)."""
    from harness.errors import SetError
    from harness.sets.loader import find_sets, load_set

    sets = [load_set(folder) for folder in find_sets(names, ROOT / "sets")]
    for query_set in sets:
        found = {query.split for query in query_set.queries if query.scored}
        for split in SPLITS:
            if split not in found:
                raise SetError(f"set {query_set.name!r}: no scored {split} queries; tuning chooses on the development "
                               f"split and reports the held-out one, so give queries \"split\": \"{split}\" "
                               f"(docs/sets.md)")
    return sets


def rank_sets(sets: list, part_args: argparse.Namespace, depth: int) -> list[SetRuns]:
    """Both parts' top `depth` for every query, from the adapter's own parts over the corpora as a run gives them."""
    from adapters import hybrid
    from harness.sets.materialise import materialise_corpora

    # the parts' start-up progress lines are for a harness reading an adapter's stdout: not this report's
    with tempfile.TemporaryDirectory(prefix="tune-hybrid-") as folder, open(os.devnull, "w") as sink, \
            contextlib.redirect_stdout(sink):
        parts = hybrid.build_parts(part_args, materialise_corpora(sets, Path(folder)))
    runs = []
    for query_set in sets:
        kind = query_set.kind
        lexical, semantic = [], []
        for query in query_set.queries:
            lexical_hits, semantic_hits = parts.rankings(kind, query.query, depth)
            lexical.append([hit[:2] for hit in lexical_hits])
            semantic.append([hit[:2] for hit in semantic_hits])
        key = (kind, parts.corpus_hashes[kind])
        runs.append(SetRuns(query_set.name, key, list(query_set.queries), lexical, semantic))
        print(f"{query_set.name}: {len(query_set.queries)} queries ranked", file=sys.stderr)
    return runs


def outcome(queries: Sequence, rankings: Sequence[Sequence[tuple[str, float]]]) -> Ranked:
    """recall@10 and nDCG@10 of each scored query and the hard contracts each non-xfail query breaks, as a run
    scores them."""
    from harness.scoring.evaluate import check_contracts
    from harness.scoring.metrics import compute_many, make_measure

    measures = (make_measure("recall", K), make_measure("ndcg", K))
    recall, ndcg = measures[0].name, measures[1].name
    values, gains, broken = [], [], []
    for query, ranked in zip(queries, rankings):
        top = [doc for doc, _ in ranked[:K]]
        figures = compute_many(measures, top, query.relevant) if query.scored else {}
        values.append(figures.get(recall))
        gains.append(figures.get(ndcg))
        contracts = check_contracts(query, top, [score for _, score in ranked[:K]])
        broken.append(frozenset() if query.xfail else frozenset(c.key for c in contracts if not c.passed))
    return Ranked(tuple(values), tuple(broken), tuple(gains))


def configurations():
    """Every FusionSettings of the grid."""
    from adapters.fusion import FusionSettings

    for candidates, weight in itertools.product(CANDIDATES, WEIGHTS):
        for rrf_k in RRF_KS:
            yield FusionSettings("rrf", weight, rrf_k, candidates)
        for method in ("minmax", "zscore"):
            yield FusionSettings(method, weight, 60.0, candidates)


def score_grid(run: SetRuns) -> None:
    """Fill `run.parts` and `run.fused` (each part's terms normalised once per method and depth, then every weight)."""
    from adapters.fusion import combine, normalised

    run.parts = {"bm25": outcome(run.queries, run.lexical), "embedder": outcome(run.queries, run.semantic)}
    grid = list(configurations())
    for (method, rrf_k, candidates), members in itertools.groupby(
            sorted(grid, key=lambda s: (s.method, s.rrf_k, s.candidates)), key=lambda s: (s.method, s.rrf_k, s.candidates)):
        terms = [(normalised(lex[:candidates], method, rrf_k), normalised(sem[:candidates], method, rrf_k))
                 for lex, sem in zip(run.lexical, run.semantic)]
        for settings in members:
            run.fused[settings] = outcome(run.queries, [combine(lex, sem, settings.weight)[:K] for lex, sem in terms])


def _mean(values) -> float:
    values = [value for value in values if value is not None]
    return statistics.fmean(values) if values else float("nan")


def better_part(run: SetRuns, split: str) -> str:
    """The part with the higher mean recall@10 on `split` (BM25 on a tie)."""
    figures = {name: _mean(r for r, q in zip(part.recall, run.queries) if q.split == split)
               for name, part in run.parts.items()}
    return max(figures, key=lambda name: (figures[name], name == "bm25"))


def urisk(candidate: Ranked, base: Ranked, rows: Sequence[int], alpha: float = RISK_ALPHA) -> float:
    """(sum of gains - (1 + alpha) x sum of losses) / queries, recall@10 against `base` over the scored `rows`."""
    changes = [candidate.recall[i] - base.recall[i] for i in rows if candidate.recall[i] is not None]
    return (sum(c for c in changes if c > 0) + (1 + alpha) * sum(c for c in changes if c < 0)) / max(len(changes), 1)


def simplicity(settings, better: str) -> tuple:
    """Nearest the better part alone first (no fusion the development split does not ask for), then rrf, fewer
    candidates, rrf_k nearest the usual 60."""
    return (abs(settings.weight - (1.0 if better == "embedder" else 0.0)), settings.method != "rrf",
            settings.method == "zscore", settings.candidates, abs(settings.rrf_k - 60.0))


def keeps_contracts(run: SetRuns, fused: Ranked, rows: Sequence[int]) -> bool:
    """Whether `fused` breaks, on `rows`, only contracts a part already breaks (none that both parts keep)."""
    return all(fused.broken[i] <= run.parts["bm25"].broken[i] | run.parts["embedder"].broken[i] for i in rows)


def choose(runs: Sequence[SetRuns]):
    """The configuration for the corpus these sets share, by the module's rule, from development queries only."""
    figures = {name: statistics.fmean(_mean(r for r, q in zip(run.parts[name].recall, run.queries)
                                            if q.split == "development") for run in runs)
               for name in ("bm25", "embedder")}
    better = max(figures, key=lambda name: (figures[name], name == "bm25"))
    ranks = []
    for settings in runs[0].fused:
        risk, recall, ndcg, allowed = 0.0, 0.0, 0.0, True
        for run in runs:
            rows = [i for i, query in enumerate(run.queries) if query.split == "development"]
            fused = run.fused[settings]
            allowed = allowed and keeps_contracts(run, fused, rows)
            risk += urisk(fused, run.parts[better_part(run, "development")], rows)
            recall += _mean(fused.recall[i] for i in rows)
            ndcg += _mean(fused.ndcg[i] for i in rows)
        if allowed:
            ranks.append((-round(risk, 12), -round(recall, 12), -round(ndcg, 12), simplicity(settings, better),
                          settings))
    best = min(rank[:2] for rank in ranks)
    tied = [rank for rank in ranks if rank[:2] == best]
    simplest = min(tied, key=lambda rank: rank[3])[4]
    sharpest = min(tied, key=lambda rank: rank[2:4])[4]
    return sharpest if ranks_answers_higher(runs, sharpest, simplest) else simplest


def ranks_answers_higher(runs: Sequence[SetRuns], candidate, base) -> bool:
    """Whether `candidate`'s development nDCG@10 is above `base`'s by the paired test (p < 0.05, 95% CI above 0).

    The nDCG tie-break of `choose` moves away from the simplest configuration only on this evidence: a higher
    mean the development split cannot tell from noise is a coin flip, and the risk-averse choice keeps the
    configuration nearest the better part alone.
    """
    from harness.scoring.stats import paired_test

    if candidate == base:
        return False
    before, after, groups = {}, {}, {}
    for run in runs:
        for i, query in enumerate(run.queries):
            if query.split == "development" and run.fused[base].ndcg[i] is not None:
                key = f"{run.name}\0{query.qid}"
                before[key], after[key] = run.fused[base].ndcg[i], run.fused[candidate].ndcg[i]
                groups[key] = f"{run.name}\0{query.resampling_unit}"
    test = paired_test(before, after, groups)
    return test.p_value < 0.05 and test.ci_low > 0


def held_out_rows(run: SetRuns) -> list[int]:
    """The positions of the set's scored held-out queries: the only rows the held-out report reads."""
    return [i for i, query in enumerate(run.queries) if query.split == "held-out" and query.scored]


def held_out_report(run: SetRuns, settings) -> dict[str, object]:
    """The chosen fusion on the held-out split beside both parts: means, and the paired test against each part."""
    from harness.scoring.stats import bootstrap_ci, group_differences, paired_test

    rows = held_out_rows(run)
    groups = {run.queries[i].qid: run.queries[i].resampling_unit for i in rows}
    fused = run.fused[settings]
    report: dict[str, object] = {"n": len(rows), "hybrid": _mean(fused.recall[i] for i in rows),
                                 "hybrid_ndcg": _mean(fused.ndcg[i] for i in rows)}
    for name, part in run.parts.items():
        base = {run.queries[i].qid: part.recall[i] for i in rows}
        candidate = {run.queries[i].qid: fused.recall[i] for i in rows}
        test = paired_test(base, candidate, groups)
        clusters = group_differences(base, candidate, groups)
        low90 = bootstrap_ci(clusters, confidence=0.90)[0] if any(total for total, _ in clusters) else 0.0
        gains = paired_test({run.queries[i].qid: part.ndcg[i] for i in rows},
                            {run.queries[i].qid: fused.ndcg[i] for i in rows}, groups)
        report[name] = {"mean": _mean(part.recall[i] for i in rows), "difference": test.mean_difference,
                        "ci": (test.ci_low, test.ci_high), "p": test.p_value, "low90": low90,
                        "ndcg": _mean(part.ndcg[i] for i in rows), "ndcg_difference": gains.mean_difference,
                        "ndcg_ci": (gains.ci_low, gains.ci_high)}
    return report


def held_out_ceiling(run: SetRuns) -> tuple[float, object]:
    """The best held-out recall@10 any configuration of the grid reaches, and one that reaches it (the simplest).

    Read after the choice, to say how far the held-out split lets any fusion go; never an input to `choose`.
    """
    rows = held_out_rows(run)
    better = better_part(run, "development")
    best = min(run.fused, key=lambda settings: (-round(_mean(run.fused[settings].recall[i] for i in rows), 12),
                                                simplicity(settings, better)))
    return _mean(run.fused[best].recall[i] for i in rows), best


def held_out_growth(run: SetRuns, settings, sizes: Sequence[int] = GROWTH_SIZES, trials: int = 200,
                    resamples: int = 2000, seed: int = 0) -> list[tuple[int, float, float]]:
    """Would a larger held-out split show more? (n, share of draws shown no worse, share shown better) per size.

    Each draw resamples the held-out split's own groups (hybrid - the better part's recall@10, summed per
    group) with replacement until it holds n queries, then asks the held-out report's questions of it: the
    paired bootstrap's 90% lower bound above minus the gate's margin (no worse), its 95% lower bound above 0
    (better). It assumes new queries would differ as these do; read after the choice, never an input to it.
    """
    import random

    from harness.scoring.stats import bootstrap_ci, group_differences

    rows = held_out_rows(run)
    better = run.parts[better_part(run, "held-out")]
    groups = {run.queries[i].qid: run.queries[i].resampling_unit for i in rows}
    clusters = group_differences({run.queries[i].qid: better.recall[i] for i in rows},
                                 {run.queries[i].qid: run.fused[settings].recall[i] for i in rows}, groups)
    draw = random.Random(seed)
    shares = []
    for size in sizes:
        no_worse = better_than = 0
        for _ in range(trials):
            sample: list[tuple[float, int]] = []
            queries = 0
            while queries < size:
                sample.append(draw.choice(clusters))
                queries += sample[-1][1]
            if not any(total for total, _ in sample):
                no_worse += 1  # every query ties: shown no worse, never better
                continue
            no_worse += 100 * bootstrap_ci(sample, confidence=0.90, resamples=resamples)[0] > -MARGIN_POINTS
            better_than += bootstrap_ci(sample, confidence=0.95, resamples=resamples)[0] > 0
        shares.append((size, no_worse / trials, better_than / trials))
    return shares


def write_table(path: Path, chosen: dict[tuple[str, str], tuple[list[str], object]]) -> None:
    """The tuned table the adapter reads (adapters/fusion.py `read_table`), written atomically.

    Entries of the kinds tuned now are replaced; a file's other entries are kept (a team tunes its sets
    one at a time), so long as it is a table; anything else there is refused rather than overwritten.
    """
    import json

    from adapters.fusion import TABLE_FORMAT, read_table
    from harness.errors import UsageError
    from harness.fsutil import atomic_write_text

    kept = []
    if path.exists():
        try:
            read_table(path)
        except ValueError as problem:
            raise UsageError(f"{problem}; not overwritten (give --table another file)") from None
        kept = [entry for entry in json.loads(path.read_text(encoding="utf-8"))["corpora"]
                if entry["kind"] not in {kind for kind, _ in chosen}]
    corpora = kept + [{"kind": kind, "corpus_sha256": sha, "sets": names, "fusion": settings.banner()}
                      for (kind, sha), (names, settings) in chosen.items()]
    corpora.sort(key=lambda entry: entry["kind"])
    atomic_write_text(path, json.dumps({"format": TABLE_FORMAT, "chosen_by": "python -m benchmarks.tune_hybrid "
                                        "(development split only; docs/performance.md)", "corpora": corpora},
                                       indent=1) + "\n")


def tune(runs: Sequence[SetRuns]) -> dict[tuple[str, str], tuple[list[str], object]]:
    """Score the grid on every set, then choose per corpus: (kind, sha256) -> (its sets' names, FusionSettings)."""
    for run in runs:
        score_grid(run)
    chosen = {}
    for key, members in itertools.groupby(sorted(runs, key=lambda run: run.key), key=lambda run: run.key):
        members = list(members)
        chosen[key] = ([run.name for run in members], choose(members))
    return chosen


def print_report(runs: Sequence[SetRuns], chosen: dict[tuple[str, str], tuple[list[str], object]],
                 growth: bool = False) -> None:
    """The chosen settings per corpus, then each set's held-out split against both parts."""
    print(f"# fusion chosen per corpus on the development split ({len(list(configurations()))} configurations; "
          f"URisk alpha {RISK_ALPHA:g} against the better part, then recall@{K}, then the simplest unless a higher "
          f"nDCG@{K} passes the paired test)")
    for (kind, sha), (names, settings) in sorted(chosen.items()):
        print(f"{kind} ({', '.join(names)}; corpus {sha[:12]}): {settings.summary()}")
    print(f"# development split, recall@{K} / nDCG@{K}")
    for run in runs:
        rows = [i for i, query in enumerate(run.queries) if query.split == "development"]
        cells = [f"{name} {_mean(ranked.recall[i] for i in rows):.3f} / {_mean(ranked.ndcg[i] for i in rows):.3f}"
                 for name, ranked in (*run.parts.items(), ("hybrid", run.fused[chosen[run.key][1]]))]
        print(f"{run.name:<12} {len([i for i in rows if run.queries[i].scored]):>4}  {';  '.join(cells)}")
    print(f"\n# held-out split (never used to choose): recall@{K}; hybrid - part with its 95% CI; "
          f"no worse = 90% CI above -{MARGIN_POINTS:g} points")
    print(f"{'set':<12} {'n':>4} {'bm25':>6} {'embedder':>8} {'hybrid':>6}  {'vs bm25':<26} {'vs embedder':<26} verdict")
    better_both = 0
    reports = {run.name: held_out_report(run, chosen[run.key][1]) for run in runs}  # each has its bootstrap tests
    for run in runs:
        report = reports[run.name]
        cells = []
        for name in ("bm25", "embedder"):
            part = report[name]
            cells.append(f"{100 * part['difference']:+6.2f} [{100 * part['ci'][0]:+6.2f}, {100 * part['ci'][1]:+6.2f}]")
        better = better_part(run, "held-out")
        no_worse = 100 * report[better]["low90"] > -MARGIN_POINTS
        above = all(report[name]["difference"] > 0 for name in ("bm25", "embedder"))
        better_both += above
        low = f"{100 * report[better]['low90']:+.2f}"
        verdict = ("no worse than " if no_worse else f"NOT shown no worse (90% low {low}) than ") \
            + f"the better part ({better})" + ("; better than both" if above else "")
        print(f"{run.name:<12} {report['n']:>4} {report['bm25']['mean']:>6.3f} {report['embedder']['mean']:>8.3f} "
              f"{report['hybrid']:>6.3f}  {cells[0]:<26} {cells[1]:<26} {verdict}")
    print(f"# better than both parts on {better_both} of {len(runs)} sets")
    print(f"\n# held-out nDCG@{K} beside recall@{K}; the ceiling: the best held-out recall@{K} of any configuration "
          f"of the grid (read after the choice, never used to make it)")
    print(f"{'set':<12} {'bm25':>6} {'embedder':>8} {'hybrid':>6}  {'nDCG vs bm25':<26} {'nDCG vs embedder':<26} "
          f"{'ceiling':>7}  reached by")
    for run in runs:
        report = reports[run.name]
        ceiling, best = held_out_ceiling(run)
        cells = [f"{100 * report[name]['ndcg_difference']:+6.2f} [{100 * report[name]['ndcg_ci'][0]:+6.2f}, "
                 f"{100 * report[name]['ndcg_ci'][1]:+6.2f}]" for name in ("bm25", "embedder")]
        print(f"{run.name:<12} {report['bm25']['ndcg']:>6.3f} {report['embedder']['ndcg']:>8.3f} "
              f"{report['hybrid_ndcg']:>6.3f}  {cells[0]:<26} {cells[1]:<26} {ceiling:>7.3f}  {best.summary()}")
    if growth:
        print("\n# a larger held-out split of the same kind (held_out_growth: its own groups resampled to n queries, "
              "200 draws): share shown no worse than the better part / shown better than it")
        print(f"{'set':<12} " + " ".join(f"{'n=' + str(size):>11}" for size in GROWTH_SIZES))
        for run in runs:
            shares = held_out_growth(run, chosen[run.key][1])
            print(f"{run.name:<12} " + " ".join(f"{no_worse:>5.2f}/{better:<5.2f}" for _, no_worse, better in shares))


def main(argv: list[str] | None = None) -> int:
    from adapters import hybrid, onnx_embed
    from adapters.fusion import TUNED_TABLE
    from adapters.startup import AdapterStartupError
    from harness.errors import HarnessError

    parser = argparse.ArgumentParser(prog="python -m benchmarks.tune_hybrid", description=__doc__.splitlines()[0])
    parser.add_argument("--set", action="append", dest="sets", help="a set name or folder (repeatable; default all)")
    parser.add_argument("--write", action="store_true", help="write the chosen settings to --table")
    parser.add_argument("--table", type=Path, default=TUNED_TABLE, help=f"default {TUNED_TABLE.relative_to(ROOT)}")
    parser.add_argument("--growth", action="store_true",
                        help="also say what a larger held-out split of the same kind would show (slower)")
    onnx_embed.add_model_arguments(parser)  # the embedder the hybrid would run: same options, same defaults
    args = parser.parse_args(argv)
    part_args = hybrid.build_parser().parse_args([])
    vars(part_args).update({name: value for name, value in vars(args).items() if name in vars(part_args)})
    try:
        runs = rank_sets(load_sets(args.sets or ["all"]), part_args, max(CANDIDATES))
    except (HarnessError, AdapterStartupError) as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return getattr(exc, "exit_code", 2)
    chosen = tune(runs)
    print_report(runs, chosen, args.growth)
    if args.write:
        try:
            write_table(args.table, chosen)
        except HarnessError as exc:
            print(f"{parser.prog}: error: {exc}", file=sys.stderr)
            return exc.exit_code
        print(f"# wrote {args.table}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
