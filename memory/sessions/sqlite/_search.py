"""Message-level full-text search over `state.db`: the word index, the trigram index, LIKE.

Synchronous; `SessionDB.search` runs `search_messages` in a worker thread. Routing:

- no FTS5 → a LIKE scan over the canonical rows;
- CJK in the query → the trigram index when every term has at least 3 characters
  (shorter ones cannot match a trigram), else LIKE;
- otherwise → the porter/unicode61 word index, ranked by BM25.

`match="all"` keeps what the author wrote (implicit AND, their OR/NOT, phrases);
`match="any"` is an OR of the meaningful terms, for recall, with BM25 deciding.

Every hit also says which of the query's terms it holds, and the result carries an IDF
weight per term, so callers can prefer passages that cover more of the query.

BM25 costs time per matching row, so each query scores at most `RANK_BUDGET` rows; see
`_any_plan` and `_rank_floor` for how the rows are chosen when more match. What does not
depend on SQLite (routes, IDF weights, the rare-term plan) is in `memory.sessions._ranking`.
"""

from __future__ import annotations

import re
import sqlite3
import unicodedata
from collections.abc import Sequence
from typing import cast

from memory.sessions import _ranking
from memory.sessions._fts_query import any_terms_query, extract_terms, quote_term, sanitize_fts_query
from memory.sessions._records import IndexFeatures, SearchResult, StoredRole
from memory.sessions.reads import SearchMessages
from memory.sessions.sqlite._schema import WORD_TOKENIZER
from memory.sessions.sqlite._sql import user_clause

__all__ = ["prepare_connection", "search_messages", "term_doc_counts"]

_HIT_COLUMNS = (
    f"m.id, m.session_id, m.seq, m.role, m.timestamp, substr(m.content, 1, {_ranking.TOOL_PREFIX_CHARS})"
)

# Per-connection helpers in the temp schema: a scratch table with the word index's
# tokenizer (to see text as the index sees it, stemmed), its vocabulary by instance, and
# the word index's vocabulary by row (document counts).
_HELPERS = (
    f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.keel_tok USING fts5(x, tokenize='{WORD_TOKENIZER}')",
    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.keel_tok_v USING fts5vocab(temp, keel_tok, 'instance')",
    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.keel_fts_v USING fts5vocab(main, messages_fts, 'row')",
)


def prepare_connection(conn: sqlite3.Connection) -> None:
    """Create the temp-schema helpers; call once per connection, outside a transaction."""
    for sql in _HELPERS:
        conn.execute(sql)


def search_messages(
    conn: sqlite3.Connection, search: SearchMessages, *, features: IndexFeatures
) -> SearchResult:
    """The best `search.limit` messages for its query, best first. No hits when nothing is searchable.

    Its `user_ids` keeps only messages of those users' sessions (None: no filter). Term
    weights and the rare-term plan use counts over the whole index, not just the scope.
    """
    query, match = search.query, search.match
    chosen = search.route or _ranking.choose_route(query, features)
    if (chosen == "fts" and not features.fts) or (chosen == "trigram" and not features.trigram):
        chosen = "like"
    terms = extract_terms(query)
    if chosen == "like":
        rows = _like(conn, terms, search)
        return _ranking.substring_result("like", terms, rows)
    if chosen == "trigram":
        terms = [t for t in terms if len(t) >= 3]
        fts_query = (" " if match == "all" else " OR ").join(quote_term(t) for t in terms) or None
        rows = [] if fts_query is None else _fts(conn, "messages_trigram", fts_query, search)
        return _ranking.substring_result("trigram", terms, rows)
    tokens = _term_tokens(conn, terms)
    counts = _doc_counts(conn, tokens)
    fts_query = sanitize_fts_query(query) if match == "all" else _any_plan(terms, counts)
    rows = [] if fts_query is None else _fts(conn, "messages_fts", fts_query, search)
    held = _held_tokens(conn, rows, set().union(*tokens) if tokens else set())
    hits = tuple(
        _ranking.hit_from_row(r, route="fts", terms=_covered(terms, tokens, held[_row_id(r)])) for r in rows
    )
    (total,) = conn.execute("SELECT COALESCE(max(id), 0) FROM messages").fetchone()
    return SearchResult(
        route="fts", terms=tuple(terms), weights=_ranking.idf_weights(terms, counts, int(total)), hits=hits
    )


