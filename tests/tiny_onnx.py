"""A tiny ONNX sentence-embedding model and tokenizer built from scratch, for the embedder tests.

The model's hidden state for token t is a row of a random table (plus a token-type row), so
every expected vector can be recomputed with plain numpy from the token ids (`reference`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from tokenizers import Tokenizer, models, pre_tokenizers, processors

WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]
VOCAB = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, **{word: 4 + i for i, word in enumerate(WORDS)}}
DIM = 6


def token_ids(text: str, max_length: int = 256) -> list[int]:
    """What the tiny tokenizer must produce: [CLS] words [SEP], cut to max_length keeping [SEP]."""
    ids = [VOCAB.get(word, 1) for word in text.split()][: max_length - 2]
    return [2, *ids, 3]


def write_tokenizer(path: Path) -> Path:
    """A WordLevel tokenizer.json that, like MiniLM's, fixes padding and truncation at 8 tokens."""
    tokenizer = Tokenizer(models.WordLevel(VOCAB, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    tokenizer.enable_padding(length=8, pad_id=0, pad_token="[PAD]")
    tokenizer.enable_truncation(max_length=8)
    tokenizer.save(str(path))
    return path


def write_model(path: Path, *, token_types: bool = True, seed: int = 7,
                int32_inputs: bool = False, positions: int | None = None) -> tuple[Path, np.ndarray, np.ndarray]:
    """hidden[b, t] = E[input_ids[b, t]] (+ T[token_type_ids[b, t]]) + 0 * mask: shape (batch, tokens, DIM).

    The mask is wired in (times zero) so the model declares it; padded positions keep E[pad],
    which is not zero, so a pooling that counted padding would give a different vector.
    `positions`: the words also get a zero position table of that many rows, sliced to the
    batch's length, so a longer batch fails to broadcast as a real BERT's position table does.
    """
    rng = np.random.default_rng(seed)
    table = rng.normal(size=(len(VOCAB), DIM)).astype(np.float32)
    type_table = rng.normal(size=(2, DIM)).astype(np.float32)
    int_type = TensorProto.INT32 if int32_inputs else TensorProto.INT64
    inputs = [helper.make_tensor_value_info("input_ids", int_type, ["batch", "tokens"]),
              helper.make_tensor_value_info("attention_mask", int_type, ["batch", "tokens"])]
    initializers = [numpy_helper.from_array(table, "E"), numpy_helper.from_array(np.zeros(1, np.float32), "zero"),
                    numpy_helper.from_array(np.array([2], np.int64), "axis2")]
    nodes = [helper.make_node("Gather", ["E", "input_ids"], ["words"]),
             helper.make_node("Cast", ["attention_mask"], ["mask_f"], to=TensorProto.FLOAT),
             helper.make_node("Unsqueeze", ["mask_f", "axis2"], ["mask_3"]),
             helper.make_node("Mul", ["mask_3", "zero"], ["mask_zero"])]
    if positions is not None:
        initializers += [numpy_helper.from_array(np.zeros((positions, DIM), np.float32), "P"),
                         numpy_helper.from_array(np.array([0], np.int64), "zero_i"),
                         numpy_helper.from_array(np.array([1], np.int64), "one_i")]
        nodes += [helper.make_node("Shape", ["input_ids"], ["shape"]),
                  helper.make_node("Slice", ["shape", "one_i", "axis2"], ["length"]),
                  helper.make_node("Slice", ["P", "zero_i", "length", "zero_i"], ["position_rows"]),
                  helper.make_node("Add", ["words_only", "position_rows"], ["words"])]
        nodes[0] = helper.make_node("Gather", ["E", "input_ids"], ["words_only"])
    if token_types:
        inputs.append(helper.make_tensor_value_info("token_type_ids", int_type, ["batch", "tokens"]))
        initializers.append(numpy_helper.from_array(type_table, "T"))
        nodes += [helper.make_node("Gather", ["T", "token_type_ids"], ["types"]),
                  helper.make_node("Add", ["words", "types"], ["summed"])]
        nodes.append(helper.make_node("Add", ["summed", "mask_zero"], ["last_hidden_state"]))
    else:
        nodes.append(helper.make_node("Add", ["words", "mask_zero"], ["last_hidden_state"]))
    output = helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "tokens", DIM])
    graph = helper.make_graph(nodes, "tiny", inputs, [output], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    path.write_bytes(model.SerializeToString())
    return path, table, (type_table if token_types else np.zeros_like(type_table))


def write_model_dir(folder: Path) -> Path:
    """`folder` (created) holding model.onnx and tokenizer.json, as `--model-dir` takes them."""
    folder.mkdir()
    write_model(folder / "model.onnx")
    write_tokenizer(folder / "tokenizer.json")
    return folder


def reference(texts: list[str], table: np.ndarray, type_table: np.ndarray, *, pooling: str = "mean",
              normalize: bool = True, max_length: int = 256) -> np.ndarray:
    """Plain numpy, one text at a time, no padding: the definition the batched code must match."""
    rows = []
    for text in texts:
        hidden = table[token_ids(text, max_length)] + type_table[0]
        vector = hidden.mean(axis=0) if pooling == "mean" else hidden[0]
        if normalize:
            vector = vector / np.sqrt((vector ** 2).sum())
        rows.append(vector)
    return np.array(rows, dtype=np.float32)
