"""The user's input or environment is exit 2 and one line, never 70 ("a bug") or 1 ("a gate failed").

Proves (docs/commands.md, "Exit codes"), each with a real `python -m harness` (or `python -m adapters.cache`) process:
lone-surrogate escapes in any set field, a --sets-dir that is a file, --timeout 1e10, a baseline
whose `backend` is a string, names too long for the filesystem, outputs the environment refuses
(a read-only folder with file privileges dropped, stdout read-only or /dev/full, --out
/dev/stdout), a closed pipe under `adapters.cache info`, `prune --older-than nan`, a corpus with a
byte-order mark, CRLF ends and raw U+2028 that an adapter must read, and `sets list` on a set whose
corpus is `{}`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.sets.pins import repin_set
from tests.conftest import FIXTURES, REPO_ROOT, TINY_SET
from tests.process_helpers import assert_one_error_line, without_file_privileges

BASELINES = REPO_ROOT / "baselines"
BM25 = [sys.executable, "-m", "adapters.bm25"]
LONG_NAME = "x" * 300  # past NAME_MAX (255 bytes) on every Linux filesystem


def run(*argv: str, cwd: Path = REPO_ROOT, prefix: list[str] | None = None, **kwargs) -> subprocess.CompletedProcess:
    """`python -m ARGV` importing this worktree, as a user starts it."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    env.pop("GITHUB_STEP_SUMMARY", None)
    kwargs.setdefault("stdout", subprocess.PIPE)
    kwargs.setdefault("stdin", subprocess.DEVNULL)
    return subprocess.run([*(prefix or []), sys.executable, "-m", *argv], cwd=cwd, env=env, stderr=subprocess.PIPE,
                          text=True, timeout=300, **kwargs)


def copy_set(tmp_path: Path, name: str = "tiny") -> Path:
    target = tmp_path / "sets" / name
    shutil.copytree(TINY_SET, target)
    return target


def edit_line(path: Path, number: int, **changes: object) -> None:
    """Set fields of the JSON object on line `number` (1-based), written with ASCII escapes."""
    lines = path.read_text(encoding="utf-8").splitlines()
    row = json.loads(lines[number - 1])
    row.update(changes)
    lines[number - 1] = json.dumps(row)  # ensure_ascii: a lone surrogate becomes a \udXXX escape
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


# -- lone surrogates: where they enter, one line naming file, line and field -----------------------

@pytest.mark.parametrize("file, line, field", [
    ("corpus.jsonl", 1, "text"), ("corpus.jsonl", 2, "id"), ("corpus.jsonl", 3, "title"),
    ("queries.jsonl", 1, "group"), ("queries.jsonl", 2, "query"), ("queries.jsonl", 3, "category")])
def test_a_lone_surrogate_in_any_set_field_is_one_line_naming_it(tmp_path, file, line, field):
    folder = copy_set(tmp_path)
    edit_line(folder / file, line, **{field: "cut \ud83d here"})
    for argv in (["harness", "--set", str(folder), "--no-gate", "--out", str(tmp_path / "r.json")],
                 ["harness", "sets", "export-corpus", str(folder), str(tmp_path / "export")]):
        assert_one_error_line(run(*argv), f"{file}:{line}: {field}: holds a lone surrogate")
    assert not (tmp_path / "export").exists()


def test_check_adapter_on_a_set_with_a_lone_surrogate_title_is_exit_2(tmp_path):
    folder = copy_set(tmp_path)
    edit_line(folder / "corpus.jsonl", 1, title="t\udc80")
    done = run("harness", "check-adapter", "--set", str(folder), "--", *BM25)
    assert_one_error_line(done, "corpus.jsonl:1: title: holds a lone surrogate")


# -- paths: a file for a folder, names too long -----------------------------------------------------

