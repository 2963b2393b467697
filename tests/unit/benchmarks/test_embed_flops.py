"""benchmarks/embed.py counts the model's work from its graph: checked on a graph whose FLOPs are counted by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import require_modules

require_modules("onnx")
import onnx  # noqa: E402

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from benchmarks.embed import encoder_flops  # noqa: E402


def _write_tiny_encoder(path: Path) -> Path:
    """x [b, n, 8] -> up 8x16 -> down 16x8 -> scores = h @ h^T -> scores @ h: two weights, two activation products."""
    import numpy as np

    rng = np.random.default_rng(0)
    up = numpy_helper.from_array(rng.standard_normal((8, 16)).astype(np.float32), "up")
    down = numpy_helper.from_array(rng.standard_normal((16, 8)).astype(np.float32), "down")
    nodes = [helper.make_node("MatMul", ["x", "up"], ["wide"]),
             helper.make_node("MatMul", ["wide", "down"], ["h"]),
             helper.make_node("Transpose", ["h"], ["h_t"], perm=[0, 2, 1]),
             helper.make_node("MatMul", ["h", "h_t"], ["scores"]),
             helper.make_node("MatMul", ["scores", "h"], ["last_hidden_state"])]
    graph = helper.make_graph(nodes, "tiny",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "tokens", 8])],
                              [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT,
                                                             ["batch", "tokens", 8])],
                              [up, down])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, str(path))
    return path


def test_flops_are_the_weights_per_token_and_the_activation_products_per_token_pair(tmp_path):
    per_token, per_square, widest = encoder_flops(_write_tiny_encoder(tmp_path / "model.onnx"))
    # By hand: 2*8*16 + 2*16*8 per token; each of the two activation products 2 * 8 (the output width) per pair.
    assert per_token == 2 * 8 * 16 + 2 * 16 * 8 == 512
    assert per_square == 2 * (2 * 8) == 32
    assert widest == [8, 16]
