"""`keel sessions list|show|search|reindex|path`: look through the episodic history (`<home>/state.db`,
or the PostgreSQL server `sessions.url` names). `keel storage` is `storage.py`.

Each verb sees only the principal's sessions (`--user`, else `scope.user`; plus
`scope.shared_users`): another user's session id is answered like a missing one.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, TypeVar

import anyio
from rich.table import Table
from rich.text import Text

from harness.cli._common import (
    Subparsers,
    config_from_args,
    console,
    home_from_args,
    principal_from_args,
    verb_parsers,
)
from harness.config import KeelConfig
from harness.errors import CommandError
from harness.wiring.dense import dense_choice, dense_index
from harness.wiring.scoped import session_user_ids
from harness.wiring.stores import open_sessions
from memory import (
    STATE_DB_NAME,
    MessageRecord,
    SessionRecord,
    SessionSearchTool,
    SessionStore,
    SessionStoreError,
)
from memory.sessions import route_query

if TYPE_CHECKING:  # the index loads numpy: only a search with hybrid on builds one
    from memory.sessions import DenseIndex

__all__ = ["register"]

T = TypeVar("T")

_NO_SESSIONS = "No sessions yet: {path} does not exist. Sessions are recorded as you chat with keel."


def _user_ids(args: argparse.Namespace) -> tuple[str, ...]:
    cfg, principal = principal_from_args(args)
    return session_user_ids(cfg, principal)


def _where(args: argparse.Namespace) -> str:
    config, home = home_from_args(args)
    return config.sessions.location(home)


def _when(timestamp: float | None) -> str:
    if timestamp is None:
        return ""
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d %H:%M")


def _with_db(args: argparse.Namespace, work: Callable[[SessionStore], Awaitable[T]]) -> T | None:
    """Run `work` on the store; None (after saying so) when there is no store yet."""
    config, home = home_from_args(args)
    path = home / STATE_DB_NAME
    if config.sessions.backend == "sqlite" and not path.exists():
        console.print(_NO_SESSIONS.format(path=path), markup=False)
        return None

    async def main() -> T:
        async with open_sessions(config, home) as db:
            return await work(db)

    try:
        return anyio.run(main)
    except SessionStoreError as exc:
        raise CommandError(f"cannot read the session store: {exc}") from exc


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    return value


def _search_limit(text: str) -> int:
    value = _positive(text)
    if value > 10:
        raise argparse.ArgumentTypeError(f"{text!r} is more than 10; session_search returns 1 to 10 sessions")
    return value


# ------------------------------------------------------------------ list


def _list(args: argparse.Namespace) -> int:
    users = _user_ids(args)
    sessions = _with_db(args, lambda db: db.list_sessions(args.limit, user_ids=users))
    if sessions is None:
        return 0
    if not sessions:
        console.print("No sessions yet.")
        return 0
    table = Table(title=f"sessions in {_where(args)}", title_justify="left")
    for column in ("id", "started", "source", "model", "messages", "end reason", "parent"):
        table.add_column(column, justify="right" if column == "messages" else "left", overflow="fold")
    for s in sessions:
        table.add_row(
            s.id,
            _when(s.started_at),
            s.source,
            s.model or "",
            str(s.message_count),
            s.end_reason or ("(open)" if s.ended_at is None else ""),
            s.parent_session_id or "",
        )
    console.print(table)
    return 0


# ------------------------------------------------------------------ show


def _message_text(record: MessageRecord, *, marker: str = " ") -> Text:
    m = record.message
    label = f"{m.role}:{m.tool_name}" if m.tool_name else m.role
    header = Text(
        f"{marker} #{record.id} {label} {_when(m.timestamp)}", style="bold" if marker != " " else "dim"
    )
    body = m.content if m.content else (m.tool_calls or "")
    return Text.assemble(header, "\n", Text(body), "\n")


def _show(args: argparse.Namespace) -> int:
    users = _user_ids(args)

    async def work(db: SessionStore) -> tuple[SessionRecord, list[MessageRecord]]:
        session = await db.get_session(args.session_id)
        if session is None or session.user_id not in users:
            raise CommandError(f"no session {args.session_id!r}; run `keel sessions list` to see the ids")
        return session, await db.get_messages(args.session_id)

    found = _with_db(args, work)
    if found is None:
        return 0
    session, messages = found
    console.print(
        f"session {session.id} — started {_when(session.started_at)}, source {session.source}, "
        f"model {session.model or '-'}, {session.message_count} messages"
        + (f", ended ({session.end_reason})" if session.end_reason else "")
        + (f", continues {session.parent_session_id}" if session.parent_session_id else ""),
        markup=False,
    )
    for record in messages:
        console.print(_message_text(record))
    return 0


# ------------------------------------------------------------------ search


def _search(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    limit = args.limit or config.session_search.default_limit
    users = _user_ids(args)
    query = " ".join(args.query).strip()
    if not query:
        raise CommandError("the search query is empty; give some words to look for")

    async def work(db: SessionStore) -> int:
        dense = dense_index(config, db)
        try:
            if args.explain:
                await _explain(config, dense, query)
            tool = SessionSearchTool(db, current_session_id=lambda: None, user_ids=users, dense=dense)
            results = await tool.discover(query, limit=limit)
        finally:
            if dense is not None:
                await dense.aclose()
        if not results:
            console.print(f"No matching sessions found for {query!r}.", markup=False)
            return 0
        for rank, result in enumerate(results, 1):
            p = result.payload
            found_by = ""
            if args.explain:
                r = result.ranked
                found_by = f"  [words #{r.lexical_rank or '-'}, meaning #{r.dense_rank or '-'}]"
            console.print(
                Text(
                    f"{rank}. session {p.get('session_id')} — {p.get('when')}, {p.get('source')}"
                    + (f", {p.get('model')}" if p.get("model") else "")
                    + found_by,
                    style="bold",
                ),
                soft_wrap=True,
            )
            console.print(Text(f"   {p.get('snippet')}", style="italic"))
            view = result.view
            for record in (*view.before, view.anchor, *view.after):
                marker = ">" if record.id == view.anchor.id else " "
                console.print(_message_text(record, marker=marker))
        return 0

    done = _with_db(args, work)
    return 0 if done is None else done


async def _explain(config: KeelConfig, dense: DenseIndex | None, query: str) -> None:
    """Say whether meaning is searched, how far the index has got, and the query's route."""
    choice = dense_choice(config)
    if dense is None:
        console.print(f"hybrid search: off — {choice.reason}", markup=False, soft_wrap=True)
        return
    status = await dense.status()
    console.print(f"hybrid search: on — {choice.reason}", markup=False, soft_wrap=True)
    console.print(
        f"dense index: {status.model}, {status.kind}; {status.embedded:,} of {status.total:,} messages embedded"
        + ("" if status.embedded >= status.total else " (run `keel sessions reindex` for the rest)"),
        markup=False,
        soft_wrap=True,
    )
    routing = route_query(query)
    console.print(f"route: {routing.route} — {routing.reason}", markup=False, soft_wrap=True)


