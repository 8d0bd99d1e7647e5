"""The `keel` command: parse arguments, load config, dispatch to a noun-verb command."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Callable, Sequence

from rich.markup import escape

from harness.cli._common import Subparsers, err_console
from harness.errors import KeelError
from memory.errors import MemoryLayerError

__all__ = ["build_parser", "main"]

Registrar = Callable[[Subparsers], None]


def _registrars() -> list[Registrar]:
    # Imported here, not at module import, so `keel --help` stays fast and a broken
    # optional command cannot break the others.
    from harness.cli import (
        _chat_cmd,
        _config_cmd,
        _demo_cmd,
        _eval_cmd,
        _experiment_cmd,
        _memory_cmd,
        _models_cmd,
        _serve_cmd,
        _sessions_cmd,
        _skills_cmd,
        _tools_cmd,
        cache,
    )

    return [
        _demo_cmd.register,
        _chat_cmd.register,
        _experiment_cmd.register,
        _eval_cmd.register,
        _memory_cmd.register,
        _sessions_cmd.register,
        _skills_cmd.register,
        _sessions_cmd.register_storage,
        _tools_cmd.register,
        cache.register,
        _config_cmd.register,
        _models_cmd.register,
        _serve_cmd.register,
    ]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="keel",
        description="keel — an agent harness with durable memory and a cache-stable prompt.",
    )
    parser.add_argument(
        "--config", metavar="PATH", help="config file (default: $KEEL_CONFIG, else built-in defaults)"
    )
    parser.add_argument(
        "--home", metavar="DIR", help="keel home directory (default: $KEEL_HOME, else ~/.keel)"
    )
    parser.add_argument(
        "--user",
        metavar="ID",
        help="the user to act for: their USER.md, sessions and traces (default: config scope.user)",
    )
    parser.add_argument(
        "--workspace",
        metavar="ID",
        help="the workspace to act in: its MEMORY.md and skills (default: config scope.workspace)",
    )
    sub = parser.add_subparsers(title="commands", metavar="COMMAND")
    for register in _registrars():
        register(sub)
    return parser


def _terminate(signum: int, frame: object) -> None:
    # SIGTERM unwinds like Ctrl-C, so `finally` blocks run: the embedded model server is
    # stopped and the session row is closed instead of being left behind.
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminate)
    parser = build_parser()
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
