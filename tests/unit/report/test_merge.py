"""`--shard I/N` runs and `python -m harness merge`: the merge equals the unsharded run, gates it, refuses mismatches."""

import json
import sys

import pytest

from harness.commands.cli import main
from harness.records import resampling_unit
from harness.scoring.metrics import percentile
from harness.sets.loader import load_set
from harness.sets.shards import shard_of
from tests.conftest import SCRIPTED_ADAPTER, TINY_SET

TINY = load_set(TINY_SET)
ANSWERS = {q.query: list(q.relevant) for q in TINY.queries}
ANSWERS["retry backoff for failed requests"] = ["doc-03", "doc-02"]  # relevant at rank 2
ANSWERS["cache eviction policy"] = ["doc-05"]                        # one of two relevant, grade 1


@pytest.fixture
def adapter(tmp_path, monkeypatch):
    path = tmp_path / "answers.json"
    path.write_text(json.dumps(ANSWERS))
    monkeypatch.setenv("SCRIPTED_ANSWERS", str(path))
    monkeypatch.setenv("SCRIPTED_BANNER", "1")
    return ["--adapter", "--expect-banner", "--", sys.executable, str(SCRIPTED_ADAPTER)]


def budgets(tmp_path):
    path = tmp_path / "budgets.json"
    path.write_text(json.dumps({"format": 1, "default_p95_ms": 5000}))
    return str(path)


def run(tmp_path, name, *args):
    out = tmp_path / name
    code = main(["--set", str(TINY_SET), "--out", str(out), "--budgets", budgets(tmp_path), "--quiet", *args])
    return code, out


def shards(tmp_path, adapter, count, *extra):
    paths = []
    for index in range(1, count + 1):
        code, out = run(tmp_path, f"shard{index}.json", "--shard", f"{index}/{count}", *extra, *adapter)
        assert code == 0
        paths.append(out)
    return paths


def merge(tmp_path, *args):
    out = tmp_path / "merged.json"
    code = main(["merge", *map(str, args), "--out", str(out), "--budgets", budgets(tmp_path), "--quiet"])
    return code, (json.loads(out.read_text()) if out.exists() and code in (0, 1) else None)


def per_query(report, *fields):
    return [tuple(q[f] for f in fields) for q in report["sets"][0]["queries"]]


def test_a_shard_report_says_which_shard_and_holds_only_its_queries(tmp_path, adapter):
    code, out = run(tmp_path, "one.json", "--shard", "3/3", *adapter)
    report = json.loads(out.read_text())
    assert code == 0 and report["gates"] == []  # a shard is never gated alone
    # tiny-01, -04, -05, -07 hash to shard 3 of 3 (tests/unit/sets/test_shards.py)
    assert report["provenance"]["shard"] == {"index": 3, "count": 3,
                                             "sets": {"tiny": {"query_count": 7, "positions": [0, 3, 4, 6]}}}
    assert [q["qid"] for q in report["sets"][0]["queries"]] == ["tiny-01", "tiny-04", "tiny-05", "tiny-07"]
    assert report["sets"][0]["query_count"] == 4


def test_merge_equals_the_unsharded_run(tmp_path, adapter):
    code, whole = run(tmp_path, "whole.json", "--no-gate", *adapter)
    whole = json.loads(whole.read_text())
    code, merged = merge(tmp_path, *shards(tmp_path, adapter, 3), "--no-gate")
    assert code == 0
    fields = ("qid", "query", "category", "split", "group", "ids", "scores", "metrics", "found", "contracts",
              "outcome", "scored")
    assert per_query(merged, *fields) == per_query(whole, *fields)
    mine, theirs = merged["sets"][0], whole["sets"][0]
    assert mine["aggregates"] == theirs["aggregates"]
    # hand-computed over the 5 scored queries: MRR (4 x 1 + 1/2) / 5; recall@10 (4 x 1 + 1 of 2) / 5
    assert mine["aggregates"]["overall"]["mrr"] == pytest.approx(0.9)
    assert mine["aggregates"]["overall"]["recall@10"] == pytest.approx((4 + 0.5) / 5)
    assert (mine["query_count"], mine["complete"], merged["complete"]) == (7, True, True)
    latencies = [q["latency_ms"] for q in mine["queries"]]
    assert mine["latency_ms"] == pytest.approx({"n": 7, "p50": percentile(latencies, 50),
                                                "p95": percentile(latencies, 95), "max": max(latencies)})
    shard_rows = merged["provenance"]["shards"]
    assert [(s["index"], s["count"], s["workers"], s["executor"]) for s in shard_rows] == \
        [(1, 3, 1, "local"), (2, 3, 1, "local"), (3, 3, 1, "local")]
    assert all(s["machine"]["cpus"] for s in shard_rows)
    assert merged["provenance"]["settings"]["workers"] == 3 and "shard" not in merged["provenance"]


