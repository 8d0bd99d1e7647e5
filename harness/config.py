"""The one validated configuration model, and how it is loaded.

`load_config(path, environ)` reads a YAML file (optional), applies `KEEL_`-prefixed
environment overrides (`KEEL_MEMORY__SNAPSHOT_POLICY=live` sets `memory.snapshot_policy`;
nesting uses a double underscore; values are parsed as YAML scalars), and validates the
result into a frozen `KeelConfig`. Unknown keys are errors. Every key is documented in
`config.example.yaml`, which a test validates.

Library code receives a `KeelConfig`; it never reads files or the environment itself.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from harness.errors import ConfigError
from memory import FlushMode
from prompts.slots import DEFAULT_SLOT_ORDER, SlotId

__all__ = [
    "DEFAULT_LOCAL_MODEL",
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
    "SessionSearchConfig",
    "SkillsConfig",
    "TracesConfig",
    "default_home",
    "load_config",
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


class MemoryConfig(_Section):
    memory_enabled: bool = True
    user_profile_enabled: bool = True
    memory_char_limit: int = Field(2200, ge=10)
    user_char_limit: int = Field(1375, ge=10)
    snapshot_policy: Literal["frozen", "invalidate_on_write", "live"] = "frozen"
    overflow: Literal["reject", "evict_oldest"] = "reject"
    lock_timeout_s: float = Field(10.0, gt=0)
    user_id: str | None = None
    provider: Literal["none", "holographic"] = "none"
    holographic: HolographicConfig = HolographicConfig()


class RecallConfig(_Section):
    enabled: bool = True
    persist: bool = True
    wait_s: float = Field(8.0, ge=0)


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


class SessionSearchConfig(_Section):
    enabled: bool = True
    summarize: bool = False
    default_limit: int = Field(3, ge=1, le=10)
    max_concurrency: int = Field(3, ge=1, le=5)


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
    model: ModelConfig = ModelConfig()
    agent: AgentConfig = AgentConfig()
    limits: LimitsConfig = LimitsConfig()
    prompt: PromptConfig = PromptConfig()
    memory: MemoryConfig = MemoryConfig()
    recall: RecallConfig = RecallConfig()
    compression: CompressionConfig = CompressionConfig()
    session_search: SessionSearchConfig = SessionSearchConfig()
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


def _apply_env(data: dict[str, object], environ: Mapping[str, str]) -> None:
    for key, raw in sorted(environ.items()):
        if not key.startswith(_ENV_PREFIX):
            continue
        parts = [p.lower() for p in key[len(_ENV_PREFIX) :].split("__") if p]
        if not parts or parts[0] in {"config", "data_dir"}:
            continue  # KEEL_CONFIG names the file; KEEL_DATA_DIR is for tests/benchmarks
        try:
            value: object = yaml.safe_load(raw) if raw != "" else ""
        except yaml.YAMLError:
            value = raw
        node = data
        for part in parts[:-1]:
            child = node.get(part)
            if not isinstance(child, dict):
                child = {}
                node[part] = child
            node = child
        node[parts[-1]] = value


def _format_validation(exc: ValidationError, source: str) -> str:
    lines = [f"{source} is invalid:"]
    for err in exc.errors():
        path = ".".join(str(p) for p in err["loc"]) or "(top level)"
        if err["type"] == "extra_forbidden":
            fix = "this key is unknown; check its spelling against config.example.yaml"
        else:
            fix = err["msg"]
        got = err.get("input")
        shown = f" (got {got!r})" if got is not None and err["type"] != "extra_forbidden" else ""
        lines.append(f"  {path}: {fix}{shown}")
    return "\n".join(lines)


def load_config(path: Path | None = None, environ: Mapping[str, str] | None = None) -> KeelConfig:
    """Read, override and validate the configuration.

    Args:
        path: a YAML file; `None` means defaults plus environment overrides only.
        environ: the environment to read `KEEL_*` overrides from (default: `os.environ`).

    Raises:
        ConfigError: the file is missing or not YAML, or a key/value is invalid. The message
            names each bad key path and what to do.
    """
    env = os.environ if environ is None else environ
    data: dict[str, object] = {}
    source = "configuration"
    if path is not None:
        source = str(path)
        try:
            text = path.read_text(encoding="utf-8-sig")
        except FileNotFoundError as exc:
            raise ConfigError(
                f"config file {str(path)!r} does not exist; create it or drop --config"
            ) from exc
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"config file {str(path)!r} could not be read: {exc}") from exc
        try:
            loaded = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ConfigError(f"config file {str(path)!r} is not valid YAML: {exc}") from exc
        if loaded is None:
            loaded = {}
        if not isinstance(loaded, dict):
            raise ConfigError(f"config file {str(path)!r} must hold a mapping of keys at the top level")
        data = loaded
    _apply_env(data, env)
    try:
        return KeelConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_format_validation(exc, source)) from exc
