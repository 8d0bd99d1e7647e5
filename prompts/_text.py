"""Prompt text files shipped in `prompts/text/`, loaded on first use."""

from __future__ import annotations

import functools
from importlib import resources

__all__ = ["load_text", "text_names"]


@functools.cache
def load_text(name: str) -> str:
    """Return `prompts/text/<name>.md` without its trailing newline.

    Raises:
        FileNotFoundError: no such prompt file ships with keel.
    """
    resource = resources.files("prompts").joinpath("text", f"{name}.md")
    if not resource.is_file():
        raise FileNotFoundError(f"prompt text {name!r} does not exist in prompts/text/")
    return resource.read_text(encoding="utf-8").rstrip("\n")


def text_names() -> list[str]:
    """Names of every shipped prompt file (for the render-every-prompt test)."""
    folder = resources.files("prompts").joinpath("text")
    return sorted(p.name[:-3] for p in folder.iterdir() if p.name.endswith(".md"))
