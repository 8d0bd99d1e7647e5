"""`keel config check|path`."""

from __future__ import annotations

import argparse
import os

from harness.cli._common import Subparsers, console, principal_from_args, verb_parsers

__all__ = ["register"]


def _check(args: argparse.Namespace) -> int:
    cfg, principal = principal_from_args(args)  # also checks --user / --workspace
    console.print(
        f"config OK — model provider {cfg.model.provider!r}, home {str(cfg.resolved_home(os.environ))!r}, "
        f"for {principal.describe()}",
        markup=False,
    )
    return 0


def _path(args: argparse.Namespace) -> int:
    raw = getattr(args, "config", None) or os.environ.get("KEEL_CONFIG")
    if raw:
        console.print(raw)
    else:
        console.print("no config file: built-in defaults plus KEEL_* environment overrides")
    return 0


def register(sub: Subparsers) -> None:
    verbs = verb_parsers(sub, "config")
    check = verbs.add_parser("check", help="validate the config file and KEEL_* overrides")
    check.set_defaults(handler=_check)
    verbs.add_parser("path", help="print which config file is in use").set_defaults(handler=_path)
