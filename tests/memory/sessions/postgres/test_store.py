"""PostgreSQL-only behaviour: opening, migrations in a named schema, and clear errors.

The shared behaviour of both backends is in `../test_contract.py`.
"""

from __future__ import annotations

import re
import socket
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import anyio
import psycopg
import pytest

from memory import (
    PgSessionStore,
    SessionSchemaError,
    SessionStoreUnavailableError,
    StoredMessage,
    open_session_store,
    session_store_location,
)
from memory.sessions.postgres import redact_url
from memory.sessions.postgres._schema import PG_MIGRATIONS
from memory.sessions.postgres._stats import TermStatsCache, doc_counts

T0 = 1_700_000_000.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def with_database(url: str, database: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, f"/{database}", parts.query, parts.fragment))


def schema_versions(url: str, schema: str) -> list[int]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(f'SELECT version FROM "{schema}".schema_migrations ORDER BY version').fetchall()
    return [int(r[0]) for r in rows]


def entries(directory: Path) -> list[Path]:
    return list(directory.iterdir())


def schemas(url: str) -> set[str]:
    with psycopg.connect(url) as conn:
        return {str(r[0]) for r in conn.execute("SELECT nspname FROM pg_namespace").fetchall()}


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://keel:s3cret@db.example:5432/keel", "postgresql://keel:***@db.example:5432/keel"),
        (
            "postgresql://keel@db/keel?password=s3cret&sslmode=require",
            "postgresql://keel@db/keel?password=***&sslmode=require",
        ),
        ("postgres://u:p%40ss@h/d", "postgres://u:***@h/d"),
        ("host=db password='a b' user=k", "host=db password=*** user=k"),
        ("postgresql://keel@db/keel", "postgresql://keel@db/keel"),
    ],
)
def test_passwords_never_appear_in_what_the_store_shows(url: str, shown: str) -> None:
    assert redact_url(url) == shown


async def test_a_server_that_does_not_answer_is_a_clear_error_and_nothing_is_written(tmp_path: Path) -> None:
    url = f"postgresql://postgres:hunter2@127.0.0.1:{free_port()}/test"
    with pytest.raises(SessionStoreUnavailableError) as caught:
        async with open_session_store("postgres", home=tmp_path, url=url, connect_timeout_s=2):
            pass
    message = str(caught.value)
    assert f"postgresql://postgres:***@127.0.0.1:{urlsplit(url).port}/test" in message
    assert "hunter2" not in message
    assert "sessions.url" in message and "sessions.backend: sqlite" in message
    assert entries(tmp_path) == []  # no fallback: no state.db appeared


async def test_a_url_that_is_not_postgresql_is_refused_before_connecting(tmp_path: Path) -> None:
    with pytest.raises(SessionStoreUnavailableError, match=r"must start with postgresql://"):
        await PgSessionStore.open("mysql://root:pw@localhost/x")
    with pytest.raises(SessionStoreUnavailableError, match=r"cannot be parsed") as caught:
        await PgSessionStore.open("postgresql://u:pw@h/d?no_such_option=1")
    assert "pw@" not in str(caught.value)
    with pytest.raises(ValueError, match="schema name"):
        await PgSessionStore.open("postgresql://u@h/d", schema="Robert'); DROP")
    with pytest.raises(ValueError, match="needs a URL"):
        async with open_session_store("postgres", home=tmp_path):
            pass
    assert entries(tmp_path) == []


async def test_a_missing_database_is_named_with_the_fix(postgres_url: str) -> None:
    url = with_database(postgres_url, "keel_no_such_database_here")
    with pytest.raises(SessionStoreUnavailableError, match=r"keel_no_such_database_here.*createdb"):
        await PgSessionStore.open(url, connect_timeout_s=5)


FIXTURE_SCHEMA = re.compile(r"(keel_test|sessions)_[0-9a-f]{16}")


async def test_opening_creates_and_migrates_only_the_named_schema(postgres_url: str, pg_schema: str) -> None:
    before = schemas(postgres_url)
    async with await PgSessionStore.open(postgres_url, schema=pg_schema) as store:
        assert store.location == session_store_location("postgres", url=postgres_url, pg_schema=pg_schema)
        assert pg_schema in store.location
        assert store.features.fts and store.features.trigram  # this server has pg_trgm
        await store.create_session("s", source="cli", started_at=T0)
    created = schemas(postgres_url) - before
    assert pg_schema in created
    # Other test runs on this server make their own fixture schemas meanwhile; anything
    # else new would be this open's doing.
    assert {s for s in created - {pg_schema} if not FIXTURE_SCHEMA.fullmatch(s)} == set()
    assert schema_versions(postgres_url, pg_schema) == [m.version for m in PG_MIGRATIONS]
    # Reopening applies nothing and keeps the rows.
    async with await PgSessionStore.open(postgres_url, schema=pg_schema) as store:
        assert await store.get_session("s") is not None
    assert schema_versions(postgres_url, pg_schema) == [m.version for m in PG_MIGRATIONS]


