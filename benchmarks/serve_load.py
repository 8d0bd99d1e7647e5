"""`keel serve` under load: two servers on one PostgreSQL, N concurrent sessions, one SIGKILL.

A fake OpenAI-compatible endpoint (`harness.testing.fake_openai`, `--model-latency-ms` before
its first token) is the model. Two `keel serve` processes, each with its own empty home,
share one fresh PostgreSQL schema. Then:

1. *load*: `--sessions` N sessions (10, 100 or 500), all at once, each running `--turns`
   turns one after the other; turn t of session s is posted to server (s + t) mod 2 and its
   event stream read from the same server. Reported: turns/s over the phase, and the added
   latency (time from the POST to the first `text.delta` minus the model's latency) p50/p99.
   `events_lost`: a stream whose ids are not 1, 2, 3, … or that does not end with
   `run.completed`; `duplicated_turns`: user messages in the session store beyond one per
   acknowledged turn (read from the server's tables).
2. *kill*: K sessions (min(N, 20)) each start a long turn on server A; once every one has
   started, A is SIGKILLed. Server B must fail each run as `worker_lost` (reported: the
   slowest detection after the kill), serve its events, keep its input
   (`acknowledged_inputs_lost`: a 202'd run whose stored input is not what was sent), and
   run the next turn of each session (`next_turns_failed`).

Clients behave as the API asks: a POST whose connection broke or that got 503 (the storage
was busy) is resent with the same `Idempotency-Key`, a broken stream resumes with
`Last-Event-ID`; such resends are counted (`client retries`) and must lose or duplicate nothing.

    python benchmarks/serve_load.py [--sessions 10|100|500] [--turns 3] [--model-latency-ms 20]
        [--url postgresql://...] [--dense off|auto|on] [--logs DIR]

Exits 1 when `events_lost`, `duplicated_turns`, `acknowledged_inputs_lost` or
`next_turns_failed` is not zero.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import httpx
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._pg import postgres_url_default, temporary_pg_schema
from harness.testing.processes import KeelServer, fake_model, keel_servers

_ATTEMPTS = 30  # resends of one request (a busy shared PostgreSQL answers 503 for a while)


@dataclass
class Tally:
    """What the clients saw."""

    added_ms: list[float] = field(default_factory=list)
    turns: int = 0
    events_lost: int = 0
    sent: dict[str, str] = field(default_factory=dict)  # run id -> input
    failed: dict[str, int] = field(default_factory=dict)  # error code -> runs
    retries: int = 0  # requests resent after a broken connection or a 503
    refused: int = 0  # turns still refused (503) after every resend: never acknowledged
    acked: dict[str, int] = field(default_factory=dict)  # session -> turns acknowledged (202)


async def read_stream(
    client: httpx.AsyncClient, run_id: str, tally: Tally | None = None
) -> tuple[list[tuple[int, str]], float | None]:
    """The run's `(id, event)` pairs, and when its first `text.delta` arrived (monotonic).

    A connection that breaks (or a 503) is resumed with `Last-Event-ID` (counted in `tally.retries`)."""
    events: list[tuple[int, str]] = []
    first: float | None = None
    for _ in range(_ATTEMPTS):
        headers = {"Last-Event-ID": str(events[-1][0])} if events else {}
        fields: dict[str, str] = {}
        try:
            async with client.stream(
                "GET", f"/v1/runs/{run_id}/events", headers=headers, timeout=300
            ) as response:
                if response.status_code == 503:  # the storage was busy: resume
                    raise httpx.TransportError("503 storage_unavailable")
                async for line in response.aiter_lines():
                    if line:
                        name, _, value = line.partition(": ")
                        fields[name] = value
                        continue
                    if fields:
                        events.append((int(fields["id"]), fields["event"]))
                        if fields["event"] == "text.delta" and first is None:
                            first = time.monotonic()
                    fields = {}
            return events, first
        except httpx.TransportError:
            if tally is not None:
                tally.retries += 1
            await anyio.sleep(1.0)
    return events, first


def intact(events: list[tuple[int, str]], last: str) -> bool:
    return (
        [seq for seq, _ in events] == list(range(1, len(events) + 1))
        and bool(events)
        and events[-1][1] == last
    )


async def new_session(client: httpx.AsyncClient) -> str:
    """A new session (a broken connection is retried: at worst an unused session is left)."""
    for attempt in range(_ATTEMPTS):
        try:
            response = await client.post("/v1/sessions", timeout=300)
            if response.status_code != 503 or attempt == _ATTEMPTS - 1:
                response.raise_for_status()
                return str(response.json()["id"])
        except httpx.TransportError:
            if attempt == _ATTEMPTS - 1:
                raise
        await anyio.sleep(1.0)
    raise AssertionError("unreachable")


async def post_turn(client: httpx.AsyncClient, session: str, text: str, tally: Tally | None = None) -> str:
    """POST a turn, retried with the same `Idempotency-Key` when the connection breaks."""
    key = uuid.uuid4().hex
    for attempt in range(_ATTEMPTS):
        try:
            response = await client.post(
                f"/v1/sessions/{session}/turns",
                json={"input": text},
                headers={"Idempotency-Key": key},
                timeout=300,
            )
            response.raise_for_status()
            return str(response.json()["run_id"])
        except httpx.TransportError:
            if attempt == _ATTEMPTS - 1:
                raise
            if tally is not None:
                tally.retries += 1
    raise AssertionError("unreachable")


async def one_session(
    clients: list[httpx.AsyncClient], s: int, turns: int, latency_ms: float, tally: Tally
) -> None:
    session = await new_session(clients[s % 2])
    tally.acked[session] = 0
    for t in range(turns):
        client = clients[(s + t) % 2]
        start = time.monotonic()
        text = f"session {s} turn {t}"
        try:
            run_id = await post_turn(client, session, text, tally)
        except httpx.HTTPStatusError:
            tally.refused += 1  # overloaded past every resend: refused, so nothing to lose
            continue
        tally.acked[session] += 1
        tally.sent[run_id] = text
        events, first = await read_stream(client, run_id, tally)
        if events and events[-1][1] == "run.failed":
            run = (await client.get(f"/v1/runs/{run_id}", timeout=300)).json()
            code = str((run["error"] or {}).get("code"))
            tally.failed[code] = tally.failed.get(code, 0) + 1
        elif not intact(events, "run.completed"):
            tally.events_lost += 1
        if first is not None:
            tally.added_ms.append((first - start) * 1000 - latency_ms)
        tally.turns += 1


def duplicated_turns(url: str, schema: str, acked: dict[str, int]) -> int:
    """User messages beyond one per acknowledged turn, or acknowledged turns missing, read from the server."""
    with psycopg.connect(url, options=f"-c search_path={schema}") as conn:
        rows = conn.execute(
            "SELECT session_id, content, count(*) FROM messages WHERE role = 'user' AND session_id = ANY(%s) "
            "GROUP BY session_id, content",
            (list(acked),),
        ).fetchall()
    extra = sum(int(n) - 1 for _, _, n in rows if int(n) > 1)
    stored: dict[str, int] = {}
    for session, _, _ in rows:
        stored[str(session)] = stored.get(str(session), 0) + 1
    missing = sum(max(0, n - stored.get(session, 0)) for session, n in acked.items())
    return extra + missing


async def load(servers: list[KeelServer], args: argparse.Namespace, tally: Tally) -> float:
    limits = httpx.Limits(max_connections=4 * args.sessions + 10, max_keepalive_connections=2 * args.sessions)
    async with (
        httpx.AsyncClient(base_url=servers[0].url, limits=limits) as a,
        httpx.AsyncClient(base_url=servers[1].url, limits=limits) as b,
    ):

        async def run(s: int) -> None:
            await one_session([a, b], s, args.turns, args.model_latency_ms, tally)

        start = time.monotonic()
        async with anyio.create_task_group() as tg:
            for s in range(args.sessions):
                tg.start_soon(run, s)
        return time.monotonic() - start


@dataclass
class KillReport:
    runs: int = 0
    inputs_lost: int = 0
    events_lost: int = 0
    next_failed: int = 0
    detect_s: float = 0.0


async def kill_phase(servers: list[KeelServer], count: int) -> KillReport:
    report = KillReport(runs=count)
    async with (
        httpx.AsyncClient(base_url=servers[0].url) as a,
        httpx.AsyncClient(base_url=servers[1].url) as b,
    ):
        sessions = [await new_session(a) for _ in range(count)]
        sent = {await post_turn(a, s, f"long turn of {s} [sleep=30]"): s for s in sessions}
        for run_id in sent:
            async with b.stream("GET", f"/v1/runs/{run_id}/events", timeout=300) as response:
                async for line in response.aiter_lines():
                    if line == "event: run.started":
                        break
        await anyio.to_thread.run_sync(servers[0].kill)
        killed = time.time()
        for run_id, session in sent.items():
            events, _ = await read_stream(b, run_id)  # ends once b failed the run
            run = (await b.get(f"/v1/runs/{run_id}", timeout=300)).json()
            report.detect_s = max(report.detect_s, float(run["ended_at"] or killed) - killed)
            if run["input"] != f"long turn of {session} [sleep=30]":
                report.inputs_lost += 1
            if not intact(events, "run.failed") or (run["error"] or {}).get("code") != "worker_lost":
                report.events_lost += 1
            next_events, _ = await read_stream(b, await post_turn(b, session, "after the kill"))
            if not intact(next_events, "run.completed"):
                report.next_failed += 1
    return report


def config_file(root: Path, model_url: str, url: str, schema: str, dense: str) -> Path:
    config = {
        "model": {"provider": "openai", "base_url": model_url, "name": "fake", "tokenizer": "chars"},
        "storage": {"backend": "postgres", "url": url, "pg_schema": schema, "lease_wait_s": 3},
        "sessions": {"pool_size": 8},
        "serve": {"max_running": 1000},
        # `--dense auto` (the default) lets every session opened for a turn embed messages with
        # its own vectors pool: measured apart, it is not what this benchmark is about
        "session_search": {"dense": dense},
    }
    path = root / "keel.yaml"
    path.write_text(json.dumps(config))
    return path


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--sessions", type=int, default=10, help="concurrent sessions (10, 100, 500)")
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--model-latency-ms", type=float, default=20.0)
    parser.add_argument("--url", default=postgres_url_default())
    parser.add_argument("--logs", type=Path, help="keep the servers' logs in this directory")
    parser.add_argument("--dense", choices=("off", "auto", "on"), default="off", help="session_search.dense")
    args = parser.parse_args()
    schema = f"keel_serve_load_{uuid.uuid4().hex[:8]}"
    tally = Tally()
    with (
        tempfile.TemporaryDirectory() as tmp,
        temporary_pg_schema(args.url, schema),
        fake_model(latency_ms=args.model_latency_ms) as model_url,
    ):
        root = Path(tmp)
        config = config_file(root, model_url, args.url, schema, args.dense)
        with keel_servers(config, home=[root / "a", root / "b"], log_dir=args.logs or root) as servers:
            wall = anyio.run(load, servers, args, tally)
            duplicated = duplicated_turns(args.url, schema, tally.acked)
            killed = anyio.run(kill_phase, servers, min(args.sessions, 20))
    print(
        f"sessions: {args.sessions}  turns per session: {args.turns}  model latency: {args.model_latency_ms:g} ms"
        f"  session_search.dense: {args.dense}"
    )
    print(f"turns: {tally.turns} in {wall:.1f} s  turns_per_s: {tally.turns / wall:.1f}")
    print(
        f"added_latency_ms p50: {statistics.median(tally.added_ms):.1f}  p99: {pct(tally.added_ms, 0.99):.1f}"
    )
    print(f"turns_refused (503 after every resend, never acknowledged): {tally.refused}")
    print(f"runs_failed: {sum(tally.failed.values())} {tally.failed or ''}".rstrip())
    print(
        f"client retries after a broken connection or a 503 (Idempotency-Key / Last-Event-ID): {tally.retries}"
    )
    print(f"events_lost: {tally.events_lost + killed.events_lost}")
    print(f"duplicated_turns: {duplicated}")
    print(f"killed worker: {killed.runs} runs in flight, worker_lost after at most {killed.detect_s:.1f} s")
    print(f"acknowledged_inputs_lost: {killed.inputs_lost}")
    print(f"next_turns_failed: {killed.next_failed}")
    bad = tally.events_lost + killed.events_lost + duplicated + killed.inputs_lost + killed.next_failed
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
