"""The CLI end to end with real adapter processes: exit codes, reports, baselines, messages."""

import json
import os
import subprocess
import sys

import pytest

from harness.commands.cli import main
from harness.sets.loader import load_set
from tests.conftest import SCRIPTED_ADAPTER, TINY_SET

TINY = load_set(TINY_SET)
# Every relevant doc, in grade order: all metrics 1.0, every contract holds.
GOOD = {q.query: list(q.relevant) for q in TINY.queries}


@pytest.fixture
def scripted(tmp_path, monkeypatch):
    """Write answers for the scripted adapter; return the argv tail that runs it."""
    def use(answers, **env):
        path = tmp_path / f"answers-{len(list(tmp_path.glob('answers-*')))}.json"
        path.write_text(json.dumps(answers))
        monkeypatch.setenv("SCRIPTED_ANSWERS", str(path))
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        return ["--adapter", "--", sys.executable, str(SCRIPTED_ADAPTER)]
    return use


def run(tmp_path, *args, set_path=TINY_SET):
    out = tmp_path / "out" / "report.json"
    code = main(["--set", str(set_path), "--out", str(out), "--budgets", str(write_budgets(tmp_path)),
                 "--baseline", str(tmp_path / "baseline.json"), *args])
    report = json.loads(out.read_text()) if out.exists() else None
    return code, report


def write_budgets(tmp_path):
    path = tmp_path / "budgets.json"
    path.write_text(json.dumps({"format": 1, "default_p95_ms": 5000}))
    return path


def test_no_gate_run_writes_report_and_log(tmp_path, scripted, capsys):
    answers = dict(GOOD)
    answers["retry backoff for failed requests"] = ["doc-03", "doc-02"]  # relevant at rank 2
    code, report = run(tmp_path, "--no-gate", *scripted(answers))
    assert code == 0
    overall = report["sets"][0]["aggregates"]["overall"]
    # 5 scored queries; MRR: four at rank 1 and one at rank 2 -> (4 + 0.5) / 5
    assert overall["n"] == 5 and overall["mrr"] == pytest.approx(0.9)
    assert report["complete"] is True and report["exit_code"] == 0 and report["gates"] == []
    assert report["provenance"]["sets"]["tiny"]["corpus_hash"] == TINY.corpus_hash
    log = tmp_path / "out" / "report.adapter.log"
    assert "scripted adapter up" in log.read_text()
    printed = capsys.readouterr()
    assert "set tiny (revision 1, 7 queries, k=10)" in printed.out
    assert printed.err == ""


def test_baseline_then_gate_pass_then_regression_fails(tmp_path, scripted, capsys):
    argv = scripted(GOOD)
    assert run(tmp_path, "--update-baseline", *argv)[0] == 0
    baseline = json.loads((tmp_path / "baseline.json").read_text())
    assert baseline["sets"]["tiny"]["query_count"] == 7
    assert run(tmp_path, *argv)[0] == 0
    capsys.readouterr()
    worse = dict(GOOD)
    worse["how is the config file parsed"] = ["doc-02"]
    code, report = run(tmp_path, *scripted(worse))
    assert code == 1 and report["exit_code"] == 1
    out = capsys.readouterr().out
    assert "FAIL recall      tiny overall recall@10 dropped 20.00 points: baseline 1.0000, now 0.8000" in out
    assert "flipped: tiny-01" in out


def test_deleting_a_query_fails_the_count_gate(tmp_path, scripted, tiny_copy, capsys):
    argv = scripted(GOOD)
    assert run(tmp_path, "--update-baseline", *argv, set_path=tiny_copy)[0] == 0
    lines = (tiny_copy / "queries.jsonl").read_text().splitlines()
    (tiny_copy / "queries.jsonl").write_text("\n".join(lines[:2] + lines[3:]) + "\n")  # drop tiny-03
    code, _ = run(tmp_path, *argv, set_path=tiny_copy)
    # The set's judgments changed without a revision bump: refused before anything runs.
    assert code == 2
    assert "judgments changed without a revision bump" in capsys.readouterr().err
    # A baseline recorded before judgments were fingerprinted still meets the count gate.
    baseline = tmp_path / "baseline.json"
    document = json.loads(baseline.read_text())
    del document["sets"]["tiny"]["judgments_hash"]
    baseline.write_text(json.dumps(document))
    code, _ = run(tmp_path, *argv, set_path=tiny_copy)
    assert code == 1
    assert "query count 6 differs from the baseline's 7" in capsys.readouterr().out


def test_backend_crash_is_exit_3_with_partial_report_that_cannot_be_a_baseline(tmp_path, scripted, capsys):
    argv = scripted(GOOD, SCRIPTED_CRASH_AFTER="3")
    code, report = run(tmp_path, "--no-gate", *argv)
    assert code == 3
    assert report["complete"] is False and report["exit_code"] == 3
    assert len(report["sets"][0]["queries"]) == 3
    err = capsys.readouterr().err
    assert "harness: error:" in err and "tiny-04" in err
    assert "simulated crash" in err  # the adapter's stderr tail
    code, _ = run(tmp_path, "--update-baseline", *argv)
    assert code == 3 and not (tmp_path / "baseline.json").exists()


