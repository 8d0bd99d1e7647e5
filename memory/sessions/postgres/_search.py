"""Message-level full-text search on PostgreSQL: the same routes and results as SQLite's.

- `fts`: `messages.search_tsv @@ websearch_to_tsquery('english', ...)` (never raises on
  any input), ranked by the sum over the query's terms of IDF × `ts_rank_cd` (the term's
  cover density, normalized by log length) — `ts_rank_cd` alone has no corpus
  statistics, and without IDF recall@5 on LoCoMo fell from 0.84 to 0.77;
- `trigram`: `ILIKE` on `content` without tool output, answered by the `pg_trgm` GIN index;
- `like`: the same `ILIKE` over every message (also the trigram route's fallback when
  `pg_trgm` is missing).

Where it differs from SQLite, on purpose or by nature:

- Ranking: IDF-weighted `ts_rank_cd` instead of BM25 (term frequency and length are
  weighed differently), so the order of hits (and the `best` strategy's window scores
  built on it) differs; the matching messages are the same; on the substring routes the score is the number of
  query terms a message holds (SQLite's trigram route ranks by BM25 over trigrams).
- Term weights (IDF) come from the planner's lexeme statistics for common terms and from
  counts capped at 1,000 for rare ones (`_stats.py`): PostgreSQL has no cheap
  exact count of a common word's messages.
- Stemming is Snowball English with English stopwords dropped, where SQLite uses Porter
  and keeps stopwords: an `all` query that needs a stopword matches more here. A prefix
  star (`deploy*`) is dropped rather than expanded.
- Case folding of `ILIKE` covers all of Unicode; SQLite's `LIKE` folds ASCII only.

As on SQLite, each query scores at most `RANK_BUDGET` rows: the newest matches.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from memory.sessions import _ranking
from memory.sessions._fts_query import extract_terms, websearch_any_query, websearch_query
from memory.sessions._records import IndexFeatures, SearchResult
from memory.sessions.postgres._schema import TS_CONFIG, fold_punctuation
from memory.sessions.postgres._sql import Conn, pg_text
from memory.sessions.postgres._stats import TermStatsCache, doc_counts
from memory.sessions.reads import SearchMessages

__all__ = ["search_messages_pg"]

_RANK_NORMALIZATION = 1  # ts_rank_cd divided by 1 + log(document length), like BM25's length term
_HIT_COLUMNS = (
    f"m.id, m.session_id, m.seq, m.role, m.timestamp, left(m.content, {_ranking.TOOL_PREFIX_CHARS})"
)


def _scope(search: SearchMessages) -> tuple[str, str, list[object]]:
    """(join, extra WHERE tests, their arguments) for the user and role filters."""
    user_ids, roles = search.user_ids, search.roles
    join, tests, args = "", "", list[object]()
    if user_ids is not None:
        join = " JOIN sessions s ON s.id = m.session_id"
        tests += " AND s.user_id = ANY(%s)"
        args.append([pg_text(u) for u in user_ids])
    if roles is not None:
        tests += " AND m.role = ANY(%s)"
        args.append(list(roles))
    return join, tests, args


async def search_messages_pg(
    conn: Conn, search: SearchMessages, *, features: IndexFeatures, stats: TermStatsCache
) -> SearchResult:
    """The best `search.limit` messages for its query, best first; shaped like the SQLite backend's."""
    query = search.query
    chosen = search.route or _ranking.choose_route(query, features)
    if chosen == "trigram" and not features.trigram:
        chosen = "like"
    terms = extract_terms(query)
    if chosen != "fts":
        if chosen == "trigram":
            terms = [t for t in terms if len(t) >= 3]
        rows = await _substring(conn, terms, search, tools=chosen == "like")
        return _ranking.substring_result(chosen, terms, rows)
    counts = await doc_counts(conn, terms, stats)
    if search.match == "all":
        text = websearch_query(query, fold=fold_punctuation)
    else:
        text = websearch_any_query(_ranking.rare_terms(terms, counts), fold=fold_punctuation)
    cur = await conn.execute("SELECT COALESCE(max(id), 0) FROM messages")
    row = await cur.fetchone()
    weights = _ranking.idf_weights(terms, counts, int(row[0]) if row else 0)
    rows = [] if text is None else await _fts(conn, text, weights, search)
    hits = tuple(
        _ranking.hit_from_row(
            r[:7],
            route="fts",
            terms={t for t, held in zip(terms, cast(list[bool], r[7]), strict=True) if held},
        )
        for r in rows
    )
    return SearchResult(route="fts", terms=tuple(terms), weights=weights, hits=hits)


def _folded(term: str) -> str:
    return pg_text(fold_punctuation(term))


async def _fts(
    conn: Conn, text: str, weights: dict[str, float], search: SearchMessages
) -> list[tuple[object, ...]]:
    join, tests, args = _scope(search)
    terms = [_folded(t) for t in weights]
    # Rank only the newest RANK_BUDGET matches (the planner picks the GIN index for rare
    # terms and a backward id scan for common ones). ts_rank_cd knows nothing of the rest
    # of the history, so each term's cover density is weighted by the term's IDF (what
    # BM25 does on SQLite); then say which terms each message holds.
    cur = await conn.execute(
        f"WITH q AS (SELECT websearch_to_tsquery('{TS_CONFIG}', %s) AS q), "
        "cand AS MATERIALIZED (SELECT m.id, m.session_id, m.seq, m.role, m.timestamp, m.search_tsv "
        f"FROM q, messages m{join} WHERE m.search_tsv @@ q.q{tests} ORDER BY m.id DESC LIMIT {_ranking.RANK_BUDGET}), "
        f"terms AS (SELECT phraseto_tsquery('{TS_CONFIG}', t) AS tq, w, i "
        "FROM unnest(%s::text[], %s::float8[]) WITH ORDINALITY u(t, w, i)) "
        "SELECT c.id, c.session_id, c.seq, c.role, c.timestamp, '', "
        f"(SELECT COALESCE(sum(terms.w * ts_rank_cd(c.search_tsv, terms.tq, {_RANK_NORMALIZATION})), 0) "
        "FROM terms) AS score, "
        "ARRAY(SELECT c.search_tsv @@ terms.tq FROM terms ORDER BY terms.i) "
        "FROM cand c ORDER BY score DESC, c.id DESC LIMIT %s",
        (pg_text(text), *args, terms, list(weights.values()), search.limit),
    )
    return [tuple(r) for r in await cur.fetchall()]


async def _substring(
    conn: Conn, terms: Sequence[str], search: SearchMessages, *, tools: bool
) -> list[tuple[object, ...]]:
    if not terms:
        return []
    # Score = how many distinct terms a message holds; ties go to the newest message.
    patterns = [pg_text(_ranking.like_pattern(t)) for t in terms]
    join, tests, args = _scope(search)
    cur = await conn.execute(
        f"SELECT {_HIT_COLUMNS}, (SELECT count(*) FROM unnest(%s::text[]) p WHERE m.content ILIKE p) "
        f"AS score FROM messages m{join} WHERE m.content ILIKE {'ANY' if search.match == 'any' else 'ALL'}(%s)"
        + ("" if tools else " AND m.role <> 'tool'")
        + f"{tests} ORDER BY score DESC, m.id DESC LIMIT %s",
        (patterns, patterns, *args, search.limit),
    )
    return [tuple(r) for r in await cur.fetchall()]
