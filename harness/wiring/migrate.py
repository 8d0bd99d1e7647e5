"""`migrate_home`: copy a keel home into PostgreSQL (`keel storage migrate --to postgres`).

What is copied, and how it is checked:

- every principal's curated documents (`memories/`, `users/*/memories/`,
  `workspaces/*/memories/`: MEMORY.md, USER.md as version 1 of their rows, scope = the
  directory relative to the home, as `storage.backend: postgres` names them), each
  ARCHIVE.jsonl (rows of `curated_archive`, in order) and each PENDING.jsonl (the writes
  held for confirmation: rows of `curated_pending`, in order);
- every principal's skill tree (`skills/`, `users/*/skills/`, `workspaces/*/skills/`) as
  rows of `skill_files`, file by file;
- every session of `state.db` with its messages, flushes and counters, parents first;
- every user's provider databases (`memory_store.db`, `semantic.db`, at the home or under
  `users/<id>/`) as the rows of that user's scope: facts with their entities and vectors,
  memories with their embeddings and history (`memory.providers.holographic.copy_facts`,
  `memory.providers.semantic.copy_memories`).

Each copied thing is verified after the copy: a document by the SHA-256 of its text, an
archive by its entry count and hash, a session by its message count and the hash of its
messages, a provider database by its row count and the hash of every row (vectors
included). The source is never written: `state.db` and the provider databases (with their
write-ahead logs) are copied to a temporary directory and read there, and the files are only
read — so stop the keel
processes writing the home before migrating it. A rerun is a no-op: what is already there with the same hash is skipped; what is
there with *other* content is reported as a conflict and left alone (nothing is overwritten).

Not copied (reported, left in place): provider databases kept elsewhere (a configured
`db_path` outside the standard places), traces (they stay local files by design).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import anyio.to_thread
import psycopg

from memory import STATE_DB_NAME, MessageRecord, PgSessionStore, SessionDB, SessionStore
from memory.curated import PENDING_NAME, CuratedPool, FileBackend, PendingWrites, open_curated_pool, text_hash
from memory.providers import PgPlace, ScopeCopy, provider_scope
from memory.providers.holographic import copy_facts
from memory.providers.semantic import copy_memories
from memory.sessions.writes import session_copy

__all__ = ["MigrationReport", "migrate_home", "session_digest"]

_TARGET_FILES = {"memory": "MEMORY.md", "user": "USER.md"}


@dataclass
class MigrationReport:
    """What `migrate_home` did; `conflicts` empty and `verified` true means the copy is whole."""

    copied: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    left_in_place: list[str] = field(default_factory=list)
    verified: bool = True


def session_digest(messages: list[MessageRecord]) -> str:
    """The hash a session's messages are verified by (order, roles, texts, tool fields)."""
    h = hashlib.sha256()
    for r in messages:
        m = r.message
        row = [m.role, m.content, m.api_content, m.tool_calls, m.tool_call_id, m.tool_name, m.summary]
        h.update(json.dumps(row, ensure_ascii=False).encode("utf-8") + b"\n")
    return h.hexdigest()


def _memory_dirs(home: Path) -> Iterator[Path]:
    yield home / "memories"
    for parent in ("users", "workspaces"):
        root = home / parent
        if root.is_dir():
            for child in sorted(root.iterdir()):
                yield child / "memories"


# ------------------------------------------------------------------ curated (blocking)


def _copy_doc(
    conn: psycopg.Connection[tuple[object, ...]], scope: str, target: str, text: str, report: MigrationReport
) -> None:
    label = f"{scope}/{_TARGET_FILES[target]}"
    row = conn.execute(
        "SELECT version, text FROM curated_docs WHERE scope = %s AND target = %s FOR UPDATE", (scope, target)
    ).fetchone()
    if row is not None and int(str(row[0])) > 0:
        (report.skipped if str(row[1]) == text else report.conflicts).append(label)
        return
    now = time.time()
    conn.execute(
        "INSERT INTO curated_docs (scope, target, version, text, updated_at) VALUES (%s, %s, 1, %s, %s) "
        "ON CONFLICT (scope, target) DO UPDATE SET version = 1, text = excluded.text, updated_at = excluded.updated_at",
        (scope, target, text, now),
    )
    conn.execute(
        "INSERT INTO curated_versions (scope, target, version, text, sha256, written_at) VALUES (%s, %s, 1, %s, %s, %s)",
        (scope, target, text, text_hash(text), now),
    )
    stored = conn.execute(
        "SELECT text FROM curated_docs WHERE scope = %s AND target = %s", (scope, target)
    ).fetchone()
    report.verified &= stored is not None and text_hash(str(stored[0])) == text_hash(text)
    report.copied.append(label)


