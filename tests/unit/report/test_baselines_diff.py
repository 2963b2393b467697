"""`baselines diff OLD NEW`: what a re-baseline moved, per set and scope, and whose backend."""

import copy
import dataclasses
import sys

from harness.commands import cli
from pathlib import Path

from harness.gating.baseline import Baseline, build_baseline, write_baseline
from harness.report.baselines import render_diff
from harness.scoring.evaluate import Answer, evaluate_set
from harness.sets.loader import load_set
from tests.builders import PROVENANCE
from tests.conftest import TINY_SET

TINY = load_set(TINY_SET)
PROVENANCE = {"backend": {"label": "x", "argv": [sys.executable, "-m", "adapters.x"]},
              "adapter": {"banner": {"ready": True, "name": "x", "version": "1", "settings": {"k1": 0.9}}}}


def baseline(answers=None, version="1", k1=0.9):
    answers = answers or {q.qid: Answer(tuple(q.relevant), None, 0.002) for q in TINY.queries}
    provenance = copy.deepcopy(PROVENANCE)
    provenance["adapter"]["banner"].update(version=version, settings={"k1": k1})
    return build_baseline([evaluate_set(TINY, answers, k=10)], provenance)


def render(old, new, metrics=("recall@10",)):
    """render_diff of two baseline documents, read as the command reads its files."""
    return render_diff(Baseline.from_document(old, Path("a.json")), Baseline.from_document(new, Path("b.json")),
                       list(metrics))


def lost_first_query():
    """Every query answered perfectly but the first, which finds nothing."""
    first = TINY.queries[0]
    return {q.qid: Answer(() if q is first else tuple(q.relevant), None, 0.002) for q in TINY.queries}


def test_unchanged_baselines_say_so():
    text = render(baseline(), baseline())
    assert text.splitlines() == ["baselines diff: a.json -> b.json", "identity: unchanged (x 1)", "set tiny: unchanged",
                                 "0 of 1 sets moved; gated metrics: recall@10"]


def test_moved_scopes_flips_and_identity_are_listed():
    old, new = baseline(), baseline(lost_first_query(), version="2", k1=1.2)
    first = TINY.queries[0]
    lines = render(old, new).splitlines()
    assert lines[1:4] == ["identity: 2 fields changed", "  version '1' -> '2'", "  settings.k1 0.9 -> 1.2"]
    assert lines[4] == "set tiny: identity and query count unchanged"
    overall = old["sets"]["tiny"]["aggregates"]["overall"]["recall@10"], new["sets"]["tiny"]["aggregates"]["overall"]["recall@10"]
    assert overall[0] > overall[1]  # the run lost the first query's documents
    assert f"  overall: recall@10 {overall[0]:.3f} -> {overall[1]:.3f} ({(overall[1] - overall[0]) * 100:+.1f} points)" in lines
    assert f"  category:{first.category}: recall@10 1.000 -> " in "\n".join(lines)
    assert "  flips: 1 query found other relevant documents" in lines
    (flip,) = [line for line in lines if line.startswith(f"    {first.qid}: ")]
    assert flip.startswith(f"    {first.qid}: lost {', '.join(first.relevant)}") and "gained" not in flip
    assert lines[-1] == "1 of 1 sets moved; gated metrics: recall@10"


def test_added_and_removed_sets_and_query_counts():
    old, new = baseline(), baseline()
    new["sets"]["other"] = new["sets"].pop("tiny")
    lines = render(old, new).splitlines()
    assert "set other: added (7 queries)" in lines and "set tiny: removed (had 7 queries)" in lines
    smaller = dataclasses.replace(TINY, queries=TINY.queries[1:])  # the set without its first query
    fewer = build_baseline([evaluate_set(smaller, {q.qid: Answer(tuple(q.relevant), None, 0.002)
                                                   for q in smaller.queries}, k=10)], PROVENANCE)
    fewer["sets"]["tiny"]["latency_ms"]["p95"] = 12.0
    lines = render(old, fewer).splitlines()
    assert lines[2].startswith("set tiny: query_count 7 -> 6; p95 ") and lines[2].endswith(" -> 12.0 ms")


def test_command_reads_both_files_and_exits_0(tmp_path, capsys):
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    write_baseline(old, baseline())
    write_baseline(new, baseline(lost_first_query()))
    assert cli.main(["baselines", "diff", str(old), str(new)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"baselines diff: {old} -> {new}\n") and "flips: 1 query" in out


def test_command_refuses_an_unreadable_file_in_one_line(tmp_path, capsys):
    old = tmp_path / "old.json"
    write_baseline(old, baseline())
    (tmp_path / "new.json").write_text("{not json")
    assert cli.main(["baselines", "diff", str(old), str(tmp_path / "new.json")]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"harness: error: {tmp_path / 'new.json'}")


def test_a_set_re_baselined_by_another_backend_says_so_and_names_stay_inert():
    old, new = baseline(), baseline()
    other = copy.deepcopy(new["sets"]["tiny"])
    other["backend"] = {**other["backend"], "name": "fts5", "version": "9"}
    new["sets"]["tiny"] = other  # the file's own record unchanged: only this set's backend moved
    lines = render(old, new).splitlines()
    assert lines[1] == "identity: unchanged (x 1)"
    assert "  backend of this set: name 'x' -> 'fts5'" in lines and "  backend of this set: version '1' -> '9'" in lines
    hostile = baseline()
    hostile["sets"]["\x1b[2Jtiny"] = hostile["sets"].pop("tiny")
    text = render(old, hostile)
    assert "\x1b" not in text and "set \\x1b[2Jtiny: added" in text


def test_a_calibration_added_or_removed_is_said_for_its_set():
    plain = baseline()
    calibrated = copy.deepcopy(plain)
    calibrated["sets"]["tiny"]["calibration"] = {
        "runs": 2, "alpha": 0.01, "rebuild": None, "varying": {"recall@10": ["tiny-01"]},
        "quality": {"overall": {"recall@10": {"means": [1.0, 0.8], "query_sd": 0.0}}}}
    added = render(plain, calibrated)
    assert "set tiny: numbers unchanged\n  calibration added: recall@10 in 1 scope; 2 runs, alpha 0.01, 1 query varied\n" \
        in added
    assert "  calibration removed\n" in render(calibrated, plain)
    assert "set tiny: unchanged" in render(plain, plain)


def test_an_older_file_s_backend_compares_as_the_identity_check_reads_it():
    """An older file records its backend's command as `argv`: the diff reads it as the identity check does
    (the same command, not "None -> [...]"); the label and the settings it lacks are changes."""
    old, new = baseline(), baseline()
    old["backend"] = {"label": "old", "name": "x", "version": "1", "argv": [sys.executable, "-m", "adapters.x"]}
    lines = render(old, new).splitlines()
    assert lines[1:4] == ["identity: 2 fields changed", "  label 'old' -> 'x'", "  settings.k1 '(none)' -> 0.9"]
    assert lines[4:6] == ["set tiny: identity and query count unchanged", "  backend of this set: unchanged"]
