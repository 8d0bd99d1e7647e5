"""`keel tools list`: every tool the agent would get, one per line, starting with its name."""

from __future__ import annotations

import argparse
import os

import anyio

from harness.cli._common import Subparsers, config_from_args, console, verb_parsers
from harness.tools.listing import tool_listing
from harness.wiring.tool_port import listing_manager

__all__ = ["register"]


def _list(args: argparse.Namespace) -> int:
    cfg = config_from_args(args)
    listing = anyio.run(lambda: tool_listing(cfg, environ=os.environ, provider=listing_manager(cfg)))
    width = max((len(t.name) for t in listing), default=0)
    for t in listing:
        line = f"{t.name.ljust(width)}  {t.source}"
        console.print(
            f"{line}  — {t.description}" if t.description else line,
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    return 0


def register(sub: Subparsers) -> None:
    verbs = verb_parsers(sub, "tools")
    listing = verbs.add_parser("list", help="one tool per line: name, where it comes from, what it does")
    listing.set_defaults(handler=_list)
