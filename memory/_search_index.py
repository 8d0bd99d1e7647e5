"""Message-level full-text search over `state.db`: the word index, the trigram index, LIKE.

Synchronous; `SessionDB.search` runs `search_messages` in a worker thread. Routing:

- no FTS5 → a LIKE scan over the canonical rows;
- CJK in the query → the trigram index when every term has at least 3 characters
  (shorter ones cannot match a trigram), else LIKE;
- otherwise → the porter/unicode61 word index, ranked by BM25.

`match="all"` keeps what the author wrote (implicit AND, their OR/NOT, phrases);
`match="any"` is an OR of the meaningful terms, for recall, with BM25 deciding.

BM25 costs time per matching row, so each query scores at most `RANK_BUDGET` rows; see
`_any_plan` and `_rank_floor` for how the rows are chosen when more match.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Literal, TypeAlias, cast

from memory._fts_query import any_terms_query, extract_terms, has_cjk, quote_term, sanitize_fts_query
from memory._session_records import SearchHit, SearchRoute, StoredRole
from memory._sessions_schema import WORD_TOKENIZER, IndexFeatures

__all__ = ["RANK_BUDGET", "MatchMode", "choose_route", "search_messages", "term_doc_counts"]

MatchMode: TypeAlias = Literal["all", "any"]

_HIT_COLUMNS = "m.id, m.session_id, m.seq, m.role, m.timestamp"

RANK_BUDGET = 600
"""At most this many matching rows are scored by BM25 per query (about 5 µs each).

