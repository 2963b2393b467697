"""The two statistics engines: the numpy one gives the pure-Python one's numbers byte for byte, and
both agree, within Monte Carlo error, with an independent numpy bootstrap written here.

numpy comes with the [test] extra; without it these tests skip, except under CI=true, where they fail.
"""

import json
import random
import subprocess
import sys

import pytest

from harness.scoring import stats
from harness.scoring.compare import RunView, compare, compare_many
from harness.scoring.stats import bootstrap_ci, group_differences, paired_test, randomization_p_value
from harness.measured import QueryNumbers
from tests.builders import make_report, set_numbers
from tests.conftest import REPO_ROOT, require_modules
from tests.reports import GOOD


@pytest.fixture
def np():
    require_modules("numpy")
    import numpy
    return numpy


def _runs(rng: random.Random, n: int, *, grouped: bool):
    """Base and candidate per-query values shaped like real metrics: repeated fractions, some equal."""
    grid = [0.0, 0.25, 1 / 3, 0.5, 2 / 3, 1.0]
    base = {f"q{i:04d}": rng.choice(grid + [rng.random()]) for i in range(n)}
    candidate = {qid: min(1.0, max(0.0, value + rng.choice([0.0, 0.0, 0.1, -0.2, 1 / 7, -1 / 3])))
                 for qid, value in base.items()}
    groups = {qid: f"g{rng.randrange(max(1, n // 3))}" for qid in base} if grouped else None
    return base, candidate, groups


@pytest.mark.parametrize("trial", range(24))
def test_the_numpy_engine_gives_the_python_engines_paired_test_byte_for_byte(np, trial):
    rng = random.Random(trial)
    # Sizes around the 32-bit word edges of getrandbits (32, 33, 64, 65 moving groups) and tiny ones.
    n = [1, 2, 5, 32, 33, 64, 65, 150][trial % 8]
    base, candidate, groups = _runs(rng, n, grouped=trial % 3 == 0)
    seed = rng.randrange(2 ** 40)
    python = paired_test(base, candidate, groups, resamples=600, seed=seed, engine="python")
    vectorised = paired_test(base, candidate, groups, resamples=600, seed=seed, engine="numpy")
    assert repr(vectorised) == repr(python)


def test_randomization_counts_are_equal_when_every_group_moves_and_when_none_does(np):
    clusters = [(0.5, 1), (-0.25, 2), (1 / 3, 1)] * 20  # 60 moving groups: two 32-bit words
    for engine in stats.ENGINES:
        assert randomization_p_value(clusters, resamples=999, seed=4, engine=engine) == \
            randomization_p_value(clusters, resamples=999, seed=4, engine="python")
    zeros = [(0.0, 1)] * 5
    assert {randomization_p_value(zeros, resamples=50, engine=e) for e in stats.ENGINES} == {1.0}


def test_integer_metric_values_give_equal_numbers_on_both_engines(np):
    base = {f"q{i}": i % 2 for i in range(40)}  # hit@10 stored as 0/1
    candidate = {qid: 1 for qid in base}
    results = {engine: paired_test(base, candidate, resamples=500, seed=9, engine=engine) for engine in stats.ENGINES}
    assert repr(results["numpy"]) == repr(results["python"])


def test_the_same_inputs_and_seed_give_the_same_output_within_an_engine(np):
    base, candidate, groups = _runs(random.Random(5), 90, grouped=True)
    for engine in stats.ENGINES:
        stats.bootstrap_statistics.cache_clear()
        first = paired_test(base, candidate, groups, resamples=400, seed=1, engine=engine)
        stats.bootstrap_statistics.cache_clear()
        assert paired_test(base, candidate, groups, resamples=400, seed=1, engine=engine) == first
        assert paired_test(base, candidate, groups, resamples=400, seed=2, engine=engine) != first


def _view(label: str, values: dict[str, dict[str, float]], latencies: dict[str, float]) -> RunView:
    rows = [QueryNumbers(qid, query=qid, metrics=metrics, category=["a", "b", "c"][int(qid[1:]) % 3],
                         split=["development", "held-out"][int(qid[1:]) % 2], group=f"g{int(qid[1:]) // 2}",
                         latency_ms=latencies[qid]) for qid, metrics in values.items()]
    return RunView(label, {"version": 1}, {"s": set_numbers(rows)}, condition="c", machine={"cpus": 2})


def _views(n: int, candidates: int):
    rng = random.Random(11)
    base, _, _ = _runs(rng, n, grouped=False)
    latency = {qid: rng.uniform(1, 30) for qid in base}
    views = [_view("base", {q: {"recall@10": v, "ndcg@10": v / 2} for q, v in base.items()}, latency)]
    for index in range(candidates):
        moved = {q: min(1.0, max(0.0, v + rng.choice([0.0, 0.0, 0.25, -0.25 * index]))) for q, v in base.items()}
        views.append(_view(f"c{index}", {q: {"recall@10": v, "ndcg@10": v / 2} for q, v in moved.items()},
                           {q: ms * rng.uniform(0.8, 1.3) for q, ms in latency.items()}))
    return views


def test_a_whole_comparison_is_the_same_document_on_both_engines_but_for_the_engine_named(np):
    base, *candidates = _views(120, 3)
    documents = {}
    for engine in stats.ENGINES:
        suite = compare_many(base, candidates, resamples=700, seed=3, engine=engine)
        document = suite.to_dict()
        assert document["statistics_engine"] == engine
        assert {c["engine"] for c in document["candidates"]} == {engine}
        assert all(c["latency"] for c in document["candidates"])  # the latency bootstrap ran too
        documents[engine] = json.dumps(document).replace(f'"{engine}"', '"ENGINE"')
    assert documents["numpy"] == documents["python"]


