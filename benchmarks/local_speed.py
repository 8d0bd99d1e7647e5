"""Where the embedded model evaluates a prompt twice: keel's real sessions, the server's own counts.

Runs on the configured embedded model (default Qwen2.5-Coder-1.5B), greedy and with short
replies, through `open_model` exactly as `keel chat` does (so the server gets its
configuration — RAM slots, disk prefix cache, threads — from the config), and reads the
server's own per-request counts from its log (`N prompt tokens, M prefix-match hit,
remaining K prompt tokens to eval`). Cases, side by side in one run:

- `cold_first_turn`: a new home, a new server process, the first turn of a session;
- `second_session_first_turn`: the server is stopped and a new one started on the same
  home (what a second `keel chat` does), then the first turn of a new session;
- `chat_plain`: that session goes on for `--turns` turns (no learning);
- `search_summaries`: mid-chat, `session_search` with summaries (one side call per session
  found), then `turn_after_search`, the next turn of the chat;
- `compression`: a pasted CI log (`long_paste`: the chat's short turns alone are too small
  to compress), `/compress` (flush + summary calls), then `turn_after_compression`;
- `chat_learning`: a new session on the same server with `memory.provider: semantic`
  learning after each of `--turns` turns (the harness waits for learning to finish before
  the next turn, so every turn sees the side calls that came before it).

For each case: prompt tokens the server evaluated and reused, and wall seconds. A main turn
after side calls "lost its prefix" when the server reused fewer tokens than the previous
main request's prompt (minus a few tokens of re-tokenized reply): those are counted in
`side_call_prefix_losses`. Run it under the machine's model lock:

    flock /work/model.lock python benchmarks/local_speed.py [--turns 10] [--json OUT]

It ends with `cold_first_turn_s`, `after_compression_reevaluated_share <prompt tokens the
turn after /compress evaluated / its prompt tokens>`, `second_session_first_turn_ratio <wall
of the second session's first turn / the cold first turn>` and `side_call_prefix_losses <n>`.

Measured on a loaded 2-core machine (2026-11-25, Qwen2.5-Coder-1.5B, one thread; the server's
counts): before (one KV state, no disk cache; run stopped after `turn_after_search`) the
second session's first turn evaluated 2,674 of 5,260 prompt tokens again (336 s of server
time against 450 s cold) and the turn after a search summary re-evaluated 2,753 of 2,758
(174 s); after (`--turns 2`), the second session's first turn evaluated 117 (21.5 s against
167.0 s cold: ratio 0.129), the turn after the search 18 of 2,729, and two learning turns
lost nothing (`side_call_prefix_losses 0`). 2026-11-28, `--turns 10`: cold first turn 171.3 s,
second session's 30.0 s (ratio 0.175); ten learning turns (14 side calls) re-evaluated 4,007
of 77,000 main prompt tokens, no loss. With `--no-learning` (the compression case): a second
session's first turn 16.6 s against 108.8 s cold (0.153); `/compress` 191.3 s (two flush
pieces and the summary, 4,902 tokens evaluated); the turn after it evaluated 3,227 of 3,616
prompt tokens (132.5 s): the flush changed the memory block, which sits ~390 tokens into the
system prompt, and everything after it — guidance, skills index, the tool list the chat
template renders after the system text — is prefilled again.

2026-11-29, `--turns 10 --no-learning`, after the compact tool profile and the memory block
moved after the tools (load average 16 at the start, 5.7 at the end, 2 cores shared by eight
sessions; the server's counts): the cold first turn evaluated 1,091 prompt tokens (was ~5,500)
in 95.5 s; the second session's first turn evaluated 68 of 1,091 (25.1 s, ratio 0.263); nine
plain turns evaluated 193 of 12,433; the turn after the search 18 of 1,667 (no loss); the turn
after `/compress` evaluated 889 of 1,915 (share 0.464, 68.2 s; was 3,227 of 3,616 in
132.5 s): what it re-reads is the memory tail, the summary and the kept turns — the stable
head (first system message and tools, 1,026 tokens) was reused whole; `/compress` 363.7 s
(four side calls, 5,406 tokens evaluated: the flush pieces share no prefix with the chat).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import TypeVar

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._util import add_set_option, overrides, script_parser
from harness.config import KeelConfig, load_config
from harness.events import CompressionFinished, Warning
from harness.loop import Session
from harness.models.base import ModelClient, ModelEvent
from harness.models.factory import open_model
from harness.types import ModelReply, ModelRequest, ToolCall
from harness.wiring import SessionOptions, open_session

T = TypeVar("T")

TURNS = (
    "Hi, I'm Rosa. I maintain a Rust crate called tidepool and I deploy on Thursdays.",
    "My laptop runs Fedora and I use helix as my editor.",
    "What editor do I use? One word.",
    "Remember that our CI runs on a self-hosted runner named gull.",
    "I prefer answers without code blocks unless I ask.",
    "My colleague Imre reviews every pull request on Fridays.",
    "When do I deploy? Short answer.",
    "The crate's minimum supported Rust version is 1.74.",
    "We publish release notes in a file called CHANGES.md.",
    "Thanks, that is all for now.",
)
SEARCH_QUERY = "Thursdays deploy"
PASTE = "Here is the failing CI log from gull, just keep it for reference:\n" + "\n".join(
    f"[{n:03d}] test tidepool::pool::tests::case_{n} ... {'FAILED' if n % 7 == 0 else 'ok'} ({n * 13 % 97} ms)"
    for n in range(60)
)
"""A pasted log: the short turns of the chat alone leave too small a middle to compress."""
_LINE = re.compile(r"(\d+) prompt tokens, (\d+) prefix-match hit, remaining (\d+) prompt tokens to eval")
_MARGIN = 16
"""Tokens of the previous reply the next prompt may re-tokenize differently."""


@dataclass
class Case:
    name: str
    wall_s: float = 0.0
    requests: int = 0
    prompt: int = 0
    evaluated: int = 0
    reused: int = 0
    side_requests: int = 0
    side_evaluated: int = 0
    side_reused: int = 0
    losses: int = 0
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Line:
    prompt: int
    reused: int
    evaluated: int


class Counting:
    """The session's model client, counting requests in flight (to wait for background learning)."""

    def __init__(self, inner: ModelClient) -> None:
        self._inner = inner
        self.in_flight = 0
        self.last_active = time.monotonic()

    @property
    def model_name(self) -> str:
        return self._inner.model_name

    async def complete(self, request: ModelRequest) -> ModelReply:
        self.in_flight += 1
        try:
            return await self._inner.complete(request)
        finally:
            self.in_flight -= 1
            self.last_active = time.monotonic()

    def stream(self, request: ModelRequest) -> AbstractAsyncContextManager[AsyncIterator[ModelEvent]]:
        return self._stream(request)

    @asynccontextmanager
    async def _stream(self, request: ModelRequest) -> AsyncIterator[AsyncIterator[ModelEvent]]:
        self.in_flight += 1
        try:
            async with self._inner.stream(request) as events:
                yield events
        finally:
            self.in_flight -= 1
            self.last_active = time.monotonic()

    async def idle(self, quiet_s: float = 4.0, limit_s: float = 1200.0) -> None:
        with anyio.move_on_after(limit_s):
            while True:
                if not self.in_flight and time.monotonic() - self.last_active >= quiet_s:
                    return
                await anyio.sleep(0.5)


