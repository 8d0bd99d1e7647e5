"""The `keel` command: parse arguments, load config, dispatch to a noun-verb command."""

from __future__ import annotations

import argparse
import importlib
import signal
import sys
import threading
from collections.abc import Callable, Sequence

from rich.markup import escape

from harness.cli._common import Subparsers, err_console
from harness.cli.commands import COMMANDS
from harness.errors import KeelError
from memory.errors import MemoryLayerError

__all__ = ["build_parser", "main"]

# The top-level options, each with its metavar and help; all take a value, so the noun is the
# first argument that is not one of these options (or its value).
_OPTIONS: dict[str, tuple[str, str]] = {
    "--config": ("PATH", "config file (default: $KEEL_CONFIG, else built-in defaults)"),
    "--home": ("DIR", "keel home directory (default: $KEEL_HOME, else ~/.keel)"),
    "--user": ("ID", "the user to act for: their USER.md, sessions and traces (default: config scope.user)"),
    "--workspace": (
        "ID",
        "the workspace to act in: its MEMORY.md and skills (default: config scope.workspace)",
    ),
}


def _selected(argv: Sequence[str]) -> str | None:
    """The noun `argv` runs, or None (no noun, `--help`, or an unknown word argparse rejects)."""
    args = iter(argv)
    for arg in args:
        if arg in _OPTIONS:
            next(args, None)
        elif not arg.startswith("-"):
            return arg if arg in COMMANDS else None
        elif arg in {"-h", "--help"}:
            return None
    return None


def _register(sub: Subparsers, argv: Sequence[str] | None) -> None:
    """Every noun's full parser (`argv` None), or the selected noun's and the others' names."""
    selected = None if argv is None else _selected(argv)
    done: set[str] = set()
    for noun, (where, help_text) in COMMANDS.items():
        if where in done:
            continue
        if argv is None or (selected is not None and COMMANDS[selected][0] == where):
            # Imported here, not at module import: a broken optional command cannot break
            # the others, and a command pays only for what it uses.
            module, _, function = where.partition(":")
            register: Callable[[Subparsers], None] = getattr(
                importlib.import_module(f"harness.cli.commands.{module}"), function or "register"
            )
            register(sub)
            done.add(where)
        else:
            sub.add_parser(noun, help=help_text)


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The `keel` parser; with `argv`, only the noun it runs is fully registered (the others
    are listed by name and help)."""
    parser = argparse.ArgumentParser(
        prog="keel",
        description="keel — an agent harness with durable memory and a cache-stable prompt.",
    )
    for flag, (metavar, help_text) in _OPTIONS.items():
        parser.add_argument(flag, metavar=metavar, help=help_text)
    sub = parser.add_subparsers(title="commands", metavar="COMMAND")
    _register(sub, argv)
    return parser


def _terminate(signum: int, frame: object) -> None:
    # SIGTERM unwinds like Ctrl-C, so `finally` blocks run: the embedded model server is
    # stopped and the session row is closed instead of being left behind.
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminate)
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    handler: Callable[[argparse.Namespace], int] | None = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    try:
        return handler(args)
    except (KeelError, MemoryLayerError) as exc:
        err_console.print(f"[bold red]error:[/] {escape(str(exc))}", markup=True, soft_wrap=True)
        return 2
    except KeyboardInterrupt:
        err_console.print("interrupted")
        return 130


if __name__ == "__main__":
    sys.exit(main())
