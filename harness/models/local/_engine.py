"""One generation on the embedded model: prompt tokens in, text and honest counts out.

`Engine.prepare` validates a chat-completions body and renders it with the model's own
template (`harness.modelfiles.TemplateRenderer`, in the `keel` dialect); `Engine.generate` runs it on a `llama_cpp.Llama`
(blocking: call it from a worker thread, one at a time). It reports what really happened:
how many prompt tokens were reused from the previous request's KV state (the common token
prefix, which `Llama.generate` keeps), how many were evaluated, and how long each phase took.

`tool_choice`:
- `auto`: free generation; tool calls are read from the text afterwards.
- `none`: the tools stay in the prompt (so its prefix does not change) and the token that
  opens a tool call is banned when it is a single token; calls found anyway are dropped.
- a named function: the prompt ends with the opening of that call, name included
  (`<tool_call>\n{"name": "memory", "arguments": `), and the reply is constrained by a
  grammar built from the tool's parameter schema — the model only writes the arguments.
- `required`: the prompt ends with the opening tag and the reply is constrained to one
  `{"name": ..., "arguments": ...}` object for any offered tool.

The call hint (`call_confidence`): a small model asked a question a tool answers often
answers from nothing instead ("The weather in Lisbon is mild."), though made to write a call
it names the right tool almost surely. So under `auto`, on the user's turn (and once more
after its first call's results, with the tools just called left out: a search that found
nothing is followed by a listing), the engine first evaluates the opening of a call (`<tool_call>\n{"name": "`) after the prompt
and reads how likely each tool's name is to come next; when one tool (or the tools sharing
its first token, as an MCP server's do) has at least `call_confidence`, the reply is that
call, written under the grammar of those tools' parameters; otherwise it is generated freely
from the prompt as usual. Measured on Qwen2.5-Coder-1.5B (compact tools, 8 tools offered):
the named tool had 0.94-0.99 for "please remember…", "what's the weather in Lisbon?", "which
file defines the pricing rules? look it up", "remember that my team is…", and 0.19-0.42 for
"what is 2 + 2?", "write a Python function…", "thanks, that's all", "what is my team
called?" (the answer is in its memory block).

Prompt tokens: only the template's own markup may become control tokens; text it was given
(messages, tool results, tool descriptions) that spells one is tokenized as plain text
(`TemplateRenderer.render_parts` finds it). A template whose cut cannot be checked falls back to
tokenizing the whole render, and then a request whose text holds control-token text is
refused.

Which KV state a request resumes from is `_prefix.plan_resume`'s choice: the live state, a state
saved in RAM, or a stable prefix saved on disk (`_disk`); the live state is saved before a
side call overwrites it, and the stable prefix (system prompt and tools) is saved to disk
the first time it is evaluated.

`max_tokens` is always honoured (capped by the server's own limit and by the room left in
the context window). Generation stops early when `cancelled` is set (the client went away).
"""

from __future__ import annotations

import codecs
import json
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import KW_ONLY, dataclass, field, replace
from pathlib import Path
from typing import Literal, Protocol

from pydantic import JsonValue

from harness.errors import ChatTemplateError
from harness.modelfiles import TOOL_CALL_OPEN, Part, TemplateRenderer
from harness.models.local._disk import DiskPrefixCache
from harness.models.local._prefix import PrefixPolicy, RamStates, Saved, common_prefix, plan_resume

__all__ = [
    "PREFILL_CHUNK",
    "Engine",
    "Generation",
    "Kv",
    "Llm",
    "NextProbs",
    "Prepared",
    "Progress",
    "RequestError",
    "Sampler",
]

JsonDict = dict[str, JsonValue]
Mode = Literal["auto", "none", "forced"]


class RequestError(Exception):
    """The request cannot be served as sent (HTTP 400); the message says why."""