class Log:
    """The server's request lines, read from where the last read stopped."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0

    def mark(self) -> None:
        self.offset = self.path.stat().st_size if self.path.exists() else 0

    def since(self) -> list[Line]:
        if not self.path.exists():
            return []
        with self.path.open("rb") as fh:
            fh.seek(self.offset)
            text = fh.read().decode("utf-8", errors="replace")
        self.offset += len(text.encode("utf-8"))
        return [Line(int(m[1]), int(m[2]), int(m[3])) for m in _LINE.finditer(text)]


def _config(home: Path, *, semantic: bool, extra: Mapping[str, str]) -> KeelConfig:
    env = {
        "KEEL_HOME": str(home),
        "KEEL_MODEL__MAX_OUTPUT_TOKENS": "48",
        "KEEL_MODEL__TEMPERATURE": "0",
        "KEEL_MODEL__TIMEOUT_S": "1800",
        # the model client is handed to the session (to count its calls): say what `keel chat`
        # would show the embedded model
        "KEEL_PROMPT__TOOL_PROFILE": "compact",
        "KEEL_LIMITS__MAX_ITERATIONS": "2",
        "KEEL_SESSION_SEARCH__SUMMARIZE": "true",
        "KEEL_SESSION_SEARCH__DEFAULT_LIMIT": "2",
        "KEEL_COMPRESSION__FLUSH_MAX_TOKENS": "128",
        # a short chat's turns all fit the default tail (a fifth of the threshold): keep
        # the smallest tail, so `/compress` has a middle to flush and summarize
        "KEEL_COMPRESSION__TAIL_RATIO": "0.05",
        "KEEL_COMPRESSION__PROTECT_LAST_N": "2",
        "KEEL_MEMORY__PROVIDER": "semantic" if semantic else "none",
        "KEEL_MEMORY__SEMANTIC__LEARN_TIMEOUT_S": "1800",
        "KEEL_MEMORY__SEMANTIC__LEARN_MAX_TOKENS": "96",
        **extra,
    }
    return load_config(None, environ=env)


class Bench:
    def __init__(self, home: Path) -> None:
        self.home = home
        self.log = Log(home / "logs" / "local-model.log")
        self.cases: dict[str, Case] = {}
        self.prev_main: int | None = None
        """The previous main request's prompt tokens in this session (None: none yet)."""

    def case(self, name: str) -> Case:
        return self.cases.setdefault(name, Case(name))

    def done(self, name: str) -> None:
        """Print a case's row as soon as it is measured (a run cut short still reports)."""
        print(_row(self.cases[name]), flush=True)

    def record(self, case: Case, lines: list[Line], *, main: bool, wall_s: float, check: bool) -> None:
        case.wall_s += wall_s
        for ln in lines:
            if main:
                case.requests += 1
                case.prompt += ln.prompt
                case.evaluated += ln.evaluated
                case.reused += ln.reused
                if check and self.prev_main is not None and ln.reused < self.prev_main - _MARGIN:
                    case.losses += 1
                    case.notes.append(f"reused {ln.reused} < previous main prompt {self.prev_main}")
                self.prev_main = ln.prompt
                check = True  # a second call in the same turn extends the first
            else:
                case.side_requests += 1
                case.side_evaluated += ln.evaluated
                case.side_reused += ln.reused

    async def turn(self, session: Session, text: str, case: Case, *, check: bool) -> None:
        self.log.mark()
        started = time.monotonic()
        async with session.run_turn(text) as events:
            async for _ in events:
                pass
        wall = time.monotonic() - started
        self.record(case, self.log.since(), main=True, wall_s=wall, check=check)


