"""The settings a session runs under: the part of the config the turn loop reads.

`Session` takes these, not the whole `KeelConfig`: it is clear what the loop depends on,
and tests (or an embedding application) can build a session without a config file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from harness.compress.host import CompressionSettings
from harness.compress.plan import effective_threshold
from harness.config import KeelConfig
from harness.lifecycle import CacheEconomics, LifecycleSettings, economics_for

__all__ = ["SessionSettings"]


@dataclass(frozen=True, slots=True)
class SessionSettings:
    """What the turn loop needs to know.

    Attributes:
        max_iterations: model calls per user turn before the loop stops (`limits.max_iterations`).
        max_output_tokens: the output cap of each turn request (`model.max_output_tokens`).
        temperature: the sampling temperature, or None for the provider's default.
        recall: fence provider recall onto user messages (`recall.enabled`).
        recall_persist: replay the recall on later requests (`recall.persist`).
        recall_wait_s: the longest wait for recall on any turn (`recall.wait_s`).
        recall_max_chars: the most recalled text one turn carries (`recall.max_chars`).
        snapshot_policy: when the memory blocks of the prompt may change (`memory.snapshot_policy`):
            `live` before every request; otherwise at most once per turn, before its first
            request (`invalidate_on_write`: a write shows from the next turn, as the seeds say).
        tool_result_chars: the longest tool result the transcript keeps; a longer one is
            stored whole and kept capped, pointing at it (`limits.tool_result_chars`).
        compression: the compression settings.
        max_message_chars: the longest user message a turn takes (`limits.max_message_chars`).
        lifecycle: keep-warm and compaction before expiry (`cache_lifecycle`).
        cache: the provider's cache economics (`harness.lifecycle`); None: nothing to keep.
    """

    max_iterations: int = 12
    max_output_tokens: int | None = 512
    temperature: float | None = None
    recall: bool = True
    recall_persist: bool = True
    recall_wait_s: float = 8.0
    recall_max_chars: int = 4_000
    snapshot_policy: Literal["frozen", "invalidate_on_write", "live"] = "frozen"
    max_message_chars: int = 1_000_000
    tool_result_chars: int = 8_000
    compression: CompressionSettings = field(
        default_factory=lambda: CompressionSettings(
            enabled=True,
            threshold_tokens=effective_threshold(0.5, 8192),
            flush="memory_only",
            flush_max_tokens=512,
            context_window=8192,
        )
    )
    lifecycle: LifecycleSettings = field(default_factory=LifecycleSettings)
    cache: CacheEconomics | None = None

    @classmethod
    def from_config(cls, config: KeelConfig) -> SessionSettings:
        """The settings a config describes."""
        c, m, life = config.compression, config.model, config.cache_lifecycle
        return cls(
            max_iterations=config.limits.max_iterations,
            max_output_tokens=m.max_output_tokens,
            temperature=m.temperature,
            recall=config.recall.enabled,
            recall_persist=config.recall.persist,
            recall_wait_s=config.recall.wait_s,
            recall_max_chars=config.recall.max_chars,
            snapshot_policy=config.memory.snapshot_policy,
            max_message_chars=config.limits.max_message_chars,
            tool_result_chars=config.limits.tool_result_chars,
            compression=CompressionSettings(
                enabled=c.enabled,
                threshold_tokens=effective_threshold(c.threshold, m.context_window),
                flush=c.flush,
                flush_max_tokens=c.flush_max_tokens,
                flush_reply=c.flush_reply,
                context_window=m.context_window,
                tail_ratio=c.tail_ratio,
                protect_first_n=c.protect_first_n,
                protect_last_n=c.protect_last_n,
                identifier_index=c.identifier_index,
                summary_temperature=m.temperature,
                review_interval=c.review_interval,
                flush_chunk_tokens=c.chunk_tokens(),
            ),
            lifecycle=LifecycleSettings(**life.model_dump(exclude={"ttl_s"})),
            cache=economics_for(
                m.provider, model=m.name or "", cache_ttl=m.cache_ttl, prices=config.prices, ttl_s=life.ttl_s
            ),
        )
