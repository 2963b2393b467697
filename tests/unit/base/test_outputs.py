"""Outputs: streams are written into, symlinks refused, regular files replaced atomically, and the
preflight refuses an output the run could not or must not write, before any work.

Devices are private `mknod` copies inside the temp folder (never the real /dev); the full and
read-only disks are tiny tmpfs mounts (root only; skipped elsewhere).
"""

import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from harness.errors import UsageError
from harness.fsutil import atomic_write_text, check_outputs, output_refusal, write_output, xml_safe
from harness.strict_json import read_json_file, strict_json_dumps
from tests.conftest import REPO_ROOT

ROOT = os.geteuid() == 0


def null_device(folder: Path) -> Path:
    path = folder / "null"
    os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # a copy of /dev/null's node
    return path


@pytest.mark.skipif(not ROOT, reason="mknod needs root")
def test_a_device_output_is_written_into_and_stays_a_device(tmp_path):
    device = null_device(tmp_path)
    atomic_write_text(device, "report\n")
    write_output(device, "again\n", "--junit")
    assert stat.S_ISCHR(os.lstat(device).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["null"]  # no temp file left


@pytest.mark.skipif(not ROOT, reason="mknod needs root")
def test_a_symlink_to_a_device_is_written_into_and_the_link_kept(tmp_path):
    device = null_device(tmp_path)
    (tmp_path / "link").symlink_to(device)
    write_output(tmp_path / "link", "x", "--out")
    assert os.path.islink(tmp_path / "link") and stat.S_ISCHR(os.stat(device).st_mode)


def test_a_fifo_output_is_written_into_for_its_reader(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()))
    reader.start()
    # The reader may not have opened yet: retry on "no reader" a while, as a user would.
    for _ in range(2000):
        try:
            write_output(fifo, "through the pipe\n", "--summary")
            break
        except UsageError as exc:
            assert "no reader" in str(exc)
            threading.Event().wait(0.005)
    reader.join(30)
    assert got == [b"through the pipe\n"] and stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_fifo_without_a_reader_is_refused_not_waited_on(tmp_path):
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(UsageError, match=r"^--out: .*pipe: is a FIFO with no reader; start the reader first$"):
        write_output(tmp_path / "pipe", "x", "--out")


def test_dev_stdout_writes_to_what_the_shell_opened(tmp_path):
    # A real process whose stdout is a file: the report lands in it, appended, and the file stays a file.
    target = tmp_path / "captured.txt"
    code = ("import sys; print('before', flush=True); from harness.fsutil import write_output; "
            "write_output('/dev/stdout', 'the report\\n', '--out')")
    with open(target, "w") as handle:
        subprocess.run([sys.executable, "-c", code], stdout=handle, check=True, timeout=60,
                       cwd=REPO_ROOT)
    assert target.read_text() == "before\nthe report\n"


@pytest.mark.parametrize("make", ["link-to-file", "dangling-link", "directory"])
def test_symlinks_and_folders_are_refused_and_left_alone(tmp_path, make):
    victim = tmp_path / "victim.json"
    victim.write_text("committed\n")
    out = tmp_path / "out"
    if make == "link-to-file":
        out.symlink_to(victim)
    elif make == "dangling-link":
        out.symlink_to(tmp_path / "nowhere")
    else:
        out.mkdir()
    with pytest.raises(UsageError) as caught:
        write_output(out, "report", "--out")
    message = str(caught.value)
    assert message.startswith(f"--out: {out}: ") and "\n" not in message
    assert victim.read_text() == "committed\n"
    assert not (tmp_path / "nowhere").exists()
    assert output_refusal(out) is not None


def test_a_socket_is_refused(tmp_path):
    import socket
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(tmp_path / "s"))
    try:
        with pytest.raises(UsageError, match="block device or socket"):
            write_output(tmp_path / "s", "x", "--html")
    finally:
        sock.close()


@pytest.fixture
def tiny_disk(tmp_path):
    if not ROOT:
        pytest.skip("mounting a tmpfs needs root")
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], capture_output=True)
    if done.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_full_disk_is_one_line_and_keeps_the_old_file(tiny_disk):
    path = tiny_disk / "report.json"
    write_output(path, "old\n", "--out")
    with pytest.raises(UsageError, match=r"^--out: .*report\.json: cannot write: No space left on device$"):
        write_output(path, "x" * (1 << 20), "--out")
    assert path.read_text() == "old\n"
    assert sorted(p.name for p in tiny_disk.iterdir()) == ["report.json"]