def test_set_error_is_exit_2_one_line(tmp_path, scripted, tiny_copy, capsys):
    path = tiny_copy / "queries.jsonl"
    path.write_text(path.read_text().replace('"split": "held-out"', '"split": "holdout"', 1))
    code, report = run(tmp_path, "--no-gate", *scripted(GOOD), set_path=tiny_copy)
    err = capsys.readouterr().err
    assert code == 2 and report is None
    assert err.count("\n") == 1 and "queries.jsonl:3: split: 'holdout' is not one of" in err


@pytest.mark.parametrize("content, message", [
    (None, "no baseline file"),
    ("{oops", "corrupt baseline"),
])
def test_missing_or_corrupt_baseline_is_exit_2(tmp_path, scripted, capsys, content, message):
    if content is not None:
        (tmp_path / "baseline.json").write_text(content)
    code, _ = run(tmp_path, *scripted(GOOD))
    assert code == 2 and message in capsys.readouterr().err


@pytest.mark.parametrize("args, message", [
    (["--adapter"], "write the adapter command after '--'"),
    (["--k", "0", "--backend", "bm25"], "--k: must be >= 1"),
    (["--timeout", "0"], "--timeout: must be a positive number"),
    (["--update-baseline", "--no-gate"], "exclusive"),
])
def test_usage_errors_are_exit_2(tmp_path, capsys, args, message):
    assert main(["--set", str(TINY_SET), *args]) == 2
    assert message in capsys.readouterr().err


def test_unknown_option_is_exit_2(capsys):
    assert main(["--set", str(TINY_SET), "--frobnicate"]) == 2
    assert "unrecognized arguments: --frobnicate" in capsys.readouterr().err


def test_help_has_every_option_and_examples(capsys):
    assert main(["--help"]) == 0
    text = capsys.readouterr().out
    for option in ("--set", "--backend", "--adapter", "--k", "--baseline", "--budgets", "--out", "--summary",
                   "--update-baseline", "--no-gate", "--timeout", "--startup-timeout", "--warmup", "--repeats",
                   "--condition", "--quiet", "examples:", "exit codes:"):
        assert option in text


def test_summary_and_github_step_summary(tmp_path, scripted, monkeypatch):
    step = tmp_path / "step.md"
    step.write_text("previous step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    summary = tmp_path / "summary.md"
    assert run(tmp_path, "--no-gate", "--summary", str(summary), *scripted(GOOD))[0] == 0
    rows = [line for line in summary.read_text().splitlines() if line.startswith("| tiny | 5 |")]
    assert rows and rows[0].startswith("| tiny | 5 | 1.000 | 1.000 | 1.000 | 1.000 | ")  # the set's metrics row
    assert step.read_text().startswith("previous step\n### retrieval-gate: MEASURED\n")


def test_repeats_warmup_condition_and_banner_are_recorded(tmp_path, scripted):
    argv = scripted(GOOD, SCRIPTED_BANNER="1")
    code, report = run(tmp_path, "--no-gate", "--repeats", "3", "--warmup", "4", "--condition", "cold",
                       "--expect-banner", *argv)
    assert code == 0
    provenance = report["provenance"]
    assert provenance["condition"] == "cold" and provenance["settings"]["repeats"] == 3
    assert provenance["adapter"]["banner"]["name"] == "scripted"
    assert provenance["adapter"]["startup_seconds"] > 0


def test_real_subprocess_exact_output(tmp_path):
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps(GOOD))
    env = dict(os.environ, SCRIPTED_ANSWERS=str(answers))
    completed = subprocess.run(
        [sys.executable, "-m", "harness", "--set", str(TINY_SET), "--no-gate", "--out", str(tmp_path / "r.json"),
         "--adapter", "--", sys.executable, str(SCRIPTED_ADAPTER)],
        capture_output=True, text=True, env=env, timeout=60, stdin=subprocess.DEVNULL)
    assert completed.returncode == 0
    assert completed.stderr == ""
    lines = completed.stdout.splitlines()
    assert lines[2] == "set tiny (revision 1, 7 queries, k=10)"
    assert lines[3].split() == ["n", "recall@5", "recall@10", "mrr", "ndcg@10"]
    assert lines[4].split() == ["overall", "5", "1.000", "1.000", "1.000", "1.000"]
    assert lines[5].split() == ["a", "3", "1.000", "1.000", "1.000", "1.000"]
    assert lines[-2].startswith("report: ")
    assert lines[-1] == "MEASURED: 7 queries in 1 set, not gated"  # the verdict closes the output


