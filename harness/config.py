"""The one validated configuration model, and how it is loaded.

`load_config(path, environ)` reads a YAML file (optional), applies `KEEL_`-prefixed
environment overrides (`KEEL_MEMORY__SNAPSHOT_POLICY=live` sets `memory.snapshot_policy`;
nesting uses a double underscore; values are parsed as YAML scalars), and validates the
result into a frozen `KeelConfig`. Unknown keys are errors. Every key is documented in
`config.example.yaml`, which a test validates.

The loader treats the file and the environment as untrusted input: the file is read up to
`MAX_CONFIG_BYTES`, YAML nesting is bounded (`MAX_YAML_DEPTH`) and so is the size of the
document with every alias expanded (`MAX_YAML_NODES`) — a 400-byte "billion laughs" file
is refused before anything walks it — and error messages quote values shortened to a
snippet, at most `_MAX_ERRORS` of them.

Library code receives a `KeelConfig`; it never reads files or the environment itself.
"""

from __future__ import annotations

import os
import reprlib
from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from yaml.nodes import MappingNode, Node, SequenceNode

from harness.errors import ConfigError
from memory import (
    FlushMode,
    Principal,
    ScopeError,
    SessionStore,
    check_scope_id,
    open_session_store,
    redact_url,
    session_store_location,
)
from prompts import DEFAULT_SLOT_ORDER, SlotId

__all__ = [
    "DEFAULT_LOCAL_MODEL",
    "MAX_CONFIG_BYTES",
    "MAX_YAML_DEPTH",
    "MAX_YAML_NODES",
    "AgentConfig",
    "CompressionConfig",
    "HolographicConfig",
    "KeelConfig",
    "LimitsConfig",
    "LocalModelName",
    "MemoryConfig",
    "ModelConfig",
    "PriceConfig",
    "PromptConfig",
    "RecallConfig",
    "RetryConfig",
    "ScopeConfig",
    "SemanticConfig",
    "SessionSearchConfig",
    "SessionsConfig",
    "SkillsConfig",
    "TracesConfig",
    "default_home",
    "load_config",
    "resolve_principal",
]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RetryConfig(_Section):
    max_attempts: int = Field(4, ge=1, le=20)
    base_delay_s: float = Field(0.5, ge=0)
    max_delay_s: float = Field(30.0, ge=0)


LocalModelName = Literal["smollm2-135m", "qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b"]
"""The built-in embedded models (see `harness/models/_local_weights.py`)."""

DEFAULT_LOCAL_MODEL: LocalModelName = "qwen2.5-coder-1.5b"
"""Picked by `benchmarks/local_flush.py` (facts captured by the flush, then speed)."""


class ModelConfig(_Section):
    provider: Literal["local", "openai", "anthropic"] = "local"
    base_url: str | None = None
    name: str | None = None
    api_key_env: str | None = None
    context_window: int = Field(8192, ge=256)
    max_output_tokens: int = Field(512, ge=1)
    temperature: float | None = Field(None, ge=0, le=2)
    timeout_s: float = Field(120.0, gt=0)
    retry: RetryConfig = RetryConfig()
    cache_ttl: Literal["5m", "1h"] = "5m"
    """Anthropic cache_control TTL."""
    local_cache: bool = False
    """Embedded model only: keep several prompt states in RAM, so a side call (flush, summary)
    does not evict the main conversation's prefix."""
    local_model: LocalModelName = DEFAULT_LOCAL_MODEL
    """Embedded model only: which built-in model to run (its weights' extra must be installed)."""
    gguf: Path | None = None
    """Embedded model only: run this GGUF file instead, with its own chat template."""
    gguf_sha256: str | None = Field(None, pattern=r"^[0-9a-fA-F]{64}$")
    """Embedded model only: refuse to run `gguf` unless its SHA-256 is this."""
    models_dir: Path | None = None
    local_threads: int | None = Field(None, ge=1)
    """Embedded model only: CPU threads; null → all cores but one."""
    """Where built-in weights shipped in parts are assembled; null → `<home>/models`."""
    tokenizer: Literal["cl100k", "chars"] = "cl100k"
    """How keel estimates prompt sizes when the provider reports none."""


class AgentConfig(_Section):
    system_message: str = ""
    platform: str = "cli"


class LimitsConfig(_Section):
    max_iterations: int = Field(12, ge=1, le=1000)
    tool_timeout_s: float = Field(60.0, gt=0)


