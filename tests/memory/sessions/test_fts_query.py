"""The FTS5 query sanitizer: legal for SQLite whatever comes in, faithful to what was meant."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory.sessions._fts_query import any_terms_query, extract_terms, sanitize_fts_query
from memory.sessions.sqlite._schema import WORD_TOKENIZER

ROWS = [
    "the chat-send script broke",
    "version P2.2 of my-app.config.ts",
    "my_var is undefined",
    "我喜欢中文搜索引擎",
    "paint the sunrise NEAR the lake",
    "don't panic",
]


@pytest.fixture(scope="module")
def fts() -> Iterator[sqlite3.Connection]:
    """In-memory FTS5 tables built like the store's: the word index and the trigram index."""
    conn = sqlite3.connect(":memory:")
    conn.execute(f"CREATE VIRTUAL TABLE words USING fts5(content, tokenize='{WORD_TOKENIZER}')")
    conn.execute("CREATE VIRTUAL TABLE grams USING fts5(content, tokenize='trigram')")
    for row in ROWS:
        conn.execute("INSERT INTO words VALUES (?)", (row,))
        conn.execute("INSERT INTO grams VALUES (?)", (row,))
    yield conn
    conn.close()


def matches(conn: sqlite3.Connection, query: str | None, table: str = "words") -> list[str]:
    assert query is not None
    rows = conn.execute(f"SELECT content FROM {table} WHERE {table} MATCH ? ORDER BY rowid", (query,))
    return [str(r[0]) for r in rows]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("chat-send", '"chat-send"'),
        ("P2.2 release", '"P2.2" release'),
        ("my-app.config.ts", '"my-app.config.ts"'),
        ("my_var", '"my_var"'),
        ('"exact phrase" here', '"exact phrase" here'),
        ('an "unbalanced quote', "an unbalanced quote"),
        ("deploy*", "deploy*"),
        ("*deploy", "deploy"),
        ("**", None),
        ("a**", "a*"),
        ("AND deploy OR", "deploy"),
        ("deploy OR NOT script", "deploy NOT script"),
        ("NOT", None),
        ("deploy and script", "deploy and script"),  # lower-case "and" is a word, not an operator
        ("(a OR b) AND c:d ^e +f {g}", "a OR b AND c d e f g"),
        ("NEAR(a b)", '"NEAR" a b'),
        ("AND* OR*", '"AND"* "OR"*'),
        ("don't", "don t"),
        ("", None),
        ("   ", None),
        ("?!?...", None),
        ("中文搜索", "中文搜索"),
    ],
)
def test_sanitize_fts_query_cases(raw: str, expected: str | None) -> None:
    assert sanitize_fts_query(raw) == expected


def test_sanitized_queries_find_what_their_author_meant(fts: sqlite3.Connection) -> None:
    assert matches(fts, sanitize_fts_query("chat-send")) == [ROWS[0]]
    assert matches(fts, sanitize_fts_query("P2.2")) == [ROWS[1]]
    assert matches(fts, sanitize_fts_query("my-app.config.ts")) == [ROWS[1]]
    assert matches(fts, sanitize_fts_query("my_var")) == [ROWS[2]]
    assert matches(fts, sanitize_fts_query('"the sunrise"')) == [ROWS[4]]
    assert matches(fts, sanitize_fts_query("NEAR lake")) == [ROWS[4]]
    assert matches(fts, sanitize_fts_query("painting")) == [ROWS[4]]  # porter stemming
    assert matches(fts, sanitize_fts_query("scr*")) == [ROWS[0]]
    assert matches(fts, sanitize_fts_query("script OR panic")) == [ROWS[0], ROWS[5]]
    assert matches(fts, sanitize_fts_query("the NOT lake")) == [ROWS[0]]
    assert matches(fts, sanitize_fts_query("搜索引擎"), table="grams") == [ROWS[3]]


def test_extract_terms_keeps_meaningful_words_once() -> None:
    assert extract_terms("When did Caroline go to the LGBTQ support group?") == [
        "caroline",
        "go",
        "lgbtq",
        "support",
        "group",
    ]
    assert extract_terms('what about "the deploy script" and my-app.config.ts, deploy') == [
        "the deploy script",
        "my-app.config.ts",
        "deploy",
    ]
    assert extract_terms("the a of 7 x 中") == ["7", "中"]
    assert any_terms_query(["a b", 'q"x']) == '"a b" OR "q""x"'
    assert any_terms_query([]) is None


def test_the_query_is_cut_at_2048_characters() -> None:
    query = sanitize_fts_query("a" * 5000)
    assert query is not None
    assert len(query) == 2048
    assert sanitize_fts_query("x " * 1023 + "tail") == " ".join(["x"] * 1023) + " ta"


def _assert_legal(conn: sqlite3.Connection, raw: str) -> None:
    for query in (sanitize_fts_query(raw), any_terms_query(extract_terms(raw))):
        if query is None:
            continue
        conn.execute("SELECT count(*) FROM words WHERE words MATCH ?", (query,)).fetchone()
        conn.execute("SELECT count(*) FROM grams WHERE grams MATCH ?", (query,)).fetchone()


def test_ten_kilobytes_of_junk_never_make_fts5_raise(fts: sqlite3.Connection) -> None:
    rng = random.Random(1234)
    alphabet = "\"*():^+{}[]-_.,;!?~@#$%&|\\/<>=`'ANDORNOTNEAR abc 中文\x00\t\n\ud800\U0001f600é"
    for _ in range(20):
        junk = "".join(rng.choice(alphabet) for _ in range(10_000))
        _assert_legal(fts, junk)
    _assert_legal(fts, bytes(rng.randrange(256) for _ in range(10_000)).decode("latin-1"))


# Fragments that FTS5 gives meaning to, mixed with arbitrary Unicode (surrogates included).
FTS_HEAVY = st.lists(
    st.one_of(
        st.sampled_from([*list("\"*():^+{}-_.,'"), "AND", "OR", "NOT", "NEAR", " ", "  ", "a.b", "x-y"]),
        st.text(max_size=6),
    ),
    max_size=40,
).map("".join)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=FTS_HEAVY)
def test_no_sanitized_query_makes_fts5_raise(fts: sqlite3.Connection, raw: str) -> None:
    _assert_legal(fts, raw)
