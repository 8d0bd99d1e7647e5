"""`keel serve`: sessions over HTTP (docs/serve.md)."""

from __future__ import annotations

import argparse
import os

from harness.cli._common import Subparsers, config_from_args, err_console, noun_parser

__all__ = ["register"]


def _serve(args: argparse.Namespace) -> int:
    from harness.serve import run_server  # starlette and uvicorn load only for this command

    cfg = config_from_args(args)
    if not cfg.serve.keys:
        err_console.print(
            "keel serve: no API keys (serve.keys) — anyone on this machine can use it; listening on loopback only"
        )
    run_server(cfg, host=args.host, port=args.port, workers=args.workers, environ=os.environ)
    return 0


def register(sub: Subparsers) -> None:
    p = noun_parser(sub, "serve")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    p.add_argument("--port", type=int, default=8340, help="port (default: 8340)")
    p.add_argument("--workers", type=int, default=1, help="worker processes (default: 1)")
    p.set_defaults(handler=_serve)
