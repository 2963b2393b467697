"""benchmarks/set_power.py: the simulated change has the size asked, and the detectable shift behaves as the test allows."""

from __future__ import annotations

import json
import random

import pytest

from benchmarks import set_power
from benchmarks.set_power import Scored
from tests.conftest import REPO_ROOT, require_modules


def _scored(n: int, base: float = 0.0) -> list[Scored]:
    return [Scored(f"q{i:03d}", f"q{i:03d}", base) for i in range(n)]


def test_a_simulated_change_keeps_the_real_moves_and_adds_real_sized_ones_to_reach_its_size():
    scored = _scored(100)
    change = {"q000": 1.0, "q001": -0.5}  # the real change moved two queries
    simulated = set_power.simulated_change(scored, change, 0.05, [0.5], random.Random(3))
    assert sum(simulated.values()) / len(scored) == pytest.approx(0.05)
    assert abs(simulated["q000"]) == 1.0 and abs(simulated["q001"]) == 0.5  # moved as far, either way
    added = {qid: value for qid, value in simulated.items() if qid not in change and value}
    assert added and all(value == 0.5 for value in added.values())  # the effect: steps of the real size, one way


def test_a_change_the_set_has_no_room_for_is_not_made():
    # nothing can go up from recall 1.0: no change of +5 points exists here, and none is pretended
    assert set_power.simulated_change(_scored(10, base=1.0), {}, 0.05, [1.0], random.Random(0)) is None
    assert set_power.power(_scored(10, base=1.0), {}, 0.05, [1.0], trials=5, resamples=100, seed=0) == 0.0


@pytest.mark.parametrize("units, expected_none", [(5, True), (400, False)])
def test_a_set_too_small_for_the_sign_flip_test_detects_nothing(units, expected_none):
    # With 5 resampling units every change, all of them one way, has p = 2/2**5 = 0.0625 at best:
    # never below 0.05, whatever its size. 400 units detect a change of a few points.
    points, power = set_power.detectable_points(_scored(units), {}, [1.0], trials=20, resamples=500, seed=0)
    assert (points is None) is expected_none
    if not expected_none:
        assert points <= 3.0 and power >= set_power.POWER


def test_noise_raises_the_smallest_detectable_shift():
    scored = _scored(400, base=0.5)
    quiet = {}
    noisy = {f"q{i:03d}": 0.5 for i in range(0, 400, 5)}  # 80 queries moved by half a point each
    low, _ = set_power.detectable_points(scored, quiet, [0.5], trials=30, resamples=500, seed=1)
    high, _ = set_power.detectable_points(scored, noisy, [0.5], trials=30, resamples=500, seed=1)
    assert low is not None and high is not None and high > low


@pytest.mark.parametrize("name", ["dedupe-hard", "memory-hard"])
def test_bm25_here_ranks_as_the_adapter_did_for_the_committed_baseline(name):
    # An independent check of recall_per_query: the baseline was written by a real run of
    # `python -m adapters.bm25` through the harness (bash .ci/gate companions bm25).
    require_modules("numpy")
    from adapters.bm25_index import BM25Settings
    from harness.sets.loader import load_set

    recorded = json.loads((REPO_ROOT / "baselines" / "companions" / "current.json").read_text())["sets"][name]
    query_set = load_set(REPO_ROOT / "sets" / name)
    assert recorded["revision"] == query_set.revision
    ours = set_power.recall_per_query(query_set, BM25Settings(use_cache=False))
    assert ours and ours == {qid: row["metrics"]["recall@10"] for qid, row in recorded["queries"].items()
                             if qid in ours}
    assert len(ours) == recorded["aggregates"]["overall"]["n"]  # every scored query, nothing else
