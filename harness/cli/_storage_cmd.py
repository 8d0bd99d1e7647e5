"""`keel storage migrate --to postgres | path`: move a home's state to the PostgreSQL server.

`migrate` copies the home's curated files, `state.db` and their archives into the server
the config's `storage:` section names (or `--url` / `--schema`), verifies every copy by
count and hash, never writes the source, and skips what is already there: rerun it freely.
"""

from __future__ import annotations

import argparse
import os

import anyio

from harness.cli._common import Subparsers, config_from_args, console
from harness.errors import CommandError
from harness.wiring.migrate import migrate_home
from memory import MemoryLayerError

__all__ = ["register"]


def _migrate(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    home = config.resolved_home(os.environ)
    url = args.url or config.storage.url or config.sessions.url
    schema = args.schema or config.storage.pg_schema
    if not url:
        raise CommandError(
            "no PostgreSQL server to migrate to: give --url postgresql://USER@HOST:PORT/DATABASE, or set "
            "storage.url (or $KEEL_STORAGE__URL)"
        )
    try:
        report = anyio.run(lambda: migrate_home(home, url, schema=schema))
    except MemoryLayerError as exc:
        raise CommandError(f"migration stopped, nothing at {str(home)!r} was changed: {exc}") from exc
    console.print(f"copied {len(report.copied)}, already there {len(report.skipped)}", markup=False)
    for item in report.conflicts:
        console.print(f"conflict (left alone, nothing overwritten): {item}", markup=False)
    for item in report.left_in_place:
        console.print(f"not copied, left in place: {item}", markup=False)
    if not report.verified:
        raise CommandError("a copy did not verify (count or hash); run the migration again and report it")
    if report.conflicts:
        raise CommandError("some data on the server differs from the home; resolve the conflicts above")
    console.print(
        "verified. Set storage.backend: postgres (and storage.url) to use it; the home was not changed.",
        markup=False,
    )
    return 0


def _path(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    if config.storage.backend == "postgres":
        console.print(
            f"{config.sessions.location(config.resolved_home(os.environ))}", markup=False, soft_wrap=True
        )
    else:
        console.print(str(config.resolved_home(os.environ)), markup=False, soft_wrap=True)
    return 0


def register(sub: Subparsers) -> None:
    p = sub.add_parser("storage", help="where state lives; move a home into PostgreSQL")
    verbs = p.add_subparsers(title="verbs", metavar="VERB", required=True)
    mig = verbs.add_parser(
        "migrate", help="copy this home into PostgreSQL, verified; the home is not changed"
    )
    mig.add_argument("--to", choices=["postgres"], required=True, help="the backend to copy to")
    mig.add_argument(
        "--url", default=None, help="postgresql://USER@HOST:PORT/DATABASE (default: storage.url)"
    )
    mig.add_argument("--schema", default=None, help="the schema (default: storage.pg_schema)")
    mig.set_defaults(handler=_migrate)
    verbs.add_parser("path", help="print where every store lives").set_defaults(handler=_path)