def test_paired_shards_merge_paired_and_a_mixed_merge_compares_across_runs(tmp_path, adapter):
    import shlex
    base = ["--baseline-adapter", shlex.join(adapter[3:])]  # the same scripted backend, timed beside each shard
    paired = shards(tmp_path, adapter, 2, *base)
    code, merged = merge(tmp_path, *paired, "--no-gate")
    assert code == 0
    mine = merged["sets"][0]
    seconds = [q["base_latency_ms"] for q in mine["queries"]]
    assert len(seconds) == 7 and all(value > 0 for value in seconds)
    assert mine["base_latency_ms"] == pytest.approx({"n": 7, "p50": percentile(seconds, 50),
                                                     "p95": percentile(seconds, 95), "max": max(seconds)})
    assert merged["provenance"]["paired_latency"]["order"] == "ABBA"
    # one shard paired, one not: no query of the other has a pair, so the merge is across runs
    code, second = run(tmp_path, "unpaired2.json", "--shard", "2/2", *adapter)
    assert code == 0
    code, mixed = merge(tmp_path, paired[0], second, "--no-gate")
    assert code == 0
    assert "base_latency_ms" not in mixed["sets"][0] and "paired_latency" not in mixed["provenance"]


def test_shards_with_no_query_run_and_merge(tmp_path, adapter):
    _, whole = run(tmp_path, "whole.json", "--no-gate", *adapter)
    paths = shards(tmp_path, adapter, 10, "--warmup", "1")  # 7 queries over 10 shards: some hold none
    empty = [p for p in paths if not json.loads(p.read_text())["sets"][0]["queries"]]
    assert empty and json.loads(empty[0].read_text())["sets"][0]["complete"] is True
    code, merged = merge(tmp_path, *paths, "--no-gate")
    assert code == 0
    assert per_query(merged, "qid", "ids", "metrics") == per_query(json.loads(whole.read_text()), "qid", "ids", "metrics")


def test_shard_order_on_the_command_line_does_not_matter(tmp_path, adapter):
    paths = shards(tmp_path, adapter, 2)
    _, forward = merge(tmp_path, *paths, "--no-gate")
    _, backward = merge(tmp_path, *reversed(paths), "--no-gate")
    assert per_query(forward, "qid", "ids") == per_query(backward, "qid", "ids")


def test_percentiles_come_from_all_queries_never_from_averaged_shards(tmp_path, adapter):
    paths = shards(tmp_path, adapter, 3)
    for path in paths:  # known latencies: shard i's queries take i ms, except tiny-07 takes 100 ms
        report = json.loads(path.read_text())
        index = report["provenance"]["shard"]["index"]
        for query in report["sets"][0]["queries"]:
            query["latency_ms"] = 100.0 if query["qid"] == "tiny-07" else float(index)
        path.write_text(json.dumps(report))
    code, merged = merge(tmp_path, *paths, "--no-gate")
    # all 7 latencies sorted: 1, 1, 2, 3, 3, 3, 100 (shard 1: 2 queries, 2: 1, 3: 4 with tiny-07)
    # nearest rank: p50 = rank ceil(3.5) = 4th = 3; p95 = rank 7 = 100
    assert merged["sets"][0]["latency_ms"] == {"n": 7, "p50": 3.0, "p95": 100.0, "max": 100.0}


def test_merge_gates_like_a_run(tmp_path, adapter):
    baseline = tmp_path / "baseline.json"
    code, _ = run(tmp_path, "whole.json", "--baseline", str(baseline), "--update-baseline", "--yes", *adapter)
    assert code == 0
    paths = shards(tmp_path, adapter, 2)
    # tiny-04 breaks a rank_before contract in the baseline too: a run passes only with --known-contract-failures
    code, merged = merge(tmp_path, *paths, "--baseline", baseline)
    assert code == 1 and [g["gate"] for g in merged["gates"] if not g["passed"]] == ["contract"]
    code, merged = merge(tmp_path, *paths, "--baseline", baseline, "--known-contract-failures")
    assert code == 0
    assert {g["gate"] for g in merged["gates"]} >= {"recall", "latency", "contract"}
    assert all(g["passed"] for g in merged["gates"]) and merged["exit_code"] == 0
    # a worse backend on one shard fails the merged gate: shard 1 answers nothing now
    answers = tmp_path / "nothing.json"
    answers.write_text(json.dumps({}))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SCRIPTED_ANSWERS", str(answers))
        code, _ = run(tmp_path, paths[0].name, "--shard", "1/2", *adapter)
    code, merged = merge(tmp_path, *paths, "--baseline", baseline, "--known-contract-failures")
    assert code == 1 and any(g["gate"] == "recall" and not g["passed"] for g in merged["gates"])