class PromptConfig(_Section):
    slot_order: tuple[SlotId, ...] = DEFAULT_SLOT_ORDER
    context_files: bool = True
    context_file_max_chars: int = Field(20_000, ge=1_000)
    cwd: Path | None = None

    @model_validator(mode="after")
    def _slots_unique(self) -> PromptConfig:
        if len(set(self.slot_order)) != len(self.slot_order):
            raise ValueError("slot_order lists a slot twice; name each slot at most once")
        return self


class HolographicConfig(_Section):
    db_path: Path | None = None
    hrr_dim: int = Field(1024, ge=16)
    default_trust: float = Field(0.5, ge=0, le=1)
    min_trust: float = Field(0.3, ge=0, le=1)
    prefetch_limit: int = Field(5, ge=1, le=50)


class SemanticConfig(_Section):
    """The semantic provider (`memory.provider: semantic`; needs `pip install -e '.[semantic]'`)."""

    db_path: Path | None = None
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


class MemoryConfig(_Section):
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
    meaning_check: Literal["auto", "on", "off"] = "auto"
    """The scanner's second layer on every memory write; `auto`: when the local embedder is installed."""
    meaning_threshold: float = Field(0.9, gt=0.0, lt=1.0)


class ScopeConfig(_Section):
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


class RecallConfig(_Section):
    enabled: bool = True
    persist: bool = True
    wait_s: float = Field(8.0, ge=0)
    warm_wait_s: float = Field(1.0, ge=0)
    """After the first turn, recall was prefetched in the background after the previous
    turn: wait at most this long for a prefetch still running."""


class CompressionConfig(_Section):
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


class SessionSearchConfig(_Section):
    enabled: bool = True
    summarize: bool = False
    default_limit: int = Field(3, ge=1, le=10)
    max_concurrency: int = Field(3, ge=1, le=5)


class SessionsConfig(_Section):
    """Where sessions are stored: `sqlite` (`<home>/state.db`) or a PostgreSQL server."""

    backend: Literal["sqlite", "postgres"] = "sqlite"
    url: str | None = None
    pg_schema: str = Field("keel", pattern=r"^[a-z_][a-z0-9_]{0,62}$")
    pool_size: int = Field(4, ge=1, le=100)
    connect_timeout_s: float = Field(10.0, gt=0, le=300)

    @field_validator("url")
    @classmethod
    def _postgres_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("postgresql://", "postgres://")):
            raise ValueError(
                f"{redact_url(value)!r} is not a PostgreSQL URL; write postgresql://USER[:PASSWORD]@HOST:PORT/DATABASE"
            )
        return value

    @model_validator(mode="after")
    def _url_for_postgres(self) -> SessionsConfig:
        if self.backend == "postgres" and not self.url:
            raise ValueError(
                "backend postgres needs sessions.url (postgresql://USER[:PASSWORD]@HOST:PORT/DATABASE, "
                "or $KEEL_SESSIONS__URL)"
            )
        return self

    def open_store(self, home: Path) -> AbstractAsyncContextManager[SessionStore]:
        """The configured session store, opened on entry and closed on exit (`open_session_store`)."""
        return open_session_store(
            self.backend,
            home=home,
            url=self.url,
            pg_schema=self.pg_schema,
            pool_size=self.pool_size,
            connect_timeout_s=self.connect_timeout_s,
        )

    def location(self, home: Path) -> str:
        """Where sessions are kept: the state.db path, or the URL (no password) and schema."""
        return session_store_location(self.backend, home=home, url=self.url, pg_schema=self.pg_schema)


class SkillsConfig(_Section):
    enabled: bool = True
    guard_agent_created: bool = True


class TracesConfig(_Section):
    enabled: bool = True
    dir: Path | None = None


class PriceConfig(_Section):
    """Dollars per million tokens; cache prices are multipliers of `input`."""

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cache_write: float = Field(1.25, ge=0)
    cache_read: float = Field(0.1, ge=0)


def _default_prices() -> dict[str, PriceConfig]:
    # Public list prices (USD per million tokens) as of late 2026; edit to taste.
    return {
        "claude-sonnet-4-5": PriceConfig(input=3.0, output=15.0, cache_write=1.25, cache_read=0.1),
        "gpt-4o": PriceConfig(input=2.5, output=10.0, cache_write=1.0, cache_read=0.5),
        "gpt-5": PriceConfig(input=1.25, output=10.0, cache_write=1.0, cache_read=0.1),
        "deepseek-chat": PriceConfig(input=0.28, output=0.42, cache_write=1.0, cache_read=0.1),
    }


