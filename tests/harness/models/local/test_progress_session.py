"""A session over the embedded server (a scripted engine behind the real app): a long first
prompt streams `PrefillProgress` before the reply, and `keel chat`'s printer shows it at each
quarter instead of staying silent."""

from __future__ import annotations

import io
from collections.abc import Sequence

import httpx
from rich.console import Console

from harness.cli._render import PREFILL_SHOWN_FROM, EventPrinter
from harness.events import PrefillProgress, TextDelta, UsageReported
from harness.models.factory import local_client
from harness.models.local._engine import PREFILL_CHUNK
from harness.models.local._server import build_app
from harness.testing import make_session, run_turn
from tests.harness.models.local.test_engine import _engine

TOKEN = "t"


async def test_a_long_first_turn_reports_prefill_progress_before_its_text() -> None:
    engine, _, _ = _engine("Hello.", cap=100, n_ctx=8000)
    http = httpx.AsyncClient(
        transport=httpx.ASGITransport(app=build_app(engine, token=TOKEN)),
        base_url="http://local",
        headers={"Authorization": f"Bearer {TOKEN}"},
    )
    async with http, make_session(local_client(http, "http://local/v1", "fake", 30)) as session:
        events = await run_turn(session, "y" * (4 * PREFILL_CHUNK))
    progress = [e for e in events if isinstance(e, PrefillProgress)]
    first_text = next(i for i, e in enumerate(events) if isinstance(e, TextDelta))
    assert len(progress) >= 4 and all(events.index(p) < first_text for p in progress)
    assert progress[0].done == 0 and progress[-1].done == progress[-1].total - 1
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Hello."


def _printed(events: Sequence[PrefillProgress | UsageReported]) -> list[str]:
    out = io.StringIO()
    printer = EventPrinter(Console(file=out, width=200, color_system=None))
    for ev in events:
        printer(ev)
    return [line for line in out.getvalue().splitlines() if line]


def test_the_printer_shows_a_long_prefill_at_each_quarter_and_a_short_one_not_at_all() -> None:
    total = 4000
    long = [PrefillProgress(done, total) for done in range(0, total, 250)]
    assert _printed(long) == [
        f"reading the prompt: {done:,} of 4,000 tokens…" for done in (0, 1000, 2000, 3000)
    ]
    short = [PrefillProgress(total - PREFILL_SHOWN_FROM + 1, total), PrefillProgress(total - 1, total)]
    assert _printed(short) == []
    usage = UsageReported(
        purpose="turn", input=1, output=1, cache_read=0, cache_write=0, reported=True, latency_s=1
    )
    # a second call's prefill is shown afresh after the first call's usage
    assert len(_printed([*long, usage, *long])) == 8
