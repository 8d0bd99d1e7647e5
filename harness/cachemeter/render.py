"""Renderers: a request → token ids, keeping where each part of the prompt sits.

A `Rendered` request is its packed token ids plus `segments` — which token range is the
tools block, each slot of the system prompt (when the trace has a slot map), each message,
and the generation prompt — plus its breakpoints and content-block ends as token positions.
The attribution maps a first divergent token through the segments to a reason.

Three renderers, all in the cache order tools → system → messages:

- `canonical`: provider-neutral. Tools as one JSON array (sorted keys), the system prompt,
  then each message as one JSON object (sorted keys), each part on its own line. Several
  leading system messages are one system prompt with a slot `system[i]` each.
- `chatml`: `<|im_start|>role\\n...<|im_end|>\\n` turns; tools open the system turn as a
  `# Tools` list; tool calls as `<tool_call>` JSON; a trailing `<|im_start|>assistant\\n`.
  Several leading system messages are one turn each, as a ChatML server renders them.
- `jinja` (module `_jinja`): a model's own chat template.

Each piece (a tools block, the system prompt, a message) is tokenized on its own and the ids
are concatenated. That keeps segment boundaries exact and makes a prompt that only grew at
the end render to a strict extension of the previous one. A server tokenizing the whole
string could merge tokens across a piece boundary; pieces end where chat markup (a special
token) separates them, so that is rare. The system prompt is tokenized whole, and its slots
are cut in token space (a token straddling a slot boundary counts in the earlier slot): cutting
the text instead would tokenize whitespace runs at slot edges differently from the server.
Tokenization is memoized per piece, so a long trace pays once for each distinct message, and
the canonical renderer resumes a request from a recent one it extends.
Rendering is deterministic: same request, same tokenizer, same ids, in any process.
"""

from __future__ import annotations

import itertools
import json
from bisect import bisect_right
from collections import OrderedDict, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Generic, Literal, Protocol, TypeAlias, TypeVar

from pydantic import JsonValue

from harness.cachemeter._request import MeterMessage, MeterRequest, MeterSlot, MeterTool
from harness.cachemeter._seq import ITEM, pack, unpack
from harness.tokens import Tokenizer

__all__ = [
    "CanonicalRenderer",
    "ChatMLRenderer",
    "LruMemo",
    "Rendered",
    "Renderer",
    "RendererName",
    "Segment",
    "SegmentKind",
    "TokenMemo",
]

K = TypeVar("K")
V = TypeVar("V")

RendererName: TypeAlias = Literal["canonical", "chatml", "jinja"]
SegmentKind: TypeAlias = Literal["tools", "system", "message", "generation"]


@dataclass(frozen=True, slots=True)
class Segment:
    """Tokens `[start, end)` of a rendered request and what they hold.

    `slot` names the system-prompt slot for `system` segments (None when unknown);
    `index` is the message index (into `MeterRequest.messages`) for `message` segments.
    """

    kind: SegmentKind
    start: int
    end: int
    slot: str | None = None
    index: int | None = None


@dataclass(frozen=True, slots=True)
class Rendered:
    """One request as tokens, with its segments, breakpoints and content-block ends."""

    tokens: bytes
    segments: tuple[Segment, ...]
    breakpoints: tuple[int, ...] = ()
    """Token positions of the request's cache_control markers, in trace order."""
    boundaries: tuple[int, ...] = ()
    """Token positions where content blocks end (tools, system blocks, messages), ascending."""
    warnings: tuple[str, ...] = ()
    """Problems with this request."""
    notices: tuple[str, ...] = ()
    """Facts about how the renderer treats every such request (a report shows each once)."""

    @property
    def n_tokens(self) -> int:
        return len(self.tokens) // ITEM

    def ids(self) -> list[int]:
        return unpack(self.tokens)

    def segment_at(self, position: int) -> Segment | None:
        """The segment holding token `position` (None past the end)."""
        starts = [s.start for s in self.segments]
        i = bisect_right(starts, position) - 1
        if i >= 0 and self.segments[i].start <= position < self.segments[i].end:
            return self.segments[i]
        return None

    @property
    def generation_start(self) -> int:
        """Where the trailing generation prompt starts (the length when there is none).

        Renderers add the generation prompt last, so only the last segment can be it."""
        last = self.segments[-1] if self.segments else None
        return last.start if last is not None and last.kind == "generation" else self.n_tokens


class Renderer(Protocol):
    """Turns a request into tokens with segment boundaries."""

    @property
    def name(self) -> str: ...

    def render(self, request: MeterRequest) -> Rendered: ...


