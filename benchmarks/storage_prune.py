"""Prune a big store: fill state.db (and a PostgreSQL schema) with N messages, then run
`keel storage stats`, `keel storage prune --dry-run` and `keel storage prune` on it.

    python benchmarks/storage_prune.py [--messages 1000000] [--per-session 100] [--users 20]
                                       [--backend sqlite|postgres|both] [--url URL]

Sessions are spread evenly over the last 120 days, one lineage in four continued by a child
session (a compression); `retention.sessions_max_age_days: 60` removes about half. The fill
goes around the store on purpose (executemany / COPY in one transaction; state.db's
full-text indexes are then rebuilt by the store's own open) so a million messages take
seconds, not hours of turns. Prints the time of each command and what it removed, and as
its last line `prune_seconds_per_million S` (the slowest backend's real prune, scaled).
"""

from __future__ import annotations

import io
import sqlite3
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import redirect_stdout
from pathlib import Path

import anyio
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._pg import postgres_url_default, temporary_pg_schema
from benchmarks._util import script_parser
from harness.cli import main as keel
from memory import PgSessionStore, open_session_db

DAY = 86_400.0
SPAN_DAYS = 120


def plan(
    messages: int, per_session: int, users: int, now: float
) -> Iterator[tuple[str, str | None, str, float]]:
    """(id, parent, user, started_at) for every session, oldest first."""
    count = max(1, messages // per_session)
    parent: str | None = None
    for i in range(count):
        started = now - SPAN_DAYS * DAY * (1 - i / count)
        sid = f"s{i:07d}"
        yield sid, parent if i % 4 == 1 else None, f"u{i % users:03d}", started
        parent = sid


def message_rows(sid: str, started: float, per_session: int) -> Iterator[tuple[object, ...]]:
    for seq in range(per_session):
        role = "user" if seq % 2 == 0 else "assistant"
        text = f"turn {seq} of {sid}: the zeppelin leaves at {seq % 24}:00, gate {seq % 7}"
        yield sid, seq, role, text, started + seq


def fill_sqlite(path: Path, messages: int, per_session: int, users: int, now: float) -> None:
    async def create() -> None:
        async with open_session_db(path):
            pass

    anyio.run(create)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    sessions = list(plan(messages, per_session, users, now))
    conn.executemany(
        "INSERT INTO sessions (id, source, parent_session_id, started_at, last_active_at, message_count, user_id) "
        "VALUES (?, 'bench', ?, ?, ?, ?, ?)",
        ((sid, p, t, t + per_session, per_session, u) for sid, p, u, t in sessions),
    )
    conn.executemany(
        "INSERT INTO messages (session_id, seq, role, content, timestamp) VALUES (?, ?, ?, ?, ?)",
        (row for sid, _, _, t in sessions for row in message_rows(sid, t, per_session)),
    )
    # The rows went in behind the store's back: mark its derived indexes stale so its next
    # open rebuilds them from the rows, as it would after a crash of an older keel.
    conn.execute("UPDATE state_meta SET value = 'stale' WHERE key LIKE 'index:messages_%'")
    conn.execute("COMMIT")
    conn.close()
    anyio.run(create)


def fill_postgres(url: str, schema: str, messages: int, per_session: int, users: int, now: float) -> None:
    async def create() -> None:
        async with await PgSessionStore.open(url, schema=schema):
            pass

    anyio.run(create)
    sessions = list(plan(messages, per_session, users, now))
    with psycopg.connect(url, options=f"-c search_path={schema}") as conn:
        with conn.cursor().copy(
            "COPY sessions (id, source, parent_session_id, started_at, last_active_at, message_count, user_id) "
            "FROM STDIN"
        ) as copy:
            for sid, p, u, t in sessions:
                copy.write_row((sid, "bench", p, t, t + per_session, per_session, u))
        with conn.cursor().copy(
            "COPY messages (session_id, seq, role, content, timestamp) FROM STDIN"
        ) as copy:
            for sid, _, _, t in sessions:
                for row in message_rows(sid, t, per_session):
                    copy.write_row(row)
        conn.execute("ANALYZE")


def run(argv: list[str]) -> tuple[float, str]:
    out = io.StringIO()
    start = time.perf_counter()
    with redirect_stdout(out):
        code = keel(argv)
    elapsed = time.perf_counter() - start
    if code != 0:
        raise SystemExit(f"keel {' '.join(argv)} exited {code}:\n{out.getvalue()}")
    return elapsed, out.getvalue()


def measure(name: str, home: Path, config: Path) -> float:
    base = ["--home", str(home), "--config", str(config), "storage"]
    seconds, text = run([*base, "stats"])
    print(f"[{name}] keel storage stats: {seconds:.2f} s")
    print(text.rstrip())
    seconds, text = run([*base, "prune", "--dry-run"])
    print(f"[{name}] keel storage prune --dry-run: {seconds:.2f} s — {' / '.join(text.strip().splitlines())}")
    prune_s, text = run([*base, "prune"])
    print(f"[{name}] keel storage prune: {prune_s:.2f} s — {' / '.join(text.strip().splitlines())}")
    seconds, text = run([*base, "prune", "--dry-run"])
    print(f"[{name}] again, --dry-run: {seconds:.2f} s — {' / '.join(text.strip().splitlines())}")
    return prune_s


def main() -> None:
    parser = script_parser(__doc__, whole=True)
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--per-session", type=int, default=100)
    parser.add_argument("--users", type=int, default=20)
    parser.add_argument("--backend", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--url", default=postgres_url_default())
    args = parser.parse_args()
    now = time.time()
    slowest = 0.0
    with tempfile.TemporaryDirectory(prefix="keel-prune-") as tmp:
        home = Path(tmp)
        retention = "retention:\n  sessions_max_age_days: 60\n"
        if args.backend in ("sqlite", "both"):
            config = home / "sqlite.yaml"
            config.write_text(retention)
            start = time.perf_counter()
            fill_sqlite(home / "state.db", args.messages, args.per_session, args.users, now)
            print(
                f"[sqlite] filled {args.messages} messages (with index rebuild) in {time.perf_counter() - start:.1f} s"
            )
            slowest = max(slowest, measure("sqlite", home, config))
        if args.backend in ("postgres", "both"):
            with temporary_pg_schema(args.url, f"bench_prune_{uuid.uuid4().hex[:10]}") as schema:
                config = home / "pg.yaml"
                config.write_text(
                    f"{retention}storage:\n  backend: postgres\n  url: {args.url}\n  pg_schema: {schema}\n"
                )
                start = time.perf_counter()
                fill_postgres(args.url, schema, args.messages, args.per_session, args.users, now)
                print(
                    f"[postgres] filled {args.messages} messages (COPY) in {time.perf_counter() - start:.1f} s"
                )
                slowest = max(slowest, measure("postgres", home, config))
    print(f"prune_seconds_per_million {slowest * 1_000_000 / args.messages:.1f}")


if __name__ == "__main__":
    main()