Sampler = Callable[[list[int], float, "JsonDict | None", list[int]], Iterator[int]]
NextProbs = Callable[[Sequence[int]], list[float]]
"""The probabilities of the given token ids coming next after the live state."""
Progress = Callable[[int, int], None]
"""Told `(prompt tokens the live state holds, prompt tokens in all)` as prefill goes on."""
PREFILL_CHUNK = 256
"""Prompt tokens evaluated between two progress reports (and two looks at `cancelled`)."""


class Llm(Protocol):
    """The parts of `llama_cpp.Llama` the engine uses."""

    def tokenize(self, text: bytes, add_bos: bool = ..., special: bool = ...) -> list[int]: ...
    def detokenize(
        self, tokens: list[int], prev_tokens: list[int] | None = ..., special: bool = ...
    ) -> bytes: ...
    def n_ctx(self) -> int: ...
    def token_eos(self) -> int: ...


class Kv(Protocol):
    """The model's live KV state, as the prefix cache handles it (blocking calls)."""

    def tokens(self) -> list[int]:
        """The tokens the live state holds."""
        ...

    def snapshot(self) -> bytes:
        """A copy of the live state."""
        ...

    def restore(self, data: bytes, tokens: Sequence[int]) -> bool:
        """Make a snapshot of `tokens` the live state; False (and an empty state) if refused."""
        ...

    def advance(self, tokens: Sequence[int]) -> None:
        """Make the live state hold exactly `tokens`, evaluating what it lacks."""
        ...

    def reset(self) -> None:
        """Empty the live state."""
        ...


@dataclass(frozen=True, slots=True)
class Prepared:
    """A validated request, rendered and tokenized."""

    prompt: str
    tokens: list[int]
    mode: Mode
    forced_prefix: str
    """Text the prompt ends with in forced mode (the opening of a tool call); part of the reply."""
    forced_suffix: str
    """Text that closes the forced call after the generated arguments."""
    schema: JsonDict | None
    tool_names: frozenset[str]
    max_tokens: int
    temperature: float
    stream: bool
    include_usage: bool
    stable: int = 0
    """Leading tokens of the stable prefix (the system turn and tools); 0 when unknown."""
    scope: str = ""
    """Whose KV states this request may reuse (its `user` field; see `_prefix`)."""
    heads: tuple[tuple[int, JsonDict], ...] = ()
    """For the call hint (see the module): each tool's name's first token and the schema of a
    call to it; empty when the hint does not apply (not `auto`, no tools, not the user's turn)."""


@dataclass(frozen=True, slots=True)
class Generation:
    text: str
    prompt_tokens: int
    cached_tokens: int
    completion_tokens: int
    prompt_ms: float
    predicted_ms: float
    finish: Literal["stop", "length", "cancelled"]
    hinted: bool = False
    """The call hint made this reply a call (see the module)."""


def _tool_schema(tool: JsonValue) -> tuple[str, JsonDict]:
    fn = tool.get("function") if isinstance(tool, dict) else None
    name = fn.get("name") if isinstance(fn, dict) else None
    if not isinstance(fn, dict) or not isinstance(name, str) or not name:
        raise RequestError(f"every tool needs a function with a name; got {json.dumps(tool)[:200]}")
    params = fn.get("parameters")
    return name, params if isinstance(params, dict) else {"type": "object"}


def _call_schema(name: str, params: JsonDict) -> JsonDict:
    return {
        "type": "object",
        "properties": {"name": {"const": name}, "arguments": params},
        "required": ["name", "arguments"],
    }


def _choice(body: JsonDict, tools: list[JsonDict]) -> tuple[Mode, JsonDict | None, str | None]:
    """The mode, the schema the reply must match, and the forced tool's name (if one)."""
    raw = body.get("tool_choice", "auto" if tools else "none")
    schemas = dict(_tool_schema(t) for t in tools)
    if raw in ("auto", None):
        return ("auto" if tools else "none"), None, None
    if raw == "none":
        return "none", None, None
    if raw == "required":
        if not schemas:
            raise RequestError("tool_choice 'required' needs at least one tool in 'tools'")
        options: list[JsonValue] = [_call_schema(n, p) for n, p in schemas.items()]
        return "forced", {"anyOf": options}, None
    fn = raw.get("function") if isinstance(raw, dict) else None
    name = fn.get("name") if isinstance(fn, dict) else None
    if not isinstance(name, str) or name not in schemas:
        raise RequestError(
            f"tool_choice {json.dumps(raw)[:120]} names no offered tool; offered: {sorted(schemas) or 'none'}"
        )
    # The call's opening, name included, is written into the prompt; the model only fills
    # in the arguments (a grammar over the tool's own parameter schema).
    return "forced", schemas[name], name