def _row_id(row: tuple[object, ...]) -> int:
    return int(cast(int, row[0]))


def _covered(terms: Sequence[str], tokens: Sequence[frozenset[str]], held: set[str]) -> set[str]:
    """The terms all of whose tokens a message holds (a phrase: each of its words)."""
    return {t for t, toks in zip(terms, tokens, strict=True) if toks and toks <= held}


def _tokenize(
    conn: sqlite3.Connection, texts: Sequence[tuple[int, str]], only: set[str] | None
) -> dict[int, set[str]]:
    """The index tokens (stemmed) of each text, keyed by the given id; only `only` if set."""
    conn.execute("DELETE FROM temp.keel_tok")
    conn.executemany("INSERT INTO temp.keel_tok(rowid, x) VALUES (?, ?)", texts)
    if only is None:
        rows = conn.execute("SELECT doc, term FROM temp.keel_tok_v").fetchall()
    else:
        marks = ",".join("?" * len(only))
        rows = conn.execute(
            f"SELECT doc, term FROM temp.keel_tok_v WHERE term IN ({marks})", sorted(only)
        ).fetchall()
    conn.execute("DELETE FROM temp.keel_tok")
    out: dict[int, set[str]] = {doc: set() for doc, _ in texts}
    for doc, token in rows:
        out[int(doc)].add(str(token))
    return out


def _term_tokens(conn: sqlite3.Connection, terms: Sequence[str]) -> list[frozenset[str]]:
    if not terms:
        return []
    by_doc = _tokenize(conn, list(enumerate(terms, 1)), None)
    return [frozenset(by_doc[i]) for i in range(1, len(terms) + 1)]


def _doc_counts(conn: sqlite3.Connection, tokens: Sequence[frozenset[str]]) -> list[int]:
    distinct = sorted(set().union(*tokens)) if tokens else []
    counts: dict[str, int] = {}
    if distinct:
        marks = ",".join("?" * len(distinct))
        rows = conn.execute(f"SELECT term, doc FROM temp.keel_fts_v WHERE term IN ({marks})", distinct)
        counts = {str(t): int(d) for t, d in rows.fetchall()}
    # A phrase can match no more messages than its rarest token.
    return [min((counts.get(tok, 0) for tok in toks), default=0) for toks in tokens]


def term_doc_counts(conn: sqlite3.Connection, terms: Sequence[str]) -> list[int]:
    """How many messages each term can match in the word index (a phrase: its rarest token)."""
    return _doc_counts(conn, _term_tokens(conn, terms))


def _held_tokens(
    conn: sqlite3.Connection, rows: list[tuple[object, ...]], wanted: set[str]
) -> dict[int, set[str]]:
    """Which of the `wanted` index tokens each row's text holds.

    Tokenizing every hit through FTS5 costs more than the search itself, so only the
    words that could stem to a wanted token are picked out here — Porter stemming
    rewrites suffixes, never the first three letters — and just those distinct words go
    through the index's tokenizer.
    """
    held: dict[int, set[str]] = {_row_id(r): set() for r in rows}
    if not rows or not wanted:
        return held
    prefixes = "|".join(sorted({re.escape(w[:3]) for w in wanted}))
    pattern = re.compile(rf"(?<![^\W_])(?:{prefixes})[^\W_]*", re.IGNORECASE)
    words = {_row_id(r): {w.lower() for w in pattern.findall(_strip_marks(str(r[5])))} for r in rows}
    candidates = sorted(set().union(*words.values()))
    if not candidates:
        return held
    stems = _tokenize(conn, list(enumerate(candidates, 1)), wanted)
    stem_of = {word: stems[i] for i, word in enumerate(candidates, 1) if stems[i]}
    for row_id, row_words in words.items():
        for word in row_words:
            held[row_id] |= stem_of.get(word, set())
    return held


def _strip_marks(text: str) -> str:
    """`text` without combining marks: the word index removes diacritics, so `résumé` is
    held as `resume`, and the prefix filter must see it that way too."""
    if text.isascii():
        return text
    return "".join(ch for ch in unicodedata.normalize("NFKD", text) if not unicodedata.combining(ch))


def _any_plan(terms: Sequence[str], counts: Sequence[int]) -> str | None:
    """An FTS5 OR of `rare_terms`."""
    return any_terms_query(_ranking.rare_terms(terms, counts))


