"""Builders shared by several test files: results built directly, set files rewritten, evidence sets."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from harness.measured import Aggregates, Latency, ScopeNumbers
from harness.records import QueryResult, SetResult
from harness.scoring.metrics import FAMILIES, RELEVANCE_LEVEL, Measure
from harness.sets.loader import compute_pins, load_set
from tests.conftest import SCRIPTED_ADAPTER, TINY_SET


# What a run's provenance says of its backend, for baselines built directly (a baseline must name one).
PROVENANCE = {"started": None, "backend": {"label": "test", "argv": ["python", "-m", "adapters.test"]}}


def set_result(rows, which: int) -> SetResult:
    """A SetResult built directly, as tests/unit/gating/test_gates.py does; `which` 2 = baseline hits, 3 = now."""
    queries = []
    for index, row in enumerate(rows):
        category, relevant, hits = row[0], row[1], row[which]
        queries.append(QueryResult(
            qid=f"q{index}", query=f"q{index}", category=category, split="development", ids=(), scores=None,
            latency_seconds=0.001, metrics={"recall@10": hits / relevant},
            found=tuple(f"d{index}-{n}" for n in range(hits)), contracts=(), outcome="pass", scored=True))
    by_category: dict[str, list[float]] = {}
    for query in queries:
        by_category.setdefault(query.category, []).append(query.metrics["recall@10"])
    values = [q.metrics["recall@10"] for q in queries]
    aggregates = Aggregates(overall=ScopeNumbers(len(values), {"recall@10": sum(values) / len(values)}),
                            category={c: ScopeNumbers(len(v), {"recall@10": sum(v) / len(v)})
                                      for c, v in by_category.items()})
    return SetResult(name="s", kind="s", revision=1, corpus_hash="h", k=10, query_count=len(queries), complete=True,
                     aggregates=aggregates, latency=Latency(len(queries), 1.0, 1.0, 1.0), queries=tuple(queries))



def rewrite_query(folder, target_qid, **changes):
    path = folder / "queries.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    for row in rows:
        if row["qid"] == target_qid:
            for key, value in changes.items():
                if value is None:
                    row.pop(key, None)
                else:
                    row[key] = value
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))



PAGE = "Setup\nThe limit is 500 now.\nHistory\nUntil 2024-03-04 the limit was 300.\n"



def span(snippet: str, label: str = "current", supports: bool = True, doc: str = "page") -> dict:
    start = PAGE.index(snippet)
    return {"doc": doc, "start": start, "end": start + len(snippet), "text": snippet, "label": label,
            "supports_answer": supports}



def write_set(folder: Path, queries: list[dict], *, pin: bool = True, **meta) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "corpus.jsonl").write_text(
        json.dumps({"id": "page", "text": PAGE}) + "\n" + json.dumps({"id": "other", "text": "unrelated"}) + "\n")
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    body = {"format": 1, "name": "ev", "kind": "ev", "revision": 1, "k": 10,
            "corpus": {"source": "jsonl", "path": "corpus.jsonl"}, **meta}
    (folder / "set.json").write_text(json.dumps(body))
    if pin:
        loaded = load_set(folder, check_pins=False)
        body["pins"] = compute_pins(loaded.queries, {d.id: d for d in loaded.documents})
        (folder / "set.json").write_text(json.dumps(body))
    return folder



def query(qid: str = "q1", **fields) -> dict:
    base = {"qid": qid, "query": "what is the limit", "relevant": {"page": 1}, "category": "c",
            "split": "development", "source": "s",
            "evidence": [span("The limit is 500 now."), span("Until 2024-03-04 the limit was 300.", "stale")],
            "intent": "current", "canonical": ["page"]}
    base.update(fields)
    return base


def make_report(tmp_path, monkeypatch, name, answers, set_path=TINY_SET):
    """A real --no-gate run of the scripted adapter answering `answers`; the report's path."""
    from harness.commands.cli import main
    path = tmp_path / f"{name}-answers.json"
    path.write_text(json.dumps(answers))
    monkeypatch.setenv("SCRIPTED_ANSWERS", str(path))
    out = tmp_path / f"{name}.json"
    assert main(["--set", str(set_path), "--no-gate", "--quiet", "--out", str(out),
                 "--adapter", "--", sys.executable, str(SCRIPTED_ADAPTER)]) == 0
    return out


def make_revised_report(tmp_path, monkeypatch, name, answers, set_copy: Path, revision: int = 2) -> Path:
    """make_report on `set_copy` (a copy of the tiny set) bumped to `revision`: a run compare must refuse."""
    meta = json.loads((set_copy / "set.json").read_text())
    meta["revision"] = revision
    (set_copy / "set.json").write_text(json.dumps(meta))
    return make_report(tmp_path, monkeypatch, name, answers, set_path=set_copy)


def record_baseline_and_report(tmp_path, monkeypatch, answers) -> tuple[Path, Path]:
    """A real --update-baseline run of the scripted adapter answering `answers`: (baseline, report) paths."""
    from harness.commands.cli import main
    path = tmp_path / "answers.json"
    path.write_text(json.dumps(answers))
    monkeypatch.setenv("SCRIPTED_ANSWERS", str(path))
    baseline, report = tmp_path / "baseline.json", tmp_path / "r.json"
    assert main(["--set", str(TINY_SET), "--update-baseline", "--baseline", str(baseline), "--quiet",
                 "--out", str(report), "--adapter", "--", sys.executable, str(SCRIPTED_ADAPTER)]) == 0
    return baseline, report


def ir_measures_name(measure: Measure) -> str:
    """ir_measures' spelling of a measure, e.g. `nDCG(judged_only=True)@10`: what the cross-checks hand ir_measures."""
    options = ([f"rel={measure.relevance_level}"] if measure.relevance_level != RELEVANCE_LEVEL else []) + \
              (["judged_only=True"] if measure.condensed else [])
    text = FAMILIES[measure.family].ir_measures + (f"({','.join(options)})" if options else "")
    return text + (f"@{measure.cutoff}" if measure.cutoff is not None else "")


def set_numbers(rows, *, name="s", revision=1, corpus_hash="h", k=10):
    """A set's numbers (what compare and the gates read) from its QueryNumbers rows; the aggregates are
    the overall n only (compare reads the rows)."""
    from harness.measured import SetNumbers
    return SetNumbers(name=name, revision=revision, corpus_hash=corpus_hash, k=k, query_count=len(rows),
                      aggregates=Aggregates(ScopeNumbers(len(rows))), latency=Latency(),
                      queries={row.qid: row for row in rows})


def baseline_numbers(results, provenance=None):
    """Each set's numbers as a baseline of `results` records them: written and read back as a gate reads it."""
    from harness.gating.baseline import Baseline, build_baseline
    document = build_baseline(list(results), provenance if provenance is not None else PROVENANCE)
    return Baseline.from_document(document, Path("b.json")).sets


def with_overall_means(numbers, means):
    """`numbers` (a SetNumbers) with some overall means replaced, as a hand-edited baseline would hold them."""
    import dataclasses
    overall = dataclasses.replace(numbers.aggregates.overall, means={**numbers.aggregates.overall.means, **means})
    return dataclasses.replace(numbers, aggregates=dataclasses.replace(numbers.aggregates, overall=overall))
