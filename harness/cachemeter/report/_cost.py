"""Cost estimates from the config's price table (USD per million tokens; cache multipliers)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from harness.cachemeter._errors import MeterError
from harness.config import PriceConfig

__all__ = ["Pricer", "add_cost", "pick_price", "request_cost"]


def add_cost(a: float | None, b: float | None) -> float | None:
    """A running dollar sum: None until a priced value comes, unpriced values skipped."""
    if b is None:
        return a
    return b if a is None else a + b


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


def request_cost(
    price: PriceConfig,
    *,
    prompt: int,
    reusable: int,
    write: int,
    output: int,
    ttl: Literal["5m", "1h"] | None = None,
) -> float:
    """Dollars for one request: uncached input, cache reads and writes at their multipliers
    (a 1-hour write at `cache_write_1h`), output."""
    uncached = max(0, prompt - reusable - write)
    write_rate = price.cache_write_1h if ttl == "1h" else price.cache_write
    weighted = uncached + reusable * price.cache_read + write * write_rate
    return (weighted * price.input + output * price.output) / 1_000_000


class Pricer:
    """Costs in one price table: which entry a model uses, and what a request or a miss costs."""

    def __init__(self, prices: Mapping[str, PriceConfig] | None, override: str | None = None) -> None:
        self.prices = prices
        self.override = override
        if prices is not None and override is not None:
            pick_price("", prices, override=override)  # an unknown name fails here, once

    def pick(self, model: str) -> str | None:
        """The price-table entry for `model` (None: unpriced, or no table)."""
        if self.prices is None:
            return None
        found = pick_price(model, self.prices, override=self.override)
        return None if found is None else found[0]

    def cost(
        self,
        entry: str | None,
        *,
        prompt: int,
        reusable: int,
        write: int,
        output: int,
        ttl: Literal["5m", "1h"] | None = None,
    ) -> float | None:
        """`request_cost` under table entry `entry` (None when unpriced)."""
        if entry is None or self.prices is None:
            return None
        return request_cost(
            self.prices[entry], prompt=prompt, reusable=reusable, write=write, output=output, ttl=ttl
        )

    def lost(
        self,
        entry: str | None,
        *,
        prompt: int,
        reusable: int,
        write: int,
        lost: int,
        ttl: Literal["5m", "1h"] | None = None,
    ) -> float | None:
        """What `lost` tokens that missed the cache cost: the request as it was, minus the same
        request had it read them (and so not written them again)."""
        if entry is None or self.prices is None or lost <= 0:
            return None if entry is None or self.prices is None else 0.0
        price = self.prices[entry]
        was = request_cost(price, prompt=prompt, reusable=reusable, write=write, output=0, ttl=ttl)
        could = request_cost(
            price, prompt=prompt, reusable=reusable + lost, write=max(0, write - lost), output=0, ttl=ttl
        )
        return max(0.0, was - could)

    def write_cost(
        self, entry: str | None, *, write: int, ttl: Literal["5m", "1h"] | None = None
    ) -> float | None:
        """Dollars spent on cache writes alone."""
        if entry is None or self.prices is None:
            return None
        price = self.prices[entry]
        rate = price.cache_write_1h if ttl == "1h" else price.cache_write
        return write * rate * price.input / 1_000_000
