"""Per-item outcomes of the long-session eval: JSON that pools and resumes, and the figures.

Every (replay, arm, compression, item) scored is one `Outcome`, kept in the JSON as it is,
so runs can be pooled (concatenate the outcomes) and an interrupted run resumed (an arm whose
outcomes are in the file is not run again; the compression points of each replay are kept
with it, so the arms still run run the same plan).

Figures (`depth_rows`, `final_gain`) pair each arm with `off` item by item:

- per depth d: the items that were said d compressions ago, at whichever compression that
  was, mean retained per arm and the paired bootstrap interval of the gain over `off`;
- the headline: items scored after the last compression, the best non-`off` arm by mean.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Literal, cast

from pydantic import JsonValue

from harness.experiments.retention.scores import RETENTION_SOURCES, RetentionSource
from harness.experiments.retention.stats import Interval, paired_bootstrap

__all__ = [
    "DepthRow",
    "Outcome",
    "depth_rows",
    "depth_table",
    "final_gain",
    "outcome_from_json",
    "outcome_json",
]

_Key = tuple[str, str, int]  # replay, item, compression


@dataclass(frozen=True, slots=True)
class Outcome:
    """One item scored after one compression in one arm."""

    replay: str
    arm: str
    compression: int
    item: str
    kind: Literal["fact", "question"]
    depth: int
    """Compressions since the item was said (1: the latest compression was the first after it)."""
    value: float
    where: tuple[RetentionSource, ...]
    last: bool
    """This is the arm's last compression."""

    @property
    def key(self) -> _Key:
        return (self.replay, self.item, self.compression)


def outcome_json(o: Outcome) -> dict[str, JsonValue]:
    d = asdict(o)
    d["where"] = list(o.where)
    return cast(dict[str, JsonValue], d)


def outcome_from_json(d: dict[str, JsonValue]) -> Outcome:
    where = d.get("where")
    return Outcome(
        replay=str(d["replay"]),
        arm=str(d["arm"]),
        compression=int(cast(int, d["compression"])),
        item=str(d["item"]),
        kind="fact" if d.get("kind") == "fact" else "question",
        depth=int(cast(int, d["depth"])),
        value=float(cast(float, d["value"])),
        where=tuple(s for s in RETENTION_SOURCES if isinstance(where, list) and s in where),
        last=bool(d.get("last")),
    )


@dataclass(frozen=True, slots=True)
class DepthRow:
    """One arm at one depth (depth 0: after the last compression, every item)."""

    arm: str
    depth: int
    n: int
    retained: float
    where: dict[RetentionSource, int]
    gain: Interval | None
    """Paired gain over `off` (None for `off` itself, or without `off`)."""


def _paired(arm: Sequence[Outcome], off: Sequence[Outcome]) -> Interval | None:
    base = {o.key: o.value for o in off}
    pairs = [(o.value, base[o.key]) for o in arm if o.key in base]
    return paired_bootstrap([p[0] for p in pairs], [p[1] for p in pairs])


def _row(arm: str, depth: int, mine: list[Outcome], off: list[Outcome]) -> DepthRow:
    return DepthRow(
        arm=arm,
        depth=depth,
        n=len(mine),
        retained=statistics.fmean(o.value for o in mine),
        where={s: sum(1 for o in mine if s in o.where) for s in RETENTION_SOURCES},
        gain=None if arm == "off" or not off else _paired(mine, off),
    )


def depth_rows(outcomes: Iterable[Outcome], arms: Sequence[str]) -> list[DepthRow]:
    """Per arm: one row per depth, then a depth-0 row for everything after the last compression."""
    all_ = list(outcomes)
    depths = sorted({o.depth for o in all_})
    rows: list[DepthRow] = []
    for arm in arms:
        for d in [*depths, 0]:
            mine = [o for o in all_ if o.arm == arm and (o.last if d == 0 else o.depth == d)]
            off = [o for o in all_ if o.arm == "off" and (o.last if d == 0 else o.depth == d)]
            if mine:
                rows.append(_row(arm, d, mine, off))
    return rows


def final_gain(rows: Sequence[DepthRow]) -> tuple[str, Interval] | None:
    """The best arm after the last compression (by mean retained) and its gain over `off`."""
    final = [r for r in rows if r.depth == 0 and r.arm != "off" and r.gain is not None]
    if not final:
        return None
    best = max(final, key=lambda r: r.retained)
    assert best.gain is not None
    return best.arm, best.gain


def _pct(x: float) -> str:
    return f"{x:.3f}"


def depth_table(rows: Sequence[DepthRow]) -> list[str]:
    """The per-depth table as plain lines (depth `last`: every item after the last compression)."""
    head = f"{'arm':<20}{'depth':>6}{'items':>7}{'retained':>10}{'gain':>9}{'95% CI':>18}  in mem/sum/tail"
    out = [head]
    for r in rows:
        gain = "" if r.gain is None else f"{r.gain.mean:+.3f}"
        ci = "" if r.gain is None else f"[{r.gain.low:+.3f}, {r.gain.high:+.3f}]"
        where = "/".join(str(r.where[s]) for s in RETENTION_SOURCES)
        depth = "last" if r.depth == 0 else str(r.depth)
        out.append(f"{r.arm:<20}{depth:>6}{r.n:>7}{_pct(r.retained):>10}{gain:>9}{ci:>18}  {where}")
    return out
