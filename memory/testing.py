"""A scriptable memory provider for tests: records every hook, fails or blocks on demand.

Shipped with the package (like `harness.testing`) so users can test their own sessions
against a provider whose behaviour they control:

    slow = ScriptedProvider("slow", recall="remembered")
    gate = slow.hold("prefetch")      # prefetch now blocks until gate.set()
    ...
    await slow.entered("prefetch").wait()  # it has started

Synchronise on these events, never on sleeps.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Sequence

import anyio
import numpy as np
from numpy.typing import NDArray
from pydantic import JsonValue

from memory.providers.contract import MemoryProvider, MemoryWrite, ProviderContext, SwitchReason, TurnMessage

__all__ = ["ProviderFailure", "ScriptedCompleter", "ScriptedProvider", "WordHashEmbedder"]


class ProviderFailure(RuntimeError):
    """What a `ScriptedProvider` raises from a hook it was told to fail."""


class ScriptedProvider(MemoryProvider):
    """A memory provider driven by the test.

    Args:
        name: the provider name.
        recall: what `prefetch` returns, or a function of the query.
        tools: tool schemas to offer (OpenAI function shape or the wrapped form).
        tool_reply: what `handle_tool_call` returns for any of its tools.
        block: the `system_prompt_block`.
        pre_compress: what `on_pre_compress` returns.
        failing: hook names that raise `ProviderFailure` (`"*"` means every hook,
            `tool_schemas` and `is_available` included only when named explicitly).
        available: what `is_available` answers.
        log: a list shared between providers; each hook call appends `"<name>.<hook>"`.
    """

    def __init__(
        self,
        name: str = "scripted",
        *,
        recall: str | Callable[[str], str] = "",
        tools: Iterable[dict[str, JsonValue]] = (),
        tool_reply: str = '{"ok": true}',
        block: str = "",
        pre_compress: str = "",
        failing: Iterable[str] = (),
        available: bool = True,
        log: list[str] | None = None,
    ) -> None:
        self._name = name
        self.recall = recall
        self.tools = list(tools)
        self.tool_reply = tool_reply
        self.block = block
        self.pre_compress = pre_compress
        self.failing = set(failing)
        self.available = available
        self.log = log if log is not None else []
        self.calls: list[tuple[str, tuple[object, ...]]] = []
        self._gates: dict[str, anyio.Event] = {}
        self._entered: dict[str, anyio.Event] = {}

    @property
    def name(self) -> str:
        return self._name

    def hold(self, hook: str) -> anyio.Event:
        """Make `hook` block until the returned event is set."""
        gate = anyio.Event()
        self._gates[hook] = gate
        return gate

    def entered(self, hook: str) -> anyio.Event:
        """An event set the next time (or already the last time) `hook` was entered."""
        return self._entered.setdefault(hook, anyio.Event())

    def called(self, hook: str) -> list[tuple[object, ...]]:
        """The arguments of every call to `hook`, in order."""
        return [args for name, args in self.calls if name == hook]

    def _record(self, hook: str, *args: object) -> None:
        self.calls.append((hook, args))
        self.log.append(f"{self._name}.{hook}")
        self._entered.setdefault(hook, anyio.Event()).set()

    def _fails(self, hook: str) -> bool:
        return hook in self.failing or ("*" in self.failing and hook not in {"tool_schemas", "is_available"})

    async def _enter(self, hook: str, *args: object) -> None:
        self._record(hook, *args)
        gate = self._gates.get(hook)
        if gate is not None:
            await gate.wait()
        if self._fails(hook):
            raise ProviderFailure(f"{self._name}.{hook} failed on purpose")

    def is_available(self) -> bool:
        self._record("is_available")
        if self._fails("is_available"):
            raise ProviderFailure(f"{self._name}.is_available failed on purpose")
        return self.available

    async def initialize(self, context: ProviderContext) -> None:
        await self._enter(
            "initialize", context.session_id, context.agent_context, context.home, context.platform
        )

    def system_prompt_block(self) -> str:
        self._record("system_prompt_block")
        if self._fails("system_prompt_block"):
            raise ProviderFailure(f"{self._name}.system_prompt_block failed on purpose")
        return self.block

    async def prefetch(self, query: str, *, session_id: str) -> str:
        await self._enter("prefetch", query, session_id)
        return self.recall(query) if callable(self.recall) else self.recall

    async def queue_prefetch(self, query: str, *, session_id: str) -> None:
        await self._enter("queue_prefetch", query, session_id)

    async def sync_turn(self, user_content: str, assistant_content: str, *, session_id: str) -> None:
        await self._enter("sync_turn", user_content, assistant_content, session_id)

    def tool_schemas(self) -> list[dict[str, JsonValue]]:
        self._record("tool_schemas")
        if self._fails("tool_schemas"):
            raise ProviderFailure(f"{self._name}.tool_schemas failed on purpose")
        return list(self.tools)

    async def handle_tool_call(self, name: str, arguments: dict[str, JsonValue]) -> str:
        await self._enter("handle_tool_call", name, json.dumps(arguments, sort_keys=True))
        return self.tool_reply

    async def on_turn_start(self, turn: int, message: str) -> None:
        await self._enter("on_turn_start", turn, message)

    async def on_session_end(self, messages: Sequence[TurnMessage]) -> None:
        await self._enter("on_session_end", tuple(messages))

    async def on_pre_compress(self, messages: Sequence[TurnMessage]) -> str:
        await self._enter("on_pre_compress", tuple(messages))
        return self.pre_compress

    async def on_session_switch(
        self, new_session_id: str, *, parent_session_id: str | None, reason: SwitchReason
    ) -> None:
        await self._enter("on_session_switch", new_session_id, parent_session_id, reason)

    async def on_memory_write(self, write: MemoryWrite) -> None:
        await self._enter("on_memory_write", write)

    async def on_delegation(self, task: str, result: str, *, child_session_id: str) -> None:
        await self._enter("on_delegation", task, result, child_session_id)

    async def shutdown(self) -> None:
        await self._enter("shutdown")


class ScriptedCompleter:
    """A `Completer` (the semantic provider's model) that answers from a script.

    Each call pops the next reply; an exception in the script is raised instead; a callable
    is called with the prompt. Every prompt is kept in `prompts`. Raises `ProviderFailure`
    when the script runs out, so a test notices an unexpected call.
    """

    def __init__(self, replies: Iterable[str | BaseException | Callable[[str], str]] = ()) -> None:
        self.replies = list(replies)
        self.prompts: list[str] = []

    async def complete(self, messages: Sequence[TurnMessage]) -> str:
        prompt = "\n\n".join(m.content for m in messages)
        self.prompts.append(prompt)
        if not self.replies:
            raise ProviderFailure(f"the scripted completer has no reply left for: {prompt[:80]!r}")
        reply = self.replies.pop(0)
        if isinstance(reply, BaseException):
            raise reply
        return reply(prompt) if callable(reply) else reply


_WORD = re.compile(r"[a-z0-9]+")


class WordHashEmbedder:
    """A deterministic stand-in `Embedder`: texts sharing words get similar vectors.

    Each lower-cased word maps to a fixed pseudo-random unit vector (from its SHA-256); a
    text is the normalized sum of its words'. It knows no meaning — "pytest" and "testing"
    are unrelated to it — so tests of *meaning* use the real model; this one is for the
    plumbing (storage, scopes, reconciliation rules, the breaker) without installing it.
    """

    model_id = "word-hash-64"
    dim = 64

    def _word(self, word: str) -> NDArray[np.float32]:
        seed = int.from_bytes(hashlib.sha256(word.encode()).digest()[:8], "little")
        vector = np.random.default_rng(seed).standard_normal(self.dim).astype(np.float32)
        unit: NDArray[np.float32] = vector / np.linalg.norm(vector)
        return unit

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in _WORD.findall(text.lower()):
                out[row] += self._word(word)
            norm = float(np.linalg.norm(out[row]))
            if norm > 0:
                out[row] /= norm
        return out
