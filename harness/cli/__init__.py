# The `keel` command-line interface. `_app` builds the argparse tree and dispatches;
# each noun lives in its own `_<noun>_cmd.py` module exposing `register(subparsers)`.
# Commands only parse arguments, load config and call `anyio.run`; the work lives in the
# library packages.
from harness.cli._app import build_parser, main

__all__ = ["build_parser", "main"]
