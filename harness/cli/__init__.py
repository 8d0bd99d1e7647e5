# The `keel` command-line interface. `_app` builds the argparse tree and dispatches;
# each noun lives in its own module of `commands/` exposing `register(subparsers)`, except
# `commands/cache/`, whose verbs (report, lint) are a module each. `_common` holds the shared
# console and config helpers, `_render` the event printer of `chat` and `experiment`.
# Commands only parse arguments, load config and call `anyio.run`; the work lives in the
# library packages.
from harness.cli._app import build_parser, main

__all__ = ["build_parser", "main"]