class LruMemo(Generic[K, V]):
    """`make(key)` remembered per key, the least recently used dropped beyond `max_entries`."""

    def __init__(self, make: Callable[[K], V], *, max_entries: int = 50_000) -> None:
        self._make = make
        self.max_entries = max_entries
        self._memo: OrderedDict[K, V] = OrderedDict()

    def __call__(self, key: K) -> V:
        memo = self._memo
        try:
            hit = memo[key]
        except KeyError:
            value = memo[key] = self._make(key)
            if len(memo) > self.max_entries:
                memo.popitem(last=False)
            return value
        memo.move_to_end(key)
        return hit


class TokenMemo:
    """Packed token ids per distinct text, least recently used evicted beyond `max_entries`."""

    def __init__(self, tokenizer: Tokenizer, *, max_entries: int = 50_000) -> None:
        self.tokenizer = tokenizer
        self.max_entries = max_entries
        self.encode = LruMemo(self._encode, max_entries=max_entries)

    def _encode(self, text: str) -> bytes:
        return pack(self.tokenizer.encode(text)) if text else b""


def dumps(value: JsonValue) -> str:
    """Canonical JSON: sorted keys, no spaces, UTF-8 kept."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def tool_json(tool: MeterTool) -> JsonValue:
    return {"name": tool.name, "description": tool.description, "parameters": tool.parameters}


@dataclass(frozen=True, slots=True)
class _Pieces:
    """Pieces and segments an `Assembler` added from token position `start` to `end`."""

    parts: list[bytes]
    segments: list[Segment]
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class _Rendering:
    """One canonical render's messages, kept for the next render (`ends`: their end positions)."""

    messages: tuple[MeterMessage, ...]
    pieces: _Pieces
    ends: list[int]


class Assembler:
    """Builds a `Rendered` piece by piece; consecutive pieces of one segment merge."""

    def __init__(self, memo: TokenMemo) -> None:
        self._memo = memo
        self._parts: list[bytes] = []
        self.pos = 0
        self.segments: list[Segment] = []
        self.warnings: list[str] = []
        self.notices: list[str] = []

    def encode(self, text: str) -> bytes:
        """Packed token ids of `text` (memoized)."""
        return self._memo.encode(text)

    def add(self, text: str, kind: SegmentKind, *, slot: str | None = None, index: int | None = None) -> int:
        """Append one piece; return the token position after it."""
        return self.add_ids(self._memo.encode(text), kind, slot=slot, index=index)

    def add_ids(
        self, data: bytes, kind: SegmentKind, *, slot: str | None = None, index: int | None = None
    ) -> int:
        """Append packed token ids as one piece; return the token position after it."""
        n = len(data) // ITEM
        if n == 0:
            return self.pos
        self._parts.append(data)
        last = self.segments[-1] if self.segments else None
        if last is not None and (last.kind, last.slot, last.index) == (kind, slot, index):
            self.segments[-1] = replace(last, end=self.pos + n)
        else:
            self.segments.append(Segment(kind, self.pos, self.pos + n, slot, index))
        self.pos += n
        return self.pos

    def mark(self) -> tuple[int, int, int]:
        """Where the assembly stands: pieces, segments, token position (for `since`)."""
        return len(self._parts), len(self.segments), self.pos

    def since(self, mark: tuple[int, int, int]) -> _Pieces:
        """What was added after `mark`, to add again with `extend`."""
        parts, segments, pos = mark
        return _Pieces(self._parts[parts:], self.segments[segments:], pos, self.pos)

    def extend(self, pieces: _Pieces) -> None:
        """Add `pieces` again, at the token position they were first added at."""
        assert pieces.start == self.pos, "pieces resume only where they began"
        self._parts += pieces.parts
        self.segments += pieces.segments
        self.pos = pieces.end

    def build(self, breakpoints: Sequence[int], boundaries: Sequence[int]) -> Rendered:
        return Rendered(
            tokens=b"".join(self._parts),
            segments=tuple(self.segments),
            breakpoints=tuple(breakpoints),
            boundaries=tuple(sorted(set(boundaries))),
            warnings=tuple(self.warnings),
            notices=tuple(self.notices),
        )


def system_texts(request: MeterRequest) -> tuple[str, ...]:
    """The system messages a server renders: each of several leading ones, else the prompt."""
    if len(request.system_messages) > 1:
        return request.system_messages
    return (request.system,) if request.system else ()


