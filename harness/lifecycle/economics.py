"""What a provider's prompt cache costs and how long it lives: the numbers the lifecycle decides by.

The rules are the cache meter's provider models (`harness.cachemeter.sim`): Anthropic keeps a
prefix for its `cache_control` TTL (5 minutes, or 1 hour) from its last write or read, bills a
write at 1.25× (2× for 1 hour) and a read at 0.1× the input price; OpenAI keeps it about 10
minutes idle, bills nothing extra for the write and reads at its discounted price; a local
server (keel's own) keeps it until it is evicted, and a token costs nothing. Prices come from
the config's `prices:` table, matched by model name like the meter matches them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from harness.config import PriceConfig

__all__ = ["ANTHROPIC_TTL_S", "OPENAI_IDLE_TTL_S", "CacheEconomics", "economics_for", "price_for"]

ANTHROPIC_TTL_S = {"5m": 300.0, "1h": 3600.0}
"""Anthropic's cache_control TTLs (the meter's AnthropicSimulator uses the same)."""

OPENAI_IDLE_TTL_S = 600.0
"""OpenAI's documented idle eviction, 5–10 minutes; the meter's OpenAISimulator default."""

MIN_CACHED_TOKENS = 1024
"""Below this no provider caches a prefix (some Anthropic models need more)."""


@dataclass(frozen=True, slots=True)
class CacheEconomics:
    """One provider's cache as the lifecycle sees it.

    Attributes:
        provider: `anthropic`, `openai` or `local`.
        ttl_s: how long a prefix lives after its last use; None when it does not expire.
        input_usd: dollars per uncached input token.
        output_usd: dollars per output token.
        write_mult: a cache write's price as a multiple of `input_usd` (1.0: billed as input).
        read_mult: a cache read's price as a multiple of `input_usd`.
        min_tokens: the shortest prefix the provider caches.
    """

    provider: Literal["anthropic", "openai", "local"]
    ttl_s: float | None
    input_usd: float
    output_usd: float
    write_mult: float
    read_mult: float
    min_tokens: int = MIN_CACHED_TOKENS

    @property
    def costs_money(self) -> bool:
        """Whether a refresh is billed (hosted providers); keel keeps it off there by default."""
        return self.input_usd > 0 or self.output_usd > 0

    def refresh_cost(self, prefix_tokens: int, *, output_tokens: int = 1) -> float:
        """A request that re-reads the cached prefix and asks for `output_tokens`."""
        return prefix_tokens * self.input_usd * self.read_mult + output_tokens * self.output_usd

    def warm_cost(self, prefix_tokens: int) -> float:
        """What the next request pays for the prefix while it is still cached."""
        return prefix_tokens * self.input_usd * self.read_mult

    def cold_cost(self, prefix_tokens: int) -> float:
        """What the next request pays for the prefix once it expired: written again."""
        return prefix_tokens * self.input_usd * self.write_mult

    def rewrite_extra(self, prefix_tokens: int) -> float:
        """What an expiry adds to the next request: the re-write instead of the read."""
        return self.cold_cost(prefix_tokens) - self.warm_cost(prefix_tokens)


def price_for(model: str, prices: Mapping[str, PriceConfig]) -> PriceConfig | None:
    """The price of `model`: its own entry, else the longest entry its name contains."""
    if model in prices:
        return prices[model]
    lowered = model.lower()
    names = [name for name in prices if name.lower() in lowered]
    return prices[max(names, key=len)] if names else None


def economics_for(
    provider: Literal["local", "openai", "anthropic"],
    *,
    model: str,
    cache_ttl: Literal["5m", "1h"],
    prices: Mapping[str, PriceConfig],
    ttl_s: float | None = None,
) -> CacheEconomics:
    """The cache economics of `model` on `provider` (a model without a price costs nothing);
    `ttl_s` replaces the provider's cache lifetime (a server with its own idle eviction)."""
    price = price_for(model, prices)
    inp = 0.0 if price is None else price.input / 1e6
    out = 0.0 if price is None else price.output / 1e6
    read = 1.0 if price is None else price.cache_read
    if provider == "anthropic":
        write = 1.25 if price is None else (price.cache_write_1h if cache_ttl == "1h" else price.cache_write)
        return CacheEconomics("anthropic", ttl_s or ANTHROPIC_TTL_S[cache_ttl], inp, out, write, read)
    if provider == "openai":
        return CacheEconomics("openai", ttl_s or OPENAI_IDLE_TTL_S, inp, out, 1.0, read)
    return CacheEconomics("local", ttl_s, 0.0, 0.0, 1.0, 1.0)
