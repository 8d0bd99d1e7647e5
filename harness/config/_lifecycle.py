"""`cache_lifecycle:` — keep the provider's prompt cache warm through waits, compact before it expires.

Both are off by default: on a hosted provider a refresh is billed, and a compaction changes
the conversation. `harness.lifecycle` holds the rules; `benchmarks/cache_lifecycle.py`
measures them.
"""

from __future__ import annotations

from pydantic import Field

from harness.config._section import Section

__all__ = ["CacheLifecycleConfig"]


class CacheLifecycleConfig(Section):
    keep_warm: bool = False
    ttl_s: float | None = Field(None, gt=0)
    """The cache's lifetime after last use; null: the provider's (Anthropic model.cache_ttl, OpenAI 600 s)."""
    margin_s: float = Field(15.0, ge=0, le=600)
    tool_wait_max_s: float = Field(3600.0, gt=0)
    idle_window_s: float = Field(1800.0, ge=0)
    compact_before_expiry: bool = False
    compact_min_tokens: int = Field(20_000, ge=1)
    compact_ratio: float = Field(0.3, gt=0, le=1)
    summary_tokens: int = Field(1_500, ge=1)
