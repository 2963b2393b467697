"""Atomic writes: readers never see a partial file, the mode is a plain file's, failures leave no litter."""

import os
import stat

import pytest

from harness.fsutil import atomic_write_bytes, atomic_write_text, cache_dir


def test_replaces_whole_file_with_normal_mode(tmp_path):
    path = tmp_path / "deep" / "b.json"
    atomic_write_text(path, "one")
    atomic_write_text(path, "two")
    assert path.read_text() == "two"
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask
    assert sorted(p.name for p in path.parent.iterdir()) == ["b.json"]


def test_a_failed_write_keeps_the_old_file_and_no_temp(tmp_path, monkeypatch):
    path = tmp_path / "b.json"
    atomic_write_text(path, "old")
    monkeypatch.setattr(os, "replace", lambda *a: (_ for _ in ()).throw(OSError("disk full")))
    with pytest.raises(OSError):
        atomic_write_bytes(path, b"new")
    assert path.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.json"]


def test_cache_dir_honours_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("RETRIEVAL_GATE_CACHE", str(tmp_path / "c"))
    assert cache_dir("bm25") == tmp_path / "c" / "bm25" and (tmp_path / "c" / "bm25").is_dir()


def test_an_unusable_cache_folder_is_a_usage_error_an_adapter_can_still_catch(tmp_path, monkeypatch):
    from harness.errors import CacheFolderError
    (tmp_path / "file").write_text("not a folder")
    monkeypatch.setenv("RETRIEVAL_GATE_CACHE", str(tmp_path / "file"))
    with pytest.raises(CacheFolderError, match=r"file/bm25: the user cache folder cannot be used \(Not a directory; "
                                               r"from \$RETRIEVAL_GATE_CACHE\)") as caught:
        cache_dir("bm25")
    assert caught.value.exit_code == 2 and isinstance(caught.value, OSError)  # adapters/bm25.py goes on without it


def test_a_write_error_without_a_file_name_is_given_the_target(tmp_path, monkeypatch):
    import errno
    monkeypatch.setattr(os, "fsync", lambda fd: (_ for _ in ()).throw(OSError(errno.ENOSPC, "No space left")))
    with pytest.raises(OSError) as caught:
        atomic_write_bytes(tmp_path / "out.json", b"data")
    assert caught.value.filename == str(tmp_path / "out.json") and caught.value.errno == errno.ENOSPC
    assert list(tmp_path.iterdir()) == []
