"""`keel storage path|migrate|stats|prune`: where the stores live, how big they are, and
keeping them bounded.

- `path`: where every store lives (the home, or the PostgreSQL URL and schema).
- `migrate --to postgres`: a home copied into PostgreSQL, verified (`harness.wiring.migrate`).
- `stats`: rows or files, bytes and growth (added in the last day and week) of each store.
- `prune [--dry-run]`: applies `retention:` to sessions (whole lineages, never one a live
  turn holds the lease of), traces, journals, evicted-entry archives and `keel serve` run
  events (through `memory.runs.RunStore.prune`), on the configured backend, and says what it
  removed (`memory.retention`).

The command acts on the whole home or schema (every user): retention is the operator's.
Heavy imports (psycopg, the migration) happen inside the verbs, so `keel --help` stays fast.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from harness.cli._common import Subparsers, console, home_from_args, verb_parsers
from harness.errors import CommandError

if TYPE_CHECKING:
    from harness.config import KeelConfig
    from memory.retention import Pruned, StoreStats
    from memory.sessions.postgres import PgTarget

__all__ = ["register"]

_DAY_S = 86_400.0


def _migrate(args: argparse.Namespace) -> int:
    from harness.wiring.migrate import migrate_home
    from memory import MemoryLayerError

    config, home = home_from_args(args)
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
    config, home = home_from_args(args)
    where = config.sessions.location(home) if config.storage.backend == "postgres" else str(home)
    console.print(where, markup=False, soft_wrap=True)
    return 0


# ------------------------------------------------------------------ the home's places


def _trace_dirs(config: KeelConfig, home: Path) -> list[Path]:
    base = config.traces.dir or home / "traces"
    users = base / "users"
    return [base, *(sorted(p for p in users.iterdir() if p.is_dir()) if users.is_dir() else [])]


def _archives(home: Path) -> list[Path]:
    from memory.curated import ARCHIVE_NAME

    patterns = (
        f"memories/{ARCHIVE_NAME}",
        f"users/*/memories/{ARCHIVE_NAME}",
        f"workspaces/*/memories/{ARCHIVE_NAME}",
    )
    return sorted(p for pattern in patterns for p in home.glob(pattern))


def _pg_target(config: KeelConfig) -> PgTarget:
    from memory.sessions.postgres import PgTarget

    url = config.sessions.url
    if not url:
        raise CommandError(
            "sessions.backend is postgres but no URL is set: set storage.url (or sessions.url)"
        )
    return PgTarget(url, config.sessions.pg_schema)


def _days(value: float | None) -> float | None:
    return None if value is None else value * _DAY_S


# ------------------------------------------------------------------ stats


def _size(count: int | None) -> str:
    if count is None:
        return "-"
    value = float(count)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value} B"


async def _gather_stats(config: KeelConfig, home: Path) -> list[StoreStats]:
    import anyio.to_thread

    from memory import STATE_DB_NAME
    from memory.retention import file_stats, pg_stats, state_db_stats
    from memory.sessions import JOURNAL_DIR_NAME

    out: list[StoreStats] = []
    if config.sessions.backend == "postgres":
        target = _pg_target(config)
        out.extend(await pg_stats(target))
    else:
        out.extend(await anyio.to_thread.run_sync(state_db_stats, home / STATE_DB_NAME))
    for what, dirs in (("traces", _trace_dirs(config, home)), ("journals", [home / JOURNAL_DIR_NAME])):
        found = await anyio.to_thread.run_sync(file_stats, what, dirs)
        if found is not None:
            out.append(found)
    return out


def _stats(args: argparse.Namespace) -> int:
    from rich.table import Table

    config, home = home_from_args(args)
    stats = anyio.run(_gather_stats, config, home)
    if not stats:
        console.print(f"Nothing stored yet under {home}.", markup=False)
        return 0
    table = Table(title="storage", title_justify="left")
    for column in ("store", "rows/files", "size", "+1 day", "+7 days", "per day (7-day mean)", "where"):
        table.add_column(column, justify="left" if column in ("store", "where") else "right", overflow="fold")
    for s in stats:
        table.add_row(
            s.what,
            str(s.count),
            _size(s.bytes),
            str(s.added_1d),
            str(s.added_7d),
            f"{s.added_7d / 7:.1f}",
            s.where,
        )
    console.print(table)
    return 0


# ------------------------------------------------------------------ prune


async def _prune_run_events(config: KeelConfig, home: Path, *, dry_run: bool) -> Pruned | None:
    """`keel serve`'s run events, through the run store's own `prune` (None: no run store here).

    The age is `retention.run_events_max_age_days`, else `serve.events_retention` (what the
    serve workers prune by themselves). The run store cannot count without removing, so a
    dry run says how old the removed events would be, not how many.
    """
    from memory.retention import Pruned, pg_has_table
    from memory.runs import open_run_store
    from memory.runs.sqlite import SERVE_DB_NAME

    days = config.retention.run_events_max_age_days
    age_s = config.serve.events_retention if days is None else days * _DAY_S
    s = config.sessions
    if config.storage.backend == "postgres":
        if not await pg_has_table(_pg_target(config), "serve_events"):
            return None
    elif not (home / SERVE_DB_NAME).exists():
        return None
    if dry_run:
        return Pruned(
            f"run events of runs ended over {age_s / _DAY_S:g} days ago (not counted on a dry run)", 0
        )
    async with open_run_store(
        config.storage.backend,
        home=home,
        url=s.url,
        pg_schema=s.pg_schema,
        connect_timeout_s=s.connect_timeout_s,
    ) as runs:
        removed = await runs.prune(events_before=time.time() - age_s)
    return Pruned("run events", removed)


async def _prune_all(config: KeelConfig, home: Path, *, dry_run: bool) -> list[Pruned]:
    import anyio.to_thread

    from memory import STATE_DB_NAME
    from memory.retention import (
        FileRetention,
        SessionRetention,
        prune_archive_rows,
        prune_archives,
        prune_journals,
        prune_pg_sessions,
        prune_state_db,
        prune_trace_dirs,
    )
    from memory.sessions import JOURNAL_DIR_NAME

    r = config.retention
    rules = SessionRetention(_days(r.sessions_max_age_days), r.messages_max_per_user)
    parts: list[Pruned] = []
    if config.sessions.backend == "postgres":
        target = _pg_target(config)
        parts.extend(await prune_pg_sessions(target, rules, dry_run=dry_run))
    else:
        path, leases = home / STATE_DB_NAME, home / "leases"
        parts.extend(
            await anyio.to_thread.run_sync(
                lambda: prune_state_db(path, rules, leases_dir=leases, dry_run=dry_run)
            )
        )
    if config.storage.backend == "postgres":
        target = _pg_target(config)
        parts.extend(
            await prune_archive_rows(target, max_age_s=_days(r.archives_max_age_days), dry_run=dry_run)
        )
    else:
        archives = _archives(home)
        parts.append(
            await anyio.to_thread.run_sync(
                lambda: prune_archives(archives, max_age_s=_days(r.archives_max_age_days), dry_run=dry_run)
            )
        )
    megabytes = r.traces_max_mb_per_user
    traces = FileRetention(
        _days(r.traces_max_age_days), None if megabytes is None else int(megabytes * 1024 * 1024)
    )
    dirs = _trace_dirs(config, home)
    parts.append(await anyio.to_thread.run_sync(lambda: prune_trace_dirs(dirs, traces, dry_run=dry_run)))
    journal_age = _days(r.journals_max_age_days)
    parts.append(
        await anyio.to_thread.run_sync(
            lambda: prune_journals(home / JOURNAL_DIR_NAME, max_age_s=journal_age, dry_run=dry_run)
        )
    )
    events = await _prune_run_events(config, home, dry_run=dry_run)
    if events is not None:
        parts.append(events)
    return parts


def _prune(args: argparse.Namespace) -> int:
    config, home = home_from_args(args)
    parts = anyio.run(lambda: _prune_all(config, home, dry_run=args.dry_run))
    _print_pruned(parts, dry_run=args.dry_run)
    return 0


def _print_pruned(parts: Sequence[Pruned], *, dry_run: bool) -> None:
    verb = "would remove" if dry_run else "removed"
    if not any(p.count or p.kept_live for p in parts):
        console.print(
            "Nothing to prune: no retention limit matched anything (see retention: in config.example.yaml).",
            markup=False,
        )
    for p in parts:
        if not (p.count or p.kept_live or "dry run" in p.what):
            continue
        line = f"{verb} {p.count} {p.what}" + ("" if p.bytes is None else f" ({_size(p.bytes)})")
        if p.kept_live:
            line += f"; kept {p.kept_live} in use by a live session"
        console.print(line, markup=False)
    if dry_run:
        console.print("dry run: nothing was removed", markup=False)


def register(sub: Subparsers) -> None:
    verbs = verb_parsers(sub, "storage")
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
    verbs.add_parser("stats", help="sizes and growth of every store").set_defaults(handler=_stats)
    prune = verbs.add_parser("prune", help="remove what the retention: limits say is too old or too much")
    prune.add_argument("--dry-run", action="store_true", help="say what would be removed; remove nothing")
    prune.set_defaults(handler=_prune)