def test_a_sets_dir_that_is_a_file_is_named_for_every_command(tmp_path):
    afile = tmp_path / "not-a-folder"
    afile.write_text("")
    for argv in (["harness", "--sets-dir", str(afile), "--set", "tiny", "--no-gate", "--out", str(tmp_path / "r.json")],
                 ["harness", "sets", "--sets-dir", str(afile), "list"],
                 ["harness", "sets", "--sets-dir", str(afile), "import-beir", str(FIXTURES / "beir"), "--name", "b"],
                 ["harness", "sets", "import-beir", str(FIXTURES / "beir"), "--name", "b", "--sets-dir", str(afile)]):
        done = run(*argv)
        assert_one_error_line(done, f"--sets-dir {afile}: is not a folder")
        assert done.stdout == ""  # `sets list` prints no header for a table that cannot follow


def test_import_beir_under_a_file_on_the_path_is_exit_2(tmp_path):
    afile = tmp_path / "not-a-folder"
    afile.write_text("")
    done = run("harness", "sets", "import-beir", str(FIXTURES / "beir"), "--name", "b", "--sets-dir", str(afile / "sub"))
    assert_one_error_line(done, f"--sets-dir {afile / 'sub'}: cannot create the set there")


def test_names_too_long_for_the_filesystem_are_exit_2(tmp_path):
    assert_one_error_line(run("harness", "sets", "export-corpus", str(TINY_SET), str(tmp_path / LONG_NAME)),
                          "File name too long")
    assert_one_error_line(run("harness", "--set", LONG_NAME, "--no-gate", "--out", str(tmp_path / "r.json")),
                          f"set {LONG_NAME!r}: no ")


# -- option values ----------------------------------------------------------------------------------

@pytest.mark.parametrize("command", ["run", "check-adapter"])
def test_a_timeout_past_what_a_clock_holds_is_a_usage_error(tmp_path, command):
    argv = (["harness", "--set", str(TINY_SET), "--no-gate", "--out", str(tmp_path / "r.json"), "--timeout", "1e10"]
            if command == "run" else ["harness", "check-adapter", "--timeout", "1e10", "--", *BM25])
    assert_one_error_line(run(*argv), "--timeout: must be a positive number of seconds up to 1e+06, got 1e+10")


def test_prune_refuses_nan_days(tmp_path):
    done = run("adapters.cache", "prune", "--older-than", "nan")
    assert done.returncode == 2 and "--older-than nan: must be a number of days" in done.stderr, done.stderr


# -- baselines ---------------------------------------------------------------------------------------

def test_a_baseline_whose_backend_is_a_string_is_a_baseline_error_everywhere(tmp_path):
    document = json.loads((BASELINES / "current.json").read_text())
    document["backend"] = "bm25"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(document))
    expected = f"{bad}: backend: must be an object"
    assert_one_error_line(run("harness", "baselines", str(bad)), expected)
    assert_one_error_line(run("harness", "compare", str(bad), str(BASELINES / "onnx.json")), expected)
    assert_one_error_line(run("harness", "compare", str(BASELINES / "onnx.json"), str(bad)), expected)
    assert_one_error_line(run("harness", "--set", "memory", "--baseline", str(bad), "--out", str(tmp_path / "r.json")),
                          expected)


# -- outputs the environment refuses -----------------------------------------------------------------

def test_import_beir_into_a_read_only_sets_folder_is_exit_2_for_an_ordinary_user(tmp_path):
    folder = tmp_path / "sets"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        done = run("harness", "sets", "--sets-dir", str(folder), "import-beir", str(FIXTURES / "beir"), "--name", "b",
                   prefix=without_file_privileges())
    finally:
        folder.chmod(0o755)
    assert_one_error_line(done, f"--sets-dir {folder}: cannot create the set there: Permission denied")
    assert list(folder.iterdir()) == []


@pytest.mark.parametrize("argv", [["sets", "list"], ["metrics"], ["--set", str(TINY_SET), "--no-gate"]],
                         ids=["sets-list", "metrics", "run"])
def test_stdout_open_read_only_is_exit_2(tmp_path, argv):
    with open(os.devnull, "rb") as read_only:
        done = run("harness", *argv, cwd=tmp_path if argv[0] == "--set" else REPO_ROOT, stdout=read_only)
    assert_one_error_line(done, "stdout: cannot write: it is open for reading only")


