"""Tests for the pypi-sdist corpus source: safe archive reading, globs, limits, cache and pip fetch."""

from __future__ import annotations

import hashlib
import io
import os
import stat
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest


from harness.sets import sdist_source
from harness.errors import SetError

WHERE = "sets/code/set.json"


# ---------------------------------------------------------------- archive builders

def tar_entry(name: str, data: bytes = b"", kind: bytes = tarfile.REGTYPE, linkname: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.size = len(data) if kind == tarfile.REGTYPE else 0
    info.linkname = linkname
    info.mode = 0o755 if kind == tarfile.DIRTYPE else 0o644
    return info


def make_tar(path: Path, entries: list[tuple[tarfile.TarInfo, bytes]]) -> Path:
    with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT) as archive:
        for info, data in entries:
            archive.addfile(info, io.BytesIO(data) if info.type == tarfile.REGTYPE else None)
    return path


def make_zip(path: Path, entries: list[tuple[str, bytes, int]]) -> Path:
    """entries: (name, data, unix mode including the file type bits)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data, mode in entries:
            info = zipfile.ZipInfo(name)
            info.external_attr = mode << 16
            archive.writestr(info, data)
    return path


def independent_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def place_in_cache(cache: Path, archive: Path) -> str:
    """Put `archive` where the source looks for it: <cache>/archives/<sha256>/<file name>."""
    digest = independent_sha256(archive)
    folder = cache / "archives" / digest
    folder.mkdir(parents=True)
    (folder / archive.name).write_bytes(archive.read_bytes())
    return digest


def spec_for(digest: str, include: list[str], **extra: object) -> dict:
    return {"source": "pypi-sdist", "packages": [{"name": "demo", "version": "1.0", "sha256": digest}],
            "include": include, **extra}


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("RETRIEVAL_GATE_CACHE", str(folder))
    monkeypatch.delenv("RETRIEVAL_GATE_OFFLINE", raising=False)
    return folder


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RETRIEVAL_GATE_OFFLINE", "1")


def load(spec: dict) -> list:
    return sdist_source.load_documents(spec, Path("sets/code"), WHERE)


NORMAL_TAR = [
    (tar_entry("demo-1.0", kind=tarfile.DIRTYPE), b""),
    (tar_entry("demo-1.0/src/demo/b.py", b"def b():\n    return 2\n"), b"def b():\n    return 2\n"),
    (tar_entry("demo-1.0/src/demo/a.py", b"def a():\n    return 1\n"), b"def a():\n    return 1\n"),
    (tar_entry("demo-1.0/src/demo/latin1.py", b"caf\xe9 = 1\n"), b"caf\xe9 = 1\n"),
    (tar_entry("demo-1.0/tests/test_a.py", b"import demo\n"), b"import demo\n"),
    (tar_entry("demo-1.0/README.md", b"# demo\n"), b"# demo\n"),
]


# ---------------------------------------------------------------- reading members

@pytest.mark.parametrize("fmt", ["tar.gz", "zip"])
def test_reads_selected_regular_files_sorted_with_byte_hashes(tmp_path, cache, offline, fmt):
    if fmt == "tar.gz":
        archive = make_tar(tmp_path / "demo-1.0.tar.gz", NORMAL_TAR)
    else:
        archive = make_zip(tmp_path / "demo-1.0.zip", [
            (info.name + ("/" if info.type == tarfile.DIRTYPE else ""), data,
             (stat.S_IFDIR | 0o755) if info.type == tarfile.DIRTYPE else (stat.S_IFREG | 0o644))
            for info, data in NORMAL_TAR])
    digest = place_in_cache(cache, archive)

    documents = load(spec_for(digest, ["*/src/demo/*.py"]))

    # Sorted ids; README and tests are outside the glob.
    assert [doc.id for doc in documents] == [
        "demo-1.0/src/demo/a.py", "demo-1.0/src/demo/b.py", "demo-1.0/src/demo/latin1.py"]
    assert documents[0].text == "def a():\n    return 1\n"
    assert documents[0].sha256 == hashlib.sha256(b"def a():\n    return 1\n").hexdigest()
    # The hash is of the raw bytes; the text replaces the invalid UTF-8 byte 0xE9.
    assert documents[2].text == "caf\ufffd = 1\n"
    assert documents[2].sha256 == hashlib.sha256(b"caf\xe9 = 1\n").hexdigest()


def test_star_crosses_slashes_and_exclude_removes(tmp_path, cache, offline):
    digest = place_in_cache(cache, make_tar(tmp_path / "demo-1.0.tar.gz", NORMAL_TAR))

    documents = load(spec_for(digest, ["*.py"], exclude=["*/tests/*", "*latin1*"]))

    assert [doc.id for doc in documents] == ["demo-1.0/src/demo/a.py", "demo-1.0/src/demo/b.py"]


def test_include_glob_matching_nothing_is_an_error(tmp_path, cache, offline):
    digest = place_in_cache(cache, make_tar(tmp_path / "demo-1.0.tar.gz", NORMAL_TAR))

    with pytest.raises(SetError, match=r"^sets/code/set.json: corpus.include\[1\]: '\*/scr/\*.py' selects no"):
        load(spec_for(digest, ["*/src/demo/a.py", "*/scr/*.py"]))


def test_include_glob_emptied_by_exclude_says_so(tmp_path, cache, offline):
    digest = place_in_cache(cache, make_tar(tmp_path / "demo-1.0.tar.gz", NORMAL_TAR))

    with pytest.raises(SetError, match=r"corpus.include\[1\]: .*1 match\(es\) removed by corpus.exclude"):
        load(spec_for(digest, ["*/src/*", "*/tests/*"], exclude=["*/tests/*"]))


@pytest.mark.parametrize("bad_name, reason", [
    ("../evil.py", "'..' component"),
    ("demo-1.0/../../evil.py", "'..' component"),
    ("/etc/evil.py", "absolute path"),
    ("demo-1.0\\..\\evil.py", "backslash"),
    ("demo-1.0/new\nline.py", "control character"),
])
@pytest.mark.parametrize("fmt", ["tar.gz", "zip"])
def test_unsafe_member_path_rejects_the_archive(tmp_path, cache, offline, bad_name, reason, fmt):
    good = b"x = 1\n"
    if fmt == "tar.gz":
        archive = make_tar(tmp_path / "demo-1.0.tar.gz", [
            (tar_entry("demo-1.0/src/a.py", good), good), (tar_entry(bad_name, good), good)])
    else:
        archive = make_zip(tmp_path / "demo-1.0.zip", [
            ("demo-1.0/src/a.py", good, stat.S_IFREG | 0o644), (bad_name, good, stat.S_IFREG | 0o644)])
    digest = place_in_cache(cache, archive)

    # Rejected even though the include glob would not select the member.
    with pytest.raises(SetError) as caught:
        load(spec_for(digest, ["*/src/*"]))
    message = str(caught.value)
    assert message.startswith(f"{WHERE}: corpus.packages[0]: demo-1.0.{fmt}: member {bad_name!r}: ")
    assert reason in message
    assert "\n" not in message


def test_links_and_devices_are_skipped_not_read(tmp_path, cache, offline):
    data = b"real = True\n"
    archive = make_tar(tmp_path / "demo-1.0.tar.gz", [
        (tar_entry("demo-1.0/src/real.py", data), data),
        (tar_entry("demo-1.0/src/link.py", kind=tarfile.SYMTYPE, linkname="/etc/passwd"), b""),
        (tar_entry("demo-1.0/src/hard.py", kind=tarfile.LNKTYPE, linkname="demo-1.0/src/real.py"), b""),
        (tar_entry("demo-1.0/src/dev.py", kind=tarfile.CHRTYPE), b""),
        (tar_entry("demo-1.0/src/pipe.py", kind=tarfile.FIFOTYPE), b""),
    ])
    digest = place_in_cache(cache, archive)

    documents = load(spec_for(digest, ["*.py"]))

    assert [doc.id for doc in documents] == ["demo-1.0/src/real.py"]


def test_glob_selecting_only_a_symlink_names_the_skip(tmp_path, cache, offline):
    data = b"real = True\n"
    archive = make_tar(tmp_path / "demo-1.0.tar.gz", [
        (tar_entry("demo-1.0/real.py", data), data),
        (tar_entry("demo-1.0/link.py", kind=tarfile.SYMTYPE, linkname="real.py"), b""),
    ])
    digest = place_in_cache(cache, archive)

    with pytest.raises(SetError, match=r"corpus.include\[1\]: .*skipped: 'demo-1.0/link.py' is a symlink"):
        load(spec_for(digest, ["*/real.py", "*/link.py"]))


def test_zip_symlink_is_skipped(tmp_path, cache, offline):
    archive = make_zip(tmp_path / "demo-1.0.zip", [
        ("demo-1.0/real.py", b"x = 1\n", stat.S_IFREG | 0o644),
        ("demo-1.0/link.py", b"real.py", stat.S_IFLNK | 0o777),
    ])
    digest = place_in_cache(cache, archive)

    assert [doc.id for doc in load(spec_for(digest, ["*.py"]))] == ["demo-1.0/real.py"]


def test_member_size_limit_is_inclusive_and_configurable(tmp_path, cache, offline):
    ten, eleven = b"0123456789", b"0123456789A"
    archive = make_tar(tmp_path / "demo-1.0.tar.gz", [
        (tar_entry("demo-1.0/ten.txt", ten), ten), (tar_entry("demo-1.0/eleven.txt", eleven), eleven)])
    digest = place_in_cache(cache, archive)

    # Exactly at the limit is allowed.
    assert [doc.id for doc in load(spec_for(digest, ["*/ten.txt"], max_member_bytes=10))] == ["demo-1.0/ten.txt"]
    with pytest.raises(SetError, match=r"member 'demo-1.0/eleven.txt': 11 bytes, over corpus.max_member_bytes "
                                       r"\(10\)"):
        load(spec_for(digest, ["*.txt"], max_member_bytes=10))
    # Excluding the big member is the documented way out.
    documents = load(spec_for(digest, ["*.txt"], exclude=["*/eleven.txt"], max_member_bytes=10))
    assert [doc.id for doc in documents] == ["demo-1.0/ten.txt"]


def test_default_member_limit_is_five_mebibytes(tmp_path, cache, offline):
    big = b"a" * (5 * 1024 * 1024 + 1)  # one byte over 5 MiB
    archive = make_tar(tmp_path / "demo-1.0.tar.gz", [(tar_entry("demo-1.0/big.txt", big), big)])
    digest = place_in_cache(cache, archive)

    with pytest.raises(SetError, match=r"5242881 bytes, over corpus.max_member_bytes \(5242880\)"):
        load(spec_for(digest, ["*"]))


def test_total_size_limit(tmp_path, cache, offline):
    ten = b"0123456789"
    archive = make_tar(tmp_path / "demo-1.0.tar.gz", [
        (tar_entry("demo-1.0/a.txt", ten), ten), (tar_entry("demo-1.0/b.txt", ten), ten)])
    digest = place_in_cache(cache, archive)

    assert len(load(spec_for(digest, ["*"], max_total_bytes=20))) == 2  # 10 + 10 = 20, at the limit
    with pytest.raises(SetError, match=r"member 'demo-1.0/b.txt': selected files exceed corpus.max_total_bytes "
                                       r"\(19\)"):
        load(spec_for(digest, ["*"], max_total_bytes=19))


def test_duplicate_member_is_an_error(tmp_path, cache, offline):
    one, two = b"one\n", b"two\n"
    archive = make_tar(tmp_path / "demo-1.0.tar.gz", [
        (tar_entry("demo-1.0/a.py", one), one), (tar_entry("demo-1.0/a.py", two), two)])
    digest = place_in_cache(cache, archive)

    with pytest.raises(SetError, match=r"member 'demo-1.0/a.py': appears twice"):
        load(spec_for(digest, ["*"]))


def test_two_packages_and_a_package_that_gives_nothing(tmp_path, cache, offline):
    first = make_tar(tmp_path / "demo-1.0.tar.gz", NORMAL_TAR)
    data = b"y = 2\n"
    second = make_tar(tmp_path / "other-2.0.tar.gz", [(tar_entry("other-2.0/other/y.py", data), data)])
    first_digest, second_digest = place_in_cache(cache, first), place_in_cache(cache, second)
    packages = [{"name": "demo", "version": "1.0", "sha256": first_digest},
                {"name": "other", "version": "2.0", "sha256": second_digest}]

    documents = load({"source": "pypi-sdist", "packages": packages, "include": ["*/demo/a.py", "*/other/*.py"]})
    assert [doc.id for doc in documents] == ["demo-1.0/src/demo/a.py", "other-2.0/other/y.py"]

    with pytest.raises(SetError, match=r"corpus.packages\[1\]: corpus.include selects no file of other-2.0.tar.gz"):
        load({"source": "pypi-sdist", "packages": packages, "include": ["*/demo/*.py"]})


def test_not_an_archive(tmp_path, cache, offline):
    junk = tmp_path / "demo-1.0.tar.gz"
    junk.write_bytes(b"this is not an archive at all" * 10)
    digest = place_in_cache(cache, junk)

    with pytest.raises(SetError, match=r"corpus.packages\[0\]: demo-1.0.tar.gz: not a readable tar or zip"):
        load(spec_for(digest, ["*"]))


# ---------------------------------------------------------------- cache and offline

def test_tampered_cache_offline_is_removed_and_reported(tmp_path, cache, offline):
    archive = make_tar(tmp_path / "demo-1.0.tar.gz", NORMAL_TAR)
    digest = place_in_cache(cache, archive)
    cached = cache / "archives" / digest / "demo-1.0.tar.gz"
    cached.write_bytes(cached.read_bytes() + b"tampered")
    tampered_digest = independent_sha256(cached)

    with pytest.raises(SetError) as caught:
        load(spec_for(digest, ["*"]))
    message = str(caught.value)
    assert f"had sha256 {tampered_digest}, expected {digest} (removed it)" in message
    assert "pip download --no-deps --no-binary :all: demo==1.0 -d" in message
    assert not cached.exists()


def test_offline_missing_archive_names_the_fetch_command(cache, offline):
    digest = "ab" * 32

    with pytest.raises(SetError) as caught:
        load(spec_for(digest, ["*"]))
    message = str(caught.value)
    assert message.startswith(f"{WHERE}: corpus.packages[0]: demo==1.0: not in the cache")
    destination = cache / "archives" / digest
    assert message.endswith(f"fetch it with: {sys.executable} -m pip download --no-deps --no-binary :all: "
                            f"demo==1.0 -d {destination}")


def test_offline_argument_also_forbids_fetching(cache, monkeypatch):
    monkeypatch.setattr(sdist_source, "fetch_archive", lambda *args: pytest.fail("must not fetch offline"))

    with pytest.raises(SetError, match="offline mode"):
        sdist_source.load_documents(spec_for("cd" * 32, ["*"]), Path("."), WHERE, offline=True)


@pytest.mark.parametrize("value, expected", [("1", True), ("true", True), ("0", False), ("", False),
                                             ("false", False)])
def test_offline_env_values(monkeypatch, value, expected):
    monkeypatch.setenv("RETRIEVAL_GATE_OFFLINE", value)
    assert sdist_source.offline_from_env() is expected


# ---------------------------------------------------------------- spec validation

GOOD_SHA = "0" * 64


@pytest.mark.parametrize("spec, field", [
    ({"source": "pypi-sdist", "include": ["*"]}, "corpus.packages"),
    ({"source": "pypi-sdist", "packages": [], "include": ["*"]}, "corpus.packages"),
    ({"source": "pypi-sdist", "packages": ["requests"], "include": ["*"]}, "corpus.packages[0]"),
    ({"source": "pypi-sdist", "packages": [{"name": "demo", "version": "1.0"}], "include": ["*"]},
     "corpus.packages[0].sha256"),
    ({"source": "pypi-sdist", "packages": [{"name": "demo", "version": "1.0", "sha256": "ABC"}], "include": ["*"]},
     "corpus.packages[0].sha256"),
    ({"source": "pypi-sdist", "packages": [{"name": "--index-url=http://evil", "version": "1", "sha256": GOOD_SHA}],
      "include": ["*"]}, "corpus.packages[0].name"),
    ({"source": "pypi-sdist", "packages": [{"name": "demo\n", "version": "1", "sha256": GOOD_SHA}],
      "include": ["*"]}, "corpus.packages[0].name"),
    ({"source": "pypi-sdist", "packages": [{"name": "demo", "version": "1", "sha256": GOOD_SHA + "\n"}],
      "include": ["*"]}, "corpus.packages[0].sha256"),
    ({"source": "pypi-sdist", "packages": [{"name": "demo", "version": 1.0, "sha256": GOOD_SHA}],
      "include": ["*"]}, "corpus.packages[0].version"),
    ({"source": "pypi-sdist", "packages": [{"name": "demo", "version": "1.0", "sha256": GOOD_SHA, "url": "x"}],
      "include": ["*"]}, "corpus.packages[0].url"),
    ({"source": "pypi-sdist", "packages": [{"name": "demo", "version": "1.0", "sha256": GOOD_SHA},
                                           {"name": "Demo", "version": "1.0", "sha256": GOOD_SHA}],
      "include": ["*"]}, "corpus.packages[1]"),
    (spec_for(GOOD_SHA, []), "corpus.include"),
    (spec_for(GOOD_SHA, ["*", ""]), "corpus.include[1]"),
    ({k: v for k, v in spec_for(GOOD_SHA, ["*"]).items() if k != "include"}, "corpus.include"),
    (spec_for(GOOD_SHA, ["*"], exclude="*/tests/*"), "corpus.exclude"),
    (spec_for(GOOD_SHA, ["*"], inclde=["*"]), "corpus.inclde"),
    (spec_for(GOOD_SHA, ["*"], max_member_bytes=True), "corpus.max_member_bytes"),
    (spec_for(GOOD_SHA, ["*"], max_total_bytes=0), "corpus.max_total_bytes"),
    ({**spec_for(GOOD_SHA, ["*"]), "source": "git"}, "corpus.source"),
])
def test_spec_errors_name_the_field(cache, offline, spec, field):
    with pytest.raises(SetError) as caught:
        load(spec)
    assert str(caught.value).startswith(f"{WHERE}: {field}: ")


# ---------------------------------------------------------------- fetching through pip (local, no network)

BACKEND = '''"""Minimal in-tree PEP 517 backend: enough for `pip download` to read the metadata."""
import os

def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    folder = "tinypkg-1.0.dist-info"
    os.makedirs(os.path.join(metadata_directory, folder))
    with open(os.path.join(metadata_directory, folder, "METADATA"), "w") as handle:
        handle.write("Metadata-Version: 2.1\\nName: tinypkg\\nVersion: 1.0\\n")
    return folder

def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    raise RuntimeError("not needed by pip download")
'''


def make_minimal_sdist(folder: Path) -> Path:
    """A valid sdist that pip accepts offline: the build backend is in the tree and needs nothing."""
    pyproject = b'[build-system]\nrequires = []\nbuild-backend = "tinybackend"\nbackend-path = ["."]\n'
    files = {
        "tinypkg-1.0/PKG-INFO": b"Metadata-Version: 2.1\nName: tinypkg\nVersion: 1.0\n",
        "tinypkg-1.0/pyproject.toml": pyproject,
        "tinypkg-1.0/tinybackend.py": BACKEND.encode(),
        "tinypkg-1.0/tinypkg/__init__.py": b'"""Tiny package."""\nVALUE = 42\n',
    }
    folder.mkdir(parents=True, exist_ok=True)
    return make_tar(folder / "tinypkg-1.0.tar.gz", [(tar_entry(name, data), data) for name, data in files.items()])


@pytest.fixture
def local_index(tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """pip sees only a local find-links folder: no config files, no index, no network."""
    links = tmp_path / "links"
    links.mkdir()
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(links))
    monkeypatch.setenv("PIP_DISABLE_PIP_VERSION_CHECK", "1")
    monkeypatch.delenv("PIP_CONSTRAINT", raising=False)
    return links


def tiny_spec(digest: str) -> dict:
    return {"source": "pypi-sdist", "packages": [{"name": "tinypkg", "version": "1.0", "sha256": digest}],
            "include": ["*/tinypkg/*.py"]}


def test_fetch_with_pip_verifies_caches_and_then_works_offline(local_index, cache, monkeypatch):
    sdist = make_minimal_sdist(local_index)
    digest = independent_sha256(sdist)

    documents = load(tiny_spec(digest))

    assert [(doc.id, doc.text) for doc in documents] == [
        ("tinypkg-1.0/tinypkg/__init__.py", '"""Tiny package."""\nVALUE = 42\n')]
    cached = cache / "archives" / digest / "tinypkg-1.0.tar.gz"
    assert independent_sha256(cached) == digest
    assert [path.name for path in (cache / "archives").iterdir()] == [digest]  # no staging left behind

    # The index disappears: the cached copy is enough.
    hidden = sdist.rename(sdist.with_name("hidden"))
    monkeypatch.setenv("RETRIEVAL_GATE_OFFLINE", "1")
    assert load(tiny_spec(digest)) == documents

    # A corrupted cached copy is deleted and fetched again when online.
    hidden.rename(sdist)
    cached.write_bytes(b"corrupted")
    monkeypatch.delenv("RETRIEVAL_GATE_OFFLINE")
    assert load(tiny_spec(digest)) == documents
    assert independent_sha256(cached) == digest


def test_fetched_archive_with_wrong_hash_never_enters_the_cache(local_index, cache):
    actual = independent_sha256(make_minimal_sdist(local_index))
    pinned = "f" * 64

    with pytest.raises(SetError) as caught:
        load(tiny_spec(pinned))

    # pip itself refuses it (--require-hashes) before running any of the package's build code
    assert str(caught.value) == (
        f"{WHERE}: corpus.packages[0].sha256: the index serves tinypkg==1.0 with sha256 {actual}, "
        f"expected {pinned}; pip refused it before building anything (the archive differs from the pin)")
    assert list((cache / "archives").iterdir()) == []


def test_pip_failure_shows_its_stderr_tail(local_index, cache):
    spec = tiny_spec("e" * 64)
    spec["packages"][0]["version"] = "9.9"  # not in the index
    with pytest.raises(SetError) as caught:
        load(spec)
    message = str(caught.value)
    assert message.startswith(f"{WHERE}: corpus.packages[0]: pip download of tinypkg==9.9 failed (exit 1): ")
    assert "tinypkg==9.9" in message.split("failed", 1)[1]  # pip's own last lines name the requirement
    assert "\n" not in message


def test_pip_timeout_is_reported(cache, monkeypatch):
    monkeypatch.setattr(sdist_source, "FETCH_TIMEOUT_SECONDS", 0.5)
    monkeypatch.setattr(sdist_source, "fetch_command", lambda package, destination, requirements=None: [
        sys.executable, "-c", "import sys, time; sys.stderr.write('stuck\\n'); sys.stderr.flush(); time.sleep(60)"])

    with pytest.raises(SetError, match=r"pip download of demo==1.0 timed out after 0.5 s"):
        load(spec_for("a" * 64, ["*"]))
    assert list((cache / "archives").iterdir()) == []


def test_the_corpus_loader_hands_offline_to_the_sdist_source(cache, monkeypatch):
    """Through sets/corpus.py's registry, as a set is loaded: `offline` reaches the one source that fetches."""
    from harness.sets.corpus import load_corpus
    monkeypatch.setattr(sdist_source, "fetch_archive", lambda *args: pytest.fail("must not fetch offline"))

    with pytest.raises(SetError, match="offline mode"):
        load_corpus(spec_for("cd" * 32, ["*"]), Path("."), WHERE, offline=True)
