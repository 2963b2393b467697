"""adapters/cpus.py: the affinity mask capped by a cgroup CPU quota, read from fake /proc/self and cgroup files.

The quotas are written by hand below, so each expected count is the quota over the period,
rounded up, worked out here and not by the code under test.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import require_modules

from adapters import cpus


def fake_proc(tmp_path: Path, cgroup: str, mountinfo: str) -> Path:
    proc = tmp_path / "proc-self"
    proc.mkdir()
    (proc / "cgroup").write_text(cgroup)
    (proc / "mountinfo").write_text(mountinfo)
    return proc


def write(folder: Path, **files: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name.replace("_dot_", ".")).write_text(text + "\n")


def v2_machine(tmp_path: Path, cgroup_path: str = "/kubepods/pod1/box") -> tuple[Path, Path]:
    mount = tmp_path / "cgroup2"
    proc = fake_proc(tmp_path, f"0::{cgroup_path}\n",
                     f"30 23 0:26 / {mount} rw,nosuid,nodev - cgroup2 cgroup2 rw,nsdelegate\n"
                     f"31 23 0:27 / {tmp_path / 'other'} rw - tmpfs tmpfs rw\n")
    return proc, mount


def test_cgroup_v2_quota_rounds_up_and_the_tightest_ancestor_wins(tmp_path):
    proc, mount = v2_machine(tmp_path)
    write(mount / "kubepods/pod1/box", cpu_dot_max="150000 100000")  # 1.5 CPUs -> 2
    assert cpus.quota_cpus(proc) == 2
    write(mount / "kubepods/pod1", cpu_dot_max="50000 100000")  # the pod: half a CPU -> 1
    write(mount / "kubepods", cpu_dot_max="max 100000")
    assert cpus.quota_cpus(proc) == 1
    assert cpus.usable_cpus(proc) == 1


def test_no_quota_or_unreadable_files_leave_the_affinity_mask(tmp_path):
    proc, mount = v2_machine(tmp_path)
    affinity = len(os.sched_getaffinity(0))
    assert cpus.quota_cpus(proc) is None  # no cpu.max at all
    write(mount / "kubepods/pod1/box", cpu_dot_max="max 100000")
    assert cpus.quota_cpus(proc) is None and cpus.usable_cpus(proc) == affinity
    write(mount / "kubepods/pod1/box", cpu_dot_max="garbage")
    assert cpus.quota_cpus(proc) is None
    assert cpus.quota_cpus(tmp_path / "no-such-proc") is None
    assert cpus.intra_op_threads(0, proc) == 0  # onnxruntime's own choice, as before
    assert cpus.intra_op_threads(3, proc) == 3


def test_a_quota_above_the_affinity_mask_does_not_raise_the_count(tmp_path):
    proc, mount = v2_machine(tmp_path)
    write(mount / "kubepods/pod1/box", cpu_dot_max="6400000 100000")  # 64 CPUs
    assert cpus.quota_cpus(proc) == 64
    assert cpus.usable_cpus(proc) == len(os.sched_getaffinity(0))


def test_cgroup_v1_cpu_controller_in_a_container_that_sees_its_own_root(tmp_path):
    mount = tmp_path / "cpu,cpuacct"
    proc = fake_proc(tmp_path, "5:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n3:cpuset:/docker/abc\n",
                     f"40 31 0:33 /docker/abc {mount} rw - cgroup cgroup rw,cpu,cpuacct\n"
                     f"41 31 0:34 /docker/abc {tmp_path / 'cpuset'} rw - cgroup cgroup rw,cpuset\n")
    write(mount, cpu_dot_cfs_quota_us="250000", cpu_dot_cfs_period_us="100000")  # 2.5 CPUs -> 3
    assert cpus.quota_cpus(proc) == 3
    write(mount, cpu_dot_cfs_quota_us="-1", cpu_dot_cfs_period_us="100000")
    assert cpus.quota_cpus(proc) is None


def test_the_embedder_runs_as_many_batches_and_query_threads_as_the_quota_allows(tmp_path, monkeypatch):
    require_modules("onnxruntime")
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one CPU: a quota of one cannot lower the count")
    from adapters.embedder import EmbedOptions, Embedder
    from tests.tiny_onnx import write_model, write_tokenizer

    proc, mount = v2_machine(tmp_path)
    write(mount / "kubepods/pod1/box", cpu_dot_max="100000 100000")  # 1 CPU
    monkeypatch.setattr(cpus, "PROC_SELF", proc)
    model, _, _ = write_model(tmp_path / "model.onnx")
    embedder = Embedder(model, write_tokenizer(tmp_path / "tokenizer.json"), EmbedOptions(threads=0))
    assert embedder.workers == 1
    assert embedder._session_options.intra_op_num_threads == 1
