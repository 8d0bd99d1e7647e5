"""`keel memory list|show|add|remove|path|pending|confirm|discard`: the curated memory
(MEMORY.md / USER.md) from a shell, and the writes held for the user's confirmation.

Every verb acts on the backend `storage.backend` names (`harness.wiring.stores.open_place`):
the home's files, or the PostgreSQL rows every worker's sessions read.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar, cast, get_args

import anyio

from harness.cli._common import Subparsers, console, principal_from_args, verb_parsers
from harness.errors import KeelError
from harness.wiring.scoped import curated_store, meaning_check, shared_memory_store
from harness.wiring.stores import curated_scopes, open_place, open_sessions
from memory import (
    AmbiguousMatchError,
    MemoryLayerError,
    MemoryStore,
    MemoryTarget,
    NoMatchError,
    StoreFullError,
    WriteResult,
)
from memory.curated import HeldWrites, PendingWrite
from memory.provenance import ORIGIN_LABELS

if TYPE_CHECKING:
    from harness.wiring.why import EntryOrigin

__all__ = ["register"]

_TARGETS: tuple[MemoryTarget, ...] = get_args(MemoryTarget)
FILE_NAMES: dict[MemoryTarget, str] = {"memory": "MEMORY.md", "user": "USER.md"}


def preview(entry: str, width: int = 80) -> str:
    flat = " ".join(entry.split())
    return flat if len(flat) <= width else flat[:width] + "..."


T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class _Memory:
    """What a verb works on: the principal's curated store, the shared workspace's (read-only,
    when the config names one), and the writes held for confirmation, all on one backend."""

    store: MemoryStore
    shared: MemoryStore | None
    held: HeldWrites


def _with_memory(
    args: argparse.Namespace, work: Callable[[_Memory], Awaitable[T]], *, writes: bool = False
) -> T:
    """Open the configured backend, run `work` on the principal's memory, close it.

    A verb that `writes` checks what it saves as the session's memory tool does: the scanner's
    rules and, as `memory.meaning_check` asks, the meaning check (built only for writes: it
    loads the embedder).
    """
    cfg, principal = principal_from_args(args)
    home = cfg.resolved_home(os.environ)
    meaning = meaning_check(cfg) if writes else None

    async def main() -> T:
        async with open_place(cfg, home) as place:
            backend = place.curated(principal)
            store = curated_store(cfg, home, principal, policy="frozen", meaning=meaning, backend=backend)
            shared = shared_memory_store(cfg, home, principal, stores=place)
            return await work(_Memory(store, shared, place.held(principal, home)))

    return anyio.run(main)


def _targets(args: argparse.Namespace) -> tuple[MemoryTarget, ...]:
    chosen = cast("MemoryTarget | None", args.target)
    return _TARGETS if chosen is None else (chosen,)


def _user_error(exc: MemoryLayerError, target: MemoryTarget) -> KeelError:
    message = str(exc)
    if isinstance(exc, AmbiguousMatchError):
        message += "\nMatching entries:\n" + "\n".join(f"  - {p}" for p in exc.previews)
    elif isinstance(exc, NoMatchError):
        message += f"\n`keel memory list {target}` shows the entries."
    elif isinstance(exc, StoreFullError):
        message += (
            f"\nFrom the command line: free room with `keel memory remove {target} TEXT` "
            "(or edit the file `keel memory path` names), then add again."
        )
    # The app prints errors with rich markup on; entries may contain `[...]`.
    return KeelError(message)  # the app escapes markup when it prints errors


def _run_write(
    args: argparse.Namespace, action: Callable[[MemoryStore], Awaitable[WriteResult]], *, adds: bool
) -> WriteResult:
    try:
        return _with_memory(args, lambda memory: action(memory.store), writes=adds)
    except MemoryLayerError as exc:
        raise _user_error(exc, cast("MemoryTarget", args.target)) from exc


def _summary(result: WriteResult) -> str:
    usage = result.usage
    count = f"{usage.entry_count} entr{'y' if usage.entry_count == 1 else 'ies'}"
    return f"{FILE_NAMES[result.target]}: {usage.gauge}, {count}"


def _add(args: argparse.Namespace) -> int:
    result = _run_write(args, lambda store: store.add(args.target, args.text), adds=True)
    if result.committed:
        console.out(f"Added. {_summary(result)}", highlight=False)
    else:
        console.out(f"Already saved; nothing added. {_summary(result)}", highlight=False)
    for entry in result.evicted:
        console.out(f"Moved to ARCHIVE.jsonl to make room: {preview(entry)}", highlight=False)
    return 0


def _remove(args: argparse.Namespace) -> int:
    result = _run_write(args, lambda store: store.remove(args.target, args.old_text), adds=False)
    removed = result.committed[0].previous or ""
    console.out(f"Removed: {preview(removed)}\n{_summary(result)}", highlight=False)
    return 0


def _loaded(args: argparse.Namespace) -> _Memory:
    async def load(memory: _Memory) -> _Memory:
        await memory.store.load()
        if memory.shared is not None:
            await memory.shared.load()
        return memory

    return _with_memory(args, load)


def _status_lines(store: MemoryStore, target: MemoryTarget) -> list[str]:
    name = FILE_NAMES[target]
    if not store.enabled(target):
        key = "memory_enabled" if target == "memory" else "user_profile_enabled"
        return [f"{name}: disabled (memory.{key} is false)"]
    lines: list[str] = []
    error = store.read_error(target)
    if error is not None:
        lines.append(f"{name}: could not be read ({error}); writes are refused until the file is fixed")
    usage = store.usage(target)
    if usage.over_budget:
        lines.append(
            f"{name} is over its budget ({usage.chars:,}/{usage.limit:,} chars, {usage.entry_count:,} entries): "
            "the system prompt shows only the entries that fit, with a note saying the rest are left out. "
            f"Nothing was deleted. Merge or remove entries (`keel memory list {target}`, "
            f"`keel memory remove {target} TEXT`), or edit {store.path(target)}."
        )
    return lines


def _origins(args: argparse.Namespace, entries: list[str]) -> dict[str, EntryOrigin]:
    """Where each entry came from (`harness.wiring.why`), from the configured session store."""
    # Here, not at import: `why` reads the flush's records (harness.compress), which the
    # other memory verbs never need.
    from harness.wiring.why import entry_origins

    cfg, principal = principal_from_args(args)

    async def main() -> dict[str, EntryOrigin]:
        async with open_sessions(cfg, cfg.resolved_home(os.environ)) as db:
            return await entry_origins(db, principal.session_user, entries)

    return anyio.run(main)


def _why(origin: EntryOrigin | None) -> str:
    if origin is None:
        return "why: no record in the sessions (written by hand, with `keel memory add`, or before keel kept one)"
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(origin.timestamp))
    grounds = f", grounded on {origin.grounded_on!r}" if origin.grounded_on else ""
    return f"why: {origin.via} in session {origin.session_id} ({when}){grounds}"


def _list(args: argparse.Namespace) -> int:
    store = _loaded(args).store
    every = [e for t in _targets(args) if store.enabled(t) for e in store.entries(t)]
    origins = _origins(args, every) if getattr(args, "why", False) else None
    blocks: list[str] = []
    for target in _targets(args):
        problems = _status_lines(store, target)
        if store.read_error(target) is not None or not store.enabled(target):
            blocks.append("\n".join(problems))
            continue
        usage = store.usage(target)
        entries = store.entries(target)
        count = f"{usage.entry_count} entr{'y' if usage.entry_count == 1 else 'ies'}"
        lines = [f"{FILE_NAMES[target]} ({target}): {usage.gauge}, {count}"]
        width = len(str(len(entries)))
        for n, entry in enumerate(entries, start=1):
            first, *rest = entry.split("\n")
            lines.append(f"  {n:>{width}}. {first}")
            lines.extend(f"  {' ' * width}  {line}" for line in rest)
            if origins is not None:
                lines.append(f"  {' ' * width}  {_why(origins.get(entry))}")
        lines.extend(problems)
        blocks.append("\n".join(lines))
    console.out("\n\n".join(blocks), highlight=False)
    return 0


def _show(args: argparse.Namespace) -> int:
    memory = _loaded(args)
    store, shared = memory.store, memory.shared
    blocks: list[str] = []
    for target in _targets(args):
        problems = _status_lines(store, target)
        block = store.snapshot(target)
        if block:
            blocks.append(block)
        elif not problems:
            blocks.append(f"({FILE_NAMES[target]} is empty; add with `keel memory add {target} TEXT`)")
        blocks.extend(problems)
        if target == "memory" and shared is not None and shared.snapshot("memory"):
            blocks.append(shared.snapshot("memory"))
    console.out("\n\n".join(blocks), highlight=False)
    return 0


def _path(args: argparse.Namespace) -> int:
    cfg, principal = principal_from_args(args)
    home = cfg.resolved_home(os.environ)
    rows: list[tuple[str, object]]
    if cfg.storage.backend != "files":  # said without connecting: `path` never needs the server
        memory_scope, user_scope = curated_scopes(principal)
        rows = [
            ("server", cfg.sessions.location(home)),
            ("MEMORY.md", f"table curated_docs, scope {memory_scope!r}"),
            ("USER.md", f"table curated_docs, scope {user_scope!r}"),
            ("archive", "table curated_archive"),
            ("held writes", f"table curated_pending, scope {memory_scope!r}"),
        ]
    else:
        store = curated_store(cfg, home, principal, policy="frozen")
        rows = [("memories", store.directory)]
        if store.path("user").parent != store.directory:  # a workspace's MEMORY.md beside a user's USER.md
            rows.append(("memories (user)", store.path("user").parent))
        rows += [(FILE_NAMES[t], store.path(t)) for t in _TARGETS]
        rows.append(("ARCHIVE.jsonl", store.archive_path))
    width = max(len(label) for label, _ in rows)
    console.out("\n".join(f"{label:<{width}}  {path}" for label, path in rows), highlight=False)
    return 0


async def _held(memory: _Memory) -> list[PendingWrite]:
    return await anyio.to_thread.run_sync(memory.held.list)  # blocking: a file or a query


def _pending(args: argparse.Namespace) -> int:
    held = _with_memory(args, _held)
    if not held:
        console.out("No memory write is waiting for confirmation.", highlight=False)
        return 0
    lines = [
        f"{len(held)} memory write(s) held because they repeat text you did not type "
        "(`keel memory confirm N` saves one, `keel memory discard N` drops it):"
    ]
    for n, p in enumerate(held, start=1):
        lines.append(f"  {n}. {FILE_NAMES[p.target]}, from {ORIGIN_LABELS[p.origin]}, held {p.held_at}:")
        lines.append(f"     {preview(p.content, 200)}")
    console.out("\n".join(lines), highlight=False)
    return 0


def _confirm(args: argparse.Namespace) -> int:
    async def confirm(memory: _Memory) -> tuple[PendingWrite, WriteResult]:
        held = await _held(memory)
        if not 1 <= args.number <= len(held):
            raise KeelError(
                f"there is no held write number {args.number}; `keel memory pending` lists {len(held)}"
            )
        chosen = held[args.number - 1]
        try:
            # Saved first, then taken off the list: a write the store refuses stays held.
            result = await memory.store.add(chosen.target, chosen.content)
            await anyio.to_thread.run_sync(memory.held.take, args.number)  # blocking: a file or a query
        except MemoryLayerError as exc:
            raise _user_error(exc, chosen.target) from exc
        return chosen, result

    chosen, result = _with_memory(args, confirm, writes=True)
    console.out(f"Saved: {preview(chosen.content)}\n{_summary(result)}", highlight=False)
    return 0


def _discard(args: argparse.Namespace) -> int:
    async def discard(memory: _Memory) -> PendingWrite:
        return await anyio.to_thread.run_sync(memory.held.take, args.number)  # blocking: a file or a query

    try:
        dropped = _with_memory(args, discard)
    except MemoryLayerError as exc:
        raise KeelError(str(exc)) from exc
    console.out(f"Discarded: {preview(dropped.content)}", highlight=False)
    return 0


def register(sub: Subparsers) -> None:
    verbs = verb_parsers(sub, "memory")
    target_help = "memory (the agent's notes, MEMORY.md) or user (the user profile, USER.md)"

    list_p = verbs.add_parser("list", help="numbered entries with usage, per target")
    list_p.add_argument("target", nargs="?", choices=_TARGETS, metavar="TARGET", help=target_help)
    list_p.add_argument(
        "--why",
        action="store_true",
        help="under each entry, where it came from: the session, the flush, review or memory tool call, "
        "and the message it rests on",
    )
    list_p.set_defaults(handler=_list)

    show_p = verbs.add_parser("show", help="the rendered block(s) exactly as the system prompt shows them")
    show_p.add_argument("target", nargs="?", choices=_TARGETS, metavar="TARGET", help=target_help)
    show_p.set_defaults(handler=_show)

    add_p = verbs.add_parser("add", help="add an entry")
    add_p.add_argument("target", choices=_TARGETS, metavar="TARGET", help=target_help)
    add_p.add_argument("text", metavar="TEXT", help="the entry, a short declarative fact")
    add_p.set_defaults(handler=_add)

    remove_p = verbs.add_parser("remove", help="remove the entry containing OLD_TEXT")
    remove_p.add_argument("target", choices=_TARGETS, metavar="TARGET", help=target_help)
    remove_p.add_argument("old_text", metavar="OLD_TEXT", help="a part of the entry no other entry contains")
    remove_p.set_defaults(handler=_remove)

    path_p = verbs.add_parser("path", help="where the memory files live")
    path_p.set_defaults(handler=_path)

    pending_p = verbs.add_parser(
        "pending", help="memory writes held for your confirmation (untrusted sources)"
    )
    pending_p.set_defaults(handler=_pending)

    confirm_p = verbs.add_parser("confirm", help="save held write N (scanned like any other write)")
    confirm_p.add_argument("number", type=int, metavar="N", help="its number in `keel memory pending`")
    confirm_p.set_defaults(handler=_confirm)

    discard_p = verbs.add_parser("discard", help="drop held write N")
    discard_p.add_argument("number", type=int, metavar="N", help="its number in `keel memory pending`")
    discard_p.set_defaults(handler=_discard)
