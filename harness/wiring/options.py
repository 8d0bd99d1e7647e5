"""What `open_session` takes besides the config, and what it hands back beside the session.

`SessionOptions` is one frozen value: callers build it once (`SessionOptions(model=m)`),
derive variants with `dataclasses.replace`, and the open steps read it — the keywords are
written down here and nowhere else.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from harness.models.base import ModelClient
from harness.telemetry import Telemetry
from harness.tokens import Tokenizer
from harness.tools import ToolFunction
from harness.wiring.slots import SkillsPin
from harness.wiring.stores import Stores
from memory import AgentContext, MemoryManager, MemoryProvider, MemoryStore, Principal, SessionStore
from memory.sessions import JournalledWriter
from memory.skills import SkillLibrary

__all__ = ["SessionHandles", "SessionOptions"]


@dataclass(frozen=True, slots=True)
class SessionOptions:
    """How to open a session, past what the config says. Every field is optional.

    Attributes:
        model: a client to use instead of the configured one (tests pass a ScriptedModel).
        home: the keel home (default: config `home`, `$KEEL_HOME`, `~/.keel`).
        tokenizer: for prompt-size estimates (default: the config's `model.tokenizer`).
        environ: the environment to read (default: `os.environ`).
        trace_path: where request traces go (default: `<home>/traces/<session-id>.jsonl`).
        source: recorded on the session row (`cli`, `demo`, `experiment`, ...).
        cwd: where context files are discovered (default: config `prompt.cwd`, else the
            process working directory).
        today: the date for the session line.
        agent_context: why this agent runs (`primary`; `subagent` or `cron` keep external
            memory providers from writing what this run says).
        provider: an external memory provider to use instead of the one `memory.provider` names.
        user_id: the user this session runs for (default: config `scope.user`, else the
            deprecated `memory.user_id`, else the default user): their USER.md, sessions,
            provider data and traces.
        workspace: the workspace (default: config `scope.workspace`, else the user's own):
            its MEMORY.md and skills.
        session_store: an open session store to record into and search, shared by many
            sessions of one process (a server); the caller opens and closes it. Default: the
            session opens the configured store itself.
        tools: the user's Python functions, registered after keel's tools and the config's
            (see `harness.tools.functions`).
        stores: every store of the configured backend, opened once by the caller and shared
            by many sessions of one process (`harness.wiring.stores.open_stores`); it gives the
            session store, the curated backend and the session lease. Default: the session
            opens them itself (or uses `session_store` with the home's files and no lease).
        resume: continue this recorded session (its own user's; maybe started on another
            worker) instead of starting a new one; the prompt is rebuilt byte for byte.
        telemetry: where spans and metrics go, shared by many sessions of one process (a
            subagent gets its parent's); the caller opens and closes it. Default: the session
            opens what the `telemetry` config section asks for (nothing, unless an endpoint
            is configured) and closes it with itself.
    """

    model: ModelClient | None = None
    home: Path | None = None
    tokenizer: Tokenizer | None = None
    environ: Mapping[str, str] | None = None
    trace_path: Path | None = None
    source: str = "cli"
    cwd: Path | None = None
    today: Callable[[], date] = date.today
    agent_context: AgentContext = "primary"
    provider: MemoryProvider | None = None
    user_id: str | None = None
    workspace: str | None = None
    session_store: SessionStore | None = None
    tools: tuple[ToolFunction, ...] = ()
    stores: Stores | None = None
    resume: str | None = None
    telemetry: Telemetry | None = None


@dataclass(frozen=True, slots=True)
class SessionHandles:
    """The parts `open_session` built, on `session.handles` (for the CLI and experiments)."""

    home: Path
    principal: Principal
    store: MemoryStore | None
    db: SessionStore
    skills: SkillLibrary | None
    manager: MemoryManager
    trace_path: Path | None
    journal: JournalledWriter | None = None
    """Session-store writes the store refused, kept on disk; `left_after_settle` once closed."""
    skills_pin: SkillsPin | None = None
    """What the skills slot showed (recorded on each session row; a resume shows it again)."""
