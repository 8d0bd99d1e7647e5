"""`keel chat`: an interactive session with streaming output and slash commands."""

from __future__ import annotations

import argparse
import json
import sys
import threading

import anyio
import anyio.from_thread
import anyio.lowlevel
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from rich.markup import escape
from rich.table import Table

from harness.cli._common import Subparsers, config_from_args, console, err_console, noun_parser
from harness.cli._render import EventPrinter
from harness.config import KeelConfig
from harness.errors import KeelError, ModelError
from harness.loop.session import Session
from harness.types import ToolCall
from harness.wiring import OpenedSession, SessionHandles, SessionOptions, open_session
from memory import MemoryLayerError
from memory.sessions import JOURNAL_DIR_NAME

__all__ = ["register"]

HELP = """commands:
  /memory            what is saved (and what this session's frozen prompt shows)
  /compress [focus]  compress the conversation now (flush, summary, reload)
  /search QUERY      search earlier sessions
  /new               start a new conversation (memory reloaded)
  /usage             tokens used so far, cache reads and writes included
  /help              this list
  /quit              leave (Ctrl-D works too)"""


def _reader(send: MemoryObjectSendStream[str | None], token: anyio.lowlevel.EventLoopToken) -> None:
    # A daemon thread: a blocked readline must never keep the process alive on exit.
    try:
        for line in sys.stdin:
            anyio.from_thread.run_sync(send.send_nowait, line.rstrip("\n"), token=token)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, RuntimeError):
        return
    try:
        anyio.from_thread.run_sync(send.send_nowait, None, token=token)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, RuntimeError):
        return


def _memory_view(session: Session, handles: SessionHandles) -> None:
    store = handles.store
    if store is None:
        console.print("memory is disabled in the config")
        return
    for target in ("memory", "user"):
        usage = store.usage(target)
        console.print(f"[bold]{target}[/] — {usage.gauge}, {usage.entry_count} entries")
        for i, entry in enumerate(store.entries(target), 1):
            console.print(f"  {i}. {escape(entry)}")
    frozen = session.prompt.text
    pending = [e for t in ("memory", "user") for e in store.entries(t) if e not in frozen]
    if pending:
        console.print(
            f"[dim]{len(pending)} entr{'y' if len(pending) == 1 else 'ies'} saved this session will "
            "enter the prompt at the next compression or /new (the prefix stays cached).[/]"
        )


async def _search(session: Session, query: str) -> None:
    result, _ = await session.tools.run(ToolCall("manual", "session_search", json.dumps({"query": query})))
    try:
        payload = json.loads(result.content)
    except json.JSONDecodeError:
        console.print(escape(result.content))
        return
    if not payload.get("success"):
        console.print(f"[red]{escape(str(payload.get('error')))}[/]")
        return
    results = payload.get("results") or []
    if not results:
        console.print("no matching sessions")
    for r in results:
        console.print(f"[bold]{escape(str(r.get('session_id')))}[/] {escape(str(r.get('when', '')))}")
        for m in r.get("messages", [])[:6]:
            console.print(f"  {escape(str(m.get('role')))}: {escape(str(m.get('content', ''))[:160])}")


def _usage(session: Session) -> None:
    u = session.calls.usage_total
    table = Table(show_header=False, box=None)
    table.add_row("requests", f"{session.calls.requests_sent:,}")
    table.add_row("input (uncached)", f"{u.input:,}")
    table.add_row("cache read", f"{u.cache_read:,}")
    table.add_row("cache write", f"{u.cache_write:,}")
    table.add_row("output", f"{u.output:,}")
    prompt = u.prompt
    table.add_row("cached share of prompt", f"{(u.cache_read / prompt * 100) if prompt else 0:.1f}%")
    table.add_row(
        "next prompt (est.)",
        f"{session.estimate_prompt_tokens():,} / threshold {session.settings.compression.threshold_tokens:,}",
    )
    table.add_row("session", session.session_id)
    console.print(table)


EXIT_NOT_STORED = 3
"""`keel chat`'s exit status when the session ended with turns not in the session store."""


