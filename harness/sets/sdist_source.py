"""The `pypi-sdist` corpus source: pinned source archives fetched with pip, cached, read in place.

Archives are fetched with `python -m pip download` so the user's own index configuration
(mirrors, proxies, credentials) applies, verified by sha256 before they enter the cache,
and verified again on every load; documents are read straight from the archive.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
from pathlib import Path
from typing import BinaryIO

from harness.sets.archive import (SELECTION_KEYS, Selection, Selector, archive_members, check_keys, check_source_spec,
                             parse_selection, stderr_note)
from harness.child import ChildProcess, log_tail
from harness.errors import SetError
from harness.fsutil import file_sha256, cache_dir
from harness.records import Document
from harness.watchdog import guarded_temp_folder

SOURCE = "pypi-sdist"
OFFLINE_ENV = "RETRIEVAL_GATE_OFFLINE"
FETCH_TIMEOUT_SECONDS = 900.0  # one pip download, metadata build included; pip's own network timeouts are shorter
CACHE_FOLDER = "archives"

_SPEC_KEYS = ("source", "packages", *SELECTION_KEYS)
_PACKAGE_KEYS = ("name", "version", "sha256")
# PEP 508 project names; also keeps option-like strings ("--index-url=...") out of pip's argv.
_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")
# Exact pinned versions as they appear in sdist file names (PEP 440 plus legacy local parts).
_VERSION = re.compile(r"[A-Za-z0-9][A-Za-z0-9.+!_-]*")
_SHA256 = re.compile(r"[0-9a-f]{64}")
_FALSE_WORDS = frozenset({"", "0", "false", "no", "off"})


def load_documents(spec: dict, set_dir: Path, where: str, *, offline: bool = False) -> list[Document]:
    """Documents of a `pypi-sdist` corpus spec, sorted by id; fetches missing archives first.

    `set_dir` is unused (archives live in the user cache) and kept for a uniform source
    interface. `offline=True` or $RETRIEVAL_GATE_OFFLINE=1 forbids fetching: a missing
    archive is then an error naming the command that fetches it. Doubles as the fetch-and-
    verify-everything step of `sets verify`. Raises `SetError` on any problem.
    """
    packages, selection = parse_spec(spec, where)
    offline = offline or offline_from_env()
    selector = Selector(selection, where)
    for index, package in enumerate(packages):
        field = f"corpus.packages[{index}]"
        handle, path = open_archive(package, where, field, offline=offline)
        with handle:
            label = f"{field}: {path.name}"
            if selector.add(archive_members(handle, label, where), label) == 0:
                raise SetError(f"{where}: {field}: corpus.include selects no file of {path.name}")
    return selector.finish()


def parse_spec(spec: object, where: str) -> tuple[list[dict[str, str]], Selection]:
    """Validate a `pypi-sdist` corpus object; return its packages and its `Selection`."""
    spec = check_source_spec(spec, SOURCE, _SPEC_KEYS, where)
    packages = spec.get("packages")
    if not isinstance(packages, list) or not packages:
        raise SetError(f"{where}: corpus.packages: must be a non-empty list of "
                       "{\"name\", \"version\", \"sha256\"} objects")
    seen: dict[tuple[str, str], int] = {}
    for index, package in enumerate(packages):
        field = f"corpus.packages[{index}]"
        _check_package(package, where, field)
        key = (normalize_name(package["name"]), package["version"])
        if key in seen:
            raise SetError(f"{where}: {field}: same package and version as corpus.packages[{seen[key]}]")
        seen[key] = index
    return [dict(package) for package in packages], parse_selection(spec, where)


def _check_package(package: object, where: str, field: str) -> None:
    if not isinstance(package, dict):
        raise SetError(f"{where}: {field}: must be an object with name, version and sha256")
    check_keys(package, _PACKAGE_KEYS, where, field)
    rules = (("name", _NAME, "a project name (letters, digits, '.', '_', '-')"),
             ("version", _VERSION, "an exact version such as '2.32.3'"),
             ("sha256", _SHA256, "64 lowercase hex digits (sha256 of the archive file)"))
    for key, pattern, wanted in rules:
        if key not in package:
            raise SetError(f"{where}: {field}.{key}: missing ({wanted})")
        value = package[key]
        if not isinstance(value, str) or not pattern.fullmatch(value):
            raise SetError(f"{where}: {field}.{key}: must be {wanted}, got {value!r}")


def normalize_name(name: str) -> str:
    """PEP 503 normalised project name: `Typing_Extensions` and `typing-extensions` are one project."""
    return re.sub(r"[-_.]+", "-", name).lower()


def offline_from_env() -> bool:
    """Whether $RETRIEVAL_GATE_OFFLINE asks for no fetching ("1", "true"...; "", "0", "false" do not)."""
    return os.environ.get(OFFLINE_ENV, "").strip().lower() not in _FALSE_WORDS


def package_cache_dir(sha256: str) -> Path:
    """Where the archive with this sha256 lives: content-addressed, so two pins never collide."""
    return cache_dir(CACHE_FOLDER) / sha256


def fetch_command(package: dict[str, str], destination: Path | str, requirements: Path | None = None) -> list[str]:
    """The pip argv that downloads exactly this sdist (no dependencies, never a wheel) into `destination`.

    With `requirements` (a file holding `NAME==VERSION --hash=sha256:PIN`, see `write_requirements`),
    pip checks the archive against the pin before it builds anything from it (`--require-hashes`):
    `--no-binary` makes pip prepare an sdist's metadata, which runs the package's build code.
    """
    argv = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:"]
    if requirements is not None:
        argv += ["--require-hashes", "-r", str(requirements)]
    else:
        argv.append(f"{package['name']}=={package['version']}")
    return argv + ["-d", str(destination)]


def write_requirements(package: dict[str, str], path: Path) -> Path:
    """A one-line requirements file pinning the package to its archive hash."""
    path.write_text(f"{package['name']}=={package['version']} --hash=sha256:{package['sha256']}\n", encoding="utf-8")
    return path


def open_archive(package: dict[str, str], where: str, field: str, *,
                 offline: bool) -> tuple[BinaryIO, Path]:
    """The cached archive of `package`, open for reading and verified; fetched first when absent.

    The hash is computed on the very handle returned, so what was verified is what is
    read. A cached file whose hash is wrong (tampered, truncated) is deleted, then
    refetched or, offline, reported. The caller closes the handle.
    """
    folder = package_cache_dir(package["sha256"])
    removed: list[str] = []
    opened = _open_cached(folder, package["sha256"], removed)
    if opened is None and not offline:
        fetch_archive(package, where, field)
        opened = _open_cached(folder, package["sha256"], removed)
    if opened is not None:
        return opened
    label = f"{package['name']}=={package['version']}"
    if not offline:
        raise SetError(f"{where}: {field}: {label}: the fetched archive changed in the cache before it was "
                       f"read ({'; '.join(removed)})")
    why = (f"cached archive {removed[0]}, expected {package['sha256']} (removed it)" if removed
           else f"not in the cache ({folder})")
    command = " ".join(fetch_command(package, folder))
    raise SetError(f"{where}: {field}: {label}: {why}, and offline mode ({OFFLINE_ENV}) forbids fetching; "
                   f"fetch it with: {command}")


def _open_cached(folder: Path, sha256: str, removed: list[str]) -> tuple[BinaryIO, Path] | None:
    """Open the first cached file with the pinned hash; delete (and note in `removed`) any other."""
    for candidate in _cached_files(folder):
        handle = candidate.open("rb")
        actual = hashlib.file_digest(handle, "sha256").hexdigest()
        if actual == sha256:
            handle.seek(0)
            return handle, candidate
        handle.close()
        candidate.unlink(missing_ok=True)
        removed.append(f"{candidate} had sha256 {actual}")
    return None


def _cached_files(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    # Dot-files are in-flight temporaries of a concurrent fetch.
    return sorted(path for path in folder.iterdir() if path.is_file() and not path.name.startswith("."))


def fetch_archive(package: dict[str, str], where: str, field: str) -> Path:
    """Download `package` with pip into a temp folder, verify its sha256, then move it into the cache.

    The temp folder sits inside the cache so the final move is an atomic rename: the
    cache never holds an unverified or half-written archive.
    """
    root = cache_dir(CACHE_FOLDER)
    label = f"{package['name']}=={package['version']}"
    with guarded_temp_folder(".fetch-", dir=root) as staging:
        download = staging / "download"
        requirements = write_requirements(package, staging / "requirements.txt")
        _run_pip(fetch_command(package, download, requirements), label, where, field, package["sha256"],
                 staging / "pip-stderr.log")
        fetched = sorted(path for path in download.iterdir() if path.is_file()) if download.is_dir() else []
        if len(fetched) != 1:
            names = ", ".join(path.name for path in fetched) or "nothing"
            raise SetError(f"{where}: {field}: pip download of {label} left {names}; expected one archive")
        archive = fetched[0]
        actual = file_sha256(archive)
        if actual != package["sha256"]:
            raise SetError(f"{where}: {field}.sha256: pip downloaded {archive.name} with sha256 {actual}, "
                           f"expected {package['sha256']}; the index serves a different archive than the pin")
        folder = package_cache_dir(package["sha256"])
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / archive.name
        os.replace(archive, target)
        return target


def _run_pip(argv: list[str], label: str, where: str, field: str, pinned: str, log_path: Path) -> None:
    """Run pip without a shell, its stderr in `log_path`; a failure or timeout becomes one line with pip's stderr tail.

    pip runs in its own session (harness.child) so a timeout or a signal (Interrupted, Ctrl-C)
    kills its build-backend children too; the caller then removes the staging folder.
    """
    try:
        process = ChildProcess.spawn(argv, log_path=log_path, stderr="file", talk=False)
    except OSError as exc:
        raise SetError(f"{where}: {field}: cannot run pip to fetch {label}: {exc}") from None
    try:
        status = process.exit_status(FETCH_TIMEOUT_SECONDS)
    finally:  # pip has exited, or timed out, or a signal came that does not reach pip in its own session:
        process.stop(0.0, 0.0)  # reap it, and kill what it left behind
    stderr = log_path.read_bytes() if log_path.exists() else b""
    if status is None:
        raise SetError(f"{where}: {field}: pip download of {label} timed out after "
                       f"{FETCH_TIMEOUT_SECONDS:g} s{stderr_note(log_tail(log_path))}")
    if status != 0 and b"DO NOT MATCH THE HASHES" in stderr:
        got = re.search(rb"Got\s+([0-9a-f]{64})", stderr)
        actual = got.group(1).decode() if got else "another value"
        raise SetError(f"{where}: {field}.sha256: the index serves {label} with sha256 {actual}, expected "
                       f"{pinned}; pip refused it before building anything (the archive differs from the pin)")
    if status != 0:
        raise SetError(f"{where}: {field}: pip download of {label} failed (exit {status})"
                       f"{stderr_note(log_tail(log_path))}")
