"""Many sessions in one process, and several processes writing one SQLite home.

Part 1, per session-store backend: N concurrent scripted sessions (`open_session`, the real
curated store, skills, session_search and session store; a scripted model, so no LLM) run T
turns each in one process, spread over U users and sharing one open store. Every session
first says a word unique to its user; after every session has written (a barrier), each
one's last turn calls `session_search` for another user's word (it must find nothing: a
leak otherwise) and for its own user's word (it must find a sibling session: a miss
otherwise). Reported: turns per second, the turn latency each caller saw (p50/p99 — the
harness's time per turn under this load: prompt assembly, token counting, tool dispatch,
store writes, and the wait behind the other N-1 sessions, so about N / throughput), the same
for one session running alone first (the harness's own time per turn), messages sent vs stored.

Part 2: P `keel` processes (this script in `--worker` mode, each session opening
`<home>/state.db` itself, as `keel chat` does) write one SQLite home at once; every message
sent must be stored and no "database is locked" error may reach a session.

    python benchmarks/concurrent_sessions.py [--sessions 1000] [--turns 50] [--users 100]
        [--backend sqlite|postgres|both] [--url postgresql://...] [--processes 4] [--quick]
        [--gc python|sessions]

`--gc sessions` runs the way a host of many sessions is advised to (`harness.runtime.
tune_gc_for_sessions`: a higher young-generation threshold for the cyclic collector); the
default keeps Python's own thresholds. The first line printed names the thresholds.

PostgreSQL: `--url`, else `$KEEL_TEST_POSTGRES_URL`, else
postgresql://postgres@127.0.0.1:5432/test; the run creates its own schema and drops it.
Ends with `name value` lines (`sessions_turns_per_s`, `cross_user_leaks`, `lost_messages`,
and the same per backend); exits 1 when a leak, a miss, a failed search (the store refused,
e.g. no pooled PostgreSQL connection within `--pg-wait-s`), a lost message or a lock error is seen.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import anyio.to_thread

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._util import median, percentile, script_parser
from harness.config import KeelConfig, load_config
from harness.events import ToolResultReady
from harness.loop.session import Session
from harness.runtime import tune_gc_for_sessions
from harness.testing import ScriptedModel, call_tool, say
from harness.tokens import Tokenizer, load_tiktoken
from harness.types import Usage
from harness.wiring import SessionOptions, open_session
from memory import SessionDB, SessionStore

DEFAULT_PG_URL = "postgresql://postgres@127.0.0.1:5432/test"
STATEMENT = "My project word is"
STATED = re.compile(STATEMENT + r" (zqx\d+kv)")
ANSWER = "Quarantine the malformed row, count it, and keep the batch going; report the count at the end."


def user_of(k: int, users: int) -> str:
    return f"user{k % users:03d}"


def token_of(user: str) -> str:
    """A word only this user's sessions ever say (one FTS token: letters and digits)."""
    return f"zqx{user[4:]}kv"


def bench_config(**extra: str) -> KeelConfig:
    # No compression (a huge window), no traces (50 turns × 1,000 sessions of full requests).
    env = {"KEEL_MODEL__CONTEXT_WINDOW": "10000000", "KEEL_TRACES__ENABLED": "false"}
    return load_config(None, environ={**env, **extra})


def script(turns: int, own: str, other: str) -> ScriptedModel:
    usage = Usage(input=1, output=1)
    steps = [say(f"Answer {t}: {ANSWER}", usage=usage) for t in range(turns - 1)]
    steps += [
        call_tool("session_search", {"query": other}),
        call_tool("session_search", {"query": own}),
        say("Checked.", usage=usage),
    ]
    return ScriptedModel(steps, record=False)  # a real client keeps no request alive either


async def timed_turn(session: Session, text: str) -> tuple[float, list[ToolResultReady]]:
    started = time.perf_counter()
    results: list[ToolResultReady] = []
    async with session.run_turn(text) as events:
        async for ev in events:
            if isinstance(ev, ToolResultReady):
                results.append(ev)
    return time.perf_counter() - started, results


class Barrier:
    """Every party waits until all have arrived (anyio has no barrier of its own)."""

    def __init__(self, parties: int) -> None:
        self._left = parties
        self._all_in = anyio.Event()

    async def wait(self) -> None:
        self._left -= 1
        if self._left <= 0:
            self._all_in.set()
        await self._all_in.wait()


