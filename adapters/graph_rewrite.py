"""Rewrite a BERT-style ONNX encoder into a faster graph with the same vectors: fused attention.

Why: onnxruntime's own transformer optimizer (`optimize_model`) folds the constants and fuses
BiasGelu here, but its attention fusion does not recognise the attention of a torch.dynamo
export (key scaled and transposed through Reshape/Transpose, softmax followed by
IsNaN/Where). `fuse_attention` matches that block directly and replaces it with one
com.microsoft `Attention` node: about 400 nodes become about 50, which is what batch-1 and
short-text calls pay for.

There is no quantised variant: every int8 graph measured moved the code set's recall@10
by more than the 1 point allowed (two of its queries find their file at rank 10, 0.0006
and 0.0019 above rank 11; docs/performance.md has the measurements).

SkipLayerNormalization is left unfused (Add, Add, LayerNormalization), here and when a
session loads the graph (LOAD_FUSIONS_OFF): onnxruntime's CPU kernel for it took 560 us at
one thread on a [1, 256, 384] input, the three plain nodes 98 us, which made the whole model
about 8% slower at 256 tokens (benchmarks/embed_options.py measures it against the default).

Needs the `onnx` package and onnxruntime's python tools; the caller falls back to the plain
model when they are missing (adapters/model_optimise.py).
"""

from __future__ import annotations

import collections
import contextlib
import sys
import tempfile
from pathlib import Path

VARIANTS = ("fused",)
# Bump when a rewrite below changes what it produces: the cached graphs are keyed by it.
RECIPE = "2026-12-01.3"
# onnxruntime fusions every session of an embedding model is loaded without (see the docstring).
LOAD_FUSIONS_OFF = ("SkipLayerNormFusion",)


class RewriteError(Exception):
    """The graph does not have the shape a rewrite expects; one line saying where."""


def build(source: bytes, variant: str) -> tuple[bytes, str]:
    """The rewritten model's bytes and a short note (what was fused)."""
    import onnx

    if variant not in VARIANTS:
        raise RewriteError(f"unknown graph variant {variant!r}")
    with tempfile.TemporaryDirectory(prefix="retrieval-gate-graph-") as tmp, \
            contextlib.redirect_stdout(sys.stderr):  # stdout is the adapter's protocol channel
        source_path = Path(tmp) / "source.onnx"
        source_path.write_bytes(source)
        model, fused = fused_model(source_path, Path(tmp))
        # Serialised once and checked as bytes: checking the ModelProto would serialise a
        # second ~90 MB copy, and the proto is dropped first (the build's memory peak).
        serialised = model.SerializeToString()
        del model
        onnx.checker.check_model(serialised)
        return serialised, f"{fused} attention blocks fused"


def fused_model(source: Path, tmp: Path, fusion_options=None):
    """(the fused graph as an onnx ModelProto, attention blocks fused) for the model file `source`.

    onnxruntime's hardware-independent folding first (the int8 weights' Cast/Mul become fp32
    initializers), then the python fusions (BiasGelu; `fusion_options`) at opt_level 0,
    which is optimize_model's opt_level 1 done here because that path imports torch; then our
    attention fusion. `fusion_options` (onnxruntime.transformers FusionOptions, default
    `default_fusion_options()`) toggles onnxruntime's fusions; benchmarks/embed_options.py
    measures what each is worth. Prints to stdout: the caller redirects it.
    """
    from onnxruntime.transformers.optimizer import optimize_model

    folded_path = fold_constants(source, tmp / "folded.onnx")
    model = optimize_model(str(folded_path), model_type="bert", opt_level=0, use_gpu=False,
                           optimization_options=fusion_options or default_fusion_options()).model
    return model, fuse_attention(model)


def default_fusion_options():
    """onnxruntime's BERT fusions as the fused graph uses them: all but SkipLayerNormalization (see the docstring)."""
    from onnxruntime.transformers.fusion_options import FusionOptions

    options = FusionOptions("bert")
    options.enable_skip_layer_norm = False
    options.enable_bias_skip_layer_norm = False
    return options


def fold_constants(source: Path, target: Path) -> Path:
    """`source` after onnxruntime's basic (hardware-independent) graph optimisations, saved at `target`.

    The same session options as onnxruntime.transformers' `optimize_by_onnxruntime` at its
    opt_level 1 (basic level, CPU, ConstantSharing disabled), without its `import torch`.
    """
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC
    options.optimized_model_filepath = str(target)
    onnxruntime.InferenceSession(str(source), options, providers=["CPUExecutionProvider"],
                                 disabled_optimizers=["ConstantSharing"])
    return target