def _report_unstored(session: Session, h: SessionHandles) -> int:
    """Say loudly what the session store did not take; the exit status (0 when all is stored)."""
    journal = h.journal
    left = 0 if journal is None else journal.left_after_settle
    unsaved = session.unsaved
    if not left and not unsaved:
        return 0
    if left:
        where = escape(str(h.home / JOURNAL_DIR_NAME))
        err_console.print(
            f"[bold red]the session store ({escape(h.db.location)}) refused {left} write(s) of this session; "
            f"they are safe in {where} and are written at the start of the next session on this home.[/] "
            "Fix the store (another process holding state.db, the PostgreSQL server), then run keel again."
        )
    if unsaved:
        err_console.print(
            f"[bold red]{unsaved} message(s) of this session could be neither stored nor journalled "
            f"(is the disk under {escape(str(h.home))} full or read-only?); they are lost when keel exits.[/]"
        )
    return EXIT_NOT_STORED


async def _chat(
    cfg: KeelConfig,
    show_usage: bool,
    opened: list[OpenedSession] | None = None,
    *,
    options: SessionOptions | None = None,
) -> int:
    """Chat on stdin/stdout until /quit or end of input; the exit status (`options`: what tests put in place)."""
    printer = EventPrinter(console, show_usage=show_usage)
    console.print("[dim]starting…[/]")
    async with open_session(cfg, options or SessionOptions(source="chat")) as session:
        if opened is not None:
            opened.append(session)
        h = session.handles
        console.print(
            f"[bold]keel chat[/] — model {escape(session.model.model_name)}, home {escape(str(h.home))}\n"
            f"[dim]trace: {escape(str(h.trace_path))}. Type /help for commands.[/]"
        )
        send, recv = anyio.create_memory_object_stream[str | None](max_buffer_size=64)
        token = anyio.lowlevel.current_token()
        # Closed on the way out: a reader thread still blocked on stdin then finds them closed.
        with send, recv:
            threading.Thread(target=_reader, args=(send, token), daemon=True, name="keel-chat-stdin").start()
            await _loop(session, h, recv, printer)
        busy = h.manager.writing
        if busy:
            console.print(
                f"[dim]{escape(', '.join(busy))} is still learning from the last turn; closing when it is done "
                f"(at most {h.manager.call_timeout_s:.0f} s)…[/]"
            )
    status = _report_unstored(session, h)
    console.print("[dim]bye[/]")
    return status


async def _loop(
    session: Session, h: SessionHandles, recv: MemoryObjectReceiveStream[str | None], printer: EventPrinter
) -> None:
    while True:
        console.print("[bold cyan]you>[/] ", end="")
        async with session.idle():  # cache_lifecycle: keep the prompt cached while you think
            line = await recv.receive()
        if line is None:
            console.print()
            return
        text = line.strip()
        if not text:
            continue
        try:
            if text.startswith("/"):
                if not await _command(session, h, text, printer):
                    return
                continue
            console.print("[bold magenta]keel>[/] ", end="")
            async with session.run_turn(text) as events:
                async for ev in events:
                    printer(ev)
        except ModelError as exc:
            console.print(f"\n[red]model error: {escape(str(exc))}[/] — your message is kept; try again")
        except (KeelError, MemoryLayerError) as exc:
            console.print(f"\n[red]{escape(str(exc))}[/] — the session goes on; try again")


async def _command(session: Session, h: SessionHandles, text: str, printer: EventPrinter) -> bool:
    """Run one slash command; False means quit."""
    cmd, _, rest = text.partition(" ")
    if cmd in ("/quit", "/exit"):
        return False
    if cmd == "/help":
        console.print(HELP)
    elif cmd == "/memory":
        _memory_view(session, h)
    elif cmd == "/compress":
        for ev in await session.compress(focus=rest.strip() or None):
            printer(ev)
    elif cmd == "/search":
        if rest.strip():
            await _search(session, rest.strip())
        else:
            console.print("usage: /search QUERY")
    elif cmd == "/new":
        await session.new_conversation()
        console.print(f"[dim]new conversation {session.session_id}; memory reloaded[/]")
    elif cmd == "/usage":
        _usage(session)
    else:
        console.print(f"unknown command {escape(cmd)!r}; /help lists them")
    return True


def _run(args: argparse.Namespace) -> int:
    cfg = config_from_args(args)
    opened: list[OpenedSession] = []
    try:
        return anyio.run(_chat, cfg, bool(args.show_usage), opened)
    except KeyboardInterrupt:
        # The session was closed (and its journal settled) on the way out: still say what
        # the store did not take.
        status = _report_unstored(opened[0], opened[0].handles) if opened else 0
        console.print("\n[dim]bye[/]")
        return status


def register(sub: Subparsers) -> None:
    p = noun_parser(sub, "chat")
    p.add_argument("--show-usage", action="store_true", help="print token usage after every model call")
    p.set_defaults(handler=_run)