# ------------------------------------------------------------------ reindex


def _reindex(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    choice = dense_choice(config)
    if not choice.on:
        raise CommandError(f"nothing to index: {choice.reason}")

    async def work(db: SessionStore) -> int:
        dense = dense_index(config, db)
        if dense is None:
            raise CommandError("this session store has no dense index")
        started = time.monotonic()

        def progress(done: int, total: int) -> None:
            rate = done / max(time.monotonic() - started, 1e-6)
            console.print(f"embedded {done:,} of {total:,} messages ({rate:,.0f}/s)", markup=False)

        try:
            count = await dense.catch_up(progress=progress)
            status = await dense.status()
        finally:
            await dense.aclose()
        console.print(
            f"done: {count:,} messages embedded now; {status.embedded:,} of {status.total:,} have a vector",
            markup=False,
        )
        return 0

    done = _with_db(args, work)
    return 0 if done is None else done


# ------------------------------------------------------------------ path


def _path(args: argparse.Namespace) -> int:
    console.print(_where(args), markup=False, soft_wrap=True)
    return 0


def register(sub: Subparsers) -> None:
    verbs = verb_parsers(sub, "sessions")

    ls = verbs.add_parser("list", help="recent sessions, newest first")
    ls.add_argument("--limit", type=_positive, default=50, help="how many (default 50)")
    ls.set_defaults(handler=_list)

    show = verbs.add_parser("show", help="every message of one session")
    show.add_argument("session_id", help="a session id from `keel sessions list`")
    show.set_defaults(handler=_show)

    search = verbs.add_parser("search", help="full-text search, as the session_search tool sees it")
    search.add_argument("query", nargs="+", help="words to look for")
    search.add_argument(
        "--limit", type=_search_limit, default=None, help="sessions to return, 1–10 (default from config)"
    )
    search.add_argument(
        "--explain",
        action="store_true",
        help="say whether meaning is searched, and how each result was found",
    )
    search.set_defaults(handler=_search)

    reindex = verbs.add_parser(
        "reindex", help="embed every message that has no vector yet (hybrid search; resumable)"
    )
    reindex.set_defaults(handler=_reindex)

    path = verbs.add_parser("path", help="print where the session store lives")
    path.set_defaults(handler=_path)