def system_slots(request: MeterRequest) -> tuple[MeterSlot, ...]:
    """The request's slot map; for several system messages, one slot `system[i]` each."""
    if request.slots or len(request.system_messages) < 2:
        return request.slots
    slots: list[MeterSlot] = []
    pos = 0
    for i, text in enumerate(request.system_messages):
        slots.append(MeterSlot(f"system[{i}]", pos, pos + len(text)))
        pos += len(text) + 2  # `system` joins them with a blank line
    return tuple(slots)


def system_cuts(request: MeterRequest) -> list[int]:
    """Character offsets where a system breakpoint cuts the system prompt."""
    size = len(request.system)
    return sorted(
        {
            size if b.system_chars is None else min(max(b.system_chars, 0), size)
            for b in request.breakpoints
            if b.at == "system"
        }
    )


def add_system(
    asm: Assembler, request: MeterRequest, *, head: str = "", tail: str = ""
) -> tuple[dict[int, int], list[int]]:
    """Add the system prompt, split into one segment per slot (and per breakpoint cut).

    `head` and `tail` are framing text around it. The whole text is tokenized at once, as a
    server does, so the ids are exact; a cut's token position is the length of the text before
    it, tokenized (a token that straddles a cut counts in the earlier segment). Returns the
    token position of each character cut, and the content-block ends inside the system prompt.
    """
    system = request.system
    size = len(system)
    slots: list[MeterSlot] = []
    for s in system_slots(request):
        if 0 <= s.start <= s.end <= size:
            slots.append(s)
        else:
            asm.warnings.append(
                f"slot {s.name!r} [{s.start}, {s.end}) lies outside the system prompt; ignored"
            )
    cuts = system_cuts(request)
    points = sorted({c for s in slots for c in (s.start, s.end)} | set(cuts) | {0, size})
    ids = asm.encode(head + system + tail)
    total = len(ids) // ITEM
    bounds: dict[int, int] = {}
    last = 0
    for c in points:
        at = 0 if c == 0 else total if c == size else len(asm.encode(head + system[:c])) // ITEM
        last = bounds[c] = min(max(at, last), total)
    positions: dict[int, int] = {0: asm.pos}
    for a, b in itertools.pairwise(points):
        if b > a:
            slot = next((s.name for s in slots if s.start <= a < s.end), None)
            positions[b] = asm.add_ids(ids[bounds[a] * ITEM : bounds[b] * ITEM], "system", slot=slot)
    positions.setdefault(size, asm.pos)
    blocks = [positions[c] for c in {*cuts, size} if c in positions and c > 0]
    return positions, blocks


def finish(
    asm: Assembler,
    request: MeterRequest,
    *,
    tools_end: int | None,
    system_cut_pos: dict[int, int],
    system_blocks: list[int],
    message_ends: list[int],
) -> Rendered:
    """Map the request's breakpoints to token positions and build the result."""
    breakpoints: list[int] = []
    size = len(request.system)
    for bp in request.breakpoints:
        if bp.at == "tools":
            if tools_end is None:
                asm.warnings.append("a tools breakpoint on a request without tools; ignored")
                continue
            breakpoints.append(tools_end)
        elif bp.at == "system":
            c = size if bp.system_chars is None else min(max(bp.system_chars, 0), size)
            breakpoints.append(system_cut_pos.get(c, system_cut_pos.get(size, asm.pos)))
        else:
            if bp.index is None or not 0 <= bp.index < len(message_ends):
                asm.warnings.append(
                    f"a breakpoint on message {bp.index!r} but the request has "
                    f"{len(message_ends)} messages; ignored"
                )
                continue
            breakpoints.append(message_ends[bp.index])
    boundaries = [p for p in (tools_end,) if p is not None]
    boundaries += system_blocks
    boundaries += message_ends
    return asm.build(breakpoints, boundaries)


def _message_json(m: MeterMessage) -> JsonValue:
    obj: dict[str, JsonValue] = {"role": m.role, "content": m.content}
    if m.tool_calls:
        obj["tool_calls"] = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in m.tool_calls]
    if m.tool_call_id is not None:
        obj["tool_call_id"] = m.tool_call_id
    if m.name is not None:
        obj["name"] = m.name
    return obj


