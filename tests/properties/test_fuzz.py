"""Our own fuzz pass: every input the harness reads, mutated, through the real commands
(docs/security.md, "Signals and internal errors").

For each mutated input it asserts what a user is promised whatever the bytes: the exit code
is a verdict or an error (0-3), never EXIT_INTERNAL; no traceback on stderr; no file changed
outside the command's own outputs; no adapter process left behind.

Seeded and bounded (derandomize, a fixed max_examples per input, no example database) so it
is the same run every time and stays well under two minutes on a 2-core machine:
`PYTHONPATH=$PWD python -m pytest -q -p no:cacheprovider tests/properties/test_fuzz.py --durations=0`.
Everything but the adapter-output mutations runs in-process through `harness.commands.cli.main`.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.commands.cli import main
from harness.errors import EXIT_INTERNAL
from tests.conftest import REPO_ROOT, FIXTURES, TINY_SET
from tests.process_helpers import alive

ROOT = REPO_ROOT
BEIR = FIXTURES / "beir"
LONG_NAME = "n" * 300  # past NAME_MAX on every Linux filesystem
LINE_ADAPTER = FIXTURES / "adapters" / "one_line.py"
VERDICTS = {0, 1, 2, 3}


def fuzz_settings(examples: int):
    return settings(max_examples=examples, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                           HealthCheck.data_too_large])


# -- mutations ------------------------------------------------------------------------------------

JSON_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(min_value=-2**70, max_value=2**70),
                         st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12),
                         st.sampled_from(["", "../x", "/etc/passwd", "doc-01", "tiny", "a\x00b", "\ud800", "all",
                                          "recall@10", "cold", "1e999", "-1"]))
JSON_VALUES = st.recursive(JSON_SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)), max_leaves=6)


def paths_of(value, prefix=()):
    """Every (path) into a JSON value, the root included."""
    yield prefix
    if isinstance(value, dict):
        for key, child in value.items():
            yield from paths_of(child, prefix + (key,))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from paths_of(child, prefix + (index,))


def mutate_json(data, document):
    """One structural change to a JSON document: replace, delete or add at a drawn place."""
    document = json.loads(json.dumps(document))
    places = list(paths_of(document))
    path = data.draw(st.sampled_from(places), label="path")
    action = data.draw(st.sampled_from(["replace", "delete", "add"]), label="action")
    new = data.draw(JSON_VALUES, label="value")
    if not path:
        return new if action == "replace" else document
    parent = document
    for step in path[:-1]:
        parent = parent[step]
    last = path[-1]
    if action == "replace":
        parent[last] = new
    elif action == "delete":
        del parent[last]
    elif isinstance(parent, dict):
        parent[data.draw(st.text(max_size=8), label="key")] = new
    else:
        parent.insert(last, new)
    return document


def mutate_bytes(data, raw: bytes) -> bytes:
    """A byte-level change: cut, insert, overwrite or duplicate a span."""
    if not raw:
        return data.draw(st.binary(max_size=40), label="bytes")
    start = data.draw(st.integers(0, len(raw)), label="start")
    end = data.draw(st.integers(start, min(len(raw), start + 40)), label="end")
    action = data.draw(st.sampled_from(["cut", "insert", "overwrite", "duplicate"]), label="byte action")
    junk = data.draw(st.binary(max_size=20) | st.sampled_from([b"\n", b"\x00", b"\xff\xfe", b"\"", b"{", b"\t",
                                                               b"\r\n", b"NaN", b"1e999", b"\xef\xbb\xbf",
                                                               b"\\ud800", b"\\udc80x", b"\xe2\x80\xa8"]),
                     label="junk")
    if action == "cut":
        return raw[:start] + raw[end:]
    if action == "insert":
        return raw[:start] + junk + raw[start:]
    if action == "overwrite":
        return raw[:start] + junk + raw[end:]
    return raw[:end] + raw[start:end] + raw[end:]


def mutate_file(data, path: Path) -> None:
    """Mutate a JSON or JSON-lines file structurally (one line for JSONL) or byte-wise."""
    raw = path.read_bytes()
    if data.draw(st.booleans(), label="bytes?"):
        path.write_bytes(mutate_bytes(data, raw))
        return
    if path.suffix == ".jsonl":
        lines = raw.decode("utf-8").splitlines()
        index = data.draw(st.integers(0, len(lines) - 1), label="line")
        # ensure_ascii drawn: a lone surrogate then reaches the file as a \ud800 escape or as raw bytes
        lines[index] = json.dumps(mutate_json(data, json.loads(lines[index])), ensure_ascii=data.draw(st.booleans()))
        path.write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogatepass")
    elif path.suffix == ".json":
        text = json.dumps(mutate_json(data, json.loads(raw)), ensure_ascii=data.draw(st.booleans()))
        path.write_bytes(text.encode("utf-8", errors="surrogatepass"))
    else:
        lines = raw.decode("utf-8").splitlines()
        index = data.draw(st.integers(0, max(len(lines) - 1, 0)), label="line")
        fields = lines[index].split() if lines else []
        if fields:
            fields[data.draw(st.integers(0, len(fields) - 1))] = data.draw(
                st.text(max_size=10) | st.sampled_from(["nan", "inf", "-0", "1e999", "x", "", "Q0"]))
            lines[index] = data.draw(st.sampled_from([" ", "\t"])).join(fields)
        path.write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogatepass")


# -- the workspace: a temp folder with every input, and what may change in it ------------------------

def snapshot(folder: Path, outputs: Path) -> dict[str, str]:
    """sha256 of every file under `folder` except the command's output folder."""
    found = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file() and outputs not in path.parents:
            found[str(path.relative_to(folder))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def tiny_run_lines() -> list[str]:
    """A TREC run of the tiny set that passes every gate: each query's relevant documents, best grade first."""
    lines = []
    for line in (TINY_SET / "queries.jsonl").read_text().splitlines():
        query = json.loads(line)
        ranked = sorted(query.get("relevant", {}), key=lambda doc_id: -query["relevant"][doc_id])
        for rank, doc_id in enumerate(ranked, 1):
            lines.append(f"{query['qid']} Q0 {doc_id} {rank} {10 - rank} fuzz")
    return lines


FUZZ_ROOT: list[Path] = []  # this module's folder under pytest's own temp folder (the fixture below)


@pytest.fixture(autouse=True, scope="module")
def _fuzz_root(tmp_path_factory):
    """Every folder of the pass lives under pytest's managed temp folder, which pytest removes in turn
    (only its last three runs are kept) even when a signal ended this one."""
    FUZZ_ROOT[:] = [tmp_path_factory.mktemp("fuzz")]
    yield
    FUZZ_ROOT.clear()
    BASE_FILES.clear()


@contextmanager
def workspace():
    """A temp folder holding a copy of the tiny set, a run, a baseline, budgets, a policy, a report, a
    BEIR folder; cwd moves there so default outputs (.retrieval-gate/) land inside it."""
    folder = Path(tempfile.mkdtemp(prefix="rg-fuzz-", dir=FUZZ_ROOT[0]))
    previous = os.getcwd()
    try:
        shutil.copytree(TINY_SET, folder / "sets" / "tiny")
        shutil.copytree(BEIR, folder / "beir")
        (folder / "run.txt").write_text("\n".join(tiny_run_lines()) + "\n")
        (folder / "budgets.json").write_text(json.dumps({"format": 1, "default_p95_ms": 300,
                                                         "p95_ms": {"tiny": 200}}))
        (folder / "policy.json").write_text(json.dumps({
            "format": 1, "metrics": ["recall@10", "ndcg@10"], "drop_limit_points": 2.0,
            "categories": {"gate": True, "min_queries": 1}, "significance": {"require_ci_below_zero": False},
            "latency": {"relative_p95_limit_percent": None, "min_samples": 20}, "judged": {"warn_drop_points": 10.0}}))
        shutil.copy(BASE_FILES["baseline"], folder / "baseline.json")
        shutil.copy(BASE_FILES["report"], folder / "report.json")
        os.chdir(folder)
        yield folder
    finally:
        os.chdir(previous)
        shutil.rmtree(folder, ignore_errors=True)


def _prepare_base_files() -> dict[str, Path]:
    """A real baseline and report of the tiny set from the run file (made once per module, in-process)."""
    folder = Path(tempfile.mkdtemp(prefix="rg-fuzz-base-", dir=FUZZ_ROOT[0]))
    (folder / "run.txt").write_text("\n".join(tiny_run_lines()) + "\n")
    code = main(["--set", str(TINY_SET), "--run-file", str(folder / "run.txt"), "--update-baseline", "--yes",
                 "--baseline", str(folder / "baseline.json"), "--out", str(folder / "report.json"), "--quiet"])
    assert code == 0, code
    return {"baseline": folder / "baseline.json", "report": folder / "report.json"}


BASE_FILES: dict[str, Path] = {}


def base_files() -> None:
    if not BASE_FILES:
        BASE_FILES.update(_prepare_base_files())


def run_command(argv: list[str], capfd, folder: Path) -> int:
    """main(argv) in-process, checked against the promises; returns its exit code."""
    outputs = folder / "out"
    before = snapshot(folder, outputs)
    code = main(argv)
    captured = capfd.readouterr()
    assert code in VERDICTS, (code, argv, captured.err)
    assert code != EXIT_INTERNAL
    assert "Traceback" not in captured.err and "Traceback" not in captured.out, captured.err
    after = snapshot(folder, outputs)
    assert after == before, {k: (before.get(k), after.get(k)) for k in set(before) | set(after)
                             if before.get(k) != after.get(k)}
    return code


def run_argv(folder: Path, *extra: str) -> list[str]:
    return ["--set", str(folder / "sets" / "tiny"), "--run-file", str(folder / "run.txt"),
            "--baseline", str(folder / "baseline.json"), "--budgets", str(folder / "budgets.json"),
            "--policy", str(folder / "policy.json"), "--out", str(folder / "out" / "report.json"), "--quiet", *extra]


# -- the fuzz targets -----------------------------------------------------------------------------

def test_the_unmutated_workspace_passes(capfd):
    base_files()
    with workspace() as folder:
        assert run_command(run_argv(folder), capfd, folder) == 0


@fuzz_settings(400)
@given(data=st.data(), name=st.sampled_from(["set.json", "queries.jsonl", "corpus.jsonl"]))
def test_fuzz_set_files(capfd, data, name):
    base_files()
    with workspace() as folder:
        mutate_file(data, folder / "sets" / "tiny" / name)
        run_command(run_argv(folder), capfd, folder)
        command = data.draw(st.sampled_from(["show", "verify", "list"]))
        target = [] if command == "list" else [str(folder / "sets" / "tiny")]
        run_command(["sets", "--sets-dir", str(folder / "sets"), command, *target], capfd, folder)


@fuzz_settings(300)
@given(data=st.data(), name=st.sampled_from(["baseline.json", "budgets.json", "policy.json", "run.txt"]))
def test_fuzz_gating_inputs(capfd, data, name):
    base_files()
    with workspace() as folder:
        mutate_file(data, folder / name)
        run_command(run_argv(folder), capfd, folder)
        if name == "baseline.json":
            run_command(["baselines", str(folder / name)], capfd, folder)


@fuzz_settings(250)
@given(data=st.data())
def test_fuzz_reports(capfd, data):
    base_files()
    with workspace() as folder:
        mutate_file(data, folder / "report.json")
        report, baseline = str(folder / "report.json"), str(folder / "baseline.json")
        run_command(["compare", baseline, report, "--resamples", "50"], capfd, folder)
        run_command(["export", report, "--trec-run", str(folder / "out" / "run.txt"),
                     "--trec-qrels", str(folder / "out" / "qrels.txt"), "--sets-dir", str(folder / "sets")],
                    capfd, folder)
        run_command(["merge", report, "--out", str(folder / "out" / "merged.json"), "--no-gate"], capfd, folder)


@fuzz_settings(200)
@given(data=st.data(), name=st.sampled_from(["corpus.jsonl", "queries.jsonl", "qrels/test.tsv"]))
def test_fuzz_beir_import(capfd, data, name):
    base_files()
    with workspace() as folder:
        mutate_file(data, folder / "beir" / name)
        # The import's output is the new set folder: give it its own sets-dir inside out/.
        run_command(["sets", "--sets-dir", str(folder / "out" / "sets"), "import-beir", str(folder / "beir"),
                     "--name", "fuzzed"], capfd, folder)


OPTION_VALUES = {
    "--k": st.sampled_from(["0", "1", "-3", "10001", "x", "1e3", "10"]),
    "--timeout": st.sampled_from(["0", "-1", "nan", "inf", "1e-300", "1e308", "1e10", "x", "5"]),
    "--startup-timeout": st.sampled_from(["0", "nan", "-inf", "3"]),
    "--startup-limit": st.sampled_from(["0", "nan", "1e999", "3"]),
    "--warmup": st.sampled_from(["-1", "0", "2", "99999999999999999999"]),
    "--repeats": st.sampled_from(["0", "1", "3", "-2"]),
    "--workers": st.sampled_from(["0", "1", "2", "-1"]),
    "--max-window": st.sampled_from(["0", "1", "-5", "200"]),
    "--condition": st.sampled_from(["cold", "warm", "hot", ""]),
    "--what-if-min-score": st.sampled_from(["nan", "inf", "0.5", "-1e308", "x"]),
    "--shard": st.sampled_from(["1/2", "0/2", "3/2", "1/0", "a/b", "1/1", "2/2", "-1/3", ""]),
    "--worker-cpus": st.sampled_from(["-1", "nan", "1", "inf"]),
    "--worker-gpus": st.sampled_from(["-1", "nan", "0", "1"]),
    "--executor": st.sampled_from(["local", "ray", "nope"]),
    "--ray-address": st.sampled_from(["", "auto"]),
    "--color": st.sampled_from(["always", "never", "auto", "rainbow"]),
    "--sets-dir": st.sampled_from(["", "nowhere", "/dev/null", "run.txt", "run.txt/sub", LONG_NAME]),
    "--set": st.sampled_from(["", "all", "nosuch", "../sets/tiny", "/dev/null", "tiny", LONG_NAME, "a\x00b"]),
    "--summary": st.sampled_from(["out/s.md", "/dev/full", "out", "run.txt", f"out/{LONG_NAME}", "/dev/stdout"]),
    "--junit": st.sampled_from(["out/j.xml", "/dev/full", "sets/tiny/set.json", "out/x/y.xml"]),
    "--html": st.sampled_from(["out/r.html", "/dev/full", "/dev/null"]),
}
FLAGS = ["--no-gate", "--update-baseline", "--yes", "--known-contract-failures", "--allow-backend-change",
         "--offline", "--verbose", "--quiet", "--expect-banner"]


@fuzz_settings(400)
@given(data=st.data())
def test_fuzz_run_options(capfd, data):
    base_files()
    with workspace() as folder:
        extra: list[str] = []
        for option in data.draw(st.lists(st.sampled_from(sorted(OPTION_VALUES) + FLAGS), max_size=4)):
            extra.append(option)
            if option in OPTION_VALUES:
                extra.append(data.draw(OPTION_VALUES[option], label=option))
        # --update-baseline may write the baseline: that is an output of this run, so it lives in out/.
        (folder / "out").mkdir()
        shutil.copy(folder / "baseline.json", folder / "out" / "baseline.json")
        argv = run_argv(folder, *extra)
        argv[argv.index("--baseline") + 1] = str(folder / "out" / "baseline.json")
        if "--executor" in extra and "ray" in extra:
            return  # a real Ray start-up is the scale tests' job, and far too slow for a fuzz example
        run_command(argv, capfd, folder)


SUBCOMMAND_TOKENS = {
    # Each subcommand's own options and positionals, plus values; paths to write point into out/.
    "sets": ["list", "show", "verify", "tiny", "nosuch", "--sets-dir", "sets", "--offline", "--name", "--split",
             "import-beir", "beir", "out/new", "dev", "test", "-h", "export-corpus", "out/exp", "/dev/full",
             "run.txt", LONG_NAME, f"out/{LONG_NAME}", "pin"],
    "metrics": ["--bogus", "-h", "x"],
    "compare": ["report.json", "baseline.json", "run.txt", "--seed", "-1", "99999999999999999999", "--resamples",
                "0", "3", "--metric", "R@10", "nope", "ndcg@10", "--allow-mismatch", "--json", "out/c.json",
                "--html", "out/c.html"],
    "export": ["report.json", "baseline.json", "--trec-run", "--trec-qrels", "out/run.txt", "out/qrels.txt",
               "--run-tag", "", "a b", "--scored-only", "--sets-dir", "sets", "nowhere", "--offline", "/dev/full",
               "run.txt", f"out/{LONG_NAME}"],
    "baselines": ["baseline.json", "report.json", "run.txt", "nosuch.json", "--bogus"],
    "merge": ["report.json", "baseline.json", "--out", "out/m.json", "--baseline", "out/b.json", "--budgets",
              "budgets.json", "run.txt", "--update-baseline", "--yes", "--no-gate", "--known-contract-failures",
              "--summary", "out/s.md", "--junit", "out/j.xml", "--html", "out/m.html", "--quiet", "/dev/full"],
    "history": ["--history", "out/h.sqlite", "drift", "import", "report.json", "baseline.json", "--html",
                "out/h.html", "--set", "tiny", "nosuch", "--metric", "nope", "recall@10", "p95", "--scope",
                "category:x", "--baselines", "--last", "0", "1", "-1", "--days", "nan", "--limit", "100", "--fail",
                "--policy", "policy.json", "run.txt", "/dev/full", "--from-git", "--seed", LONG_NAME],
    # bisect: the workspace is no git repository, so every argv ends before any adapter starts
    "bisect": ["HEAD", "HEAD~1", "nosuch", "--set", "tiny", "--sets-dir", "sets", "--repo", "out", ".",
               "--max-runs", "0", "-1", "--metric", "nope", "--json", "out/b.json", "/dev/full", "--timeout", "nan",
               "--k", "0", "--", "true"],
    # check-adapter: its options; the adapter after `--` is always the correct stdlib fixture
    "check-adapter": ["--set", "tiny", "--sets-dir", "sets", "run.txt", "--corpus-dir", "beir", "out", "--kind",
                      "corpus", "../x", "--timeout", "--startup-timeout", "--startup-limit", "1e10", "nan", "0",
                      "2", "--queries", "0", "-1", "3", "/dev/full", LONG_NAME],
}
CHECK_ADAPTER = ["--", sys.executable, str(FIXTURES / "check_adapters" / "good.py")]


@fuzz_settings(360)
@given(data=st.data(), command=st.sampled_from(sorted(SUBCOMMAND_TOKENS)))
def test_fuzz_subcommand_options(capfd, data, command):
    base_files()
    with workspace() as folder:
        (folder / "out").mkdir()
        shutil.copy(folder / "baseline.json", folder / "out" / "b.json")
        argv = data.draw(st.lists(st.sampled_from(SUBCOMMAND_TOKENS[command]), max_size=6), label="argv")
        if command == "check-adapter":
            if "--queries" not in argv:
                argv += ["--queries", "5"]  # the 2,000-query default is the conformance suite's job
            log = data.draw(st.sampled_from(["out/check.log", "/dev/full", "out", f"out/{LONG_NAME}"]), label="log")
            argv += ["--log", log, *CHECK_ADAPTER]
        run_command([command, *argv], capfd, folder)


STORE_VALUES = st.one_of(st.none(), st.integers(-2**63, 2**63 - 1), st.floats(allow_nan=True), st.text(max_size=12),
                         st.sampled_from(["", "{}", "[1,", '{"q1": "x"}', '{"q1": 1e999}', "category:", "baseline",
                                          "overall", "recall@10", "\x00"]))


def history_store(folder: Path, capfd) -> Path:
    """out/h.sqlite holding the workspace's baseline and one gated run, as a run with --history writes it."""
    (folder / "out").mkdir(exist_ok=True)
    store = folder / "out" / "h.sqlite"
    assert run_command(run_argv(folder, "--history", str(store)), capfd, folder) == 0
    return store


def mutate_store(data, store: Path) -> None:
    """A byte-level change of the SQLite file, or one value of one row of one table set to junk."""
    if data.draw(st.booleans(), label="bytes?"):
        store.write_bytes(mutate_bytes(data, store.read_bytes()))
        return
    import sqlite3
    table, columns = data.draw(st.sampled_from([
        ("meta", ["key", "value"]),
        ("runs", ["source", "kind", "time", "git_commit", "backend", "identity", "condition", "machine", "exit_code",
                  "resources"]),
        ("set_runs", ["set_name", "revision", "corpus_hash", "k", "query_count", "numbers_hash"]),
        ("figures", ["set_name", "scope", "metric", "value", "n"]),
        ("query_values", ["set_name", "metric", "per_query"])]), label="table")
    column, value = data.draw(st.sampled_from(columns), label="column"), data.draw(STORE_VALUES, label="value")
    connection = sqlite3.connect(store)
    try:
        with connection:  # a constraint the junk breaks leaves the row as it was: still a valid example
            connection.execute(f"UPDATE {table} SET {column} = ? WHERE rowid IN (SELECT rowid FROM {table} LIMIT 1)"
                               if table in ("meta", "runs") else
                               f"UPDATE {table} SET {column} = ? WHERE run = (SELECT MIN(run) FROM {table})", (value,))
    except sqlite3.Error:
        pass
    finally:
        connection.close()


@fuzz_settings(150)
@given(data=st.data())
def test_fuzz_history_store(capfd, data):
    base_files()
    with workspace() as folder:
        store = history_store(folder, capfd)
        mutate_store(data, store)
        run_command(["history", "--history", str(store), "--html", str(folder / "out" / "h.html")], capfd, folder)
        run_command(["history", "drift", "--history", str(store)], capfd, folder)
        run_command(run_argv(folder, "--history", str(store)), capfd, folder)


# -- adapter output: a real child printing one mutated line per request -------------------------------

GOOD_LINE = json.dumps({"ids": ["doc-01", "doc-02"], "scores": [2.0, 1.0]})
BANNER = json.dumps({"ready": True, "name": "one-line", "version": "1"})


@fuzz_settings(60)
@given(data=st.data(), where=st.sampled_from(["banner", "answer"]))
def test_fuzz_adapter_output(data, where):
    base_files()
    with workspace() as folder:
        original = BANNER if where == "banner" else GOOD_LINE
        if data.draw(st.booleans(), label="structural?"):
            line = json.dumps(mutate_json(data, json.loads(original)), ensure_ascii=False).encode(
                "utf-8", errors="surrogatepass")
        else:
            line = mutate_bytes(data, original.encode())
        (folder / "line.bin").write_bytes(line)
        pid_file = folder / "out" / "adapter.pid"
        outputs = folder / "out"
        outputs.mkdir()
        before = snapshot(folder, outputs)
        argv = ["--set", str(folder / "sets" / "tiny"), "--no-gate", "--out", str(outputs / "report.json"),
                "--timeout", "5", "--startup-timeout", "5", "--quiet", "--adapter", "--",
                sys.executable, str(LINE_ADAPTER), str(folder / "line.bin"), where, str(pid_file)]
        result = subprocess.run([sys.executable, "-m", "harness", *argv], cwd=folder, capture_output=True,
                                timeout=120, stdin=subprocess.DEVNULL,
                                env={**os.environ, "PYTHONPATH": str(ROOT)})
        stderr = result.stderr.decode("utf-8", errors="replace")
        assert result.returncode in VERDICTS, (result.returncode, stderr)
        assert "Traceback" not in stderr, stderr
        assert snapshot(folder, outputs) == before
        if pid_file.exists():
            pid = int(pid_file.read_text())
            assert not alive(pid), f"adapter {pid} left running"


# -- what the fuzzer found, kept as regular regression tests -----------------------------------------

def test_regression_sets_list_with_a_null_corpus_source(capfd):
    """Found by test_fuzz_set_files: `sets list` formatted corpus.source with `:<11`, a TypeError on null.
    Now `sets list` checks the source as every command does: a null, missing or `{}` one is
    one error line, exit 2."""
    base_files()
    with workspace() as folder:
        meta_path = folder / "sets" / "tiny" / "set.json"
        meta = json.loads(meta_path.read_text())
        for corpus in ({**meta["corpus"], "source": None}, {"path": "corpus.jsonl"}, {}):
            meta_path.write_text(json.dumps({**meta, "corpus": corpus}))
            assert run_command(["sets", "--sets-dir", str(folder / "sets"), "list"], capfd, folder) == 2


def test_regression_check_adapter_log_that_is_a_folder(capfd):
    """Found by test_fuzz_subcommand_options : `check-adapter --log DIR` was exit 70."""
    base_files()
    with workspace() as folder:
        (folder / "out").mkdir()
        assert run_command(["check-adapter", "--queries", "3", "--log", "out", *CHECK_ADAPTER], capfd, folder) == 2


def test_regression_banner_with_an_encoded_lone_surrogate():
    """Found by test_fuzz_adapter_output: json.loads reads bytes with 'surrogatepass', so a banner holding
    the UTF-8-style bytes of U+D800 parsed, then the strict re-decode raised UnicodeDecodeError (exit 70)."""
    import pytest

    from harness.adapter.protocol import decode_banner
    from harness.errors import ProtocolError
    with pytest.raises(ProtocolError, match="banner: line is not valid UTF-8"):
        decode_banner(b'{"ready": true, "": "\xed\xa0\x80"}\n', check_fields=True)


def test_regression_banner_surrogate_through_the_cli(tmp_path):
    """The same banner from a real adapter: exit 3 (a backend failure), one line, the adapter gone."""
    line = tmp_path / "line.bin"
    line.write_bytes(b'{"ready": true, "": "\xed\xa0\x80"}')
    pid_file = tmp_path / "adapter.pid"
    result = subprocess.run([sys.executable, "-m", "harness", "--set", str(TINY_SET), "--no-gate", "--quiet",
                             "--out", str(tmp_path / "r.json"), "--adapter", "--", sys.executable, str(LINE_ADAPTER),
                             str(line), "banner", str(pid_file)], cwd=tmp_path, capture_output=True, text=True,
                            timeout=120, stdin=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.returncode == 3, result.stderr
    assert "banner: line is not valid UTF-8" in result.stderr and "Traceback" not in result.stderr
    assert not alive(int(pid_file.read_text()))


def test_regression_what_if_min_score_not_finite(capfd):
    """Found by test_fuzz_run_options: --what-if-min-score nan reached the strict report writer (exit 70)."""
    base_files()
    with workspace() as folder:
        for value in ("nan", "inf", "-inf"):
            assert run_command(run_argv(folder, "--what-if-min-score", value), capfd, folder) == 2


def test_regression_an_output_naming_an_input_is_refused(capfd):
    """Found by test_fuzz_subcommand_options: `compare R R --json R` replaced the report it compared; export
    and merge had the same hole. Each is now exit 2 with the input untouched (run_command checks that)."""
    base_files()
    with workspace() as folder:
        for argv in (["compare", "report.json", "baseline.json", "--json", "report.json"],
                     ["compare", "report.json", "baseline.json", "--html", "baseline.json"],
                     ["export", "report.json", "--trec-run", "report.json"],
                     ["export", "report.json", "--trec-run", "out/x.txt", "--trec-qrels", "out/x.txt"],
                     ["merge", "report.json", "--out", "report.json", "--no-gate"],
                     ["merge", "report.json", "--out", "out/m.json", "--junit", "budgets.json", "--no-gate"]):
            assert run_command(argv, capfd, folder) == 2, argv