def test_the_default_engine_is_numpy_where_installed_and_python_without_it(np, monkeypatch):
    assert stats.default_engine() == "numpy"
    stats.default_engine.cache_clear()
    monkeypatch.setitem(sys.modules, "numpy", None)  # `import numpy` now raises ImportError
    monkeypatch.delitem(sys.modules, "harness.scoring.numpy_engine", raising=False)
    try:
        assert stats.default_engine() == "python"
        with pytest.raises(ValueError, match="numpy is not installed"):
            stats.check_engine("numpy")
        base, candidate = _views(12, 1)
        assert compare(base, candidate, resamples=50).engine == "python"
    finally:
        stats.default_engine.cache_clear()
    with pytest.raises(ValueError, match="must be one of python, numpy, got 'fortran'"):
        stats.check_engine("fortran")


def test_the_compare_command_prints_the_same_without_numpy_except_the_engine_named(np, tmp_path, monkeypatch):
    """A real `python -m harness compare` of real reports with numpy importable, then with it hidden."""
    worse = dict(GOOD, **{"how is the config file parsed": ["doc-02"], "do migrations roll back": ["doc-03"]})
    paths = [make_report(tmp_path, monkeypatch, name, answers) for name, answers in
             (("base", GOOD), ("worse", worse), ("same", GOOD))]
    hide = "sys.modules['numpy'] = None; "
    outputs = {}
    for engine, prefix in (("numpy", ""), ("python", hide)):
        code = "import sys; " + prefix + "from harness.commands.cli import main; sys.exit(main(sys.argv[1:]))"
        completed = subprocess.run([sys.executable, "-c", code, "compare", *map(str, paths), "--resamples", "500"],
                                   cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
        assert completed.returncode == 0, completed.stderr
        assert f"({engine} engine)" in completed.stdout and "p95" in completed.stdout
        outputs[engine] = completed.stdout.replace(f"({engine} engine)", "(ENGINE)")
    assert outputs["numpy"] == outputs["python"]


def _independent_bootstrap(np, clusters, resamples: int, seed: int, confidence: float):
    """A cluster bootstrap written directly in numpy, with numpy's own generator: no code shared with stats."""
    generator = np.random.default_rng(seed)
    diffs = np.array([d for d, _ in clusters])
    counts = np.array([c for _, c in clusters])
    drawn = generator.integers(0, len(clusters), size=(resamples, len(clusters)))
    means = diffs[drawn].sum(axis=1) / counts[drawn].sum(axis=1)
    tail = (1 - confidence) / 2
    return np.quantile(means, tail), np.quantile(means, 1 - tail)


def _independent_sign_flip(np, clusters, resamples: int, seed: int) -> float:
    generator = np.random.default_rng(seed)
    diffs = np.array([d for d, _ in clusters])
    n = sum(c for _, c in clusters)
    observed = abs(diffs.sum()) / n
    signs = generator.choice([-1.0, 1.0], size=(resamples, len(clusters)))
    return (1 + int((np.abs(signs @ diffs) / n >= observed - 1e-12).sum())) / (1 + resamples)


@pytest.mark.parametrize("shift", [0.0, 0.03, 0.08])
def test_both_engines_agree_with_an_independent_numpy_bootstrap_within_monte_carlo_error(np, shift):
    rng = random.Random(int(shift * 100))
    base = {f"q{i}": rng.choice([0.0, 0.5, 1.0]) for i in range(300)}
    candidate = {q: min(1.0, max(0.0, v + rng.choice([-0.5, 0.0, 0.5]) * 0.4 + shift)) for q, v in base.items()}
    groups = {q: f"g{i // 3}" for i, q in enumerate(base)}
    clusters = group_differences(base, candidate, groups)
    resamples = 20_000
    low, high = _independent_bootstrap(np, clusters, resamples, seed=123, confidence=0.95)
    p_reference = _independent_sign_flip(np, clusters, resamples, seed=321)
    spread = high - low
    for engine in stats.ENGINES:
        ours = paired_test(base, candidate, groups, resamples=resamples, seed=0, engine=engine)
        # Bounds: the 2.5% and 97.5% quantiles of 20,000 draws move by about 1% of the interval's
        # width between seeds; 5% of it is far outside that noise yet far below any real change.
        assert abs(ours.ci_low - low) < 0.05 * spread and abs(ours.ci_high - high) < 0.05 * spread
        # p: binomial standard error sqrt(p(1-p)/R) from each side; 5 of them (plus a floor).
        error = max((p_reference * (1 - p_reference) / resamples) ** 0.5, 1 / resamples)
        assert abs(ours.p_value - p_reference) < 5 * 2 ** 0.5 * error + 1e-4
        narrower = bootstrap_ci(clusters, resamples=resamples, seed=0, confidence=0.90, engine=engine)
        reference_90 = _independent_bootstrap(np, clusters, resamples, seed=7, confidence=0.90)
        assert abs(narrower[0] - reference_90[0]) < 0.05 * spread


def test_the_engine_adds_as_the_builtin_sum_of_this_python_does(np):
    from harness.scoring import numpy_engine
    # 1e16 + 1.0 is lost to rounding in a plain left-to-right sum; compensated summation (3.12+) keeps it.
    columns = [[1e16, 1.0, -1e16], [0.1, 0.2, 0.3], [1 / 3, -1e-17, 2 / 3], [-0.0, 0.0, 0.0]]
    rows = np.array(columns).T
    assert numpy_engine.builtin_sum_rows(rows).tolist() == [sum(column) for column in columns]