@dataclass
class Tally:
    latencies: list[float] = field(default_factory=list)
    session_ids: list[str] = field(default_factory=list)
    owners: dict[str, str] = field(default_factory=dict)
    sent: int = 0
    leaks: int = 0
    misses: int = 0
    search_errors: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def check_searches(results: list[ToolResultReady], user: str, tally: Tally) -> None:
    """The last turn's two searches: nothing of another user's, and a sibling session of our own.

    A leak is a result from a session of another user (by the owners this process recorded),
    or any result text where a session states a word other than this user's — every session
    says only its own user's word. (A search may still find the *other* word in this user's
    own sessions: their last turn searched for it, and that tool call is stored too.)
    """
    own = token_of(user)
    if len(results) != 2:
        tally.errors.append(f"expected 2 search results, got {len(results)}")
        return
    foreign, mine = (json.loads(r.content) for r in results)
    for reply in (foreign, mine):
        if reply.get("success") is False:  # the store failed (e.g. overloaded): not a miss, not a pass
            tally.search_errors.append(str(reply.get("error")))
        shown = json.dumps(reply.get("results", []), ensure_ascii=False)
        owners = {tally.owners.get(str(r.get("session_id")), user) for r in reply.get("results", [])}
        if owners - {user} or any(word != own for word in STATED.findall(shown)):
            tally.leaks += 1
    if mine.get("success") is not False and f"{STATEMENT} {own}" not in json.dumps(
        mine.get("results", []), ensure_ascii=False
    ):
        tally.misses += 1


@dataclass(frozen=True)
class Fleet:
    """What every session of a run shares: the config, the home, the users, the store (None:
    each session opens state.db itself, as `keel chat` does)."""

    cfg: KeelConfig
    home: Path
    users: int
    turns: int
    tokenizer: Tokenizer
    store: SessionStore | None


async def one_session(k: int, fleet: Fleet, tally: Tally, barrier: Barrier | None = None) -> None:
    users, turns = fleet.users, fleet.turns
    user = user_of(k, users)
    own, other = token_of(user), token_of(user_of(k + 1, users))
    model = script(turns, own, other)
    options = SessionOptions(
        model=model,
        home=fleet.home,
        tokenizer=fleet.tokenizer,
        user_id=user,
        session_store=fleet.store,
        source="bench",
    )
    try:
        async with open_session(fleet.cfg, options) as s:
            tally.session_ids.append(s.session_id)
            tally.owners[s.session_id] = user
            for t in range(turns - 1):
                text = (
                    f"My project word is {own}. Step {t}."
                    if t == 0
                    else f"Question {t}: batch {t} has a bad row."
                )
                took, _ = await timed_turn(s, text)
                tally.latencies.append(took)
            if barrier is not None:
                await barrier.wait()
            took, results = await timed_turn(s, "Search the past sessions, please.")
            tally.latencies.append(took)
            check_searches(results, user, tally)
            tally.sent += len(s.transcript)
    except Exception as exc:  # counted and reported: a benchmark run never hides a failure
        tally.errors.append(f"session {k} ({user}): {type(exc).__name__}: {exc}")
        if barrier is not None:
            await barrier.wait()


async def stored_messages(store: SessionStore, session_ids: list[str]) -> int:
    total = 0
    for sid in session_ids:
        record = await store.get_session(sid)
        total += 0 if record is None else record.message_count
    return total


@asynccontextmanager
async def open_store(
    backend: str, home: Path, url: str, *, pool_size: int, wait_s: float
) -> AsyncIterator[SessionStore]:
    """The backend's store, one for every session of the run; a PostgreSQL schema of its own."""
    if backend == "sqlite":
        db = await SessionDB.open(home / "state.db")
        try:
            yield db
        finally:
            await db.aclose()
        return
    from memory.sessions import open_session_store  # the PostgreSQL backend (psycopg)

    schema = f"keel_bench_{os.getpid()}_{int(time.time())}"
    try:
        async with open_session_store(
            "postgres", url=url, pg_schema=schema, pool_size=pool_size, connect_timeout_s=wait_s
        ) as pg:
            yield pg
    finally:
        await drop_schema(url, schema)


async def drop_schema(url: str, schema: str) -> None:
    import psycopg

    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


