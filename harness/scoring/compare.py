"""Compare two runs (reports or baselines) query by query: deltas, flips, paired tests with Holm."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from harness.errors import UsageError
from harness.records import resampling_unit
from harness.scoring.evaluate import REPORTED_METRICS, TABLE_METRICS
from harness.scoring.flips import Flip, find_flips
from harness.scoring.stats import RESAMPLES, PairedTest, holm, paired_test

TESTED_METRICS = ("recall@10", "ndcg@10")
IDENTITY_FIELDS = ("revision", "corpus_hash", "k")


@dataclass(frozen=True)
class RunView:
    """What comparison needs from a report or a baseline: per set, identity and per-query rows."""

    label: str
    metric_definitions: object
    sets: dict[str, dict[str, object]]  # name -> {revision, corpus_hash, k, queries: {qid: row}}


@dataclass
class ScopeComparison:
    set_name: str
    scope: str  # "overall", "category:x", "split:y"
    n: int
    base: dict[str, float]
    candidate: dict[str, float]
    tests: dict[str, PairedTest] = field(default_factory=dict)
    adjusted_p: dict[str, float] = field(default_factory=dict)


@dataclass
class Comparison:
    base_label: str
    candidate_label: str
    mismatches: list[str]
    scopes: list[ScopeComparison]
    flips: list[Flip]
    only_in_one: list[str]
    seed: int
    resamples: int
    tested: tuple[str, ...] = TESTED_METRICS

    def to_dict(self) -> dict[str, object]:
        return {
            "base": self.base_label, "candidate": self.candidate_label, "mismatches": self.mismatches,
            "seed": self.seed, "resamples": self.resamples, "only_in_one": self.only_in_one,
            "scopes": [{"set": s.set_name, "scope": s.scope, "n": s.n, "base": s.base, "candidate": s.candidate,
                        "tests": {m: {"mean_difference": t.mean_difference, "ci95": [t.ci_low, t.ci_high],
                                      "p_value": t.p_value, "p_holm": s.adjusted_p.get(m), "groups": t.n_groups}
                                  for m, t in s.tests.items()}} for s in self.scopes],
            "flips": [{"set": f.set_name, "qid": f.qid, "query": f.query, "lost": list(f.lost),
                       "gained": list(f.gained)} for f in self.flips],
        }


def run_view(document: object, path: str) -> RunView:
    """The comparable view of a baseline document already in memory (reports: harness.report.views)."""
    if isinstance(document, dict) and document.get("format") == "retrieval-gate-baseline":
        sets = {name: {"revision": e["revision"], "corpus_hash": e["corpus_hash"], "k": e["k"],
                       "queries": {qid: dict(row, qid=qid) for qid, row in e["queries"].items()}}
                for name, e in document["sets"].items()}
        backend = (document.get("backend") or {}).get("label")
        definitions = document.get("metric_definitions")
    else:
        raise UsageError(f"{path}: neither a retrieval-gate report nor a baseline")
    return RunView(label=f"{path} ({backend})", metric_definitions=definitions, sets=sets)


def mismatches(base: RunView, candidate: RunView) -> list[str]:
    """Every reason the two runs are not comparable, one line each."""
    problems = []
    if base.metric_definitions != candidate.metric_definitions:
        problems.append("metric definitions differ")
    for name in sorted(set(base.sets) & set(candidate.sets)):
        for field_name in IDENTITY_FIELDS:
            before, after = base.sets[name][field_name], candidate.sets[name][field_name]
            if before != after:
                problems.append(f"set {name}: {field_name} {before!r} vs {after!r}")
    return problems


def compare(base: RunView, candidate: RunView, *, seed: int = 0, resamples: int = RESAMPLES,
            tested: tuple[str, ...] = TESTED_METRICS) -> Comparison:
    """Deltas per set / category / split, paired tests on `tested` metrics (Holm across all shown)."""
    scopes: list[ScopeComparison] = []
    flips: list[Flip] = []
    shared = sorted(set(base.sets) & set(candidate.sets))
    only = sorted(set(base.sets) ^ set(candidate.sets))
    for name in shared:
        base_rows, cand_rows = base.sets[name]["queries"], candidate.sets[name]["queries"]
        common = [qid for qid in sorted(set(base_rows) & set(cand_rows))
                  if base_rows[qid].get("scored", True) and cand_rows[qid].get("scored", True)
                  and base_rows[qid].get("metrics")]
        groups = {qid: resampling_unit(qid, base_rows[qid].get("group")) for qid in common}
        for scope, members in _scopes(common, base_rows):
            scopes.append(_compare_scope(name, scope, members, base_rows, cand_rows, groups, seed, resamples, tested))
        texts = {qid: cand_rows[qid].get("query") or base_rows[qid].get("query") or "" for qid in cand_rows if qid in base_rows}
        flips += find_flips(name, {qid: row.get("found", []) for qid, row in base_rows.items()},
                            {qid: row.get("found", []) for qid, row in cand_rows.items()}, texts)
    all_tests = [(scope, metric) for scope in scopes for metric in scope.tests]
    adjusted = holm([scope.tests[metric].p_value for scope, metric in all_tests])
    for (scope, metric), p_value in zip(all_tests, adjusted):
        scope.adjusted_p[metric] = p_value
    return Comparison(base.label, candidate.label, mismatches(base, candidate), scopes, flips, only, seed, resamples,
                      tuple(tested))


def _scopes(qids: list[str], rows: Mapping[str, Mapping]) -> list[tuple[str, list[str]]]:
    scopes = [("overall", qids)]
    for key in ("category", "split"):
        values = sorted({rows[q].get(key) for q in qids if rows[q].get(key)})
        scopes += [(f"{key}:{value}", [q for q in qids if rows[q].get(key) == value]) for value in values]
    return scopes


def _compare_scope(name, scope, members, base_rows, cand_rows, groups, seed, resamples, tested) -> ScopeComparison:
    def means(rows):
        return {m: sum(rows[q]["metrics"][m] for q in members) / len(members)
                for m in REPORTED_METRICS if members and all(m in rows[q]["metrics"] for q in members)}
    result = ScopeComparison(name, scope, len(members), means(base_rows), means(cand_rows))
    for metric in tested:
        if metric in result.base and metric in result.candidate:
            result.tests[metric] = paired_test({q: base_rows[q]["metrics"][metric] for q in members},
                                               {q: cand_rows[q]["metrics"][metric] for q in members},
                                               {q: groups[q] for q in members}, resamples=resamples, seed=seed)
    return result


def render_text(comparison: Comparison, *, allow_mismatch: bool = False) -> str:
    lines = [f"base:      {comparison.base_label}", f"candidate: {comparison.candidate_label}"]
    if comparison.mismatches:
        lines.append("NOT COMPARABLE (--allow-mismatch): " + "; ".join(comparison.mismatches))
    for name in comparison.only_in_one:
        lines.append(f"set {name}: only in one run, not compared")
    current = None
    for scope in comparison.scopes:
        if scope.set_name != current:
            current = scope.set_name
            lines += ["", f"set {current}", f"{'scope':<24}{'n':>5}" + "".join(f"{m:>13}" for m in TABLE_METRICS)
                      + "".join(f"   {m} change, 95% CI, p (Holm)" for m in comparison.tested)]
        cells = "".join(f"{_delta(scope, m):>13}" for m in TABLE_METRICS)
        stats = "".join(_test_cell(scope, m) for m in comparison.tested)
        lines.append(f"{scope.scope:<24}{scope.n:>5}{cells}{stats}")
    if comparison.flips:
        lines += ["", "flipped queries (relevant found in one run, lost in the other):"]
        for flip in comparison.flips:
            parts = []
            if flip.lost:
                parts.append("lost " + ", ".join(flip.lost))
            if flip.gained:
                parts.append("gained " + ", ".join(flip.gained))
            lines.append(f"  {flip.set_name}/{flip.qid} {'; '.join(parts)}  \"{flip.query}\"")
    lines.append("")
    lines.append(f"paired tests: {comparison.resamples} resamples, seed {comparison.seed}, resampling by query group; "
                 f"p adjusted with Holm across the {sum(len(s.tests) for s in comparison.scopes)} tests shown")
    return "\n".join(lines) + "\n"


def _test_cell(scope: ScopeComparison, metric: str) -> str:
    test = scope.tests.get(metric)
    if test is None:
        return "   -"
    return (f"   {test.mean_difference:+.3f} [{test.ci_low:+.3f}, {test.ci_high:+.3f}] "
            f"p={test.p_value:.3f} ({scope.adjusted_p[metric]:.3f})")


def _delta(scope: ScopeComparison, metric: str) -> str:
    if metric not in scope.base or metric not in scope.candidate:
        return "-"
    return f"{scope.base[metric]:.3f}{scope.candidate[metric] - scope.base[metric]:+.3f}"
