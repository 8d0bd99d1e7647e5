"""What a session is composed of, and the order its core is built in.

`call_path` builds the part every other part leans on — the warning sink, the transcript
(which draws the session id), the prompt state and the one model-call path — before any
tool or memory provider exists, so those are handed the real objects instead of callbacks
into a session still being built. `SessionParts` adds the tools, the providers and the
background task group; `Session(parts)` composes them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import date

from anyio.abc import TaskGroup

from harness.loop.calls import ModelCalls
from harness.loop.estimate import PromptEstimator
from harness.loop.ports import MemoryPort, ProviderHooks, Recorder
from harness.loop.settings import SessionSettings
from harness.loop.system_prompt import PromptAssembler, PromptState
from harness.loop.transcript import Transcript, new_session_id
from harness.loop.warnings import WarningSink
from harness.models.base import ModelClient
from harness.telemetry import NO_TELEMETRY, Telemetry
from harness.tokens import TokenCounter
from harness.tools import ToolRegistry
from harness.trace import TraceWriter
from harness.types import Message
from memory.lease import SessionLease

__all__ = ["CallPath", "CatchUp", "SessionParts", "Spawn", "call_path"]

Spawn = Callable[[str], Awaitable[tuple[str, str]]]
"""Runs a task in a subagent session: task → (final answer, the subagent's session id)."""


@dataclass(frozen=True, slots=True)
class CallPath:
    """The core of a session: built first, read by everything after it.

    Attributes:
        warnings: where warnings go (the running turn's events, else the next turn's).
        transcript: the messages, the session ids and the turn counter.
        system: the frozen system prompt and the curated memory it shows.
        calls: the one model-call path (traced, accounted).
    """

    warnings: WarningSink
    transcript: Transcript
    system: PromptState
    calls: ModelCalls


def call_path(
    *,
    model: ModelClient,
    recorder: Recorder,
    counter: TokenCounter,
    assembler: PromptAssembler,
    memory: MemoryPort | None,
    summary_model: ModelClient | None = None,
    trace: Callable[[str], TraceWriter | None] = lambda _session_id: None,
    new_id: Callable[[], str] = new_session_id,
    warnings: WarningSink | None = None,
    tools: ToolRegistry | None = None,
    telemetry: Telemetry = NO_TELEMETRY,
) -> CallPath:
    """Build the core in order: warnings, transcript, prompt state, model calls.

    Args:
        trace: the trace writer for the first session id (None: no trace).
        warnings: a sink that already holds warnings (default: a new one).
        tools: the registry whose tool sources are refreshed at each prompt rebuild.
        telemetry: where spans go (default: nowhere).
    """
    sink = WarningSink() if warnings is None else warnings
    transcript = Transcript(
        recorder, new_id=new_id, model_name=model.model_name, count=counter.count_message, warn=sink
    )
    system = PromptState(assembler, memory, tools=tools, warn=sink)
    calls = ModelCalls(
        model=model,
        summary_model=summary_model,
        recorder=recorder,
        estimator=PromptEstimator(counter),
        transcript=transcript,
        system=system,
        trace=trace(transcript.session_id),
        warn=sink,
        telemetry=telemetry,
    )
    return CallPath(sink, transcript, system, calls)


CatchUp = Callable[[str, int], Awaitable[Sequence[Message] | None]]
"""`(session_id, messages held) -> the store's messages when it holds more, else None`."""


@dataclass(frozen=True, slots=True)
class SessionParts:
    """Everything a `Session` is composed of.

    Attributes:
        settings: what the loop needs from the config.
        path: the core (warnings, transcript, prompt state, model calls).
        tools: what the model can call.
        providers: the external memory provider(s), as the loop drives them.
        background: owns every background task of the session.
        today: the date for the session line.
        spawn: how a subagent session is started (None: `delegate` is refused).
        lease: held for every turn and compression, so two workers never interleave one
            session's turns (None: only this object's own busy flag guards it).
        catch_up: under the lease, before a turn: the session's messages as the store holds
            them when it holds more than this transcript (another worker ran a turn), else None.
    """

    settings: SessionSettings
    path: CallPath
    tools: ToolRegistry
    providers: ProviderHooks
    background: TaskGroup
    today: Callable[[], date] = date.today
    spawn: Spawn | None = None
    lease: SessionLease | None = None
    catch_up: CatchUp | None = None