async def run_backend(
    backend: str, sessions: int, turns: int, users: int, url: str, pool_size: int, wait_s: float
) -> dict[str, float]:
    cfg = bench_config()
    tokenizer = await load_tiktoken()
    tally = Tally()
    with tempfile.TemporaryDirectory(prefix=f"keel-bench-{backend}-") as tmp:
        home = Path(tmp)
        async with open_store(backend, home, url, pool_size=pool_size, wait_s=wait_s) as store:
            # One session alone first: the harness's own time per turn, with no one to wait behind.
            fleet = Fleet(cfg, home, users, turns, tokenizer, store)
            solo = Tally()
            await one_session(sessions, fleet, solo)
            barrier = Barrier(sessions)
            started = time.perf_counter()
            cpu_started = time.process_time()
            loop_started = time.thread_time()  # the event loop's thread alone
            async with anyio.create_task_group() as tg:
                for k in range(sessions):
                    tg.start_soon(one_session, k, fleet, tally, barrier)
            wall = time.perf_counter() - started
            cpu = time.process_time() - cpu_started
            loop_cpu = time.thread_time() - loop_started
            stored = await stored_messages(store, tally.session_ids)
    for error in tally.errors[:5]:
        print(f"  error: {error}")
    return report(backend, tally, wall=wall, cpu=cpu, loop_cpu=loop_cpu, stored=stored, solo=solo.latencies)


def report(
    backend: str,
    tally: Tally,
    *,
    wall: float,
    cpu: float,
    loop_cpu: float,
    stored: int,
    solo: list[float],
) -> dict[str, float]:
    n = len(tally.latencies)
    p50 = percentile(tally.latencies, 50) * 1000 if n else float("nan")
    p99 = percentile(tally.latencies, 99) * 1000 if n else float("nan")
    rate = n / wall if wall > 0 else 0.0
    print(
        f"{backend}: {len(tally.session_ids)} sessions, {n} turns in {wall:.1f} s → {rate:.1f} turns/s; "
        f"turn latency p50 {p50:.1f} ms, p99 {p99:.1f} ms, median {median(tally.latencies) * 1000 if n else 0:.1f} ms"
    )
    solo_p50 = percentile(solo, 50) * 1000 if solo else float("nan")
    solo_p99 = percentile(solo, 99) * 1000 if solo else float("nan")
    print(
        f"{backend}: one session alone, {len(solo)} turns: p50 {solo_p50:.1f} ms, p99 {solo_p99:.1f} ms per turn"
    )
    print(
        f"{backend}: messages sent {tally.sent}, stored {stored}; cross-user leaks {tally.leaks}, "
        f"own-word misses {tally.misses}, failed searches {len(tally.search_errors)}, "
        f"session errors {len(tally.errors)}"
    )
    if tally.search_errors:
        print(f"  first failed search: {tally.search_errors[0][:400]}")
    # CPU seconds of this process (every thread) per turn: what a turn costs the machine,
    # whatever else runs beside it. On an idle machine one core bounds the event loop, so
    # 1000 / cpu_ms_per_turn is about the throughput this process could reach there.
    cpu_ms = cpu / n * 1000 if n else float("nan")
    print(
        f"{backend}: {cpu_ms:.2f} CPU ms per turn (all threads) → at most {1000 / cpu_ms:.0f} turns/s per core"
    )
    # The event loop runs on one thread; store work in worker threads can use another core,
    # so with a core to spare the loop's own CPU per turn bounds the throughput.
    loop_ms = loop_cpu / n * 1000 if n else float("nan")
    print(f"{backend}: {loop_ms:.2f} CPU ms per turn on the event loop's thread (the rest in worker threads)")
    return {
        "turns_per_s": rate,
        "cpu_ms_per_turn": cpu_ms,
        "loop_cpu_ms_per_turn": loop_ms,
        "turn_p50_ms": p50,
        "turn_p99_ms": p99,
        "solo_turn_p50_ms": solo_p50,
        "solo_turn_p99_ms": solo_p99,
        "messages_sent": tally.sent,
        "messages_stored": stored,
        "lost_messages": tally.sent - stored,
        "cross_user_leaks": tally.leaks,
        "own_word_misses": tally.misses,
        "search_errors": len(tally.search_errors),
        "session_errors": len(tally.errors),
        "wall_s": wall,
    }