class CanonicalRenderer:
    """Provider-neutral: tools JSON (sorted keys), then the system prompt, then messages.

    Each message is rendered on its own, and its tokens and segment depend only on where the
    messages begin. So a request whose messages begin at the same token position as those of
    a recent render (the last `recent` are kept), with the same first messages, resumes from
    it: only its new messages are rendered — a stream's next request costs what it added, not
    its history. The shared messages are found by comparing tuples of the same message
    objects, in C; the result is the same as rendering from scratch.
    """

    def __init__(self, tokenizer: Tokenizer, *, memo: TokenMemo | None = None, recent: int = 4) -> None:
        self.memo = memo or TokenMemo(tokenizer)
        # A message's ids by the message itself: a stream's requests repeat their history,
        # and its JSON text need not be written again to find them.
        self._message_ids = LruMemo(self._encode_message, max_entries=self.memo.max_entries)
        self._recent: deque[_Rendering] = deque(maxlen=recent)

    @property
    def name(self) -> str:
        return "canonical"

    def _encode_message(self, m: MeterMessage) -> bytes:
        return self.memo.encode(dumps(_message_json(m)) + "\n")

    def render(self, request: MeterRequest) -> Rendered:
        asm = Assembler(self.memo)
        tools_end = None
        if request.tools:
            tools_end = asm.add(dumps([tool_json(t) for t in request.tools]) + "\n", "tools")
        cut_pos: dict[int, int] = {}
        blocks: list[int] = []
        if request.system:
            cut_pos, blocks = add_system(asm, request, tail="\n")
        head = asm.mark()
        messages = request.messages
        ends = self._resume(asm, messages)
        ends += [
            asm.add_ids(self._message_ids(m), "message", index=i)
            for i, m in enumerate(messages[len(ends) :], len(ends))
        ]
        self._recent.appendleft(_Rendering(messages, asm.since(head), ends))
        return finish(
            asm, request, tools_end=tools_end, system_cut_pos=cut_pos, system_blocks=blocks, message_ends=ends
        )

    def _resume(self, asm: Assembler, messages: tuple[MeterMessage, ...]) -> list[int]:
        """Add the first messages of `messages` as a recent render added them, when one began
        its messages at this token position with the same messages; return their ends."""
        for kept in self._recent:
            n = len(kept.messages)
            if n and kept.pieces.start == asm.pos and n <= len(messages) and messages[:n] == kept.messages:
                asm.extend(kept.pieces)
                return list(kept.ends)
        return []


def _chatml_body(m: MeterMessage) -> str:
    text = m.content
    for call in m.tool_calls:
        payload = f'{{"name": {json.dumps(call.name)}, "arguments": {call.arguments or "{}"}}}'
        text += f"\n<tool_call>\n{payload}\n</tool_call>"
    return text


def _chatml_system_turns(
    asm: Assembler, request: MeterRequest, head: str
) -> tuple[dict[int, int], list[int]]:
    """Several system messages, one turn each (the first may continue the tools' turn)."""
    cut_pos: dict[int, int] = {}
    blocks: list[int] = []
    for slot, text in zip(system_slots(request), request.system_messages, strict=True):
        end = asm.add(f"{head}{text}<|im_end|>\n", "system", slot=slot.name)
        head = "<|im_start|>system\n"
        cut_pos[slot.end] = end
        blocks.append(end)
    return cut_pos, blocks


class ChatMLRenderer:
    """ChatML turns; tools open the system turn; a trailing assistant generation prompt."""

    def __init__(self, tokenizer: Tokenizer, *, memo: TokenMemo | None = None) -> None:
        self.memo = memo or TokenMemo(tokenizer)

    @property
    def name(self) -> str:
        return "chatml"

    def render(self, request: MeterRequest) -> Rendered:
        asm = Assembler(self.memo)
        tools_end = None
        head = "<|im_start|>system\n"
        if request.tools:
            listing = "\n".join(dumps(tool_json(t)) for t in request.tools)
            text = f"{head}# Tools\n{listing}\n\n" + ("" if request.system else "<|im_end|>\n")
            tools_end = asm.add(text, "tools")
            head = ""
        cut_pos: dict[int, int] = {}
        blocks: list[int] = []
        if len(request.system_messages) > 1:
            cut_pos, blocks = _chatml_system_turns(asm, request, head)
        elif request.system:
            cut_pos, blocks = add_system(asm, request, head=head, tail="<|im_end|>\n")
        ends = [
            asm.add(f"<|im_start|>{m.role}\n{_chatml_body(m)}<|im_end|>\n", "message", index=i)
            for i, m in enumerate(request.messages)
        ]
        asm.add("<|im_start|>assistant\n", "generation")
        return finish(
            asm, request, tools_end=tools_end, system_cut_pos=cut_pos, system_blocks=blocks, message_ends=ends
        )