def _copy_rows(
    conn: psycopg.Connection[tuple[object, ...]],
    scope: str,
    into: tuple[str, tuple[str, ...], str],
    wanted: Sequence[tuple[str, ...]],
    report: MigrationReport,
    label: str,
) -> None:
    """Copy `wanted` into the append-only table `into` (name, columns, order) of `scope`,
    unless the scope already has rows there (the same: skipped; others: a conflict)."""
    table, columns, order = into
    names = ", ".join(columns)
    have = [
        tuple(str(v) for v in row)
        for row in conn.execute(f"SELECT {names} FROM {table} WHERE scope = %s ORDER BY {order}", (scope,))
    ]
    if have:
        (report.skipped if have == list(wanted) else report.conflicts).append(label)
        return
    with conn.cursor() as cur:
        cur.executemany(
            f"INSERT INTO {table} (scope, {names}) VALUES (%s{', %s' * len(columns)})",
            [(scope, *w) for w in wanted],
        )
    count = conn.execute(f"SELECT count(*) FROM {table} WHERE scope = %s", (scope,)).fetchone()
    report.verified &= count is not None and int(str(count[0])) == len(wanted)
    report.copied.append(label)


def _copy_archive(
    conn: psycopg.Connection[tuple[object, ...]], scope: str, path: Path, report: MigrationReport
) -> None:
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    wanted = [
        (str(r.get("target", "memory")), str(r.get("content", "")), str(r.get("evicted_at", "")))
        for r in records
    ]
    into = ("curated_archive", ("target", "content", "evicted_at"), "id")
    _copy_rows(conn, scope, into, wanted, report, f"{scope}/ARCHIVE.jsonl")


def _copy_held(
    conn: psycopg.Connection[tuple[object, ...]], scope: str, directory: Path, report: MigrationReport
) -> None:
    """The writes held for confirmation (PENDING.jsonl), so `keel memory confirm` finds them."""
    wanted = [(p.target, p.content, p.origin, p.held_at) for p in PendingWrites(directory).list()]
    into = ("curated_pending", ("target", "content", "origin", "held_at"), "held_id")
    _copy_rows(conn, scope, into, wanted, report, f"{scope}/{PENDING_NAME}")


def _copy_curated(home: Path, pool: CuratedPool, report: MigrationReport) -> None:
    for directory in _memory_dirs(home):
        if not directory.is_dir():
            continue
        scope = directory.relative_to(home).as_posix()
        files = FileBackend(directory)
        for target in ("memory", "user"):
            read = files.read(target)
            if not read.exists:
                continue
            if read.error is not None:
                report.conflicts.append(
                    f"{scope}/{_TARGET_FILES[target]}: unreadable ({read.error}); fix it first"
                )
                continue
            with pool.connection() as conn:
                _copy_doc(conn, scope, target, read.text.removesuffix("\n"), report)
        archive = directory / "ARCHIVE.jsonl"
        if archive.is_file():
            with pool.connection() as conn:
                _copy_archive(conn, scope, archive, report)
        if (directory / PENDING_NAME).is_file():
            with pool.connection() as conn:
                _copy_held(conn, scope, directory, report)


def _skill_files(root: Path) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if any(part.startswith(".") for part in rel.parts) or path.is_symlink() or not path.is_file():
            continue  # the writer lock, trash from deletes, and links are never part of a skill
        out[rel.as_posix()] = path.read_bytes()
    return out


def _copy_skills(home: Path, pool: CuratedPool, report: MigrationReport) -> None:
    roots = [home / "skills"] + [
        child / "skills"
        for parent in ("users", "workspaces")
        if (home / parent).is_dir()
        for child in sorted((home / parent).iterdir())
    ]
    for root in roots:
        if not root.is_dir():
            continue
        scope, wanted = root.relative_to(home).as_posix(), _skill_files(root)
        label = f"{scope}/ ({len(wanted)} files)"
        with pool.connection() as conn:
            rows = conn.execute("SELECT path, content FROM skill_files WHERE scope = %s", (scope,)).fetchall()
            have = {str(p): bytes(c) for p, c in rows}
            if have:
                (report.skipped if have == wanted else report.conflicts).append(label)
                continue
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO skill_files (scope, path, content) VALUES (%s, %s, %s)",
                    [(scope, rel, content) for rel, content in wanted.items()],
                )
            copied = conn.execute(
                "SELECT path, content FROM skill_files WHERE scope = %s", (scope,)
            ).fetchall()
            report.verified &= {str(p): bytes(c) for p, c in copied} == wanted
        report.copied.append(label)


# ------------------------------------------------------------------ sessions


def _snapshot(source: Path, into: Path) -> Path:
    """A copy of the SQLite file `source` (with its write-ahead log, if any) to read from: the
    source is never opened, so not even SQLite's `-shm` file appears beside it. Stop keel writers first."""
    into.mkdir(parents=True, exist_ok=True)
    copy = into / source.name
    shutil.copyfile(source, copy)
    for suffix in ("-wal",):
        side = source.with_name(source.name + suffix)
        if side.is_file():
            shutil.copyfile(side, copy.with_name(copy.name + suffix))
    return copy


# ------------------------------------------------------------------ provider databases (blocking)

_PROVIDER_FILES: tuple[tuple[str, str, Callable[[Path, PgPlace, str], ScopeCopy]], ...] = (
    ("memory_store.db", "facts", copy_facts),
    ("semantic.db", "memories", copy_memories),
)


