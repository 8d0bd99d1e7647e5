"""The configuration's shape: one frozen pydantic model, a section per concern.

Every key is documented in `config.example.yaml` (a test validates it); unknown keys are
errors. How a file and the environment become a `KeelConfig` is `_loader.py`; where the
stores live and whom a session runs for is `_stores.py`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import date
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator, model_validator

from harness.config._lifecycle import CacheLifecycleConfig
from harness.config._mcp import McpConfig
from harness.config._retention import RetentionConfig
from harness.config._section import Section
from harness.config._serve import ServeConfig
from harness.config._stores import SessionsConfig, StorageConfig, storage_moves_sessions
from harness.config._telemetry import TelemetryConfig
from harness.errors import ConfigError
from memory import FlushMode, Principal, ScopeError, check_scope_id
from prompts import DEFAULT_SLOT_ORDER, SlotId

__all__ = [
    "DEFAULT_LOCAL_MODEL",
    "AgentConfig",
    "CompressionConfig",
    "HolographicConfig",
    "KeelConfig",
    "LimitsConfig",
    "LocalModelName",
    "LocalServerConfig",
    "MemoryConfig",
    "ModelConfig",
    "PriceConfig",
    "PromptConfig",
    "RecallConfig",
    "RetryConfig",
    "ScopeConfig",
    "SemanticConfig",
    "SessionSearchConfig",
    "SkillsConfig",
    "TracesConfig",
    "default_home",
    "resolve_principal",
]


class RetryConfig(Section):
    max_attempts: int = Field(4, ge=1, le=20)
    base_delay_s: float = Field(0.5, ge=0)
    max_delay_s: float = Field(30.0, ge=0)


LocalModelName = Literal["smollm2-135m", "qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b"]
"""The built-in embedded models (see `harness/models/local/_weights.py`)."""

DEFAULT_LOCAL_MODEL: LocalModelName = "qwen2.5-coder-1.5b"
"""Picked by `benchmarks/local_flush.py` (facts captured by the flush, then speed)."""


class LocalServerConfig(Section):
    """The embedded model server's prefix cache and request bounds (`harness/models/local`)."""

    ram_states: int = Field(4, ge=0, le=64)
    """KV states kept in RAM besides the live one, so a side call never evicts the conversation."""
    ram_mb: int = Field(1024, ge=0)
    disk_cache: bool = True
    """Keep the KV state of long stable prefixes (system prompt and tools) under `<home>/cache`."""
    disk_cache_mb: int = Field(2048, ge=1)
    disk_cache_files: int = Field(16, ge=1)
    disk_min_tokens: int = Field(256, ge=1)
    max_body_mb: int = Field(16, ge=1)
    max_queue: int = Field(8, ge=1)
    call_confidence: float | None = Field(0.8, gt=0, le=1)
    """The call hint: on the user's turn, a reply is made a call to the tool the model names
    with at least this probability when asked to name one (null: off; see `_engine`)."""


class ModelConfig(Section):
    provider: Literal["local", "openai", "anthropic"] = "local"
    base_url: str | None = None
    name: str | None = None
    api_key_env: str | None = None
    context_window: int = Field(8192, ge=256)
    max_output_tokens: int = Field(512, ge=1)
    temperature: float | None = Field(None, ge=0, le=2)
    timeout_s: float = Field(120.0, gt=0)
    """Seconds a call may take; for the embedded model, seconds it may stay silent."""
    stream: bool = True
    """False: send every request unstreamed (for a server that refuses to stream)."""
    tool_results: Literal["native", "as_user"] = "native"
    """OpenAI-compatible servers: `as_user` sends tool results as user messages (for chat
    templates that drop `role: tool` messages, such as llama-cpp-python's function calling)."""
    retry: RetryConfig = RetryConfig()
    cache_ttl: Literal["5m", "1h"] = "5m"
    """Anthropic cache_control TTL."""
    local_server: LocalServerConfig = LocalServerConfig()
    """Embedded model only: its prefix cache (RAM states, disk) and request bounds."""
    local_model: LocalModelName = DEFAULT_LOCAL_MODEL
    """Embedded model only: which built-in model to run (its weights' extra must be installed)."""
    gguf: Path | None = None
    """Embedded model only: run this GGUF file instead, with its own chat template."""
    gguf_sha256: str | None = Field(None, pattern=r"^[0-9a-fA-F]{64}$")
    """Embedded model only: refuse to run `gguf` unless its SHA-256 is this."""
    models_dir: Path | None = None
    """Where built-in weights shipped in parts are assembled; null → `<home>/models`."""
    local_threads: int | None = Field(None, ge=1)
    """Embedded model only: CPU threads for generation; null → all cores but one."""
    local_threads_batch: int | None = Field(None, ge=1)
    """Embedded model only: CPU threads for prompt processing (prefill); null → all cores."""
    tokenizer: Literal["cl100k", "chars"] = "cl100k"
    """How keel estimates prompt sizes when the provider reports none."""


