"""benchmarks/tune_hybrid.py, the command a team tunes the hybrid with: bad sets are one line and exit 2, before any model loads."""

from __future__ import annotations

import json

import pytest

from benchmarks import tune_hybrid


@pytest.fixture
def no_model(monkeypatch):
    """Fail the test if the embedder is built: every check below comes before it."""
    from adapters import onnx_embed

    monkeypatch.setattr(onnx_embed, "build_embedder", lambda args: pytest.fail("the model was loaded"))


def test_an_unknown_set_is_one_line_and_exit_2(no_model, capsys):
    assert tune_hybrid.main(["--set", "no-such-set"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("python -m benchmarks.tune_hybrid: error: set 'no-such-set': no ") and err.count("\n") == 1


@pytest.mark.parametrize("missing", ["held-out", "development"])
def test_a_set_without_one_of_the_splits_is_refused_naming_it(tiny_copy, no_model, capsys, missing):
    queries = tiny_copy / "queries.jsonl"
    kept = "development" if missing == "held-out" else "held-out"
    rows = [json.loads(line) for line in queries.read_text().splitlines()]
    queries.write_text("".join(json.dumps({**row, "split": kept}) + "\n" for row in rows))
    assert tune_hybrid.main(["--set", str(tiny_copy)]) == 2
    err = capsys.readouterr().err
    assert f"set 'tiny': no scored {missing} queries" in err and err.count("\n") == 1


def test_model_options_are_the_adapters_and_checked(capsys):
    with pytest.raises(SystemExit) as exited:
        tune_hybrid.main(["--top", "0"])
    assert exited.value.code == 2 and "--top: must be at least 1, got 0" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        tune_hybrid.main(["--graph", "nonsense"])  # the embedder's own --graph choices
    assert "invalid choice: 'nonsense'" in capsys.readouterr().err