_HEADER = (
    f"{'case':<27}{'wall s':>9}{'req':>5}{'prompt':>8}{'evaluated':>10}{'reused':>8}"
    f"{'side req':>9}{'side eval':>10}{'side reused':>12}{'losses':>7}"
)


def _row(c: Case) -> str:
    return (
        f"{c.name:<27}{c.wall_s:9.1f}{c.requests:5d}{c.prompt:8d}{c.evaluated:10d}{c.reused:8d}"
        f"{c.side_requests:9d}{c.side_evaluated:10d}{c.side_reused:12d}{c.losses:7d}"
    )


async def _timed_side(bench: Bench, case: Case, work: Awaitable[T]) -> T:
    """Await `work`, record it as a side case, and hand back its result."""
    bench.log.mark()
    started = time.monotonic()
    result = await work
    bench.record(case, bench.log.since(), main=False, wall_s=time.monotonic() - started, check=False)
    return result


async def _compress(bench: Bench, s: Session) -> None:
    """`/compress`, timed as a side case; says why when it did not compress."""
    events = await _timed_side(bench, bench.case("compression"), s.compress())
    done = [e for e in events if isinstance(e, CompressionFinished)]
    if not done or done[0].aborted or done[0].messages_after >= done[0].messages_before:
        why = "; ".join(e.message for e in events if isinstance(e, Warning)) or "no CompressionFinished event"
        print(f"compression did not compress: {why}", file=sys.stderr, flush=True)


async def _first_process(bench: Bench, cfg: KeelConfig) -> float:
    started = time.monotonic()
    async with open_model(cfg, home=bench.home) as inner:
        load_s = time.monotonic() - started
        client = Counting(inner)
        async with open_session(cfg, SessionOptions(model=client, home=bench.home, source="benchmark")) as s:
            bench.prev_main = None
            await bench.turn(s, TURNS[0], bench.case("cold_first_turn"), check=False)
            bench.done("cold_first_turn")
            await client.idle(quiet_s=1.0)
    return load_s


