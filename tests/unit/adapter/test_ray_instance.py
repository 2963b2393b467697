"""The local Ray instance's process mechanics that need no Ray: where its folder goes, its token.

Starting and stopping a real instance: tests/contract/test_ray_executor.py.
"""

from harness.adapter import ray_instance


def test_a_temp_folder_too_long_for_rays_sockets_gives_way_to_tmp(monkeypatch, tmp_path):
    monkeypatch.setattr(ray_instance.tempfile, "gettempdir", lambda: str(tmp_path / ("x" * 60)))
    assert ray_instance._short_temp_dir() == "/tmp"
    monkeypatch.setattr(ray_instance.tempfile, "gettempdir", lambda: "/tmp/rg-t-abcdefgh")
    assert ray_instance._short_temp_dir() is None  # the default temp folder is short enough


def test_one_random_token_per_process():
    first = ray_instance.token()
    assert first == ray_instance.token() and first["RAY_AUTH_MODE"] == "token"
    assert len(first["RAY_AUTH_TOKEN"]) == 64 and first["RAY_AUTH_TOKEN"] != "0" * 64