class AgentConfig(Section):
    system_message: str = ""
    platform: str = "cli"


class LimitsConfig(Section):
    max_iterations: int = Field(12, ge=1, le=1000)
    tool_timeout_s: float = Field(60.0, gt=0)
    tool_output_chars: int = Field(200_000, ge=200)
    tool_result_chars: int = Field(8_000, ge=1_000)
    max_message_chars: int = Field(1_000_000, ge=1_000)


class PromptConfig(Section):
    slot_order: tuple[SlotId, ...] = DEFAULT_SLOT_ORDER
    tool_profile: Literal["auto", "full", "compact"] = "auto"
    """What the model is shown of its tools: `compact` (short descriptions, fewer tools, one
    short guidance text written for small models; `harness/tools/profile.py`) or `full`;
    auto → compact for the model keel runs for `model.provider: local`, full for API models
    (and for a model client handed to the session, whose size keel cannot know)."""
    memory_after_tools: bool | None = None
    """The memory, user and session slots go last, sent as a second system message that chat
    templates render after the tool schemas (a compression then re-reads little); null →
    on for `model.provider: local`, off for API models (whose order stays the seeds')."""
    context_files: bool = True
    context_file_max_chars: int = Field(20_000, ge=1_000)
    cwd: Path | None = None

    @model_validator(mode="after")
    def _slots_unique(self) -> PromptConfig:
        if len(set(self.slot_order)) != len(self.slot_order):
            raise ValueError("slot_order lists a slot twice; name each slot at most once")
        return self


class HolographicConfig(Section):
    db_path: Path | None = None
    """The default user's fact file (files backend only: ignored, with a warning when a session
    opens, on `storage.backend: postgres`, where facts are rows of the server's schema)."""
    hrr_dim: int = Field(1024, ge=16)
    default_trust: float = Field(0.5, ge=0, le=1)
    min_trust: float = Field(0.3, ge=0, le=1)
    prefetch_limit: int = Field(5, ge=1, le=50)


class SemanticConfig(Section):
    """The semantic provider (`memory.provider: semantic`; needs `pip install -e '.[semantic]'`)."""

    db_path: Path | None = None
    """The default user's memory file (files backend only: ignored, with a warning when a
    session opens, on `storage.backend: postgres`)."""
    learn: bool = True
    """Extract facts from each exchange with the session's model, in the background."""
    learn_max_tokens: int = Field(256, ge=16, le=4096)
    learn_timeout_s: float = Field(180.0, gt=0)
    """The bound on one turn's learning (extraction + reconciliation calls)."""
    prefetch_limit: int = Field(5, ge=1, le=50)
    min_similarity: float = Field(0.25, ge=-1, le=1)
    duplicate_similarity: float = Field(0.95, ge=0, le=1)
    related_similarity: float = Field(0.5, ge=0, le=1)
    breaker_failures: int = Field(5, ge=1)
    breaker_pause_s: float = Field(120.0, ge=0)
    embedder_threads: int = Field(1, ge=1, le=64)

    @model_validator(mode="after")
    def _bands(self) -> SemanticConfig:
        if self.related_similarity > self.duplicate_similarity:
            raise ValueError("related_similarity must not exceed duplicate_similarity")
        return self


class MemoryConfig(Section):
    memory_enabled: bool = True
    user_profile_enabled: bool = True
    memory_char_limit: int = Field(2200, ge=10)
    user_char_limit: int = Field(1375, ge=10)
    snapshot_policy: Literal["frozen", "invalidate_on_write", "live"] = "frozen"
    overflow: Literal["reject", "evict_oldest"] = "reject"
    lock_timeout_s: float = Field(10.0, gt=0)
    user_id: str | None = None
    """Deprecated spelling of `scope.user` (same meaning, same files); kept so old configs work."""
    provider: Literal["none", "holographic", "semantic"] = "none"
    holographic: HolographicConfig = HolographicConfig()
    semantic: SemanticConfig = SemanticConfig()
    untrusted_writes: Literal["hold", "refuse", "allow"] = "hold"
    """A memory write that repeats a tool result, a fetched page, recalled memory or pasted text
    instead of the user's own words: hold it for the user's confirmation, refuse it, or allow it."""
    meaning_check: Literal["auto", "always", "never"] = "never"
    """The scanner's second layer on every memory write; `auto`: when the local embedder is installed.
    Off by default: it refused the short note "Dog is Biscuit" (see config.example.yaml)."""
    meaning_threshold: float = Field(0.9, gt=0.0, lt=1.0)
    provenance_meaning: Literal["auto", "always", "never"] = "auto"
    """The provenance gate's check by meaning (`memory.gate`): a write saying what a tool result
    says is derived from it; `auto`: when the local embedder is installed."""
    provenance_similarity: float = Field(0.65, gt=0.0, lt=1.0)