def fuse_attention(model) -> int:
    """Replace every softmax attention block fed by three linear projections of one input with `Attention`.

    Returns how many blocks were fused (0 leaves the graph as it was). The fused node gets
    the packed Q|K|V weight and bias, the 2-D key mask (int32) and the product of the scalar
    scales found on the Q and K paths (1/sqrt(head size) for this export).
    """
    from onnx import TensorProto, helper, numpy_helper
    import numpy as np

    graph = model.graph
    constants = {tensor.name: tensor for tensor in graph.initializer}
    producer = {output: node for node in graph.node for output in node.output}
    consumers: dict[str, list] = collections.defaultdict(list)
    for node in graph.node:
        for name in node.input:
            consumers[name].append(node)
    mask_inputs = [value.name for value in graph.input if value.name == "attention_mask"]
    if not mask_inputs:
        return 0

    def constant(name: str):
        return numpy_helper.to_array(constants[name]) if name in constants else None

    def linear(name: str):
        """Back from `name` through Reshape/Transpose/scalar Mul to MatMul(x, W) + b: (x, W, b, scale, head size)."""
        scale, head = 1.0, None
        while True:
            node = producer.get(name)
            if node is None:
                raise RewriteError(f"{name}: no producer")
            if node.op_type in ("Reshape", "Transpose"):
                if node.op_type == "Reshape" and head is None:
                    head = _last_dim(node.input[1], producer, constants, numpy_helper)
                name = node.input[0]
                continue
            if node.op_type == "Mul":
                value = next((constant(i) for i in node.input if i in constants), None)
                if value is None or value.size != 1:
                    raise RewriteError(f"{node.name}: not a scalar scale")
                scale *= float(value.reshape(()))
                name = next(i for i in node.input if i not in constants)
                continue
            if node.op_type == "Add":
                bias = next((i for i in node.input if i in constants), None)
                other = next((i for i in node.input if i != bias), None)
                matmul = producer.get(other) if bias and other else None
                if matmul is None or matmul.op_type != "MatMul" or matmul.input[1] not in constants:
                    raise RewriteError(f"{node.name}: not a MatMul + bias")
                return matmul.input[0], constant(matmul.input[1]), constant(bias), scale, head
            raise RewriteError(f"{node.name}: unexpected {node.op_type} on a projection path")

    new_nodes, replaced = [], set()
    for softmax in [node for node in graph.node if node.op_type == "Softmax"]:
        try:
            add = producer[softmax.input[0]]
            scores = next(producer[i] for i in add.input if i in producer and producer[i].op_type == "MatMul")
            node = softmax
            while True:  # softmax, maybe IsNaN/Where (a fully masked row), then probabilities @ V
                following = [c for c in consumers[node.output[0]] if c.op_type in ("Where", "MatMul")]
                if len(following) != 1:
                    raise RewriteError(f"{node.name}: not a single attention path")
                node = following[0]
                if node.op_type == "MatMul":
                    break
            context = node
            transpose = _only(consumers[context.output[0]], "Transpose")
            merge = _only(consumers[transpose.output[0]], "Reshape")
            xq, wq, bq, sq, head = linear(scores.input[0])
            xk, wk, bk, sk, _ = linear(scores.input[1])
            xv, wv, bv, sv, _ = linear(context.input[1])
        except (RewriteError, KeyError, StopIteration):
            continue
        if not (xq == xk == xv) or sv != 1.0 or not head or wq.shape != wk.shape or wq.shape != wv.shape \
                or wq.shape[1] % head:
            continue
        index = len(new_nodes)
        weight, bias = f"fused_qkv_weight_{index}", f"fused_qkv_bias_{index}"
        graph.initializer.extend([numpy_helper.from_array(np.concatenate([wq, wk, wv], axis=1), weight),
                                  numpy_helper.from_array(np.concatenate([bq, bk, bv]), bias)])
        new_nodes.append(helper.make_node(
            "Attention", [xq, weight, bias, "fused_attention_mask"], [merge.output[0]],
            name=f"fused_attention_{index}", domain="com.microsoft",
            num_heads=int(wq.shape[1] // head), scale=sq * sk))
        replaced.add(merge.output[0])
    if not new_nodes:
        return 0
    cast = helper.make_node("Cast", [mask_inputs[0]], ["fused_attention_mask"], to=TensorProto.INT32,
                            name="fused_attention_mask_cast")
    position = {output: index for index, node in enumerate(graph.node) for output in node.output}
    nodes = [node for node in graph.node if not set(node.output) & replaced] + new_nodes
    nodes.sort(key=lambda node: position.get(node.output[0], -1))  # each fused node where its output was made
    _replace_nodes(graph, [cast, *nodes])
    if not any(opset.domain == "com.microsoft" for opset in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    return len(new_nodes)


def _only(nodes: list, op_type: str):
    if len(nodes) != 1 or nodes[0].op_type != op_type:
        raise RewriteError(f"expected one {op_type}")
    return nodes[0]


def _last_dim(name: str, producer: dict, constants: dict, numpy_helper) -> int | None:
    """The last entry of a Reshape's target shape when it is a constant (the head size here)."""
    if name in constants:
        return int(numpy_helper.to_array(constants[name]).reshape(-1)[-1])
    node = producer.get(name)
    if node is not None and node.op_type == "Concat" and node.input[-1] in constants:
        return int(numpy_helper.to_array(constants[node.input[-1]]).reshape(-1)[-1])
    return None


def _replace_nodes(graph, nodes: list) -> None:
    """Keep the nodes (in order) that lead to a graph output, and the initializers they still use."""
    needed = {output.name for output in graph.output}
    kept = []
    for node in reversed(nodes):
        if set(node.output) & needed:
            kept.append(node)
            needed.update(node.input)
    del graph.node[:]
    graph.node.extend(reversed(kept))
    used = {name for node in graph.node for name in node.input}
    live = [tensor for tensor in graph.initializer if tensor.name in used]
    del graph.initializer[:]
    graph.initializer.extend(live)