def test_a_read_only_folder_is_refused_by_the_preflight_even_as_root(tiny_disk):
    subprocess.run(["mount", "-o", "remount,ro", str(tiny_disk)], check=True)
    with pytest.raises(UsageError, match=r"^--junit: .*gates\.xml: cannot create a file in its folder: "
                                         r"Read-only file system$"):
        check_outputs({"--junit": tiny_disk / "gates.xml"}, {})
    with pytest.raises(UsageError, match=r"where its folder would be created\): Read-only file system$"):
        check_outputs({"--out": tiny_disk / "new" / "deeper" / "r.json"}, {})


def test_preflight_accepts_ordinary_outputs_and_creates_nothing(tmp_path):
    check_outputs({"--out": tmp_path / "a" / "b" / "report.json", "--junit": tmp_path / "g.xml",
                   "--html": None, "--summary": Path("/dev/null")}, {"--baseline": tmp_path / "missing.json"})
    assert list(tmp_path.iterdir()) == []


def test_preflight_refuses_an_output_that_is_a_protected_input(tmp_path):
    baseline = tmp_path / "baselines" / "current.json"
    baseline.parent.mkdir()
    baseline.write_text("{}")
    protected = {"--baseline": baseline, "set code: queries.jsonl": tmp_path / "q.jsonl"}
    with pytest.raises(UsageError, match=r"^--out: .*current\.json: is the same file as --baseline; refusing"):
        check_outputs({"--out": tmp_path / "baselines" / ".." / "baselines" / "current.json"}, protected)
    os.link(baseline, tmp_path / "hard.json")  # another name for the same inode
    with pytest.raises(UsageError, match=r"^--html: .*hard\.json: is the same file as --baseline"):
        check_outputs({"--html": tmp_path / "hard.json"}, protected)
    (tmp_path / "soft").symlink_to(tmp_path / "baselines")  # a folder link resolving to the baseline
    with pytest.raises(UsageError, match=r"is the same file as --baseline"):
        check_outputs({"--summary": tmp_path / "soft" / "current.json"}, protected)
    with pytest.raises(UsageError, match=r"is the same file as set code: queries\.jsonl"):
        check_outputs({"--junit": tmp_path / "q.jsonl"}, protected)  # not yet existing: by path


def test_preflight_refuses_two_outputs_on_one_file(tmp_path):
    with pytest.raises(UsageError, match=r"^--junit: .*r\.json: is the same file as --out"):
        check_outputs({"--out": tmp_path / "r.json", "--junit": tmp_path / "./r.json"}, {})


def test_preflight_refuses_names_too_long_and_non_folders(tmp_path):
    with pytest.raises(UsageError, match=r"longer than the 255 bytes"):
        check_outputs({"--out": tmp_path / ("x" * 256)}, {})
    (tmp_path / "file").write_text("")
    with pytest.raises(UsageError, match=r"file is not a folder"):
        check_outputs({"--out": tmp_path / "file" / "r.json"}, {})
    # A 255-byte name is allowed, and the atomic write's temp name still fits beside it.
    write_output(tmp_path / ("y" * 255), "ok", "--out")
    assert (tmp_path / ("y" * 255)).read_text() == "ok"


def test_strict_json_dumps_refuses_nan_and_surrogates():
    assert strict_json_dumps({"a": [1.5]}) == '{"a": [1.5]}'
    with pytest.raises(ValueError, match=r"^report: cannot be written as strict JSON: .*NaN"):
        strict_json_dumps({"a": float("nan")}, what="report")
    with pytest.raises(ValueError, match=r"lone surrogate"):
        strict_json_dumps({"a": "x\ud83d"}, what="report", ensure_ascii=False)


def test_read_json_file_refuses_nan_infinity_and_huge_integers(tmp_path):
    for text, why in (('{"a": NaN}', "NaN is not a JSON number"), ('[-Infinity]', "-Infinity is not"),
                      ('{"a": ' + "9" * 400 + "}", "an integer of 400 digits is too large")):
        (tmp_path / "f.json").write_text(text)
        with pytest.raises(UsageError, match=r"f\.json: budgets, not valid strict JSON \(" + why):
            read_json_file(tmp_path / "f.json", UsageError, what="budgets")
    (tmp_path / "f.json").write_text('{"a": ' + "9" * 300 + "}")
    assert read_json_file(tmp_path / "f.json", UsageError)["a"] == int("9" * 300)


