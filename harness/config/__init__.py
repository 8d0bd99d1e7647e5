# The one validated configuration model, and how it is loaded.
# `_schema.py` (the sections and `KeelConfig`), `_mcp.py` (the MCP servers), `_retention.py` (how
# long stores keep data), `_lifecycle.py` (keep-warm, compaction before expiry), `_stores.py` (where
# the stores live and the principal a session runs for), `_serve.py` (`keel serve`), `_loader.py` (`load_config`: the bounded
# YAML reader and `KEEL_*` environment overrides), `_section.py` (the frozen, extra-forbidding base).
# Config validates and describes; it opens nothing (the stores are opened in `harness.wiring`).
# Library code receives a `KeelConfig`; it never reads files or the environment itself.
"""The one validated configuration model, and how it is loaded.

`load_config(path, environ)` reads a YAML file (optional), applies `KEEL_`-prefixed
environment overrides (`KEEL_MEMORY__SNAPSHOT_POLICY=live` sets `memory.snapshot_policy`;
nesting uses a double underscore; values are parsed as YAML scalars), and validates the
result into a frozen `KeelConfig`. Unknown keys are errors. Every key is documented in
`config.example.yaml`, which a test validates.
"""

from harness.config._lifecycle import CacheLifecycleConfig
from harness.config._loader import load_config
from harness.config._mcp import McpConfig, McpServerConfig
from harness.config._retention import RetentionConfig
from harness.config._schema import (
    DEFAULT_FLUSH_CHUNK_TOKENS,
    DEFAULT_LOCAL_MODEL,
    AgentConfig,
    CompressionConfig,
    HolographicConfig,
    KeelConfig,
    LimitsConfig,
    LocalModelName,
    LocalServerConfig,
    MemoryConfig,
    ModelConfig,
    PriceConfig,
    PromptConfig,
    RecallConfig,
    RetryConfig,
    ScopeConfig,
    SemanticConfig,
    SessionSearchConfig,
    SkillsConfig,
    TracesConfig,
    default_home,
    resolve_principal,
)
from harness.config._serve import ServeConfig, ServeKey
from harness.config._stores import SessionsConfig, StorageConfig
from harness.config._telemetry import TelemetryConfig

__all__ = [
    "DEFAULT_FLUSH_CHUNK_TOKENS",
    "DEFAULT_LOCAL_MODEL",
    "AgentConfig",
    "CacheLifecycleConfig",
    "CompressionConfig",
    "HolographicConfig",
    "KeelConfig",
    "LimitsConfig",
    "LocalModelName",
    "LocalServerConfig",
    "McpConfig",
    "McpServerConfig",
    "MemoryConfig",
    "ModelConfig",
    "PriceConfig",
    "PromptConfig",
    "RecallConfig",
    "RetentionConfig",
    "RetryConfig",
    "ScopeConfig",
    "SemanticConfig",
    "ServeConfig",
    "ServeKey",
    "SessionSearchConfig",
    "SessionsConfig",
    "SkillsConfig",
    "StorageConfig",
    "TelemetryConfig",
    "TracesConfig",
    "default_home",
    "load_config",
    "resolve_principal",
]
