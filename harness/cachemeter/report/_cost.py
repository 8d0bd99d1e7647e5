"""Cost estimates from the config's price table (USD per million tokens; cache multipliers)."""

from __future__ import annotations

from collections.abc import Mapping

from harness.cachemeter._errors import MeterError
from harness.config import PriceConfig

__all__ = ["pick_price", "request_cost"]


def pick_price(
    model: str, prices: Mapping[str, PriceConfig], *, override: str | None = None
) -> tuple[str, PriceConfig] | None:
    """The price-table entry for a model: `override` if given, else the exact name, else the
    longest table name contained in the model name (`claude-sonnet-4-5-20250929` →
    `claude-sonnet-4-5`). None when nothing matches.

    Raises:
        MeterError: `override` is not in the table.
    """
    if override is not None:
        if override not in prices:
            raise MeterError(
                f"--price {override!r} is not in the price table; use one of {sorted(prices)!r} "
                "or add it under `prices:` in the config"
            )
        return override, prices[override]
    if model in prices:
        return model, prices[model]
    lowered = model.lower()
    hits = [name for name in prices if name.lower() in lowered]
    if not hits:
        return None
    best = max(hits, key=len)
    return best, prices[best]


def request_cost(price: PriceConfig, *, prompt: int, reusable: int, write: int, output: int) -> float:
    """Dollars for one request: uncached input, cache reads and writes at their multipliers, output."""
    uncached = max(0, prompt - reusable - write)
    weighted = uncached + reusable * price.cache_read + write * price.cache_write
    return (weighted * price.input + output * price.output) / 1_000_000