def test_update_baseline_shows_changes_keeps_old_values_and_asks_on_a_terminal(tmp_path, scripted, capsys, monkeypatch):
    assert run(tmp_path, "--update-baseline", *scripted(GOOD))[0] == 0
    before = (tmp_path / "baseline.json").read_text()
    worse = dict(GOOD)
    worse["how is the config file parsed"] = ["doc-02"]
    argv = scripted(worse)
    capsys.readouterr()
    # On a terminal without --yes the user is asked; "n" leaves the file untouched.
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True)
    monkeypatch.setattr("builtins.input", lambda prompt: "n")
    code, report = run(tmp_path, "--update-baseline", *argv)
    out = capsys.readouterr().out
    assert code == 0 and "baseline not written" in out
    assert (tmp_path / "baseline.json").read_text() == before
    assert 'tiny/tiny-01 lost doc-01  "how is the config file parsed"' in out
    assert report["previous_baseline"]["tiny"]["aggregates"]["overall"]["recall@10"] == 1.0
    # --yes writes without asking
    monkeypatch.setattr("builtins.input", lambda prompt: pytest.fail("must not ask with --yes"))
    assert run(tmp_path, "--update-baseline", "--yes", *argv)[0] == 0
    assert json.loads((tmp_path / "baseline.json").read_text())["sets"]["tiny"]["aggregates"]["overall"]["recall@10"] == 0.8


def test_workers_shard_queries_but_keep_results_in_set_order(tmp_path, scripted):
    argv = scripted(GOOD)
    code, single = run(tmp_path, "--no-gate", *argv)
    assert code == 0
    code, sharded = run(tmp_path, "--no-gate", "--workers", "3", *argv)
    assert code == 0
    assert [q["qid"] for q in sharded["sets"][0]["queries"]] == [q["qid"] for q in single["sets"][0]["queries"]]
    assert [q["ids"] for q in sharded["sets"][0]["queries"]] == [q["ids"] for q in single["sets"][0]["queries"]]
    assert sharded["sets"][0]["aggregates"] == single["sets"][0]["aggregates"]
    assert sharded["provenance"]["settings"]["latency_under_concurrency"] is True
    logs = sorted(p.name for p in (tmp_path / "out").glob("report.adapter.w*.log"))
    assert logs == ["report.adapter.w1.log", "report.adapter.w2.log", "report.adapter.w3.log"]


def test_export_then_run_file_reproduces_the_metrics_without_latency_gates(tmp_path, scripted, capsys):
    answers = dict(GOOD)
    answers["retry backoff for failed requests"] = ["doc-03", "doc-02"]
    argv = scripted(answers)
    assert run(tmp_path, "--update-baseline", *argv)[0] == 0
    report_path = tmp_path / "out" / "report.json"
    original = json.loads(report_path.read_text())
    run_txt = tmp_path / "run.txt"
    assert main(["export", str(report_path), "--trec-run", str(run_txt), "--trec-qrels", str(tmp_path / "q.txt")]) == 0
    capsys.readouterr()
    code, replayed = run(tmp_path, "--run-file", str(run_txt))
    err = capsys.readouterr().err
    assert code == 0
    assert replayed["sets"][0]["aggregates"] == original["sets"][0]["aggregates"]
    assert "latency gates skipped" in err
    assert "latency" not in {g["gate"] for g in replayed["gates"]}
    assert main(["--set", str(TINY_SET), "--run-file", str(run_txt), "--backend", "bm25"]) == 2


def test_a_baseline_recorded_from_a_run_file_names_its_backend(tmp_path, scripted, capsys):
    """A run file has no adapter and no banner; its baseline still names a backend (`run-file`), so an
    adapter gated against it is another backend, never any backend."""
    argv = scripted(dict(GOOD))
    assert run(tmp_path, "--no-gate", *argv)[0] == 0
    run_txt = tmp_path / "run.txt"
    assert main(["export", str(tmp_path / "out" / "report.json"), "--trec-run", str(run_txt)]) == 0
    assert run(tmp_path, "--run-file", str(run_txt), "--update-baseline", "--yes")[0] == 0
    recorded = json.loads((tmp_path / "baseline.json").read_text())
    assert recorded["backend"]["name"] == "run-file" and recorded["sets"]["tiny"]["backend"]["name"] == "run-file"
    capsys.readouterr()
    assert run(tmp_path, *argv)[0] == 2
    assert "recorded for 'run-file'" in capsys.readouterr().err


def test_k_is_capped(capsys):
    assert main(["--set", str(TINY_SET), "--k", "10001"]) == 2
    assert "--k: at most 10000 ids per query" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["budgets", "compare", "export"])
def test_deeply_nested_inputs_are_one_line_errors(tmp_path, capsys, command):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    argv = {"budgets": ["--set", str(TINY_SET), "--budgets", str(deep), "--no-gate"],
            "compare": ["compare", str(deep), str(deep)],
            "export": ["export", str(deep), "--trec-run", str(tmp_path / "r.txt")]}[command]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nested too deeply" in err