Beyond it, OR queries draw their rows from the rarest terms (`_any_plan`) and any query
still over budget scores only its newest matches, so latency stays flat as history grows."""


def choose_route(query: str, features: IndexFeatures) -> SearchRoute:
    """The index that can answer `query` best with the indexes this database has."""
    if not features.fts:
        return "like"
    if has_cjk(query):
        terms = extract_terms(query)
        if features.trigram and terms and all(len(t) >= 3 for t in terms):
            return "trigram"
        return "like"
    return "fts"


def search_messages(
    conn: sqlite3.Connection,
    query: str,
    *,
    features: IndexFeatures,
    match: MatchMode,
    route: SearchRoute | None,
    roles: Sequence[StoredRole] | None,
    limit: int,
) -> list[SearchHit]:
    """The best `limit` messages for `query`, best first. Empty when nothing is searchable."""
    chosen = route or choose_route(query, features)
    if chosen == "fts" and not features.fts:
        chosen = "like"
    if chosen == "trigram" and not features.trigram:
        chosen = "like"
    if chosen == "like":
        return _like(conn, extract_terms(query), match=match, roles=roles, limit=limit)
    if chosen == "trigram":
        terms = [t for t in extract_terms(query) if len(t) >= 3]
        joiner = " " if match == "all" else " OR "
        fts_query = joiner.join(quote_term(t) for t in terms) or None
    elif match == "all":
        fts_query = sanitize_fts_query(query)
    else:
        fts_query = _any_plan(conn, extract_terms(query))
    if fts_query is None:
        return []
    table = "messages_trigram" if chosen == "trigram" else "messages_fts"
    return _fts(conn, table, fts_query, route=chosen, roles=roles, limit=limit)


def _prepare(conn: sqlite3.Connection) -> None:
    # Per-connection helpers in the temp schema: a scratch table with the word index's
    # tokenizer (to see a term as the index sees it, stemmed) and the index's vocabulary.
    conn.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.keel_tok USING fts5(x, tokenize='{WORD_TOKENIZER}')"
    )
    conn.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.keel_tok_v USING fts5vocab(temp, keel_tok, 'instance')"
    )
    conn.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.keel_fts_v USING fts5vocab(main, messages_fts, 'row')"
    )


def term_doc_counts(conn: sqlite3.Connection, terms: Sequence[str]) -> list[int]:
    """How many messages each term can match in the word index (a phrase: its rarest token)."""
    if not terms:
        return []
    _prepare(conn)
    conn.execute("DELETE FROM temp.keel_tok")
    conn.executemany("INSERT INTO temp.keel_tok(rowid, x) VALUES (?, ?)", list(enumerate(terms, 1)))
    tokens: dict[int, set[str]] = {}
    for doc, token in conn.execute("SELECT doc, term FROM temp.keel_tok_v").fetchall():
        tokens.setdefault(int(doc), set()).add(str(token))
    conn.execute("DELETE FROM temp.keel_tok")
    distinct = sorted(set().union(*tokens.values())) if tokens else []
    counts: dict[str, int] = {}
    if distinct:
        marks = ",".join("?" * len(distinct))
        rows = conn.execute(f"SELECT term, doc FROM temp.keel_fts_v WHERE term IN ({marks})", distinct)
        counts = {str(t): int(d) for t, d in rows.fetchall()}
    return [
        min((counts.get(tok, 0) for tok in tokens.get(i, ())), default=0) for i in range(1, len(terms) + 1)
    ]


def _any_plan(conn: sqlite3.Connection, terms: list[str]) -> str | None:
    """An OR of the terms that occur at all, restricted to rows holding the rare ones.

    BM25 must score every row a query matches, and an OR over common words matches a
    large part of a big history (tens of ms per thousand rows). Rare terms carry nearly
    all the weight, so rows are drawn from the rarest terms whose document counts add
    up to `RANK_BUDGET` (at least one term), and the full OR is kept for scoring them.
    """
    counts = term_doc_counts(conn, terms)
    live = [(t, n) for t, n in zip(terms, counts, strict=True) if n > 0]
    if not live:
        return None
    full = any_terms_query([t for t, _ in live])
    rare: list[str] = []
    total = 0
    for term, n in sorted(live, key=lambda pair: pair[1]):
        if rare and total + n > RANK_BUDGET:
            break
        rare.append(term)
        total += n
    if len(rare) == len(live):
        return full
    return f"({any_terms_query(rare)}) AND ({full})"


def _role_filter(roles: Sequence[StoredRole] | None) -> tuple[str, tuple[str, ...]]:
    if roles is None:
        return "", ()
    return f"WHERE m.role IN ({','.join('?' * len(roles))})", tuple(roles)


def _rank_floor(conn: sqlite3.Connection, table: str, fts_query: str) -> int:
    """The lowest rowid worth scoring: all matches if few, else the newest `RANK_BUDGET`."""
    (count,) = conn.execute(
        f"SELECT count(*) FROM (SELECT 1 FROM {table} WHERE {table} MATCH ? LIMIT ?)",
        (fts_query, RANK_BUDGET + 1),
    ).fetchone()
    if int(count) <= RANK_BUDGET:
        return 0
    (floor,) = conn.execute(
        f"SELECT min(rowid) FROM (SELECT rowid FROM {table} WHERE {table} MATCH ? "
        "ORDER BY rowid DESC LIMIT ?)",
        (fts_query, RANK_BUDGET),
    ).fetchone()
    return int(floor)


def _fts(
    conn: sqlite3.Connection,
    table: str,
    fts_query: str,
    *,
    route: SearchRoute,
    roles: Sequence[StoredRole] | None,
    limit: int,
) -> list[SearchHit]:
    floor = _rank_floor(conn, table, fts_query)
    role_sql, role_args = _role_filter(roles)
    # Rank inside the FTS table alone, then join the few winners; over-fetch when a role
    # filter may discard some.
    inner = limit * 2 if roles is not None else limit
    rows = conn.execute(
        f"SELECT {_HIT_COLUMNS}, f.score FROM (SELECT rowid AS rid, rank AS score FROM {table} "
        f"WHERE {table} MATCH ? AND rowid >= ? ORDER BY rank LIMIT ?) f "
        f"JOIN messages m ON m.id = f.rid {role_sql} ORDER BY f.score, m.id DESC LIMIT ?",
        (fts_query, floor, inner, *role_args, limit),
    ).fetchall()
    return [_hit(r, score=-float(r[5]), route=route) for r in rows]


def _like_pattern(term: str) -> str:
    escaped = term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _like(
    conn: sqlite3.Connection,
    terms: list[str],
    *,
    match: MatchMode,
    roles: Sequence[StoredRole] | None,
    limit: int,
) -> list[SearchHit]:
    if not terms:
        return []
    # Score = how many distinct terms a message holds; ties go to the newest message.
    matched = ["(m.content LIKE ? ESCAPE '\\')" for _ in terms]
    patterns = tuple(_like_pattern(t) for t in terms)
    joiner = " AND " if match == "all" else " OR "
    role_sql, role_args = _role_filter(roles)
    where = f"({joiner.join(matched)})" + (f" AND {role_sql[len('WHERE ') :]}" if role_sql else "")
    rows = conn.execute(
        f"SELECT {_HIT_COLUMNS}, ({' + '.join(matched)}) AS score FROM messages m "
        f"WHERE {where} ORDER BY score DESC, m.id DESC LIMIT ?",
        (*patterns, *patterns, *role_args, limit),
    ).fetchall()
    return [_hit(r, score=float(r[5]), route="like") for r in rows]


def _hit(row: tuple[object, ...], *, score: float, route: SearchRoute) -> SearchHit:
    return SearchHit(
        message_id=int(cast(int, row[0])),
        session_id=str(row[1]),
        seq=int(cast(int, row[2])),
        role=cast(StoredRole, str(row[3])),
        timestamp=float(cast(float, row[4])),
        score=score,
        route=route,
    )
