"""The cache of rewritten model graphs (adapters/graph_rewrite.py): built once, verified on every load.

Why a cache: the rewrite takes seconds and the `onnx` package, a start-up takes neither.
One file per (source model sha256, variant, rewrite recipe, onnxruntime and onnx versions)
under `<cache>/models/optimised/`, written atomically, with a JSON sidecar written last
that records the rewritten file's sha256; a load re-hashes the file, so a corrupt or
truncated graph is rebuilt, never run. A new graph is used only when the caller's `check`
(the embedder's vectors for probe texts, against the plain model's) reaches the variant's
threshold; a rejected rewrite is remembered in the sidecar, and any failure (tools
missing, a graph the rewrite does not fit, an unwritable cache) falls back to the plain
model with one log line.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness.fsutil import atomic_write_bytes, cache_dir

# The lowest cosine (probe texts, rewritten graph against the plain model) each variant may have.
# fused computes the same function in another order.
MIN_COSINE = {"fused": 0.99999}
SIDECAR_FORMAT = 1

Log = Callable[[str], None]
Check = Callable[[bytes], float]  # rewritten model bytes -> lowest probe cosine against the plain model


@dataclass(frozen=True, slots=True)
class Graph:
    """The model bytes to run and what they are: `variant` is "plain" when the rewrite was not used.

    `path` and `sha256` say where the same bytes can be read again (a rewritten graph in the
    cache; None for the plain model, whose file the caller knows, or an unwritable cache).
    """

    model: bytes
    variant: str
    note: str
    path: Path | None = None
    sha256: str | None = None


def cache_key(source_digest: str, variant: str) -> dict[str, str]:
    """Everything the rewritten bytes depend on; any change means another cache file."""
    import onnxruntime

    from .graph_rewrite import RECIPE

    try:  # the installed version, read without importing onnx (a second of every start, cold)
        onnx_version = importlib.metadata.version("onnx")
    except importlib.metadata.PackageNotFoundError:
        onnx_version = "missing"
    return {"source_sha256": source_digest, "variant": variant, "recipe": RECIPE,
            "onnxruntime": onnxruntime.__version__, "onnx": onnx_version}


def cache_paths(key: dict[str, str], folder: Path | None = None) -> tuple[Path, Path]:
    """(graph file, sidecar) for a key; the name carries a digest of the whole key."""
    folder = folder if folder is not None else cache_dir("models", "optimised")
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    stem = f"{key['source_sha256'][:12]}-{key['variant']}-{digest}"
    return folder / f"{stem}.onnx", folder / f"{stem}.json"


def load_graph(source: bytes, source_digest: str, variant: str, check: Check, *,
               log: Log | None = None, folder: Path | None = None,
               before_build: Callable[[], object] | None = None) -> Graph:
    """The graph to run for `variant`: from the cache, newly built, or the plain model as the fallback.

    `before_build` runs on a cache miss before any rewrite; what it raises is not caught
    (the embedder checks there that the plain model loads at all).
    """
    say = log or (lambda message: None)
    plain = Graph(source, "plain", "")
    if variant == "plain":
        return plain
    try:
        key = cache_key(source_digest, variant)
        path, sidecar = cache_paths(key, folder)
    except Exception as exc:  # noqa: BLE001 - a broken onnxruntime install: run plain, say why
        say(f"graph {variant}: unavailable ({_one_line(exc)}); using the plain model")
        return Graph(source, "plain", f"{variant} unavailable")
    cached = _read_cached(path, sidecar, key, say)
    if cached is not None:
        if cached.variant == "plain":
            say(f"graph {variant}: rejected earlier ({cached.note}); using the plain model")
        return cached if cached.variant != "plain" else Graph(source, "plain", cached.note)
    if before_build is not None:
        before_build()
    say(f"graph {variant}: building from the model (once per model and onnxruntime version)")
    try:
        from .graph_rewrite import build

        model, note = build(source, variant)
    except ImportError as exc:
        say(f"graph {variant}: optimisation unavailable ({_one_line(exc)}); using the plain model")
        return Graph(source, "plain", f"{variant} unavailable")
    except Exception as exc:  # noqa: BLE001 - onnx and onnxruntime raise many types; never fatal
        say(f"graph {variant}: rewrite failed ({_one_line(exc)}); using the plain model")
        return Graph(source, "plain", f"{variant} failed")
    _return_freed_memory()
    try:
        cosine = float(check(model))
    except Exception as exc:  # noqa: BLE001 - the rewritten graph does not even run
        cosine, note = float("nan"), f"{note}; does not run: {_one_line(exc)}"
    accepted = cosine >= MIN_COSINE[variant]
    note = f"{note}; probe cosine {cosine:.6f}"
    record = {"format": SIDECAR_FORMAT, "key": key, "accepted": accepted, "note": note,
              "sha256": hashlib.sha256(model).hexdigest() if accepted else None}
    try:
        if accepted:
            atomic_write_bytes(path, model)
        atomic_write_bytes(sidecar, (json.dumps(record, indent=1, sort_keys=True) + "\n").encode())
    except OSError as exc:
        say(f"graph {variant}: cannot write the cache ({exc.strerror}: {exc.filename}); used without caching")
    if not accepted:
        say(f"graph {variant}: rejected ({note}, below {MIN_COSINE[variant]}); using the plain model")
        return Graph(source, "plain", f"{variant} rejected")
    say(f"graph {variant}: {note}; cached in {path}")
    return Graph(model, variant, note, path if path.is_file() else None, record["sha256"])


def _read_cached(path: Path, sidecar: Path, key: dict[str, str], say: Log) -> Graph | None:
    """The cached graph when its sidecar matches the key and its bytes their sha256; else None (rebuild)."""
    try:
        record = json.loads(sidecar.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        say(f"{sidecar}: unreadable ({_one_line(exc)}); rebuilding")
        return None
    if not isinstance(record, dict) or record.get("format") != SIDECAR_FORMAT or record.get("key") != key:
        say(f"{sidecar}: not for this model and version; rebuilding")
        return None
    if not record.get("accepted"):
        return Graph(b"", "plain", f"{key['variant']} rejected: {record.get('note')}")
    try:
        model = path.read_bytes()
    except OSError as exc:
        say(f"{path}: cannot read ({exc.strerror}); rebuilding")
        return None
    if hashlib.sha256(model).hexdigest() != record.get("sha256"):
        say(f"{path}: sha256 does not match its sidecar (corrupt or altered); rebuilding")
        return None
    return Graph(model, key["variant"], str(record.get("note", "")), path, record["sha256"])


@dataclass(frozen=True, slots=True)
class CachedGraph:
    """One entry of the graph cache, as `python -m adapters.cache` reports and prunes it."""

    name: str              # the file stem: source digest, variant, key digest
    files: tuple[Path, ...]
    size: int              # bytes of all its files
    usable: bool           # this install would load it (same recipe, variant and versions)
    modified: float        # newest mtime of its files


def cached_graphs(folder: Path | None = None) -> list[CachedGraph]:
    """Every graph (and sidecar) in the cache, each marked usable or not by this install.

    A graph built by another rewrite recipe, a variant that no longer exists or another
    onnxruntime or onnx version is never loaded again here: each recipe change would
    otherwise leave a 90 MB file behind for good. A graph file without its sidecar is a
    build that never finished (or one in progress: the caller judges by `modified`).
    Needs onnxruntime (the key names its version).
    """
    from .graph_rewrite import VARIANTS

    folder = folder if folder is not None else cache_dir("models", "optimised")
    stems = sorted({path.stem for path in folder.glob("*.json")} | {path.stem for path in folder.glob("*.onnx")}) \
        if folder.is_dir() else []
    found = []
    for stem in stems:
        files = tuple(path for path in (folder / f"{stem}.onnx", folder / f"{stem}.json") if path.is_file())
        stats = []
        for path in files:
            try:
                stats.append(path.stat())
            except OSError:  # removed meanwhile (a concurrent prune or rebuild)
                continue
        try:
            key = json.loads((folder / f"{stem}.json").read_text(encoding="utf-8")).get("key")
        except (OSError, ValueError, AttributeError):  # no sidecar, or not one of ours
            key = None
        usable = (isinstance(key, dict) and key.get("variant") in VARIANTS
                  and key == cache_key(str(key.get("source_sha256")), key["variant"]))
        found.append(CachedGraph(stem, files, sum(stat.st_size for stat in stats), usable,
                                 max((stat.st_mtime for stat in stats), default=0.0)))
    return found


def _return_freed_memory() -> None:
    """Free what the rewrite left behind and hand it back to the system, before the sessions are made.

    onnxruntime's optimizer leaves its model objects in reference cycles, which Python's
    collector would reach only later, and glibc keeps freed heap for reuse while the
    sessions made next are mapped memory of their own. Both add to a cold start's peak:
    without this, a cold onnx adapter start on the memory set peaked at 930-957 MB,
    with it 714-716 MB (`fetch-model`: 845-848 -> 714-716). malloc_trim is glibc's;
    elsewhere only the collection runs.
    """
    import ctypes
    import gc

    gc.collect()
    try:
        ctypes.CDLL(None).malloc_trim(0)  # the symbols this process already has: libc among them
    except (OSError, AttributeError):  # not glibc: nothing to trim
        pass


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0]}" if text else type(exc).__name__
