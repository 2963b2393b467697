"""The `git` corpus source: files read from git objects at a pinned commit, without a checkout.

`git ls-tree` lists the commit's tree and one `git cat-file --batch` process reads the
selected blobs, so the working tree, the index and uncommitted changes never matter.
"""

from __future__ import annotations

import contextlib
import functools
import re
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import IO

from harness.sets.archive import (FILE, OTHER, SELECTION_KEYS, SUBMODULE, SYMLINK, Member, Selection, Selector,
                             check_source_spec, parse_selection, stderr_note)
from harness.errors import SetError
from harness.records import Document

SOURCE = "git"
GIT_TIMEOUT_SECONDS = 300.0  # any one git command, the whole batch read included

_SPEC_KEYS = ("source", "repo", "commit", *SELECTION_KEYS)
# A full object name: SHA-1 (40) or SHA-256 (64) repositories. A branch or short sha is not a pin.
_COMMIT = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_MODE_KINDS = {b"100644": FILE, b"100755": FILE, b"120000": SYMLINK, b"160000": SUBMODULE}


def load_documents(spec: dict, set_dir: Path, where: str, *, offline: bool = False) -> list[Document]:
    """Documents of a `git` corpus spec, sorted by id (repository paths).

    `repo` is absolute or relative to `set_dir`. Only regular blobs (modes 100644 and 100755)
    become documents; symlinks and submodules are skipped. Raises `SetError` on any problem,
    including a commit that is not in the repository. `offline` changes nothing (a local
    repository is never fetched from); it is the corpus sources' one signature (sets/corpus.py).
    """
    repo, commit, selection = _parse_spec(spec, set_dir, where)
    _check_commit(repo, commit, where)
    selector = Selector(selection, where)
    with contextlib.closing(_BlobReader(repo, where)) as blobs:
        members = [Member(path, kind, size, functools.partial(blobs.read, oid, path))
                   for path, kind, size, oid in _list_tree(repo, commit, where)]
        selector.add(members, f"corpus: {repo} at {commit[:12]}")
        return selector.finish()


def _parse_spec(spec: object, set_dir: Path, where: str) -> tuple[Path, str, Selection]:
    spec = check_source_spec(spec, SOURCE, _SPEC_KEYS, where)
    repo_value = spec.get("repo")
    if not isinstance(repo_value, str) or not repo_value:
        raise SetError(f"{where}: corpus.repo: must be a path to a git repository (absolute or relative to "
                       f"the set folder), got {repo_value!r}")
    commit = spec.get("commit")
    if not isinstance(commit, str) or not _COMMIT.fullmatch(commit):
        raise SetError(f"{where}: corpus.commit: must be a full commit sha (40 or 64 lowercase hex digits), "
                       f"got {commit!r}")
    selection = parse_selection(spec, where)
    repo = Path(repo_value)
    if not repo.is_absolute():
        repo = Path(set_dir) / repo
    if not repo.is_dir():
        raise SetError(f"{where}: corpus.repo: {repo_value!r} ({repo}) is not a folder")
    return repo, commit, selection


def _git(repo: Path, args: list[str], where: str, field: str) -> subprocess.CompletedProcess[bytes]:
    """Run one git command in `repo` (argv, no shell) with a timeout; return it whatever its exit status."""
    argv = ["git", "-C", str(repo), *args]
    try:
        return subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=GIT_TIMEOUT_SECONDS)
    except FileNotFoundError:
        raise SetError(f"{where}: {field}: git is not installed or not on PATH (needed by corpus.source "
                       f"'git')") from None
    except subprocess.TimeoutExpired:
        raise SetError(f"{where}: {field}: `git {args[0]}` timed out after {GIT_TIMEOUT_SECONDS:g} s") from None


def _check_commit(repo: Path, commit: str, where: str) -> None:
    probe = _git(repo, ["rev-parse", "--git-dir"], where, "corpus.repo")
    if probe.returncode != 0:
        raise SetError(f"{where}: corpus.repo: {repo} is not a git repository{stderr_note(probe.stderr)}")
    found = _git(repo, ["cat-file", "-t", commit], where, "corpus.commit")
    if found.returncode != 0:
        raise SetError(f"{where}: corpus.commit: {commit} is not in the repository {repo} "
                       "(fetch it, or fix the pin)")
    object_type = found.stdout.decode("ascii", errors="replace").strip()
    if object_type != "commit":
        raise SetError(f"{where}: corpus.commit: {commit} is a {object_type}, not a commit")


