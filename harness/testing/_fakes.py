"""Fakes for the session's ports, and a builder that runs the real turn loop over them."""

from __future__ import annotations

import json
import zlib
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from datetime import date
from itertools import count

import anyio
from anyio.abc import TaskGroup

from harness.config import KeelConfig, load_config
from harness.events import Event, FlushEntry, MemoryWritten
from harness.loop.parts import SessionParts, call_path
from harness.loop.ports import EndReason, MemoryBlocks, NoProviders, Recorder
from harness.loop.session import Session
from harness.loop.settings import SessionSettings
from harness.loop.system_prompt import PromptAssembler
from harness.models.base import ModelClient
from harness.tokens import TokenCounter
from harness.tools import RawTool, ToolOutput, ToolRegistry
from harness.tools.profile import profile_for
from harness.trace import TraceWriter
from harness.types import Message, ToolSpec, Usage
from memory import FlushMode, SwitchReason
from prompts import SlotId


class FakeTokenizer:
    """A deterministic `Tokenizer`: one token per whitespace-separated word.

    Ids are the CRC-32 of the word, so equal words get equal ids in every process and
    counts are easy to predict in assertions (`count("a b c") == 3`).
    """

    @property
    def name(self) -> str:
        return "fake"

    def encode(self, text: str) -> list[int]:
        return [zlib.crc32(word.encode("utf-8")) for word in text.split()]

    def count(self, text: str) -> int:
        return len(text.split())


def config(**env: str) -> KeelConfig:
    """Defaults plus `KEEL_`-style overrides given as keyword arguments (`memory__overflow="x"`)."""
    return load_config(None, environ={f"KEEL_{k.upper()}": v for k, v in env.items()})


@dataclass
class FakeMemory:
    """A MemoryPort whose blocks change only at load() (the frozen policy)."""

    entries: list[str] = field(default_factory=list)
    loads: int = 0
    turns_started: int = 0
    _snapshot: MemoryBlocks = field(default_factory=lambda: MemoryBlocks("", ""))

    async def load(self) -> None:
        self.loads += 1
        self._snapshot = MemoryBlocks("MEMORY\n" + "\n§\n".join(self.entries) if self.entries else "", "")

    async def prompt_blocks(self) -> MemoryBlocks:
        return self._snapshot

    def start_turn(self) -> None:
        self.turns_started += 1

    def tool(self) -> RawTool:
        async def handle(arguments: str) -> ToolOutput:
            try:
                args = json.loads(arguments)
            except json.JSONDecodeError:
                return ToolOutput(json.dumps({"success": False, "error": "bad json"}), True)
            content = args.get("content") if isinstance(args, dict) else None
            if not isinstance(content, str) or not content:
                return ToolOutput(json.dumps({"success": False, "error": "content is required"}), True)
            self.entries.append(content)
            return ToolOutput(
                json.dumps({"success": True, "done": True}),
                events=(MemoryWritten(action="add", target=args.get("target", "memory"), content=content),),
            )

        return RawTool(ToolSpec("memory", "Save a durable fact.", {"type": "object"}), handle)


@dataclass
class RecordingRecorder:
    """A Recorder that keeps everything in lists."""

    started: list[tuple[str, str | None]] = field(default_factory=list)
    ended: list[tuple[str, EndReason]] = field(default_factory=list)
    messages: dict[str, list[Message]] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)
    flushes: list[tuple[str, str, tuple[FlushEntry, ...]]] = field(default_factory=list)
    batches: list[tuple[str, int]] = field(default_factory=list)

    async def start_session(self, session_id: str, *, model: str, parent_session_id: str | None) -> None:
        self.started.append((session_id, parent_session_id))
        self.messages[session_id] = []

    async def end_session(self, session_id: str, *, reason: EndReason) -> None:
        self.ended.append((session_id, reason))

    async def append_message(self, session_id: str, message: Message, *, token_count: int | None) -> int:
        """Keep the message; its id is its position among all messages kept (from 1)."""
        self.messages[session_id].append(message)
        return sum(len(ms) for ms in self.messages.values())

    async def append_messages(
        self,
        session_id: str,
        messages: Sequence[Message],
        *,
        token_counts: Sequence[int | None],
        timestamps: Sequence[float] | None = None,
    ) -> list[int]:
        """Keep the messages (one batch); their ids are their positions, as `append_message`'s."""
        self.batches.append((session_id, len(messages)))
        self.messages[session_id].extend(messages)
        total = sum(len(ms) for ms in self.messages.values())
        return list(range(total - len(messages) + 1, total + 1))

    async def add_usage(self, session_id: str, usage: Usage) -> None:
        self.usage = self.usage + usage

    async def record_flush(
        self, session_id: str, *, mode: FlushMode, entries: Sequence[FlushEntry], reply_text: str
    ) -> None:
        self.flushes.append((session_id, mode, tuple(entries)))