async def test_two_processes_opening_a_fresh_schema_at_once_both_succeed(
    postgres_url: str, pg_schema: str
) -> None:
    opened: list[PgSessionStore] = []

    async def one() -> None:
        opened.append(await PgSessionStore.open(postgres_url, schema=pg_schema, pool_size=1))

    async with anyio.create_task_group() as tg:
        for _ in range(3):
            tg.start_soon(one)
    for store in opened:
        await store.aclose()
    assert schema_versions(postgres_url, pg_schema) == [m.version for m in PG_MIGRATIONS]


async def test_a_schema_from_a_newer_keel_is_refused_untouched(postgres_url: str, pg_schema: str) -> None:
    async with await PgSessionStore.open(postgres_url, schema=pg_schema):
        pass
    with psycopg.connect(postgres_url) as conn:
        conn.execute(f"INSERT INTO \"{pg_schema}\".schema_migrations VALUES (99, 'from the future', 0)")
    with pytest.raises(SessionSchemaError, match=r"version 99.*upgrade keel"):
        await PgSessionStore.open(postgres_url, schema=pg_schema)
    assert schema_versions(postgres_url, pg_schema) == [*(m.version for m in PG_MIGRATIONS), 99]


async def test_without_the_trigram_index_substring_search_still_answers(
    postgres_url: str, pg_schema: str
) -> None:
    async with await PgSessionStore.open(postgres_url, schema=pg_schema, trigram=False) as store:
        assert store.features.trigram is False
        await store.create_session("s", source="cli", started_at=T0)
        await store.append_message("s", StoredMessage(role="user", content="灯台守の日誌", timestamp=T0))
        result = await store.search("灯台守")
        assert result.route == "like" and len(result.hits) == 1
        forced = await store.search("灯台守", route="trigram")
        assert forced.route == "like" and len(forced.hits) == 1


async def test_a_large_batch_goes_in_by_copy_with_ids_in_order(postgres_url: str, pg_schema: str) -> None:
    async with await PgSessionStore.open(postgres_url, schema=pg_schema) as store:
        await store.create_session("s", source="cli", started_at=T0)
        first = await store.append_message("s", StoredMessage(role="user", content="first", timestamp=T0))
        assert first is not None
        batch = [
            StoredMessage(
                role="assistant",
                content=f"line {i} with \t tab, \\ backslash and \n newline",
                timestamp=T0 + i,
            )
            for i in range(500)
        ]
        ids = await store.append_messages("s", batch)
        assert ids == list(range(first + 1, first + 501))
        records = await store.get_messages("s")
        assert [r.message for r in records[1:]] == batch
        assert len((await store.search("backslash", limit=1000)).hits) == 500


async def test_a_closed_store_says_so(postgres_url: str, pg_schema: str) -> None:
    store = await PgSessionStore.open(postgres_url, schema=pg_schema)
    await store.aclose()
    await store.aclose()  # twice is fine
    with pytest.raises(Exception, match="is closed; open it again"):
        await store.get_session("s")


async def test_a_huge_message_of_distinct_words_is_stored_whole_and_its_start_is_searchable(
    postgres_url: str, pg_schema: str
) -> None:
    # A tsvector holds at most 1 MB; the word index covers the first TSV_MAX_CHARS
    # characters, so no message is ever refused for its size.
    words = [f"w{i:x}q{i * 7919 % 100003:x}" for i in range(120_000)]
    text = "灯台 " + " ".join(words)
    async with await PgSessionStore.open(postgres_url, schema=pg_schema) as store:
        await store.create_session("s", source="cli", started_at=T0)
        mid = await store.append_message("s", StoredMessage(role="user", content=text, timestamp=T0))
        assert mid is not None
        record = await store.get_message(mid)
        assert record is not None and record.message.content == text
        assert [h.message_id for h in (await store.search(words[10])).hits] == [mid]


async def test_term_weights_use_the_planner_statistics_once_the_table_is_analyzed(
    postgres_url: str, pg_schema: str
) -> None:
    async with await PgSessionStore.open(postgres_url, schema=pg_schema) as store:
        await store.create_session("s", source="cli", started_at=T0)
        batch = [
            StoredMessage(
                role="user",
                content="apple " + ("pear " if i % 3 == 0 else "") + ("quince" if i == 7 else f"filler{i}"),
                timestamp=T0 + i,
            )
            for i in range(600)
        ]
        await store.append_messages("s", batch)
        before = await store.search("apple pear quince", match="any")
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute(f'ANALYZE "{pg_schema}".messages')
        cache = TermStatsCache()
        async with await psycopg.AsyncConnection.connect(
            postgres_url, options=f"-c search_path={pg_schema}"
        ) as conn:
            stats = await cache.get(conn)
            counts = await doc_counts(conn, ["apple", "pear", "quince", "the"], cache)
        assert stats is not None and stats.freqs["appl"] == pytest.approx(1.0)  # common: estimated
        assert counts[0] == pytest.approx(600, rel=0.05)
        assert counts[1] == pytest.approx(200, rel=0.1)
        assert counts[2:] == [1, 0]
    # Before ANALYZE every term was counted exactly; the weights agree either way.
    assert before.weights["quince"] > before.weights["pear"] > before.weights["apple"]
