"""How many CPUs this process may use: its affinity mask, capped by its cgroup's CPU quota.

Why: `--threads 0` (the default) embeds with one batch worker per usable CPU. In a container
limited to 2 CPUs on a 64-core host the affinity mask still lists all 64, and 64 workers
would share 2 CPUs' worth of time, each holding a batch's intermediates. The quota, rounded
up, caps the count, as Go's runtime and the JVM read it: cgroup v2 `cpu.max` ("200000 100000"
is 2 CPUs, "max" none), or v1 `cpu.cfs_quota_us` over `cpu.cfs_period_us` (-1: none), at the
process's own cgroup and every ancestor below the mount (the tightest wins). Anything
unreadable means no quota: the affinity mask alone, as before. Linux only; elsewhere the
machine's count.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

PROC_SELF = Path("/proc/self")  # where the cgroup membership and mounts are read (tests point it elsewhere)


def usable_cpus(proc: Path | None = None) -> int:
    """CPUs this process may run on: its affinity mask (not the machine's count), capped by a CPU quota."""
    quota = quota_cpus(proc)
    return _capped(quota) if quota is not None else _affinity()


def intra_op_threads(threads: int, proc: Path | None = None) -> int:
    """onnxruntime's intra-op threads for `--threads`: as given; for 0 its own choice, unless a CPU quota caps it.

    onnxruntime's automatic count reads the affinity mask, not the quota, so under a quota it
    gets the capped count instead.
    """
    if threads > 0:
        return threads
    quota = quota_cpus(proc)
    return _capped(quota) if quota is not None else 0


def _affinity() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def _capped(quota: int) -> int:
    return max(1, min(_affinity(), quota))


def quota_cpus(proc: Path | None = None) -> int | None:
    """The CPUs the cgroup CPU quota allows (rounded up), or None when there is none or it cannot be read."""
    proc = proc or PROC_SELF
    try:
        memberships = (proc / "cgroup").read_text().splitlines()
        mounts = (proc / "mountinfo").read_text().splitlines()
    except OSError:
        return None
    limits = []
    for found in _cpu_folders(memberships, mounts):
        limit = _folder_limit(found)
        if limit is not None:
            limits.append(limit)
    return math.ceil(min(limits)) if limits else None


def _cpu_folders(memberships: list[str], mounts: list[str]) -> list[tuple[str, Path, Path]]:
    """(version, mount point, the process's folder) for the cgroup v2 tree and the v1 cpu controller."""
    paths: dict[str, str] = {}
    for line in memberships:  # "ID:controllers:/path"; v2 is "0::/path"
        parts = line.split(":", 2)
        if len(parts) == 3:
            if parts[0] == "0" and parts[1] == "":
                paths["v2"] = parts[2]
            elif "cpu" in parts[1].split(","):
                paths["v1"] = parts[2]
    found = []
    for line in mounts:  # "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS ... - FSTYPE SOURCE SUPER_OPTIONS"
        fields, _, tail = line.partition(" - ")
        fields, tail = fields.split(), tail.split()
        if len(fields) < 5 or len(tail) < 3:
            continue
        root, mount_point = fields[3], Path(fields[4])
        if tail[0] == "cgroup2":
            version = "v2"
        elif tail[0] == "cgroup" and "cpu" in tail[2].split(","):
            version = "v1"
        else:
            continue
        if version in paths:
            found.append((version, mount_point, _inside(mount_point, root, paths[version])))
    return found


def _inside(mount_point: Path, root: str, cgroup_path: str) -> Path:
    """The folder of `cgroup_path` under a mount of the hierarchy's `root` (a container sees its own root)."""
    if root != "/" and (cgroup_path == root or cgroup_path.startswith(root.rstrip("/") + "/")):
        cgroup_path = cgroup_path[len(root):]
    return mount_point / cgroup_path.lstrip("/")


def _folder_limit(found: tuple[str, Path, Path]) -> float | None:
    """The tightest quota, in CPUs, from the process's folder up to the mount point."""
    version, mount_point, folder = found
    limits = []
    while True:
        limit = _v2_limit(folder) if version == "v2" else _v1_limit(folder)
        if limit is not None:
            limits.append(limit)
        if folder == mount_point or mount_point not in folder.parents:
            break
        folder = folder.parent
    return min(limits) if limits else None


def _v2_limit(folder: Path) -> float | None:
    try:
        quota, period = (folder / "cpu.max").read_text().split()[:2]
        return int(quota) / int(period) if quota != "max" and int(quota) > 0 and int(period) > 0 else None
    except (OSError, ValueError):
        return None


def _v1_limit(folder: Path) -> float | None:
    try:
        quota = int((folder / "cpu.cfs_quota_us").read_text())
        period = int((folder / "cpu.cfs_period_us").read_text())
        return quota / period if quota > 0 and period > 0 else None
    except (OSError, ValueError):
        return None