class FakeProviders(NoProviders):
    """Providers whose recall is a fixed text (optionally slow)."""

    def __init__(self, recall_text: str = "", *, delay_s: float = 0.0) -> None:
        self.recall_text = recall_text
        self.delay_s = delay_s
        self.recall_calls: list[tuple[int, str]] = []
        self.after: list[tuple[int, str, str, bool]] = []
        self.switches: list[tuple[str, str | None]] = []
        self.switch_reasons: list[SwitchReason] = []
        self.ended: list[tuple[Message, ...]] = []
        self.pre_compress: list[int] = []
        self.delegations: list[tuple[str, str, str]] = []
        self.flush_depth = 0
        """How many `flushing()` blocks are open (1 while a flush runs)."""

    async def recall(self, *, turn: int, query: str, wait_s: float) -> str:
        self.recall_calls.append((turn, query))
        with anyio.move_on_after(wait_s):
            if self.delay_s:
                await anyio.sleep(self.delay_s)
            return self.recall_text
        return ""

    def after_turn(self, tg: TaskGroup, *, turn: int, user: str, assistant: str, trivial: bool) -> None:
        self.after.append((turn, user, assistant, trivial))

    async def on_pre_compress(self, messages: Sequence[Message]) -> str:
        self.pre_compress.append(len(messages))
        return "provider says: keep the tea preference"

    async def on_session_switch(
        self, new_session_id: str, *, parent_session_id: str | None, reason: SwitchReason
    ) -> None:
        self.switches.append((new_session_id, parent_session_id))
        self.switch_reasons.append(reason)

    async def on_session_end(self, messages: Sequence[Message]) -> None:
        self.ended.append(tuple(messages))

    def flushing(self) -> AbstractContextManager[None]:
        return self._flushing()

    async def on_delegation(self, task: str, result: str, *, child_session_id: str) -> None:
        self.delegations.append((task, result, child_session_id))

    @contextmanager
    def _flushing(self) -> Iterator[None]:
        self.flush_depth += 1
        try:
            yield
        finally:
            self.flush_depth -= 1


STATIC: Mapping[SlotId, str] = {
    "identity": "You are a test agent.",
    "tool_guidance": "Use tools well.",
    "session": "Conversation started: Sunday, November 22, 2026",
}


@asynccontextmanager
async def make_session(
    model: ModelClient,
    *,
    cfg: KeelConfig | None = None,
    memory: FakeMemory | None = None,
    recorder: Recorder | None = None,
    providers: FakeProviders | None = None,
    extra_tools: Sequence[RawTool] = (),
    trace: TraceWriter | None = None,
    summary_model: ModelClient | None = None,
) -> AsyncIterator[Session]:
    """A started session over fakes; background work is owned by this context."""
    cfg = cfg or config()
    tools = ToolRegistry(
        timeout_s=cfg.limits.tool_timeout_s, profile=profile_for(cfg.tool_profile(own_model=False))
    )
    if memory is not None:
        tools.add(memory.tool())
    for t in extra_tools:
        tools.add(t)
    tokenizer = FakeTokenizer()

    async def static() -> Mapping[SlotId, str]:
        return {**STATIC, "system_message": cfg.agent.system_message}

    ids = count(1)
    async with anyio.create_task_group() as tg:
        path = call_path(
            model=model,
            summary_model=summary_model,
            recorder=recorder or RecordingRecorder(),
            counter=TokenCounter(tokenizer),
            assembler=PromptAssembler(
                order=cfg.prompt.slot_order,
                static=static,
                tokenizer=tokenizer,
                memory_after_tools=cfg.memory_after_tools,
            ),
            memory=memory,
            trace=lambda _: trace,
            new_id=lambda: f"s{next(ids)}",
        )
        parts = SessionParts(
            settings=SessionSettings.from_config(cfg),
            path=path,
            tools=tools,
            providers=providers or FakeProviders(),
            background=tg,
            today=lambda: date(2026, 11, 22),
        )
        session = Session(parts)
        await session.start()
        yield session


async def run_turn(session: Session, text: str) -> list[Event]:
    """Run one turn and collect its events."""
    events: list[Event] = []
    async with session.run_turn(text) as stream:
        async for ev in stream:
            events.append(ev)
    return events