def _role_filter(roles: Sequence[StoredRole] | None) -> tuple[str, tuple[str, ...]]:
    if roles is None:
        return "", ()
    return f"m.role IN ({','.join('?' * len(roles))})", tuple(roles)


def _matches(
    table: str, user_ids: Sequence[str] | None, roles: Sequence[StoredRole] | None
) -> tuple[str, tuple[str, ...]]:
    """`FROM ... WHERE` selecting the rows of `table` that match `?` (bound first).

    With a user filter the scope (and the role filter) is applied here, before any
    ranking or limit, so rows of other users never take places in the budget.
    """
    if user_ids is None:
        return f"FROM {table} WHERE {table} MATCH ?", ()
    user_sql, user_args = user_clause("s.user_id", user_ids)
    role_sql, role_args = _role_filter(roles)
    return (
        f"FROM {table} JOIN messages m ON m.id = {table}.rowid JOIN sessions s ON s.id = m.session_id "
        f"WHERE {table} MATCH ? AND {user_sql}" + (f" AND {role_sql}" if role_sql else ""),
        (*user_args, *role_args),
    )


def _rank_floor(
    conn: sqlite3.Connection, table: str, fts_query: str, source: str, args: tuple[str, ...]
) -> int:
    """The lowest rowid worth scoring: all matches if few, else the newest `RANK_BUDGET`."""
    (count,) = conn.execute(
        f"SELECT count(*) FROM (SELECT 1 {source} LIMIT ?)", (fts_query, *args, _ranking.RANK_BUDGET + 1)
    ).fetchone()
    if int(count) <= _ranking.RANK_BUDGET:
        return 0
    (floor,) = conn.execute(
        f"SELECT min(rid) FROM (SELECT {table}.rowid AS rid {source} ORDER BY {table}.rowid DESC LIMIT ?)",
        (fts_query, *args, _ranking.RANK_BUDGET),
    ).fetchone()
    return int(floor)


def _fts(
    conn: sqlite3.Connection, table: str, fts_query: str, search: SearchMessages
) -> list[tuple[object, ...]]:
    roles, limit, user_ids = search.roles, search.limit, search.user_ids
    source, args = _matches(table, user_ids, roles)
    floor = _rank_floor(conn, table, fts_query, source, args)
    # Rank inside the FTS table alone (plus the scope, when there is one), then join the
    # few winners; over-fetch when a role filter applied afterwards may discard some. The
    # score is BM25 with its sign flipped: higher is better.
    role_sql, role_args = _role_filter(roles) if user_ids is None else ("", ())
    where = f"WHERE {role_sql}" if role_sql else ""
    inner = limit * 2 if role_sql else limit
    rows = conn.execute(
        f"SELECT {_HIT_COLUMNS}, -f.score FROM (SELECT {table}.rowid AS rid, {table}.rank AS score "
        f"{source} AND {table}.rowid >= ? ORDER BY {table}.rank LIMIT ?) f "
        f"JOIN messages m ON m.id = f.rid {where} ORDER BY f.score, m.id DESC LIMIT ?",
        (fts_query, *args, floor, inner, *role_args, limit),
    ).fetchall()
    return [tuple(r) for r in rows]


def _like(conn: sqlite3.Connection, terms: list[str], search: SearchMessages) -> list[tuple[object, ...]]:
    if not terms:
        return []
    # Score = how many distinct terms a message holds; ties go to the newest message.
    matched = ["(m.content LIKE ? ESCAPE '\\')" for _ in terms]
    patterns = tuple(_ranking.like_pattern(t) for t in terms)
    role_sql, role_args = _role_filter(search.roles)
    where = f"({(' AND ' if search.match == 'all' else ' OR ').join(matched)})"
    if role_sql:
        where += f" AND {role_sql}"
    user_sql, user_args = user_clause("s.user_id", search.user_ids)
    join = ""
    if user_sql:
        where += f" AND {user_sql}"
        join = "JOIN sessions s ON s.id = m.session_id "
    rows = conn.execute(
        f"SELECT {_HIT_COLUMNS}, ({' + '.join(matched)}) AS score FROM messages m {join}"
        f"WHERE {where} ORDER BY score DESC, m.id DESC LIMIT ?",
        (*patterns, *patterns, *role_args, *user_args, search.limit),
    ).fetchall()
    return [tuple(r) for r in rows]
