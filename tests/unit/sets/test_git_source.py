"""Tests for the git corpus source: files read from git objects at a pinned commit."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from harness.sets import git_source
from harness.errors import SetError

WHERE = "sets/mine/set.json"


@pytest.fixture
def git_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Commits without the user's git config: fixed identity, no global or system files."""
    for key, value in {"GIT_AUTHOR_NAME": "Test", "GIT_AUTHOR_EMAIL": "test@example.invalid",
                       "GIT_COMMITTER_NAME": "Test", "GIT_COMMITTER_EMAIL": "test@example.invalid",
                       "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}.items():
        monkeypatch.setenv(key, value)


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def write(repo: Path, name: str, data: bytes) -> None:
    path = repo / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


@pytest.fixture
def repo(tmp_path: Path, git_env: None) -> tuple[Path, str, str]:
    """A repository with two commits; returns (path, first commit, second commit).

    First commit: two modules, an executable script, a README, a symlink and a submodule
    entry. Second commit: a.py changed, b.py deleted, c.py added. After it, c.py is
    modified in the working tree but not committed.
    """
    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "-q")
    write(path, "src/a.py", b"A = 1\n")
    write(path, "src/b.py", b"B = 2\n")
    write(path, "src/same.py", b"B = 2\n")  # same blob as b.py under another path
    write(path, "bin/run.py", b"#!/usr/bin/env python\nprint('run')\n")
    (path / "bin/run.py").chmod(0o755)
    write(path, "README.md", b"# repo\n")
    os.symlink("src/a.py", path / "link.py")
    git(path, "add", "-A")
    # A submodule entry (gitlink) without a real submodule: mode 160000 in the tree.
    git(path, "update-index", "--add", "--cacheinfo", f"160000,{'1' * 40},vendor/sub.py")
    git(path, "commit", "-q", "-m", "first")
    first = git(path, "rev-parse", "HEAD")
    write(path, "src/a.py", b"A = 10\n")
    (path / "src/b.py").unlink()
    write(path, "src/c.py", b"C = 3\n")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "second")
    second = git(path, "rev-parse", "HEAD")
    write(path, "src/c.py", b"C = 'uncommitted'\n")
    return path, first, second


def spec(repo: Path | str, commit: str, include: list[str], **extra: object) -> dict:
    return {"source": "git", "repo": str(repo), "commit": commit, "include": include, **extra}


def load(spec_value: dict, set_dir: Path = Path("sets/mine")) -> list:
    return git_source.load_documents(spec_value, set_dir, WHERE)


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_first_commit_regular_blobs_only(repo):
    path, first, _ = repo

    documents = load(spec(path, first, ["*.py", "*.md"]))

    # link.py (symlink) and vendor/sub.py (submodule) are skipped; the 100755 script is kept.
    assert [(doc.id, doc.text, doc.sha256) for doc in documents] == [
        ("README.md", "# repo\n", sha(b"# repo\n")),
        ("bin/run.py", "#!/usr/bin/env python\nprint('run')\n", sha(b"#!/usr/bin/env python\nprint('run')\n")),
        ("src/a.py", "A = 1\n", sha(b"A = 1\n")),
        ("src/b.py", "B = 2\n", sha(b"B = 2\n")),
        ("src/same.py", "B = 2\n", sha(b"B = 2\n")),
    ]


def test_second_commit_ignores_the_working_tree(repo):
    path, _, second = repo

    documents = load(spec(path, second, ["src/*"]))

    # The uncommitted change to c.py is invisible: objects are read, not files.
    assert [(doc.id, doc.text) for doc in documents] == [
        ("src/a.py", "A = 10\n"), ("src/c.py", "C = 3\n"), ("src/same.py", "B = 2\n")]


def test_relative_repo_resolves_against_the_set_folder(repo, tmp_path):
    path, first, _ = repo
    (tmp_path / "set").mkdir()

    documents = load(spec("../repo", first, ["src/a.py"]), set_dir=tmp_path / "set")

    assert [doc.id for doc in documents] == ["src/a.py"]


def test_repo_subfolder_still_lists_from_the_root(repo):
    path, first, _ = repo

    assert [doc.id for doc in load(spec(path / "src", first, ["src/a.py"]))] == ["src/a.py"]


