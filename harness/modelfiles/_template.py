"""The one Jinja sandbox keel renders chat templates in (the cache meter and the embedded server).

A chat template runs the way Hugging Face's `apply_chat_template` runs it: Jinja's immutable
sandbox with `trim_blocks`/`lstrip_blocks` and the `loopcontrols` extension; `tojson` writes
plain JSON (no HTML escaping, keys in their given order, non-ASCII kept) and takes the keyword
arguments templates pass it (`indent`, `ensure_ascii`, `separators`, `sort_keys`);
`raise_exception(message)` refuses a conversation; `{% generation %}...{% endgeneration %}`
(the training-mask markers some templates carry) renders its body as is; and
`strftime_now(format)` reads the clock the caller passes (`when`, seconds since the epoch, in
local time, as `datetime.now()` would on a server), so the meter replays a request at the time
it was sent and the server renders at the time it serves.

What the template receives is built by `_items` (the OpenAI messages as templates expect them);
`TemplateRenderer.render` does both steps.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import jinja2
import jinja2.ext
import jinja2.meta
from jinja2 import nodes
from jinja2.parser import Parser
from jinja2.sandbox import ImmutableSandboxedEnvironment
from pydantic import JsonValue

from harness.errors import ChatTemplateError, ModelFileError
from harness.modelfiles._items import Dialect, TemplateInput, template_input
from harness.modelfiles._parts import Part, render_parts

__all__ = ["ChatTemplate", "TemplateRenderer", "template_from_file"]

JsonDict = dict[str, JsonValue]


@dataclass(frozen=True, slots=True)
class ChatTemplate:
    """A chat template's source and the special-token strings it may reference."""

    source: str
    bos_token: str = ""
    eos_token: str = ""
    origin: str = ""
    """Where the source came from, for messages (a file, `model.gguf#tokenizer.chat_template`)."""


def template_from_file(path: Path) -> ChatTemplate:
    """Read a Jinja chat template from a text file.

    Raises:
        ModelFileError: the file is missing or unreadable.
    """
    try:
        return ChatTemplate(path.read_text(encoding="utf-8"), origin=str(path))
    except (OSError, UnicodeDecodeError) as exc:
        raise ModelFileError(f"chat template {str(path)!r} cannot be read: {exc}; check --template") from exc


def _raise(message: str) -> None:
    raise jinja2.TemplateError(message)


def _tojson(
    value: object,
    ensure_ascii: bool = False,
    indent: int | None = None,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    # The keyword arguments chat templates pass to `tojson` on Hugging Face's side.
    return json.dumps(
        value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys
    )


class _GenerationTag(jinja2.ext.Extension):
    """`{% generation %}...{% endgeneration %}`: the body renders as is."""

    tags = {"generation"}  # noqa: RUF012  # jinja's Extension API: a class attribute

    def parse(self, parser: Parser) -> nodes.Node:
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return nodes.Scope(body, lineno=lineno)


def _environment() -> ImmutableSandboxedEnvironment:
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols", _GenerationTag]
    )
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise
    return env


class TemplateRenderer:
    """A chat template compiled in keel's sandbox (see the module docstring).

    Raises:
        ChatTemplateError: the template does not compile.
    """

    def __init__(self, template: ChatTemplate) -> None:
        self.template = template
        env = _environment()
        try:
            self._compiled = env.from_string(template.source)
            variables = jinja2.meta.find_undeclared_variables(env.parse(template.source))
        except jinja2.TemplateError as exc:
            raise ChatTemplateError(
                f"chat template from {template.origin!r} does not compile: {exc}"
            ) from exc
        self.reads_tools = "tools" in variables
        """Whether the template reads the `tools` variable at all."""
        self.native_tools = self.reads_tools and "tool_call" in template.source
        """Whether the template renders tools and assistant tool calls itself (the ChatML/Qwen
        family's do); keel's server spells the protocol out for a template that does not."""

    def prepare(
        self, messages: Sequence[JsonDict], tools: Sequence[JsonDict], *, dialect: Dialect
    ) -> TemplateInput:
        """What the template receives for OpenAI `messages` and `tools` (see `_items`)."""
        return template_input(
            messages, tools, dialect=dialect, native_tools=self.native_tools, reads_tools=self.reads_tools
        )

    def render_items(
        self,
        items: Sequence[JsonDict],
        tools: Sequence[JsonDict] | None,
        *,
        generation: bool = True,
        when: float | None = None,
    ) -> str:
        """Run the template over prepared items.

        Raises:
            ChatTemplateError: the template refused them (`raise_exception`, a bad value).
        """
        moment = time.time() if when is None else when
        try:
            return self._compiled.render(
                messages=list(items),
                tools=list(tools) if tools is not None else None,
                add_generation_prompt=generation,
                bos_token=self.template.bos_token,
                eos_token=self.template.eos_token,
                strftime_now=lambda fmt: datetime.fromtimestamp(moment).strftime(fmt),
            )
        except jinja2.TemplateError as exc:
            raise ChatTemplateError(f"the chat template refused the conversation: {exc}") from exc

    def render(
        self,
        messages: Sequence[JsonDict],
        tools: Sequence[JsonDict],
        *,
        dialect: Dialect = "keel",
        generation: bool = True,
        when: float | None = None,
    ) -> str:
        """The prompt text for OpenAI `messages` and `tools`, as `dialect` renders them.

        Raises:
            ChatTemplateError: the template refused the conversation.
        """
        prepared = self.prepare(messages, tools, dialect=dialect)
        return self.render_items(prepared.items, prepared.tools, generation=generation, when=when)

    def render_parts(
        self,
        messages: Sequence[JsonDict],
        tools: Sequence[JsonDict],
        *,
        dialect: Dialect = "keel",
        generation: bool = True,
        when: float | None = None,
    ) -> list[Part] | None:
        """The prompt as (text, is_markup) parts: only markup may hold control tokens.

        None when the template transforms the text it is given, so the cut cannot be
        checked (see `harness.modelfiles._parts`).

        Raises:
            ChatTemplateError: the template refused the conversation.
        """
        prepared = self.prepare(messages, tools, dialect=dialect)
        moment = time.time() if when is None else when
        return render_parts(
            lambda items, tools_: self.render_items(items, tools_, generation=generation, when=moment),
            prepared.items,
            prepared.tools,
        )