class KeelConfig(_Section):
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
    skills: SkillsConfig = SkillsConfig()
    traces: TracesConfig = TracesConfig()
    prices: dict[str, PriceConfig] = Field(default_factory=_default_prices)

    def resolved_home(self, environ: Mapping[str, str] | None = None) -> Path:
        """The keel home: config `home`, else `$KEEL_HOME`, else `~/.keel`."""
        if self.home is not None:
            return self.home.expanduser()
        return default_home(os.environ if environ is None else environ)


def default_home(environ: Mapping[str, str]) -> Path:
    """`$KEEL_HOME` if set, else `~/.keel`."""
    value = environ.get("KEEL_HOME")
    return Path(value).expanduser() if value else Path("~/.keel").expanduser()


_ENV_PREFIX = "KEEL_"
_TEST_PREFIX = "KEEL_TEST_"

MAX_CONFIG_BYTES = 1_048_576
"""The largest config file read (a real one is a few kilobytes)."""
MAX_YAML_DEPTH = 32
"""The deepest YAML nesting accepted (the config itself is three levels deep)."""
MAX_YAML_NODES = 20_000
"""The most YAML nodes a document may hold with every alias expanded."""
_MAX_ENV_CHARS = 65_536
_MAX_ERRORS = 20
_QUOTE_CHARS = 120


