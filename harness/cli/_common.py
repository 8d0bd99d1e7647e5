"""Helpers every CLI command shares: config loading, the console, error exits."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TypeAlias

from rich.console import Console

from harness.cli.commands import COMMANDS
from harness.config import KeelConfig, load_config, resolve_principal
from harness.errors import ConfigError
from memory import Principal, ScopeError
from memory.scope import case_collision

__all__ = [
    "Subparsers",
    "config_from_args",
    "console",
    "err_console",
    "home_from_args",
    "noun_parser",
    "principal_from_args",
    "verb_parsers",
]

# argparse exposes no public name for the subparsers action.
Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"

# Piped output (files, CI logs) gets a wide fixed width instead of rich's 80 columns, so
# tables stay readable; terminals keep their own width.
console = Console(highlight=False, width=None if sys.stdout.isatty() else 160)
err_console = Console(stderr=True, highlight=False, width=None if sys.stderr.isatty() else 160)


def noun_parser(sub: Subparsers, noun: str) -> argparse.ArgumentParser:
    """The parser of `noun`, with its help from the table of nouns (`commands.COMMANDS`)."""
    return sub.add_parser(noun, help=COMMANDS[noun][1])


def verb_parsers(sub: Subparsers, noun: str, *, title: str = "verbs", metavar: str = "VERB") -> Subparsers:
    """The sub-commands of `noun` (`keel NOUN VERB`); one of them is required."""
    return noun_parser(sub, noun).add_subparsers(title=title, metavar=metavar, required=True)


def config_from_args(args: argparse.Namespace) -> KeelConfig:
    """Load the config named by `--config` (or `$KEEL_CONFIG`), with `--home`, `--user` and
    `--workspace` applied (the ids are checked by `resolve_principal`, where they are used)."""
    raw = getattr(args, "config", None) or os.environ.get("KEEL_CONFIG")
    cfg = load_config(Path(raw) if raw else None, os.environ)
    home = getattr(args, "home", None)
    if home:
        cfg = cfg.model_copy(update={"home": Path(home)})
    scope: dict[str, object] = {}
    for flag, key in (("user", "user"), ("workspace", "workspace")):
        value = getattr(args, flag, None)
        if value is not None:
            scope[key] = value
    if scope:
        update: dict[str, object] = {"scope": cfg.scope.model_copy(update=scope)}
        if "user" in scope:  # the flag wins over the deprecated memory.user_id too
            update["memory"] = cfg.memory.model_copy(update={"user_id": None})
        cfg = cfg.model_copy(update=update)
    return cfg


def home_from_args(args: argparse.Namespace) -> tuple[KeelConfig, Path]:
    """The config (as `config_from_args`) and the keel home it resolves to."""
    config = config_from_args(args)
    return config, config.resolved_home(os.environ)


def principal_from_args(args: argparse.Namespace) -> tuple[KeelConfig, Principal]:
    """The config and the principal this invocation acts for (`--user`/`--workspace`, else config).

    Raises:
        ConfigError: an id is not a safe directory name.
    """
    cfg = config_from_args(args)
    principal = resolve_principal(cfg)
    try:
        case_collision(cfg.resolved_home(os.environ).expanduser(), principal)
    except ScopeError as exc:
        raise ConfigError(str(exc)) from exc
    return cfg, principal