def _user_dirs(home: Path) -> Iterator[tuple[str | None, Path]]:
    yield None, home
    users = home / "users"
    if users.is_dir():
        for child in sorted(users.iterdir()):
            if child.is_dir():
                yield child.name, child


def _copy_providers(home: Path, place: PgPlace, report: MigrationReport) -> set[Path]:
    """Every user's provider databases into their scopes; returns the files handled."""
    handled: set[Path] = set()
    scratch = Path(tempfile.mkdtemp(prefix="keel-migrate-"))
    try:
        for n, (user_id, directory) in enumerate(_user_dirs(home)):
            for name, what, copy in _PROVIDER_FILES:
                source = directory / name
                if not source.is_file():
                    continue
                rel = source.relative_to(home).as_posix()
                try:
                    scope = provider_scope(user_id)
                except ValueError:
                    continue  # not a user's directory: reported as left in place
                handled.add(source)
                result = copy(_snapshot(source, scratch / f"{n}-{what}"), place, scope)
                label = f"{rel} ({result.rows} {what})"
                if result.outcome == "conflict":
                    report.conflicts.append(f"{label}: scope {scope!r} on the server holds other {what}")
                    continue
                (report.copied if result.outcome == "copied" else report.skipped).append(label)
                report.verified &= result.verified
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return handled


# ------------------------------------------------------------------ sessions


async def _copy_session(
    src: SessionStore, dst: SessionStore, session_id: str, report: MigrationReport
) -> None:
    record = await src.get_session(session_id)
    assert record is not None
    messages = await src.get_messages(session_id)
    existing = await dst.get_session(session_id)
    if existing is not None:
        same = existing.message_count == len(messages) and session_digest(
            await dst.get_messages(session_id)
        ) == session_digest(messages)
        (report.skipped if same else report.conflicts).append(f"session {session_id}")
        return
    for write in session_copy(record, [m.message for m in messages], await src.list_flushes(session_id)):
        await dst.apply(write)
    copied = await dst.get_messages(session_id)
    report.verified &= len(copied) == len(messages) and session_digest(copied) == session_digest(messages)
    report.copied.append(f"session {session_id}")


async def _all_sessions(db: SessionStore) -> list[str]:
    """Every session id, parents before their children."""
    records, offset = [], 0
    while page := await db.list_sessions(500, offset, user_ids=None):
        records += page
        offset += len(page)
    parents = {r.id: r.parent_session_id for r in records}
    ordered: list[str] = []
    seen: set[str] = set()
    for r in sorted(records, key=lambda r: (r.started_at, r.id)):
        chain = []
        current: str | None = r.id
        while current is not None and current not in seen and current in parents:
            chain.append(current)
            seen.add(current)
            current = parents[current]
        ordered += reversed(chain)
    return ordered


async def _copy_sessions(home: Path, dst: SessionStore, report: MigrationReport) -> None:
    source = home / STATE_DB_NAME
    if not source.is_file():
        return
    scratch = Path(await anyio.to_thread.run_sync(lambda: tempfile.mkdtemp(prefix="keel-migrate-")))
    try:
        copy = await anyio.to_thread.run_sync(_snapshot, source, scratch)  # blocking: file copies
        async with await SessionDB.open(copy) as src:
            for session_id in await _all_sessions(src):
                await _copy_session(src, dst, session_id, report)
    finally:
        await anyio.to_thread.run_sync(lambda: shutil.rmtree(scratch, ignore_errors=True))


def _left_in_place(home: Path, handled: set[Path]) -> list[str]:
    found = []
    for pattern in ("**/memory_store.db", "**/semantic.db", "traces"):
        found += [
            str(p.relative_to(home)) for p in sorted(home.glob(pattern)) if p.exists() and p not in handled
        ]
    return sorted(set(found))


async def migrate_home(
    home: Path, url: str, *, schema: str = "keel", connect_timeout_s: float = 10.0
) -> MigrationReport:
    """Copy `home` into the PostgreSQL schema `schema` on `url`, verify, and report.

    Raises:
        SessionStoreUnavailableError, StoreReadError: the server cannot be used.
        SessionSchemaError: its schema was written by a newer keel.
        FactStoreError, SemanticStoreError: a provider database cannot be read or copied.
    """
    report = MigrationReport()
    async with await PgSessionStore.open(url, schema=schema, connect_timeout_s=connect_timeout_s) as dst:
        pool = await anyio.to_thread.run_sync(
            lambda: open_curated_pool(url, schema, size=1, timeout_s=connect_timeout_s)
        )
        try:
            await anyio.to_thread.run_sync(_copy_curated, home, pool, report)  # blocking: files, a sync pool
            await anyio.to_thread.run_sync(_copy_skills, home, pool, report)  # blocking: the same
            handled = await anyio.to_thread.run_sync(
                _copy_providers, home, PgPlace(pool, schema), report
            )  # blocking: file copies, SQLite reads, a sync pool
        finally:
            await anyio.to_thread.run_sync(pool.close)
        await _copy_sessions(home, dst, report)
    report.left_in_place = await anyio.to_thread.run_sync(_left_in_place, home, handled)
    return report