# ---------------------------------------------------------------------------- several processes


def wait_for_file(path: Path) -> None:
    """Block (in a worker thread) until the parent process creates `path`: the start signal."""
    while not path.exists():
        time.sleep(0.02)


async def worker(home: Path, index: int, sessions: int, turns: int, users: int) -> None:
    """One keel process: `sessions` concurrent sessions, each opening state.db itself."""
    cfg = bench_config()
    tokenizer = await load_tiktoken()
    tally = Tally()
    (home / f"ready-{index}").touch()
    await anyio.to_thread.run_sync(wait_for_file, home / "go")
    fleet = Fleet(cfg, home, users, turns, tokenizer, store=None)
    async with anyio.create_task_group() as tg:
        for j in range(sessions):
            tg.start_soon(one_session, index * sessions + j, fleet, tally)
    # Own-word hits depend on the other processes' timing here; only leaks and losses count.
    print(
        json.dumps(
            {
                "session_ids": tally.session_ids,
                "sent": tally.sent,
                "leaks": tally.leaks,
                "errors": tally.errors,
            }
        )
    )


def run_processes(processes: int, sessions: int, turns: int, users: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="keel-bench-procs-") as tmp:
        home = Path(tmp)
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
        argv = [sys.executable, __file__, "--worker-home", str(home), "--sessions", str(sessions)]
        argv += ["--turns", str(turns), "--users", str(users)]
        procs = [
            subprocess.Popen(
                [*argv, "--worker", str(i)],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for i in range(processes)
        ]
        deadline = time.monotonic() + 300
        while not all((home / f"ready-{i}").exists() for i in range(processes)):
            if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
                break
            time.sleep(0.05)
        started = time.perf_counter()
        (home / "go").touch()
        outputs = [p.communicate(timeout=3600) for p in procs]
        wall = time.perf_counter() - started
        return tally_processes(home, procs, outputs, wall)


def tally_processes(
    home: Path, procs: list[subprocess.Popen[str]], outputs: list[tuple[str, str]], wall: float
) -> dict[str, float]:
    ids: list[str] = []
    sent = leaks = errors = locked = 0
    for proc, (out, err) in zip(procs, outputs, strict=True):
        locked += err.lower().count("database is locked") + out.lower().count("database is locked")
        lines = [line for line in out.splitlines() if line.startswith("{")]
        if proc.returncode != 0 or not lines:
            errors += 1
            print(f"  worker failed (exit {proc.returncode}): {err.strip()[-500:]}")
            continue
        data = json.loads(lines[-1])
        ids += data["session_ids"]
        sent += data["sent"]
        leaks += data["leaks"]
        errors += len(data["errors"])
        for message in data["errors"][:3]:
            print(f"  error: {message}")

    async def count() -> int:
        async with await SessionDB.open(home / "state.db") as db:
            return await stored_messages(db, ids)

    stored = anyio.run(count)
    print(
        f"{len(procs)} processes on one SQLite home: {len(ids)} sessions in {wall:.1f} s; messages sent {sent}, "
        f"stored {stored}; 'database is locked' seen {locked}×; worker/session errors {errors}; leaks {leaks}"
    )
    return {
        "lost_messages": sent - stored,
        "locked_errors": locked,
        "errors": errors,
        "leaks": leaks,
        "sent": sent,
    }


# ---------------------------------------------------------------------------- main


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = script_parser(__doc__)
    parser.add_argument("--sessions", type=int, default=1000, help="concurrent sessions in one process")
    parser.add_argument("--turns", type=int, default=50, help="turns per session (at least 2)")
    parser.add_argument(
        "--users", type=int, default=100, help="users the sessions are spread over (at least 2)"
    )
    parser.add_argument("--backend", choices=("sqlite", "postgres", "both"), default="both")
    parser.add_argument(
        "--url", default=None, help="PostgreSQL URL (default: $KEEL_TEST_POSTGRES_URL or local)"
    )
    parser.add_argument(
        "--processes", type=int, default=4, help="keel processes on one SQLite home (0: skip)"
    )
    parser.add_argument("--process-sessions", type=int, default=10, help="sessions per process")
    parser.add_argument("--process-turns", type=int, default=20, help="turns per session in each process")
    parser.add_argument("--pg-pool-size", type=int, default=8, help="PostgreSQL connections in the pool")
    parser.add_argument(
        "--pg-wait-s",
        type=float,
        default=10.0,
        help="how long a call waits for a pooled connection (sessions.connect_timeout_s; default 10)",
    )
    parser.add_argument(
        "--gc",
        choices=("python", "sessions"),
        default="python",
        help="the cyclic collector's thresholds: Python's defaults, or harness.runtime.tune_gc_for_sessions",
    )
    parser.add_argument(
        "--quick", action="store_true", help="a small run: 40 sessions × 6 turns, 2 processes"
    )
    parser.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--worker-home", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.quick:
        args.sessions, args.turns, args.users = 40, 6, 8
        args.processes, args.process_sessions, args.process_turns = 2, 4, 5
    if args.worker is None and (args.turns < 2 or args.users < 2 or args.sessions < args.users):
        parser.error("need --turns ≥ 2, --users ≥ 2 and at least one session per user (--sessions ≥ --users)")
    return args


def headline(results: Mapping[str, Mapping[str, float]], procs: Mapping[str, float] | None) -> bool:
    """Print the `name value` lines; True when every invariant held."""
    lines: list[tuple[str, float]] = []
    first = next(iter(results.values()), None)
    if first is not None:
        lines.append(("sessions_turns_per_s", first["turns_per_s"]))
    leaks = sum(r["cross_user_leaks"] for r in results.values()) + (procs["leaks"] if procs else 0)
    lost = sum(r["lost_messages"] for r in results.values()) + (procs["lost_messages"] if procs else 0)
    misses = sum(r["own_word_misses"] for r in results.values())
    failed = sum(r["search_errors"] for r in results.values())
    errors = sum(r["session_errors"] for r in results.values()) + (procs["errors"] if procs else 0)
    for backend, r in results.items():
        for key in (
            "turns_per_s",
            "cpu_ms_per_turn",
            "loop_cpu_ms_per_turn",
            "turn_p50_ms",
            "turn_p99_ms",
            "solo_turn_p50_ms",
            "solo_turn_p99_ms",
        ):
            lines.append((f"sessions_{key}_{backend}", r[key]))
        for key in (
            "messages_sent",
            "messages_stored",
            "lost_messages",
            "cross_user_leaks",
            "own_word_misses",
            "search_errors",
        ):
            lines.append((f"{key}_{backend}", r[key]))
    if procs is not None:
        lines += [
            ("multiprocess_lost_messages", procs["lost_messages"]),
            ("multiprocess_locked_errors", procs["locked_errors"]),
        ]
    lines += [
        ("session_errors", errors),
        ("own_word_misses", misses),
        ("search_errors", failed),
        ("cross_user_leaks", leaks),
        ("lost_messages", lost),
    ]
    for name, value in lines:
        print(
            f"{name} {value:.1f}"
            if isinstance(value, float) and not value.is_integer()
            else f"{name} {int(value)}"
        )
    locked = procs["locked_errors"] if procs else 0
    return leaks == 0 and lost == 0 and misses == 0 and failed == 0 and errors == 0 and locked == 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.worker is not None:
        anyio.run(worker, args.worker_home, args.worker, args.sessions, args.turns, args.users)
        return 0
    url = args.url or os.environ.get("KEEL_TEST_POSTGRES_URL") or DEFAULT_PG_URL
    backends = ("sqlite", "postgres") if args.backend == "both" else (args.backend,)
    if args.gc == "sessions":
        tune_gc_for_sessions()
    print(
        f"{args.sessions} sessions × {args.turns} turns over {args.users} users, in one process "
        f"(gc thresholds {gc.get_threshold()})"
    )
    results: dict[str, dict[str, float]] = {}
    for backend in backends:
        results[backend] = anyio.run(
            run_backend,
            backend,
            args.sessions,
            args.turns,
            args.users,
            url,
            args.pg_pool_size,
            args.pg_wait_s,
        )
    procs = None
    if args.processes > 0:
        print(f"{args.processes} processes × {args.process_sessions} sessions × {args.process_turns} turns")
        procs = run_processes(args.processes, args.process_sessions, args.process_turns, args.users)
    return 0 if headline(results, procs) else 1


if __name__ == "__main__":
    sys.exit(main())