HINTED_CALLS = 2
"""The call hint works on a turn until it holds this many calls; then the model answers."""


def _since_user(msgs: list[JsonDict]) -> list[JsonDict]:
    """The messages from the last user message on (empty when there is none)."""
    for i in range(len(msgs) - 1, -1, -1):
        if msgs[i].get("role") == "user":
            return msgs[i:]
    return []


def _called(message: JsonDict) -> set[str]:
    calls = message.get("tool_calls")
    names = set()
    for call in calls if isinstance(calls, list) else []:
        fn = call.get("function") if isinstance(call, dict) else None
        name = fn.get("name") if isinstance(fn, dict) else None
        if isinstance(name, str):
            names.add(name)
    return names


def _strings(value: JsonValue) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)


@dataclass(eq=False)
class Engine:
    """Renders, tokenizes and generates for one loaded model."""

    llm: Llm
    """The loaded model (`llama_cpp.Llama`)."""
    chat: TemplateRenderer
    """Its chat template, compiled."""
    _: KW_ONLY
    name: str
    """The model name the server answers to."""
    max_tokens_cap: int
    """The most tokens one reply may generate, whatever it asks for."""
    sample: Sampler
    """Starts sampling: (prompt tokens, temperature, JSON schema the reply must match or None,
    token ids to ban) → an iterator of token ids (see `_child`)."""
    kv: Kv
    """The model's live KV state."""
    stop_ids: frozenset[int]
    """Tokens that end a reply (end of turn, end of text)."""
    banned_ids: tuple[int, ...]
    """The token that opens a tool call, when it is a single token (banned under
    `tool_choice: none`)."""
    policy: PrefixPolicy = field(default_factory=PrefixPolicy)
    """The prefix cache's knobs (RAM states, gains; see `_prefix`)."""
    disk: DiskPrefixCache | None = None
    """The prefix cache on disk (None: off)."""
    call_confidence: float | None = None
    """The call hint's threshold (see the module; None: off)."""
    next_probs: NextProbs | None = None
    """The probabilities of given tokens coming next after the live state (the call hint
    reads them; None: no hint)."""
    ram: RamStates[bytes] = field(init=False)
    live_scope: str = field(default="", init=False)
    lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    def __post_init__(self) -> None:
        self.ram = RamStates(self.policy)

    def _has_control(self, text: str) -> bool:
        """Whether `text` spells a control token (it tokenizes differently with specials parsed)."""
        raw = text.encode("utf-8")
        return self.llm.tokenize(raw, add_bos=False, special=True) != self.llm.tokenize(
            raw, add_bos=False, special=False
        )

    def _tokenize(self, parts: list[Part] | None, prompt: str, body_strings: Iterator[str]) -> list[int]:
        """Markup may hold control tokens, content never (see the module docstring).

        Text runs are tokenized whole, as the model's own tokenizer would the plain render
        (so the cache meter's whole-text tokens stay the server's); only content that spells
        a control token is cut out and tokenized as plain text.
        """
        if parts is None:
            if any(self._has_control(text) for text in body_strings):
                raise RequestError(
                    "the request's text holds control-token markup and this model's chat template "
                    "transforms message text, so keel cannot keep it as plain text; remove the markup"
                )
            return self.llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)
        out: list[int] = []
        run: list[str] = []
        for text, markup in parts:
            if markup or not self._has_control(text):
                run.append(text)
                continue
            if run:
                out += self.llm.tokenize("".join(run).encode("utf-8"), add_bos=False, special=True)
                run = []
            out += self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=False)
        if run:
            out += self.llm.tokenize("".join(run).encode("utf-8"), add_bos=False, special=True)
        return out

    def _stable(self, messages: list[JsonDict], tools: list[JsonDict], tokens: list[int], when: float) -> int:
        """How many leading tokens the first system turn and the tools make (what the disk
        cache keeps; a second system message — keel's memory block — changes too often)."""
        if not messages or messages[0].get("role") != "system":
            return 0
        n_sys = 1
        try:
            parts = self.chat.render_parts(
                messages[:n_sys], tools, dialect="keel", generation=False, when=when
            )
        except ChatTemplateError:
            return 0
        if parts is None:
            return 0
        head = self._tokenize(parts, "", iter(()))
        return common_prefix(head, tokens)

    def prepare(self, body: JsonDict) -> Prepared:
        """Validate and render a chat-completions body.

        Raises:
            RequestError: a malformed body, a template that refuses it, or a prompt that
                does not fit the context window.
        """
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) for m in messages):
            raise RequestError("'messages' must be a non-empty list of message objects")
        raw_tools = body.get("tools") or []
        if not isinstance(raw_tools, list) or not all(isinstance(t, dict) for t in raw_tools):
            raise RequestError("'tools' must be a list of tool objects")
        tools: list[JsonDict] = [t for t in raw_tools if isinstance(t, dict)]
        msgs: list[JsonDict] = [m for m in messages if isinstance(m, dict)]
        user = body.get("user")
        mode, schema, forced_name = _choice(body, tools)
        when = time.time()
        try:
            prompt = self.chat.render(msgs, tools, dialect="keel", when=when)
            parts = self.chat.render_parts(msgs, tools, dialect="keel", when=when)
        except (ChatTemplateError, RecursionError) as exc:
            raise RequestError(
                str(exc) if isinstance(exc, ChatTemplateError) else "the request nests too deeply"
            ) from exc
        forced_prefix, forced_suffix = "", ""
        if forced_name is not None:
            forced_prefix = f'{TOOL_CALL_OPEN}\n{{"name": {json.dumps(forced_name)}, "arguments": '
            forced_suffix = "}"
        elif mode == "forced":
            forced_prefix = f"{TOOL_CALL_OPEN}\n"
        tokens = self._tokenize(parts, prompt, _strings([*msgs, *tools]))
        if forced_prefix:
            tokens += self.llm.tokenize(forced_prefix.encode("utf-8"), add_bos=False, special=True)
        room = self.llm.n_ctx() - len(tokens)
        if room < 1:
            raise RequestError(
                f"the prompt is {len(tokens):,} tokens but the model's context window is {self.llm.n_ctx():,}; "
                "shorten the conversation or start the model with a larger model.context_window"
            )
        asked = body.get("max_tokens", body.get("max_completion_tokens"))
        limit = (
            asked
            if isinstance(asked, int) and not isinstance(asked, bool) and asked > 0
            else self.max_tokens_cap
        )
        temperature = body.get("temperature")
        options = body.get("stream_options")
        return Prepared(
            prompt=prompt,
            tokens=tokens,
            mode=mode,
            forced_prefix=forced_prefix,
            forced_suffix=forced_suffix,
            schema=schema,
            tool_names=frozenset(_tool_schema(t)[0] for t in tools),
            max_tokens=min(limit, self.max_tokens_cap, room),
            temperature=float(temperature) if isinstance(temperature, int | float) else 0.8,
            stream=body.get("stream") is True,
            include_usage=isinstance(options, dict) and options.get("include_usage") is True,
            stable=self._stable(msgs, tools, tokens, when) if self.disk is not None else 0,
            scope=user if isinstance(user, str) else "",
            heads=self._heads(tools, msgs) if mode == "auto" else (),
        )

    def _heads(self, tools: list[JsonDict], msgs: list[JsonDict]) -> tuple[tuple[int, JsonDict], ...]:
        """The call hint's candidates: every tool on the user's turn; after the turn's first
        call's results, every tool but the ones just called (a search that found nothing is
        followed by a listing, not by the same search); none after a second call."""
        if self.call_confidence is None or self.next_probs is None:
            return ()
        turn = _since_user(msgs)
        calls = [m for m in turn if m.get("role") == "assistant" and m.get("tool_calls")]
        if len(calls) >= HINTED_CALLS or (calls and turn[-1].get("role") != "tool"):
            return ()
        just_called = _called(calls[-1]) if calls else set()
        out = []
        for name, params in (_tool_schema(t) for t in tools):
            ids = self.llm.tokenize(name.encode("utf-8"), add_bos=False, special=False)
            if ids and name not in just_called:
                out.append((ids[0], _call_schema(name, params)))
        return tuple(out)

    def cached_prefix(self, tokens: list[int]) -> int:
        """How many leading prompt tokens the live KV state already holds."""
        # llama.cpp evaluates at least the last prompt token to get fresh logits.
        return min(common_prefix(self.kv.tokens(), tokens), max(len(tokens) - 1, 0))

    def route(self, req: Prepared) -> None:
        """Make the live state the best one to resume `req` from (blocking; hold `lock`)."""
        disk: tuple[Saved[Path] | None, int] = (
            self.disk.best(req.tokens, req.scope) if self.disk is not None else (None, 0)
        )
        live = self.kv.tokens()
        chosen = plan_resume(
            self.policy,
            live=live,
            live_scope=self.live_scope,
            tokens=req.tokens,
            scope=req.scope,
            ram=self.ram,
            disk=disk,
        )
        if chosen.save_live:
            data = self.kv.snapshot()
            self.ram.add(Saved(tuple(live), self.live_scope, len(data), data))
        if chosen.ram_entry is not None:
            self.ram.touch(chosen.ram_entry)
            if not self.kv.restore(chosen.ram_entry.payload, chosen.ram_entry.tokens):
                self.ram.entries = [e for e in self.ram.entries if e is not chosen.ram_entry]
        elif chosen.disk_entry is not None and self.disk is not None:
            loaded = self.disk.load(chosen.disk_entry)
            if loaded is None or not self.kv.restore(loaded, chosen.disk_entry.tokens):
                self.kv.reset()
        elif chosen.reset:
            self.kv.reset()
        self.live_scope = req.scope

    def _prefill(
        self, tokens: Sequence[int], progress: Progress, cancelled: threading.Event, *, total: int
    ) -> bool:
        """Evaluate `tokens` into the live state `PREFILL_CHUNK` at a time, reporting each chunk.

        Returns False when `cancelled` stopped it (the live state then holds a prefix of
        `tokens`, which is still a valid state to resume from).
        """
        held = common_prefix(self.kv.tokens(), tokens)
        at = held
        while at < len(tokens):
            if cancelled.is_set():
                return False
            at = min(at + PREFILL_CHUNK, len(tokens))
            self.kv.advance(tokens[:at])
            progress(at, total)
        return True

    def _save_stable(self, req: Prepared, progress: Progress, cancelled: threading.Event) -> None:
        """Evaluate the stable prefix first and keep it on disk, when no file has it yet."""
        disk, k = self.disk, req.stable
        if disk is None or k < disk.min_tokens or k >= len(req.tokens):
            return
        prefix = req.tokens[:k]
        if common_prefix(self.kv.tokens(), prefix) >= k or disk.has(prefix, req.scope):
            return
        if not self._prefill(prefix, progress, cancelled, total=len(req.tokens)):
            return
        try:
            disk.save(prefix, req.scope, self.kv.snapshot())
        except OSError as exc:
            print(
                f"keel local model: the prefix cache could not be written: {exc}", file=sys.stderr, flush=True
            )

    def generate(
        self,
        req: Prepared,
        on_text: Callable[[str], None],
        cancelled: threading.Event,
        progress: Progress | None = None,
    ) -> Generation:
        """Run one generation (blocking; hold `lock`). `on_text` gets each decoded piece.

        The prompt is prefilled in chunks before sampling starts, each reported to `progress`,
        so a long prefill is seen to move (and stops early when `cancelled`).
        """
        started = time.perf_counter()
        report = progress or (lambda _done, _total: None)
        self.route(req)
        cached = self.cached_prefix(req.tokens)
        report(cached, len(req.tokens))
        self._save_stable(req, report, cancelled)
        hinted = self._call_hint(req, report, cancelled)
        if cancelled.is_set():
            return _cancelled(req, cached, started)
        if hinted is not None:
            on_text(hinted.forced_prefix)
            gen = self._sample_reply(hinted, on_text, cancelled, cached, started)
            return replace(gen, text=hinted.forced_prefix + gen.text, hinted=True)
        # All but the last prompt token: sampling evaluates that one itself, for fresh logits.
        if not self._prefill(req.tokens[: len(req.tokens) - 1], report, cancelled, total=len(req.tokens)):
            return _cancelled(req, cached, started)
        return self._sample_reply(req, on_text, cancelled, cached, started)

    def _call_hint(self, req: Prepared, report: Progress, cancelled: threading.Event) -> Prepared | None:
        """`req` as a call, when the call hint finds one tool named confidently (see the module)."""
        if not req.heads or self.next_probs is None or self.call_confidence is None:
            return None
        frame = req.tokens + self.llm.tokenize(
            f'{TOOL_CALL_OPEN}\n{{"name": "'.encode(), add_bos=False, special=True
        )
        if not self._prefill(frame[:-1], report, cancelled, total=len(frame)):
            return None
        self.kv.advance(frame)  # its last token evaluated now, whatever the live state held: fresh logits
        heads = sorted({head for head, _ in req.heads})
        probs = dict(zip(heads, self.next_probs(heads), strict=True))
        best = max(heads, key=lambda h: probs[h])
        if probs[best] < self.call_confidence:
            return None
        calls: list[JsonValue] = [schema for head, schema in req.heads if head == best]
        opening = f"{TOOL_CALL_OPEN}\n"
        schema: JsonDict = {"anyOf": calls}
        return replace(
            req,
            tokens=req.tokens + self.llm.tokenize(opening.encode(), add_bos=False, special=True),
            mode="forced",
            forced_prefix=opening,
            schema=schema,
        )

    def _sample_reply(
        self,
        req: Prepared,
        on_text: Callable[[str], None],
        cancelled: threading.Event,
        cached: int,
        started: float,
    ) -> Generation:
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        out: list[int] = []
        pieces: list[str] = []
        first: float | None = None
        finish: Literal["stop", "length", "cancelled"] = "length"
        banned = list(self.banned_ids) if req.mode == "none" else []
        tokens_iter = self.sample(req.tokens, req.temperature, req.schema, banned)
        for token in tokens_iter:
            if first is None:
                first = time.perf_counter()
            if token in self.stop_ids:
                finish = "stop"
                break
            out.append(token)
            piece = decoder.decode(self.llm.detokenize([token], special=True))
            if piece:
                pieces.append(piece)
                on_text(piece)
            if cancelled.is_set():
                finish = "cancelled"
                break
            if len(out) >= req.max_tokens:
                break
        close = getattr(tokens_iter, "close", None)
        if callable(close):
            close()
        tail = decoder.decode(b"", final=True)
        if tail:
            pieces.append(tail)
            on_text(tail)
        end = time.perf_counter()
        first = first or end
        return Generation(
            text="".join(pieces),
            prompt_tokens=len(req.tokens),
            cached_tokens=cached,
            completion_tokens=len(out),
            prompt_ms=(first - started) * 1000,
            predicted_ms=(end - first) * 1000,
            finish=finish,
        )


def _cancelled(req: Prepared, cached: int, started: float) -> Generation:
    """What a request stopped during its prefill reports: nothing generated."""
    ms = (time.perf_counter() - started) * 1000
    return Generation("", len(req.tokens), cached, 0, ms, 0.0, "cancelled")