def test_stdout_on_a_full_device_is_exit_2(tmp_path):
    with open("/dev/full", "wb") as full:
        done = run("harness", "--set", str(TINY_SET), "--no-gate", "--out", str(tmp_path / "r.json"), stdout=full)
    assert_one_error_line(done, "stdout: cannot write: No space left on device")
    assert json.loads((tmp_path / "r.json").read_text())["complete"] is True  # the report was written first


def test_out_dev_stdout_works_without_file_privileges_and_keeps_its_files_out_of_dev(tmp_path):
    """--out /dev/stdout: the report goes to our own stdout (a pipe we do not own, for an ordinary
    user), and the adapter log beside it goes to .retrieval-gate/, never into /dev."""
    done = run("harness", "--set", str(TINY_SET), "--no-gate", "--quiet", "--out", "/dev/stdout", cwd=tmp_path,
               prefix=without_file_privileges())
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["complete"] is True
    assert (tmp_path / ".retrieval-gate" / "report.adapter.log").is_file()
    assert not os.path.lexists("/dev/stdout.adapter.log")


def test_out_dev_stdout_read_only_is_exit_2(tmp_path):
    with open(os.devnull, "rb") as read_only:
        done = run("harness", "--set", str(TINY_SET), "--no-gate", "--quiet", "--out", "/dev/stdout", cwd=tmp_path,
                   stdout=read_only)
    assert_one_error_line(done, "--out: /dev/stdout: cannot write: it is open for reading only")


# -- the cache command under a closed pipe -----------------------------------------------------------

def test_cache_info_into_a_closed_pipe_ends_as_sigpipe_not_as_an_unusable_cache(tmp_path):
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader (`head`) has gone before the first line
    try:
        done = subprocess.run([sys.executable, "-m", "adapters.cache", "info"], stdout=write_end,
                              stderr=subprocess.PIPE, text=True, timeout=120, cwd=REPO_ROOT,
                              env={**os.environ, "PYTHONPATH": str(REPO_ROOT), "RETRIEVAL_GATE_CACHE": str(tmp_path)})
    finally:
        os.close(write_end)
    assert done.returncode == 141, done.stderr
    assert done.stderr == ""


# -- what an adapter reads: BOM, CRLF, raw line separators --------------------------------------------

def test_a_corpus_with_a_bom_and_crlf_is_read_by_the_reference_adapter(tmp_path):
    folder = tmp_path / "corpus"
    folder.mkdir()
    body = (TINY_SET / "corpus.jsonl").read_bytes().replace(b"\n", b"\r\n")
    (folder / "check.jsonl").write_bytes(b"\xef\xbb\xbf" + body)
    done = run("harness", "check-adapter", "--corpus-dir", str(folder), "--", *BM25)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_set_with_a_bom_crlf_queries_file_and_raw_line_separators_in_text_runs(tmp_path):
    """U+2028 and U+0085 may stand raw inside a JSON string: the adapter must not cut the line there."""
    folder = copy_set(tmp_path)
    lines = (folder / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    row = json.loads(lines[0])
    row["text"] += " line\u2028separator and next\u0085line"
    lines[0] = json.dumps(row, ensure_ascii=False)
    (folder / "corpus.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    repin_set(folder)
    queries = folder / "queries.jsonl"
    queries.write_bytes(b"\xef\xbb\xbf" + queries.read_bytes().replace(b"\n", b"\r\n"))
    done = run("harness", "--set", str(folder), "--no-gate", "--quiet", "--out", str(tmp_path / "r.json"))
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "r.json").read_text())["complete"] is True


# -- set metadata ---------------------------------------------------------------------------------------

def test_sets_list_refuses_a_corpus_without_a_source(tmp_path):
    folder = copy_set(tmp_path)
    meta = json.loads((folder / "set.json").read_text())
    meta["corpus"] = {}
    (folder / "set.json").write_text(json.dumps(meta))
    done = run("harness", "sets", "--sets-dir", str(tmp_path / "sets"), "list")
    assert_one_error_line(done, "set.json: corpus.source: None is not one of ['git', 'jsonl', 'pypi-sdist']")
    assert done.stdout == ""
