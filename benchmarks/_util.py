"""Small helpers the benchmark scripts share: medians, percentiles, the data directory.

Benchmarks are scripts (`python benchmarks/<name>.py`); each prints medians and ratios
measured side by side in one run, and ends with one `name value` line for machines.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Sequence
from pathlib import Path

import anyio

from harness.events import Event
from harness.loop.session import Session

__all__ = ["add_set_option", "bounded_turn", "default_data_dir", "median", "overrides", "percentile"]

REPO = Path(__file__).resolve().parents[1]


def default_data_dir() -> Path:
    """`$KEEL_DATA_DIR`, else `../shared/data` next to the repository."""
    env = os.environ.get("KEEL_DATA_DIR")
    return Path(env) if env else REPO.parent / "shared" / "data"


def median(samples: Sequence[float]) -> float:
    return statistics.median(samples)


def percentile(samples: Sequence[float], q: float) -> float:
    """The q-th percentile (0–100) by nearest rank."""
    if not samples:
        raise ValueError("no samples")
    ordered = sorted(samples)
    rank = max(1, round(q / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def script_parser(doc: str | None, *, whole: bool = False) -> argparse.ArgumentParser:
    """A benchmark script's parser: `doc`'s first paragraph as its description, or with
    `whole` all of `doc`, laid out as written."""
    if whole:
        return argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    return argparse.ArgumentParser(description=(doc or "").split("\n\n")[0] or None)


def add_set_option(parser: argparse.ArgumentParser) -> None:
    """`--set KEEL_X=V` (repeatable): config overrides given as environment keys."""
    parser.add_argument(
        "--set", action="append", default=[], metavar="KEEL_X=V", help="extra config as environment keys"
    )


def overrides(args: argparse.Namespace) -> dict[str, str]:
    """The `--set` overrides as a mapping."""
    return dict(item.split("=", 1) for item in args.set)


async def bounded_turn(session: Session, text: str, deadline: float) -> tuple[list[Event], bool]:
    """One turn's events, and whether it finished before `deadline` (`time.monotonic()`)."""
    events: list[Event] = []
    with anyio.move_on_after(max(0.0, deadline - time.monotonic())) as scope:
        async with session.run_turn(text) as stream:
            async for ev in stream:
                events.append(ev)
    return events, not scope.cancelled_caught