def _list_tree(repo: Path, commit: str, where: str) -> list[tuple[str, str, int, str]]:
    """(path, kind, size, blob id) for every entry of the commit's tree, recursively.

    `-z` gives raw NUL-terminated paths (no quoting); `-l` gives blob sizes, so size
    limits are checked before any blob is read; `--full-tree` lists from the root even
    when `repo` is a subfolder of a work tree.
    """
    listing = _git(repo, ["ls-tree", "-r", "-z", "-l", "--full-tree", commit], where, "corpus.commit")
    if listing.returncode != 0:
        raise SetError(f"{where}: corpus.commit: cannot list {commit}{stderr_note(listing.stderr)}")
    entries = []
    for record in listing.stdout.split(b"\0"):
        if not record:
            continue
        meta, _, raw_path = record.partition(b"\t")
        fields = meta.split()
        if len(fields) != 4 or not raw_path:
            raise SetError(f"{where}: corpus.commit: unexpected `git ls-tree` line {record[:200]!r}")
        mode, _object_type, oid, size = fields
        kind = _MODE_KINDS.get(mode, OTHER)
        # surrogateescape keeps a non-UTF-8 path distinct; the selector then rejects it by name.
        path = raw_path.decode("utf-8", errors="surrogateescape")
        entries.append((path, kind, int(size) if size.isdigit() else 0, oid.decode("ascii")))
    return entries


class _BlobReader:
    """One `git cat-file --batch` process, asked for blobs one at a time (request, then read the reply).

    Strict request/reply alternation keeps both pipes from filling up; a watchdog kills
    git if the whole read takes longer than GIT_TIMEOUT_SECONDS.
    """

    def __init__(self, repo: Path, where: str) -> None:
        self.repo = repo
        self.where = where
        self._process: subprocess.Popen[bytes] | None = None
        self._stderr: IO[bytes] | None = None
        self._watchdog: threading.Timer | None = None
        self._cache: dict[str, bytes] = {}

    def _start(self) -> subprocess.Popen[bytes]:
        self._stderr = tempfile.TemporaryFile()
        try:
            self._process = subprocess.Popen(["git", "-C", str(self.repo), "cat-file", "--batch"],
                                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr)
        except FileNotFoundError:
            raise SetError(f"{self.where}: corpus.repo: git is not installed or not on PATH") from None
        self._watchdog = threading.Timer(GIT_TIMEOUT_SECONDS, self._process.kill)
        self._watchdog.daemon = True
        self._watchdog.start()
        return self._process

    def read(self, oid: str, path: str, limit: int = 0) -> bytes:
        """The bytes of blob `oid` (the same blob under two paths is read once); a Member's `read`, whose `limit`
        it ignores: the blob's size came from `ls-tree -l`, so the limit was checked before."""
        if oid in self._cache:
            return self._cache[oid]
        process = self._process or self._start()
        stdin, stdout = process.stdin, process.stdout
        assert stdin is not None and stdout is not None  # _start asks for both pipes
        try:
            stdin.write(oid.encode("ascii") + b"\n")
            stdin.flush()
            header = stdout.readline()
        except (BrokenPipeError, OSError):
            header = b""
        fields = header.split()
        if len(fields) != 3 or fields[1] != b"blob" or not fields[2].isdigit():
            raise SetError(f"{self.where}: corpus: cannot read {path!r} (blob {oid}) with `git cat-file --batch`: "
                           f"{header.decode('utf-8', errors='replace').strip() or 'no reply'}{self._stderr_tail()}")
        size = int(fields[2])
        data = stdout.read(size + 1)  # the content, then the newline that ends every reply
        if len(data) != size + 1:
            raise SetError(f"{self.where}: corpus: `git cat-file --batch` stopped in the middle of {path!r} "
                           f"(killed after {GIT_TIMEOUT_SECONDS:g} s?){self._stderr_tail()}")
        self._cache[oid] = data[:-1]
        return data[:-1]

    def _stderr_tail(self) -> str:
        if self._stderr is None:
            return ""
        self._stderr.seek(0)
        return stderr_note(self._stderr.read())

    def close(self) -> None:
        """Stop git (EOF on stdin ends it) and the watchdog; idempotent."""
        process, self._process = self._process, None
        if process is not None:
            with contextlib.suppress(OSError):
                if process.stdin is not None:
                    process.stdin.close()
            try:
                process.wait(timeout=GIT_TIMEOUT_SECONDS)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            if process.stdout is not None:
                process.stdout.close()
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None