class ScopeConfig(Section):
    """Who sessions run for (see `memory.scope` for the layout); every id is one safe directory name."""

    user: str | None = None
    """The user: their USER.md and episodic sessions. null → the default user (today's layout)."""
    workspace: str | None = None
    """The workspace: its MEMORY.md and skills. null → the user's own (the home's for the default user)."""
    shared_workspace: str | None = None
    """A workspace every principal also reads: its MEMORY.md as a read-only prompt block, its skills
    listed and viewable but never changed by the agent."""
    shared_users: tuple[str, ...] = ()
    """Users whose past sessions every principal may also search and read (never write)."""

    @field_validator("user", "workspace", "shared_workspace")
    @classmethod
    def _safe_id(cls, value: str | None) -> str | None:
        return None if value is None else check_scope_id(value, what="the id")

    @field_validator("shared_users")
    @classmethod
    def _safe_ids(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for item in value:
            check_scope_id(item, what="the user id")
        return value


class RecallConfig(Section):
    enabled: bool = True
    persist: bool = True
    wait_s: float = Field(8.0, ge=0)
    max_chars: int = Field(4_000, ge=200)
    warm_wait_s: float = Field(1.0, ge=0)
    """After the first turn, recall was prefetched in the background after the previous
    turn: wait at most this long for a prefetch still running."""


DEFAULT_FLUSH_CHUNK_TOKENS = 512
"""The memory-only flush's piece size when the config does not set one."""


class CompressionConfig(Section):
    enabled: bool = True
    threshold: float = Field(0.5, gt=0, le=1)
    flush: FlushMode = "memory_only"

    @field_validator("flush", mode="before")
    @classmethod
    def _yaml_off(cls, value: object) -> object:
        # YAML 1.1 reads a bare `off` as False; that is what the user meant.
        return "off" if value is False else value

    summary_model: str | None = None
    tail_ratio: float = Field(0.2, ge=0.05, le=0.8)
    protect_first_n: int = Field(3, ge=0)
    protect_last_n: int = Field(6, ge=1)
    flush_reply: Literal["text_list", "tool_calls"] = "text_list"
    """How the flush asks for facts (memory_only / cache_safe): plain `user:`/`memory:` lines
    that keel turns into memory writes, or free memory-tool calls (the classic shape)."""
    flush_max_tokens: int = Field(512, ge=64)
    """The flush reply's own output budget (a list of facts needs more than a chat turn's)."""
    identifier_index: bool = True
    """Put the identifiers of the compressed middle (names, numbers, dates, paths, ids,
    quoted strings) verbatim into the summary message."""
    review_interval: int = Field(0, ge=0)
    """Every this many user turns, one background memory review (a memory-only call that
    saves durable facts, no compression); 0: never."""
    flush_chunk_tokens: int | None = Field(None, ge=0)
    """N: the flush covers only the turns the compression drops, in pieces of at most N
    tokens, one request each (small models find more facts in a short piece than in a long
    transcript: with Qwen2.5-Coder-1.5B on `benchmarks/facts_heldout2.yaml`, 48 facts never
    tuned on, retained after three compressions 0.417 in 512-token pieces, 0.062 with one
    whole-transcript request, 0.000 with no flush). 0: one request over the whole transcript.
    None: `DEFAULT_FLUSH_CHUNK_TOKENS` for `memory_only`, 0 for `cache_safe` and `forced`
    (whose point is reusing the turn's cached prefix, which only the whole transcript does)."""

    def chunk_tokens(self) -> int:
        """The flush's piece size in effect (`flush_chunk_tokens` with its default applied)."""
        if self.flush_chunk_tokens is not None:
            return self.flush_chunk_tokens
        return DEFAULT_FLUSH_CHUNK_TOKENS if self.flush == "memory_only" else 0


class SessionSearchConfig(Section):
    """`dense`: hybrid search (message embeddings fused with words). `off` by default: on
    held-out conversations it did not raise recall, and each session's background indexer
    costs CPU (and, on PostgreSQL, connections). `auto` turns it on when the semantic extra's
    embedder is installed; `on` refuses to open a session without it."""

    enabled: bool = True
    summarize: bool = False
    default_limit: int = Field(3, ge=1, le=10)
    max_concurrency: int = Field(3, ge=1, le=5)
    dense: Literal["auto", "on", "off"] = "off"
    dense_batch: int = Field(64, ge=1, le=1024)
    dense_interval_s: float = Field(5.0, gt=0, le=3600)

    @field_validator("dense", mode="before")
    @classmethod
    def _yaml_on_off(cls, value: object) -> object:
        # YAML 1.1 reads a bare on/off as a boolean: `dense: off` must still mean off.
        if isinstance(value, bool):
            return "on" if value else "off"
        return value


class SkillsConfig(Section):
    enabled: bool = True
    guard_agent_created: bool = True


class TracesConfig(Section):
    enabled: bool = True
    dir: Path | None = None


class PriceConfig(Section):
    """Dollars per million tokens; cache prices are multipliers of `input`.

    `cache_write` is a 5-minute cache write (or the provider's only kind; 1.0 where writes
    are billed as plain input), `cache_write_1h` a 1-hour one (Anthropic). `source` and
    `read_on` say where and when the numbers were read.
    """

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cache_write: float = Field(1.25, ge=0)
    cache_write_1h: float = Field(2.0, ge=0)
    cache_read: float = Field(0.1, ge=0)
    source: str = ""
    read_on: date | None = None


_ANTHROPIC = "platform.claude.com/docs/en/about-claude/pricing"
_OPENAI = "developers.openai.com/api/docs/pricing (as quoted by tokenmix.ai, checked 2026-06-04)"
_READ = date(2026, 11, 25)


def _price(
    source: str, inp: float, out: float, *, read: float, write: float = 1.25, write_1h: float = 2.0
) -> PriceConfig:
    return PriceConfig(
        input=inp,
        output=out,
        cache_write=write,
        cache_write_1h=write_1h,
        cache_read=read,
        source=source,
        read_on=_READ,
    )


def _default_prices() -> dict[str, PriceConfig]:
    # Public list prices (USD per million tokens), read on 2026-11-25 from stored copies of the
    # pages named in `source`; a model matches the longest entry its name contains. Edit to taste.
    return {
        "claude-opus-5": _price(_ANTHROPIC, 5.0, 25.0, read=0.1),
        "claude-opus-4-8": _price(_ANTHROPIC, 5.0, 25.0, read=0.1),
        "claude-opus-4-7": _price(_ANTHROPIC, 5.0, 25.0, read=0.1),
        "claude-opus-4-6": _price(_ANTHROPIC, 5.0, 25.0, read=0.1),
        "claude-opus-4-5": _price(_ANTHROPIC, 5.0, 25.0, read=0.1),
        "claude-sonnet-5-5": _price(
            "platform.claude.com/docs/en/models/sonnet-5-5 (cache read cut to $0.10 on 2026-10-07)",
            2.0,
            10.0,
            read=0.05,
        ),
        "claude-sonnet-5": _price(_ANTHROPIC, 2.0, 10.0, read=0.1),
        "claude-sonnet-4-6": _price(_ANTHROPIC, 3.0, 15.0, read=0.1),
        "claude-sonnet-4-5": _price(_ANTHROPIC, 3.0, 15.0, read=0.1),
        "claude-haiku-5-5": _price(_ANTHROPIC + " (prompts up to 100k tokens)", 0.1, 0.5, read=0.1),
        "claude-haiku-4-5": _price(_ANTHROPIC, 1.0, 5.0, read=0.1),
        "gpt-5.5": _price(_OPENAI, 5.0, 30.0, read=0.1, write=1.0, write_1h=1.0),
        "gpt-5.4": _price(_OPENAI, 2.5, 15.0, read=0.1, write=1.0, write_1h=1.0),
        "gpt-5.4-mini": _price(_OPENAI, 0.75, 4.5, read=0.1, write=1.0, write_1h=1.0),
        "gpt-5.2": _price(
            "openai.com GPT-5.2 launch page (as quoted by benchlm.ai, 2026-04-13)",
            1.75,
            14.0,
            read=0.1,
            write=1.0,
            write_1h=1.0,
        ),
        "gpt-5": _price(_OPENAI + "; gpt-5 and gpt-5.1", 1.25, 10.0, read=0.1, write=1.0, write_1h=1.0),
        "gpt-4o": _price("OpenAI cookbook, Prompt Caching 101", 2.5, 10.0, read=0.5, write=1.0, write_1h=1.0),
        "deepseek-chat": PriceConfig(
            input=0.28,
            output=0.42,
            cache_write=1.0,
            cache_write_1h=1.0,
            cache_read=0.1,
            source="api-docs.deepseek.com, V3.2 list price of September 2025 (not re-read)",
        ),
    }


class KeelConfig(Section):
    home: Path | None = None
    scope: ScopeConfig = ScopeConfig()
    model: ModelConfig = ModelConfig()
    agent: AgentConfig = AgentConfig()
    limits: LimitsConfig = LimitsConfig()
    prompt: PromptConfig = PromptConfig()
    memory: MemoryConfig = MemoryConfig()
    recall: RecallConfig = RecallConfig()
    compression: CompressionConfig = CompressionConfig()
    session_search: SessionSearchConfig = SessionSearchConfig()
    sessions: SessionsConfig = SessionsConfig()
    storage: StorageConfig = StorageConfig()
    skills: SkillsConfig = SkillsConfig()
    traces: TracesConfig = TracesConfig()
    retention: RetentionConfig = RetentionConfig()
    cache_lifecycle: CacheLifecycleConfig = CacheLifecycleConfig()
    telemetry: TelemetryConfig = TelemetryConfig()
    serve: ServeConfig = ServeConfig()
    prices: dict[str, PriceConfig] = Field(default_factory=_default_prices)
    mcp: McpConfig = McpConfig()
    tools: tuple[str, ...] = ()
    """The user's Python functions as tools, by import path (`package.module:function`)."""

    @model_validator(mode="before")
    @classmethod
    def _storage(cls, data: object) -> object:
        return storage_moves_sessions(data)

    @model_validator(mode="after")
    def _native_deferral(self) -> KeelConfig:
        if self.mcp.defer_native and self.model.provider != "anthropic":
            raise ValueError(
                f"mcp.defer_native needs model.provider: anthropic (it is {self.model.provider!r}); "
                "set mcp.defer_native to false, and keel's own tool_search still defers the tools"
            )
        return self

    @field_validator("tools")
    @classmethod
    def _tool_paths(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for item in value:
            module, _, attr = item.partition(":")
            if not module or not attr.isidentifier():
                raise ValueError(f"{item!r} is not an import path; write 'package.module:function'")
        return value

    def tool_profile(self, *, own_model: bool) -> Literal["full", "compact"]:
        """`prompt.tool_profile`, its auto resolved: compact when keel runs the configured local
        model itself (`own_model`: the session was not handed a model client), else full."""
        chosen = self.prompt.tool_profile
        if chosen == "auto":
            return "compact" if own_model and self.model.provider == "local" else "full"
        return chosen

    @property
    def memory_after_tools(self) -> bool:
        """`prompt.memory_after_tools`, its null resolved by the provider."""
        chosen = self.prompt.memory_after_tools
        return self.model.provider == "local" if chosen is None else chosen

    def resolved_home(self, environ: Mapping[str, str] | None = None) -> Path:
        """The keel home: config `home`, else `$KEEL_HOME`, else `~/.keel`."""
        if self.home is not None:
            return self.home.expanduser()
        return default_home(os.environ if environ is None else environ)


def default_home(environ: Mapping[str, str]) -> Path:
    """`$KEEL_HOME` if set, else `~/.keel`."""
    value = environ.get("KEEL_HOME")
    return Path(value).expanduser() if value else Path("~/.keel").expanduser()


def resolve_principal(
    config: KeelConfig, *, user_id: str | None = None, workspace: str | None = None
) -> Principal:
    """The principal a session runs for: the arguments, else `scope.*`, else `memory.user_id`.

    Raises:
        ConfigError: an id is not a safe directory name, or `scope.user` and the deprecated
            `memory.user_id` name different users.
    """
    legacy, scoped = config.memory.user_id, config.scope.user
    if user_id is None and legacy is not None and scoped is not None and legacy != scoped:
        raise ConfigError(
            f"scope.user {scoped!r} and memory.user_id {legacy!r} name different users; "
            "memory.user_id is the old spelling of scope.user — keep only scope.user"
        )
    try:
        return Principal(
            user_id=user_id if user_id is not None else (scoped if scoped is not None else legacy),
            workspace=workspace if workspace is not None else config.scope.workspace,
        )
    except ScopeError as exc:
        raise ConfigError(f"{exc} (from --user/--workspace, scope.* or memory.user_id)") from exc
