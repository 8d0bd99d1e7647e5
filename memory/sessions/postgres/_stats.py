"""How many messages hold each query term, on PostgreSQL — cheaply, for term weights.

SQLite reads document counts straight from its FTS5 vocabulary. PostgreSQL has no such
table, and counting a common word's messages means visiting each of them (a GIN match
must be rechecked on the row): 50 ms for a word in 5% of 300,000 messages. But the
planner's statistics (`ANALYZE`, run by autovacuum) already hold the frequency of the
most common lexemes of `messages.search_tsv` — accurate to a few percent. So:

- a term all of whose lexemes are among those common ones is estimated from them (a
  phrase by its rarest lexeme, as on SQLite);
- any other term is rare by definition and counted exactly, up to `COUNT_CAP`;
- without statistics (a store too new for autovacuum to have analyzed) every term is
  counted, which is cheap at that size.

The statistics are read at most every `STATS_TTL_S` seconds per store.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from memory.sessions.postgres._schema import TS_CONFIG, fold_punctuation
from memory.sessions.postgres._sql import Conn, pg_text

__all__ = ["COUNT_CAP", "STATS_TTL_S", "TermStats", "TermStatsCache", "doc_counts"]

COUNT_CAP = 1000
"""Exact counts stop at this many messages (only rare terms are counted exactly)."""

STATS_TTL_S = 300.0
"""How long the lexeme frequencies read from `pg_stats` are reused."""


@dataclass(frozen=True, slots=True)
class TermStats:
    """Lexeme → share of messages holding it, for the most common lexemes; and the row count."""

    freqs: dict[str, float]
    rows: float


class TermStatsCache:
    """The lexeme statistics of one store, refreshed when older than `ttl_s`."""

    def __init__(self, *, ttl_s: float = STATS_TTL_S, clock: Callable[[], float] = time.monotonic) -> None:
        self._ttl_s = ttl_s
        self._clock = clock
        self._stats: TermStats | None = None
        self._read_at: float | None = None

    async def get(self, conn: Conn) -> TermStats | None:
        now = self._clock()
        if self._read_at is None or now - self._read_at > self._ttl_s:
            self._stats = await _read_stats(conn)
            self._read_at = now
        return self._stats


async def _read_stats(conn: Conn) -> TermStats | None:
    cur = await conn.execute(
        "SELECT s.most_common_elems::text::text[], s.most_common_elem_freqs, c.reltuples "
        "FROM pg_stats s JOIN pg_class c ON c.oid = 'messages'::regclass "
        "WHERE s.schemaname = current_schema() AND s.tablename = 'messages' AND s.attname = 'search_tsv'"
    )
    row = await cur.fetchone()
    if row is None or row[0] is None or row[1] is None or not row[2] or float(row[2]) <= 0:
        return None
    elems, freqs = list(row[0]), list(row[1])
    # most_common_elem_freqs ends with the minimum, maximum and null frequencies.
    return TermStats(freqs=dict(zip(elems, freqs[: len(elems)], strict=True)), rows=float(row[2]))


async def doc_counts(conn: Conn, terms: Sequence[str], cache: TermStatsCache) -> list[int]:
    """How many messages hold each term (estimated for common terms, counted for rare ones)."""
    if not terms:
        return []
    folded = [pg_text(fold_punctuation(t)) for t in terms]
    cur = await conn.execute(
        f"SELECT u.i, x.lexeme FROM unnest(%s::text[]) WITH ORDINALITY u(t, i), "
        f"unnest(to_tsvector('{TS_CONFIG}', u.t)) x",
        (folded,),
    )
    lexemes: dict[int, list[str]] = {i: [] for i in range(len(terms))}
    for i, lexeme in await cur.fetchall():
        lexemes[int(i) - 1].append(str(lexeme))
    stats = await cache.get(conn)
    counts: list[int | None] = []
    for i in range(len(terms)):
        found = lexemes[i]
        if not found:
            counts.append(0)  # only stopwords: nothing can match
        elif stats is not None and all(lx in stats.freqs for lx in found):
            counts.append(round(min(stats.freqs[lx] for lx in found) * stats.rows))
        else:
            counts.append(None)
    exact = [i for i, n in enumerate(counts) if n is None]
    if exact:
        cur = await conn.execute(
            "SELECT (SELECT count(*) FROM (SELECT 1 FROM messages "
            f"WHERE search_tsv @@ phraseto_tsquery('{TS_CONFIG}', t) LIMIT {COUNT_CAP}) c) "
            "FROM unnest(%s::text[]) WITH ORDINALITY u(t, i) ORDER BY i",
            ([folded[i] for i in exact],),
        )
        for i, r in zip(exact, await cur.fetchall(), strict=True):
            counts[i] = int(r[0])
    return [0 if n is None else n for n in counts]