def test_a_shard_whose_recorded_metrics_disagree_with_its_ids_is_refused(tmp_path, adapter, capsys):
    paths = shards(tmp_path, adapter, 2)
    edited = json.loads(paths[0].read_text())
    query = edited["sets"][0]["queries"][0]
    query["metrics"]["recall@10"] = 1.0 - query["metrics"]["recall@10"]  # a failing shard turned into a pass
    paths[0].write_text(json.dumps(edited))
    err = refusal(tmp_path, capsys, *paths)
    assert f"shard1.json: set tiny: query {query['qid']}: metrics.recall@10: recorded" in err


def test_update_baseline_from_a_shard_is_refused(tmp_path, adapter, capsys):
    code, _ = run(tmp_path, "x.json", "--shard", "1/2", "--update-baseline", *adapter)
    assert code == 2
    assert "--update-baseline and --shard are exclusive" in capsys.readouterr().err


def edit(path, change):
    report = json.loads(path.read_text())
    change(report)
    path.write_text(json.dumps(report))


def refusal(tmp_path, capsys, *paths):
    capsys.readouterr()
    code, _ = merge(tmp_path, *paths, "--no-gate")
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    return err


def test_refuses_a_missing_or_repeated_shard(tmp_path, adapter, capsys):
    one, two, three = shards(tmp_path, adapter, 3)
    assert "shard 2 of 3 missing (given: 1, 3)" in refusal(tmp_path, capsys, one, three)
    assert f"{three}: shard 3/3 repeated (also {three})" in refusal(tmp_path, capsys, one, two, three, three)


def test_refuses_shards_of_different_splits_or_runs(tmp_path, adapter, capsys):
    one, two = shards(tmp_path, adapter, 2)
    other = tmp_path / "other"
    other.mkdir()
    (three_way,) = [shards(other, adapter, 3)[1]]
    assert "shards of different splits" in refusal(tmp_path, capsys, one, three_way)
    cases = {
        "set tiny: revision": lambda r: r["sets"][0].update(revision=2),
        "set tiny: corpus_hash": lambda r: r["sets"][0].update(corpus_hash="0" * 64),
        "set tiny: k": lambda r: r["sets"][0].update(k=5),
        "backend": lambda r: r["provenance"]["backend"].update(label="other"),
        "backend identity": lambda r: r["provenance"]["backend_identity"].update(version="2"),
        # same name, another model: the unsharded run would have been one backend
        "backend identity ": lambda r: r["provenance"]["backend_identity"].update(model_digest="f" * 64),
        "set tiny: judgments_hash": lambda r: r["provenance"]["sets"]["tiny"].update(judgments_hash="0" * 64),
        "max_window": lambda r: r["provenance"]["settings"].update(max_window=7),
        "repeats": lambda r: r["provenance"]["settings"].update(repeats=3),
        "gate policy": lambda r: r["provenance"]["policy"].update(drop_limit_points=5.0),
        "harness version": lambda r: r["provenance"].update(harness_version="9.9"),
        "sets": lambda r: r["sets"][0].update(name="renamed"),
    }
    for what, change in cases.items():
        changed = tmp_path / "changed.json"
        changed.write_text(two.read_text())
        edit(changed, change)
        err = refusal(tmp_path, capsys, one, changed)
        assert f"{changed}: {what.strip()}: " in err and "not shards of one run" in err, err


def test_refuses_an_incomplete_shard(tmp_path, adapter, capsys, monkeypatch):
    one, _ = shards(tmp_path, adapter, 2)
    monkeypatch.setenv("SCRIPTED_CRASH_AFTER", "1")
    code, broken = run(tmp_path, "broken.json", "--shard", "2/2", *adapter)
    assert code == 3 and json.loads(broken.read_text())["complete"] is False
    err = refusal(tmp_path, capsys, one, broken)
    assert f"{broken}: shard 2/2 is incomplete (" in err and "re-run that shard" in err


def test_refuses_a_report_that_is_not_a_shard_or_was_edited(tmp_path, adapter, capsys):
    one, two = shards(tmp_path, adapter, 2)
    _, whole = run(tmp_path, "whole.json", "--no-gate", *adapter)
    assert f"{whole}: provenance.shard: not a shard report" in refusal(tmp_path, capsys, one, whole)
    moved = json.loads(two.read_text())
    query = moved["sets"][0]["queries"][0]
    # hand the query to the other shard's report: its hash says it is not shard 1's
    edit(one, lambda r: (r["sets"][0]["queries"].append(query), r["sets"][0].update(query_count=len(r["sets"][0]["queries"])),
                         r["provenance"]["shard"]["sets"]["tiny"]["positions"].append(
                             moved["provenance"]["shard"]["sets"]["tiny"]["positions"][0])))
    err = refusal(tmp_path, capsys, one, two)
    assert f"query {query['qid']}: position" in err or f"query {query['qid']} belongs to shard 2/2" in err
    assert shard_of(resampling_unit(query["qid"], query["group"]), 2) == 2