class _YamlTooComplex(ValueError):
    """The document nests too deeply or expands to too many nodes."""


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader with a nesting bound on the (recursive) composer."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Node | None, index: int) -> Node | None:
        self._depth += 1
        try:
            if self._depth > MAX_YAML_DEPTH:
                mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]  # untyped in PyYAML
                raise _YamlTooComplex(
                    f"it nests deeper than {MAX_YAML_DEPTH} levels (at {mark.line + 1}:{mark.column + 1})"
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _expanded_size(root: Node) -> int:
    """Nodes in the document with every alias expanded (capped just past `MAX_YAML_NODES`).

    Aliases make the composed graph a DAG of shared nodes, so each distinct node is sized
    once (memoized): linear in the file, however many copies it implies.

    Raises:
        _YamlTooComplex: an alias refers to a node that contains it (a cycle).
    """
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()
    # Iterative post-order, so not even a deep document can exhaust the Python stack here.
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        children: list[Node] = []
        if isinstance(node, SequenceNode):
            children = list(node.value)
        elif isinstance(node, MappingNode):
            children = [part for pair in node.value for part in pair]
        if children_done:
            open_nodes.discard(id(node))
            sizes[id(node)] = min(1 + sum(sizes[id(c)] for c in children), MAX_YAML_NODES + 1)
            continue
        if id(node) in sizes:
            continue
        if id(node) in open_nodes:
            raise _YamlTooComplex("an alias (*name) refers to a value that contains it")
        open_nodes.add(id(node))
        stack.append((node, True))
        for child in children:
            if id(child) in open_nodes:
                raise _YamlTooComplex("an alias (*name) refers to a value that contains it")
            if id(child) not in sizes:
                stack.append((child, False))
    return sizes[id(root)]


def _safe_yaml(text: str) -> object:
    """`yaml.safe_load` with bounded nesting and alias expansion.

    Raises:
        yaml.YAMLError: the text is not YAML.
        _YamlTooComplex: it is YAML, but nests too deeply or expands to too many nodes.
    """
    loader = _BoundedLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if _expanded_size(node) > MAX_YAML_NODES:
            raise _YamlTooComplex(
                f"it expands to more than {MAX_YAML_NODES:,} values once its aliases (*name) are "
                "resolved; write the values out instead of nesting aliases"
            )
        return loader.construct_document(node)
    finally:
        loader.dispose()


_REPR = reprlib.Repr()
_REPR.maxlevel = 3
_REPR.maxstring = _QUOTE_CHARS
_REPR.maxother = _QUOTE_CHARS


def _quote(value: object) -> str:
    """A shortened `repr(value)`: error messages never echo a whole (possibly huge) value."""
    # reprlib bounds the items shown per level and the depth, so even a shared-reference
    # graph with billions of implied elements is quoted in constant time.
    text = _REPR.repr(value)
    return text if len(text) <= _QUOTE_CHARS + 20 else text[: _QUOTE_CHARS + 20] + "…"


def _env_value(key: str, raw: str) -> object:
    if raw == "":
        return ""
    if len(raw) > _MAX_ENV_CHARS:
        raise ConfigError(
            f"environment variable {key} is {len(raw):,} characters; the limit is {_MAX_ENV_CHARS:,}. "
            "Unset it or give a short value."
        )
    try:
        return _safe_yaml(raw)
    except yaml.YAMLError:
        return raw  # not YAML: the text itself is the value
    except _YamlTooComplex as exc:
        raise ConfigError(f"environment variable {key} is refused: {exc}. Unset it or simplify it.") from None


def _apply_env(data: dict[str, object], environ: Mapping[str, str]) -> None:
    for key, raw in sorted(environ.items()):
        if not key.startswith(_ENV_PREFIX) or key.startswith(_TEST_PREFIX):
            continue  # KEEL_TEST_* configure keel's own test suite, not keel
        parts = [p.lower() for p in key[len(_ENV_PREFIX) :].split("__") if p]
        if not parts or parts[0] in {"config", "data_dir"}:
            continue  # KEEL_CONFIG names the file; KEEL_DATA_DIR is for tests/benchmarks
        value = _env_value(key, raw)
        node = data
        for part in parts[:-1]:
            child = node.get(part)
            if not isinstance(child, dict):
                child = {}
                node[part] = child
            node = child
        node[parts[-1]] = value


def _format_validation(exc: ValidationError, source: str) -> str:
    errors = exc.errors(include_url=False, include_context=False)
    lines = [f"{source} is invalid:"]
    for err in errors[:_MAX_ERRORS]:
        path = ".".join(str(p) for p in err["loc"][:8]) or "(top level)"
        if len(err["loc"]) > 8:
            path += ".…"
        if err["type"] == "extra_forbidden":
            fix = "this key is unknown; check its spelling against config.example.yaml"
        else:
            fix = err["msg"][:200]
        got = err.get("input")
        shown = f" (got {_quote(got)})" if got is not None and err["type"] != "extra_forbidden" else ""
        if err["loc"][:1] == ("sessions",):
            shown = ""  # the URL may hold a password; the message itself names what is wrong
        lines.append(f"  {path}: {fix}{shown}")
    if len(errors) > _MAX_ERRORS:
        lines.append(f"  … and {len(errors) - _MAX_ERRORS:,} more problems")
    return "\n".join(lines)


def _read_file(path: Path) -> dict[str, object]:
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_CONFIG_BYTES + 1)
    except FileNotFoundError as exc:
        raise ConfigError(f"config file {str(path)!r} does not exist; create it or drop --config") from exc
    except OSError as exc:
        raise ConfigError(f"config file {str(path)!r} could not be read: {exc}") from exc
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(
            f"config file {str(path)!r} is larger than {MAX_CONFIG_BYTES:,} bytes; a config file is a few "
            "kilobytes. Check that --config names the right file."
        )
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"config file {str(path)!r} could not be read: {exc}") from exc
    try:
        loaded = _safe_yaml(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"config file {str(path)!r} is not valid YAML: {str(exc)[:500]}") from exc
    except _YamlTooComplex as exc:
        raise ConfigError(f"config file {str(path)!r} is refused: {exc}") from None
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise ConfigError(f"config file {str(path)!r} must hold a mapping of keys at the top level")
    return loaded


def load_config(path: Path | None = None, environ: Mapping[str, str] | None = None) -> KeelConfig:
    """Read, override and validate the configuration.

    Args:
        path: a YAML file; `None` means defaults plus environment overrides only.
        environ: the environment to read `KEEL_*` overrides from (default: `os.environ`).

    Raises:
        ConfigError: the file is missing, too large, not YAML or too deeply nested / too
            alias-expanded, or a key/value is invalid. The message names each bad key path
            and what to do, quoting values in shortened form.
    """
    env = os.environ if environ is None else environ
    data: dict[str, object] = {}
    source = "configuration"
    if path is not None:
        source = str(path)
        data = _read_file(path)
    _apply_env(data, env)
    try:
        return KeelConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_format_validation(exc, source)) from exc
