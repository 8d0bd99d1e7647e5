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

`max_tokens` is always honoured (capped by the server's own limit and by the room left in
the context window). Generation stops early when `cancelled` is set (the client went away).
"""

from __future__ import annotations

import codecs
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Literal, Protocol

from pydantic import JsonValue

from harness.errors import ChatTemplateError
from harness.modelfiles import TOOL_CALL_OPEN, TemplateRenderer

__all__ = ["Engine", "Generation", "Llm", "Prepared", "RequestError", "Sampler"]

JsonDict = dict[str, JsonValue]
Mode = Literal["auto", "none", "forced"]


class RequestError(Exception):
    """The request cannot be served as sent (HTTP 400); the message says why."""


Sampler = Callable[[list[int], float, "JsonDict | None", list[int]], Iterator[int]]


class Llm(Protocol):
    """The parts of `llama_cpp.Llama` the engine uses."""

    def tokenize(self, text: bytes, add_bos: bool = ..., special: bool = ...) -> list[int]: ...
    def detokenize(
        self, tokens: list[int], prev_tokens: list[int] | None = ..., special: bool = ...
    ) -> bytes: ...
    def n_ctx(self) -> int: ...
    def token_eos(self) -> int: ...


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


@dataclass(frozen=True, slots=True)
class Generation:
    text: str
    prompt_tokens: int
    cached_tokens: int
    completion_tokens: int
    prompt_ms: float
    predicted_ms: float
    finish: Literal["stop", "length", "cancelled"]


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


class Engine:
    """Renders, tokenizes and generates for one loaded model.

    Args:
        llm: the loaded model (`llama_cpp.Llama`).
        chat: its chat template, compiled.
        name: the model name the server answers to.
        max_tokens_cap: the most tokens one reply may generate, whatever it asks for.
        sample: starts sampling: (prompt tokens, temperature, JSON schema the reply must
            match or None, token ids to ban) → an iterator of token ids (see `_child`).
        state: the token ids whose KV state the model holds now.
        stop_ids: tokens that end a reply (end of turn, end of text).
        banned_ids: the token that opens a tool call, when it is a single token (banned under
            `tool_choice: none`).
    """

    def __init__(
        self,
        llm: Llm,
        chat: TemplateRenderer,
        *,
        name: str,
        max_tokens_cap: int,
        sample: Sampler,
        state: Callable[[], list[int]],
        stop_ids: frozenset[int],
        banned_ids: tuple[int, ...],
    ) -> None:
        self.llm = llm
        self.chat = chat
        self.name = name
        self.max_tokens_cap = max_tokens_cap
        self._sample = sample
        self._state = state
        self._stop_ids = stop_ids
        self._banned = banned_ids
        self.lock = threading.Lock()

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
        mode, schema, forced_name = _choice(body, tools)
        try:
            prompt = self.chat.render([m for m in messages if isinstance(m, dict)], tools, dialect="keel")
        except ChatTemplateError as exc:
            raise RequestError(str(exc)) from exc
        forced_prefix, forced_suffix = "", ""
        if forced_name is not None:
            forced_prefix = f'{TOOL_CALL_OPEN}\n{{"name": {json.dumps(forced_name)}, "arguments": '
            forced_suffix = "}"
        elif mode == "forced":
            forced_prefix = f"{TOOL_CALL_OPEN}\n"
        tokens = self.llm.tokenize((prompt + forced_prefix).encode("utf-8"), add_bos=False, special=True)
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
        )

    def cached_prefix(self, tokens: list[int]) -> int:
        """How many leading prompt tokens the model's KV state already holds."""
        n = 0
        for a, b in zip(self._state(), tokens, strict=False):
            if a != b:
                break
            n += 1
        # llama.cpp evaluates at least the last prompt token to get fresh logits.
        return min(n, max(len(tokens) - 1, 0))

    def generate(
        self, req: Prepared, on_text: Callable[[str], None], cancelled: threading.Event
    ) -> Generation:
        """Run one generation (blocking; hold `lock`). `on_text` gets each decoded piece."""
        cached = self.cached_prefix(req.tokens)
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        out: list[int] = []
        pieces: list[str] = []
        started = time.perf_counter()
        first: float | None = None
        finish: Literal["stop", "length", "cancelled"] = "length"
        banned = list(self._banned) if req.mode == "none" else []
        tokens_iter = self._sample(req.tokens, req.temperature, req.schema, banned)
        for token in tokens_iter:
            if first is None:
                first = time.perf_counter()
            if token in self._stop_ids:
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