async def _second_process(
    bench: Bench, cfg: KeelConfig, sem: KeelConfig, turns: int, *, learning: bool = True
) -> float:
    started = time.monotonic()
    async with open_model(cfg, home=bench.home) as inner:
        load_s = time.monotonic() - started
        client = Counting(inner)
        opts = SessionOptions(model=client, home=bench.home, source="benchmark")
        async with open_session(cfg, opts) as s:
            bench.prev_main = None
            await bench.turn(s, TURNS[0], bench.case("second_session_first_turn"), check=False)
            for text in TURNS[1:turns]:
                await bench.turn(s, text, bench.case("chat_plain"), check=True)
            search = ToolCall("bench-search", "session_search", json.dumps({"query": SEARCH_QUERY}))
            await _timed_side(bench, bench.case("search_summaries"), s.tools.run_all([search]))
            await bench.turn(
                s, "And which runner does our CI use?", bench.case("turn_after_search"), check=True
            )
            await bench.turn(s, PASTE, bench.case("long_paste"), check=True)
            # one more turn, so the paste is in the middle (the tail keeps the last turn)
            await bench.turn(
                s, "Which test failed first? Short answer.", bench.case("long_paste"), check=True
            )
            await _compress(bench, s)
            bench.prev_main = None
            await bench.turn(
                s, "What is my colleague's name?", bench.case("turn_after_compression"), check=False
            )
            await client.idle(quiet_s=1.0)
        if not learning:
            return load_s
        async with open_session(sem, opts) as s:
            bench.prev_main = None
            case = bench.case("chat_learning")
            for i, text in enumerate(TURNS[:turns]):
                await bench.turn(s, text, case, check=i > 0)
                await _timed_side(bench, case, client.idle())
            bench.done("chat_learning")
    return load_s


async def main(
    turns: int, extra: Mapping[str, str], keep: Path | None, *, learning: bool = True
) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="keel-local-speed-") as tmp:
        home = keep or Path(tmp) / "home"
        home.mkdir(parents=True, exist_ok=True)
        bench = Bench(home)
        cfg = _config(home, semantic=False, extra=extra)
        sem = _config(home, semantic=True, extra=extra)
        print(_HEADER, flush=True)
        load1 = await _first_process(bench, cfg)
        load2 = await _second_process(bench, cfg, sem, turns, learning=learning)
    cases = list(bench.cases.values())
    print(f"model {cfg.model.local_model}, turns {turns}, server load {load1:.1f} s / {load2:.1f} s")
    print(_HEADER)
    for c in cases:
        print(_row(c))
        for note in c.notes:
            print(f"    {note}")
    cold, second = bench.cases["cold_first_turn"], bench.cases["second_session_first_turn"]
    ratio = second.wall_s / cold.wall_s if cold.wall_s else float("nan")
    losses = sum(bench.cases[n].losses for n in ("turn_after_search", "chat_learning") if n in bench.cases)
    report: dict[str, object] = {
        "turns": turns,
        "load_s": [load1, load2],
        "cases": [asdict(c) for c in cases],
        "second_session_first_turn_ratio": ratio,
        "side_call_prefix_losses": losses,
    }
    after = bench.cases.get("turn_after_compression")
    share = after.evaluated / after.prompt if after is not None and after.prompt else float("nan")
    report["cold_first_turn_s"] = cold.wall_s
    report["after_compression_reevaluated_share"] = share
    print(f"cold_first_turn_s {cold.wall_s:.1f}")
    print(f"after_compression_reevaluated_share {share:.3f}")
    print(f"second_session_first_turn_ratio {ratio:.3f}")
    print(f"side_call_prefix_losses {losses}")
    return report


def _parse() -> argparse.Namespace:
    p = script_parser(__doc__)
    p.add_argument("--turns", type=int, default=10, help="turns of each chat (default 10)")
    p.add_argument(
        "--no-learning", action="store_true", help="skip the chat with the semantic provider learning"
    )
    p.add_argument("--json", type=Path, default=None, help="also write the report here")
    p.add_argument("--home", type=Path, default=None, help="keep the home here (default: a temporary one)")
    add_set_option(p)
    return p.parse_args()


if __name__ == "__main__":
    args = _parse()
    out = anyio.run(partial(main, learning=not args.no_learning), args.turns, overrides(args), args.home)
    if args.json is not None:
        with contextlib.suppress(OSError):
            args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(out, indent=2), encoding="utf-8")