def test_reads_blobs_through_one_batch_process(repo, monkeypatch):
    path, first, _ = repo
    started: list[list[str]] = []
    real_popen = subprocess.Popen

    def recording_popen(argv, *args, **kwargs):
        started.append(list(argv))
        return real_popen(argv, *args, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", recording_popen)

    assert len(load(spec(path, first, ["*"]))) == 5
    assert sum(1 for argv in started if "--batch" in argv) == 1


def test_unknown_commit(repo):
    path, _, _ = repo
    missing = "0123456789abcdef" * 2 + "01234567"

    with pytest.raises(SetError) as caught:
        load(spec(path, missing, ["*"]))
    assert str(caught.value) == (f"{WHERE}: corpus.commit: {missing} is not in the repository {path} "
                                 "(fetch it, or fix the pin)")


def test_object_that_is_not_a_commit(repo):
    path, first, _ = repo
    tree = git(path, "rev-parse", f"{first}^{{tree}}")

    with pytest.raises(SetError, match=rf"corpus.commit: {tree} is a tree, not a commit"):
        load(spec(path, tree, ["*"]))


def test_not_a_repository(tmp_path, git_env):
    plain = tmp_path / "plain"
    plain.mkdir()

    with pytest.raises(SetError, match=rf"^{WHERE}: corpus.repo: {plain} is not a git repository"):
        load(spec(plain, "a" * 40, ["*"]))


def test_missing_repo_folder(tmp_path):
    with pytest.raises(SetError, match=rf"^{WHERE}: corpus.repo: 'nowhere' .* is not a folder"):
        load(spec("nowhere", "a" * 40, ["*"]), set_dir=tmp_path)


@pytest.mark.parametrize("commit", ["main", "HEAD", "abc1234", "A" * 40, "a" * 41, "a" * 40 + "\n", 40])
def test_commit_must_be_a_full_sha(tmp_path, commit):
    with pytest.raises(SetError, match=rf"^{WHERE}: corpus.commit: must be a full commit sha"):
        load(spec(tmp_path, commit, ["*"]))


@pytest.mark.parametrize("bad, field", [
    ({"repo": ""}, "corpus.repo"),
    ({"repo": 3}, "corpus.repo"),
    ({"include": []}, "corpus.include"),
    ({"branch": "main"}, "corpus.branch"),
    ({"max_member_bytes": -1}, "corpus.max_member_bytes"),
])
def test_spec_errors_name_the_field(tmp_path, bad, field):
    with pytest.raises(SetError) as caught:
        load({**spec(tmp_path, "a" * 40, ["*"]), **bad})
    assert str(caught.value).startswith(f"{WHERE}: {field}: ")


def test_glob_matching_only_a_symlink_is_an_error_naming_the_skip(repo):
    path, first, _ = repo

    with pytest.raises(SetError, match=r"corpus.include\[1\]: 'link\*' selects no regular file "
                                       r"\(skipped: 'link.py' is a symlink\)"):
        load(spec(path, first, ["src/*", "link*"]))


def test_size_limit_and_exclude(repo):
    path, first, _ = repo

    # bin/run.py is 22 + 13 = 35 bytes, the largest file; everything else is at most 7 bytes.
    with pytest.raises(SetError, match=r"member 'bin/run.py': 35 bytes, over corpus.max_member_bytes \(34\)"):
        load(spec(path, first, ["*"], max_member_bytes=34))
    documents = load(spec(path, first, ["*"], exclude=["bin/*"], max_member_bytes=7))
    assert [doc.id for doc in documents] == ["README.md", "src/a.py", "src/b.py", "src/same.py"]


def test_total_limit(repo):
    path, first, _ = repo

    # README.md is 7 bytes and src/a.py 6 at the first commit: 13 in all.
    assert len(load(spec(path, first, ["README.md", "src/a.py"], max_total_bytes=13))) == 2
    with pytest.raises(SetError, match=r"exceed corpus.max_total_bytes \(12\)"):
        load(spec(path, first, ["README.md", "src/a.py"], max_total_bytes=12))


def test_non_utf8_path_is_rejected(tmp_path, git_env):
    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "-q")
    try:
        with open(os.path.join(os.fsencode(path), b"caf\xe9.py"), "wb") as handle:
            handle.write(b"x = 1\n")
    except OSError:  # file systems that insist on UTF-8 names (APFS) cannot hold this case
        pytest.skip("the file system refuses non-UTF-8 file names")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "latin-1 name")
    commit = git(path, "rev-parse", "HEAD")

    with pytest.raises(SetError, match=r"path is not valid UTF-8"):
        load(spec(path, commit, ["*"]))


def test_the_corpus_loader_reads_a_git_source_online_or_offline(repo):
    """Through sets/corpus.py's registry (one signature for every source): offline changes nothing for a
    local repository."""
    from harness.sets.corpus import load_corpus
    path, first, _ = repo
    expected = [(doc.id, doc.sha256) for doc in load(spec(path, first, ["src/*.py"]))]

    for offline in (False, True):
        documents = load_corpus(spec(path, first, ["src/*.py"]), Path("sets/mine"), WHERE, offline=offline)
        assert [(doc.id, doc.sha256) for doc in documents] == expected == [
            ("src/a.py", sha(b"A = 1\n")), ("src/b.py", sha(b"B = 2\n")), ("src/same.py", sha(b"B = 2\n"))]
