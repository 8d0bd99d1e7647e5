"""Hugging Face tokenizers, offline: a `tokenizer.json` file or a tokenizer directory.

A tokenizer directory (what `save_pretrained` writes) holds `tokenizer.json` and usually
`tokenizer_config.json`, whose `chat_template` (a string, or a list of named templates of
which `default` is used) and special-token strings feed the jinja renderer. Newer
directories keep the template in `chat_template.jinja` (or `chat_template.json`). Given a
`tokenizer.json` file, its directory is searched the same way.

Nothing is ever downloaded: the `tokenizers` library reads the local file, and a path that
does not exist is an error that says so (model-hub names are not accepted).

Text is encoded without the tokenizer's post-processor specials (`add_special_tokens=False`),
as servers do for chat requests: the chat template writes BOS and turn markers itself.
Special tokens written in the text (`<|im_start|>`) become their single ids.
"""

from __future__ import annotations

import json
from pathlib import Path

import tokenizers

from harness.errors import ModelFileError
from harness.modelfiles._template import ChatTemplate

__all__ = ["HFTokenizer", "hf_template", "load_hf_tokenizer"]

_FILE = "tokenizer.json"
_CONFIG = "tokenizer_config.json"


class HFTokenizer:
    """A Hugging Face `tokenizers` tokenizer loaded from a local file."""

    def __init__(self, tokenizer: tokenizers.Tokenizer, path: Path) -> None:
        self._tok = tokenizer
        self.path = path

    @property
    def name(self) -> str:
        where = self.path.parent.name if self.path.name == _FILE else self.path.name
        return f"hf:{where}"

    def encode(self, text: str) -> list[int]:
        ids: list[int] = self._tok.encode(text, add_special_tokens=False).ids
        return ids

    def count(self, text: str) -> int:
        return len(self.encode(text))


def _tokenizer_file(path: Path) -> Path:
    if path.is_dir():
        found = path / _FILE
        if not found.is_file():
            raise ModelFileError(
                f"tokenizer directory {str(path)!r} has no {_FILE}; "
                "pass the directory a Hugging Face tokenizer was saved to, or the file itself"
            )
        return found
    if path.is_file():
        return path
    raise ModelFileError(f"tokenizer {str(path)!r} does not exist; pass a {_FILE} file or its directory")


def load_hf_tokenizer(path: Path) -> HFTokenizer:
    """Load a `tokenizer.json` (or the one in a directory); blocking file I/O.

    Raises:
        ModelFileError: the path holds no tokenizer, or the file is not one the library reads.
    """
    file = _tokenizer_file(path)
    try:
        tok = tokenizers.Tokenizer.from_file(str(file))
    except Exception as exc:  # the library raises a bare Exception for any bad file
        raise ModelFileError(
            f"{str(file)!r} is not a Hugging Face tokenizer file the `tokenizers` library can read: {exc}"
        ) from exc
    return HFTokenizer(tok, file)


def _read_json(path: Path) -> dict[str, object]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelFileError(f"{str(path)!r} cannot be read as JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ModelFileError(f"{str(path)!r} holds {type(data).__name__}, not a JSON object")
    return data


def _token_text(value: object) -> str:
    """A special token as tokenizer_config.json stores it: a string or an AddedToken dict."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("content"), str):
        content: str = value["content"]
        return content
    return ""


def _pick_template(value: object, origin: Path) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        named = {
            item.get("name"): item.get("template")
            for item in value
            if isinstance(item, dict) and isinstance(item.get("template"), str)
        }
        chosen = named.get("default")
        if isinstance(chosen, str):
            return chosen
        raise ModelFileError(
            f"{str(origin)!r} lists chat templates {sorted(str(k) for k in named)!r} but no 'default'; "
            "save the one you want to a file and pass --template PATH"
        )
    raise ModelFileError(f"{str(origin)!r}: chat_template is neither a string nor a list of named templates")


def hf_template(path: Path) -> ChatTemplate:
    """The chat template of a tokenizer directory (or of a `tokenizer.json`'s directory).

    Raises:
        ModelFileError: the directory has no chat template, or its files cannot be read.
    """
    folder = path if path.is_dir() else path.parent
    config_path = folder / _CONFIG
    config = _read_json(config_path) if config_path.is_file() else {}
    source: str | None = None
    origin = folder / "chat_template.jinja"
    if origin.is_file():
        try:
            source = origin.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ModelFileError(f"{str(origin)!r} cannot be read: {exc}") from exc
    if source is None and (folder / "chat_template.json").is_file():
        origin = folder / "chat_template.json"
        source = _pick_template(_read_json(origin).get("chat_template"), origin)
    if source is None:
        origin = config_path
        source = _pick_template(config.get("chat_template"), origin)
    if source is None:
        raise ModelFileError(
            f"tokenizer directory {str(folder)!r} has no chat template "
            f"({_CONFIG} without 'chat_template', no chat_template.jinja); pass --template PATH"
        )
    return ChatTemplate(
        source,
        bos_token=_token_text(config.get("bos_token")),
        eos_token=_token_text(config.get("eos_token")),
        origin=str(origin),
    )
