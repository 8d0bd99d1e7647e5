"""What requests cost: the config's price table (USD per million tokens; cache multipliers).

Shared by every consumer of the meter's stream (the report, the TTL sweep, the replicas):
`Pricer` picks a model's table entry once, `Pricer.request` prices one request, and
`RequestPrice` answers what a simulator's step on it costs, what its lost tokens cost and what
its cache writes cost. `billed_ttl` says which write price applies; `money` prints dollars.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from harness.cachemeter._errors import MeterError
from harness.cachemeter.sim import SimSettings
from harness.config import PriceConfig

__all__ = ["Pricer", "RequestPrice", "add_cost", "billed_ttl", "money", "pick_price", "request_cost"]

BilledTtl = Literal["5m", "1h"] | None


def money(value: float | None) -> str:
    """Dollars to four places; — when unpriced."""
    if value is None:
        return "—"
    sign = "-" if value < 0 and round(value, 4) != 0 else ""
    return f"{sign}${abs(value):,.4f}"


def billed_ttl(request_ttl: Literal["5m", "1h"] | None, settings: SimSettings) -> BilledTtl:
    """The TTL cache writes are billed at: the request's own, unless the settings impose one
    (a TTL over 5 minutes is billed as Anthropic's 1-hour writes, the cheapest that covers it)."""
    if settings.anthropic_ttl_s is None:
        return request_ttl
    return "1h" if settings.anthropic_ttl_s > 300 else "5m"


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

    def request(self, model: str, *, prompt: int, output: int, ttl: BilledTtl) -> RequestPrice:
        """One request of `prompt` tokens (and `output` generated) under this table."""
        return RequestPrice(self, self.pick(model), prompt, output, ttl)

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


@dataclass(frozen=True, slots=True)
class RequestPrice:
    """One request under a price table; every figure is None when it is unpriced."""

    pricer: Pricer
    entry: str | None
    prompt: int
    output: int
    ttl: BilledTtl

    def cost(self, *, reusable: int, write: int) -> float | None:
        """The request, with `reusable` tokens read from the cache and `write` written to it."""
        p = self.pricer
        return p.cost(
            self.entry, prompt=self.prompt, reusable=reusable, write=write, output=self.output, ttl=self.ttl
        )

    def lost(self, *, reusable: int, write: int, lost: int) -> float | None:
        """What `lost` tokens that missed the cache cost (`Pricer.lost`)."""
        p = self.pricer
        return p.lost(self.entry, prompt=self.prompt, reusable=reusable, write=write, lost=lost, ttl=self.ttl)

    def write_cost(self, *, write: int) -> float | None:
        """Dollars spent on the cache writes alone."""
        return self.pricer.write_cost(self.entry, write=write, ttl=self.ttl)