def test_xml_safe_strips_colour_codes_and_forbidden_characters():
    import xml.dom.minidom
    text = "\x1b[31mFAIL\x1b[0m \x1b]0;title\x07done\x00\x08\x1f\ud800\ufffe tab\tok \U0001f600 \x9b2J\x85\x7f é"
    cleaned = xml_safe(text)
    assert cleaned == "FAIL done\ufffd\ufffd\ufffd\ufffd\ufffd tab\tok \U0001f600 \ufffd2J\ufffd\ufffd é"
    xml.dom.minidom.parseString(f"<a>{cleaned}</a>".encode("utf-8", "surrogatepass"))  # well-formed
    json.dumps(cleaned)


def test_open_log_appends_to_files_and_devices_and_refuses_links_and_fifos(tmp_path):
    from harness.fsutil import open_log
    log = tmp_path / "logs" / "a.log"
    with open_log(log) as handle:
        handle.write(b"one\n")
    with open_log(log) as handle:
        handle.write(b"two\n")
    assert log.read_bytes() == b"one\ntwo\n"
    victim = tmp_path / "victim"
    victim.write_text("keep")
    (tmp_path / "link.log").symlink_to(victim)
    with pytest.raises(UsageError, match=r"^adapter log: .*link\.log: is a symbolic link"):
        open_log(tmp_path / "link.log")
    assert victim.read_text() == "keep"
    os.mkfifo(tmp_path / "fifo.log")
    with pytest.raises(UsageError, match=r"fifo\.log: is a FIFO"):
        open_log(tmp_path / "fifo.log")
    if ROOT:
        with open_log(null_device(tmp_path)) as handle:
            handle.write(b"discarded")


def test_junit_with_ansi_colour_codes_is_well_formed_xml():
    import dataclasses
    import xml.dom.minidom

    from harness.report.junit import render_junit
    from tests.reports import gated_report
    report = gated_report()
    message = "\x1b[31mrecall dropped\x1b[0m \x00"
    gates = (dataclasses.replace(report.gates[1], message=message),) + report.gates[2:]
    document = xml.dom.minidom.parseString(render_junit(dataclasses.replace(report, gates=gates)).encode("utf-8"))
    failure = document.getElementsByTagName("failure")[0]
    assert failure.getAttribute("message") == "recall dropped \ufffd"  # colour codes gone, NUL replaced


def test_the_json_report_is_strict():
    import dataclasses
    import math

    from harness.measured import Latency
    from tests.reports import gated_report
    report = gated_report()
    broken = dataclasses.replace(report.sets[0], latency=Latency(1, 1.0, math.nan, 1.0))
    with pytest.raises(ValueError):
        dataclasses.replace(report, sets=(broken,)).to_json()


def test_the_installed_shipped_data_is_never_a_write_target(tmp_path, monkeypatch):
    """Installed from a wheel, the package data `harness._shipped` holds the sets and baselines every user of the
    environment reads."""
    import harness.shipped
    from harness.fsutil import append_output, open_log
    packaged = tmp_path / "site-packages" / "harness" / "_shipped"
    (packaged / "baselines").mkdir(parents=True)
    baseline = packaged / "baselines" / "current.json"
    baseline.write_text("{}\n")
    monkeypatch.setattr(harness.shipped, "_PACKAGED", packaged)
    assert harness.shipped.is_shipped_data(baseline) and harness.shipped.is_shipped_data(packaged / "sets" / "x")
    assert not harness.shipped.is_shipped_data(tmp_path / "site-packages" / "harness" / "other.json")
    why = "is the installed harness's shipped data, which every user of this environment reads; never written"
    assert output_refusal(baseline).startswith(why)
    for write in (lambda path: write_output(path, "x", "--out"), lambda path: append_output(path, "x", "--summary"),
                  lambda path: open_log(path, "adapter log"),
                  lambda path: check_outputs({"--out": path}, {})):
        for path in (baseline, packaged / "baselines" / "new.json"):
            with pytest.raises(UsageError, match=why):
                write(path)
    assert baseline.read_text() == "{}\n" and sorted(p.name for p in (packaged / "baselines").iterdir()) == [
        "current.json"]
