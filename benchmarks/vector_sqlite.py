"""Nearest-vector search in SQLite: the sqlite-vec extension vs plain blobs with numpy vs keel's way.

    python benchmarks/vector_sqlite.py [--vectors N] [--queries N] [--seed N]

Why this exists: hybrid session search needs the messages closest to a query among every
message's 384-dimension embedding, inside `state.db`. Three ways, same vectors, same queries:

- `sqlite-vec`: the `vec0` virtual table of sqlite-vec (PyPI `sqlite-vec`, a loadable
  extension), `embedding MATCH ? AND k = 100`: brute force in C over float32 rows on disk.
  CPython's `sqlite3` here is built without `enable_load_extension`, so it is loaded through
  `apsw` (PyPI), which keel would have to depend on to use it;
- `numpy float32`: every float32 blob read into one matrix in memory, one matrix-vector
  product per query (exact; 1.5 KB of RAM per message);
- `keel`: float16 blobs plus 48-byte sign codes (`memory.sessions.dense`): the codes in
  memory, Hamming distance to all, the 1,000 nearest read back from SQLite and ranked by
  exact cosine (what `SqliteVectors` + `DenseIndex` do).

Vectors are synthetic (clusters of unit vectors: embedding this many texts with MiniLM takes
an hour here; the search's cost does not depend on what they mean). Each query is a stored
vector plus noise; `recall@10` is the overlap of each method's top 10 with the exact top 10.
Needs `pip install sqlite-vec apsw` for the first column (it is skipped with a note otherwise).
The last line is `keel_p50_ms X`.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import cast

import numpy as np
from numpy.typing import NDArray

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._util import median, percentile
from memory.sessions.dense import CodeIndex, sign_codes

DIM = 384
K = 10
RESCORE = 1000
Matrix = NDArray[np.float32]


def synthetic(n: int, rng: np.random.Generator) -> Matrix:
    """`n` unit vectors in clusters (a few hundred topics), in chunks to keep memory flat."""
    centers = rng.standard_normal((max(8, n // 2000), DIM), dtype=np.float32)
    out = np.empty((n, DIM), dtype=np.float32)
    for start in range(0, n, 50_000):
        end = min(n, start + 50_000)
        block = centers[rng.integers(0, len(centers), end - start)]
        block = block + 1.5 * rng.standard_normal((end - start, DIM), dtype=np.float32)
        out[start:end] = block / np.linalg.norm(block, axis=1, keepdims=True)
    return out


def exact_top(vectors: Matrix, query: NDArray[np.float32]) -> set[int]:
    scores = vectors @ query
    return {int(i) + 1 for i in np.argpartition(-scores, K)[:K]}


def timed(
    fn: Callable[[NDArray[np.float32]], list[int]], queries: Matrix
) -> tuple[list[float], list[list[int]]]:
    times: list[float] = []
    answers: list[list[int]] = []
    for q in queries:
        started = time.perf_counter()
        answers.append(fn(q))
        times.append((time.perf_counter() - started) * 1000)
    return times, answers


def keel_way(path: Path, vectors: Matrix) -> Callable[[NDArray[np.float32]], list[int]]:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE v (id INTEGER PRIMARY KEY, vec BLOB NOT NULL, code BLOB NOT NULL)")
    codes = sign_codes(vectors)
    half = vectors.astype(np.float16)
    conn.executemany(
        "INSERT INTO v VALUES (?, ?, ?)", ((i + 1, half[i].tobytes(), codes[i]) for i in range(len(vectors)))
    )
    conn.commit()
    index = CodeIndex()
    rows = conn.execute("SELECT id, code FROM v ORDER BY id").fetchall()
    index.add([r[0] for r in rows], [r[0] for r in rows], [r[1] for r in rows])

    def search(q: NDArray[np.float32]) -> list[int]:
        picked = index.nearest(sign_codes(q[None, :])[0], RESCORE)
        found = conn.execute(
            "SELECT v.id, v.vec FROM json_each(?) j JOIN v ON v.id = j.value", (str(picked),)
        ).fetchall()
        matrix = np.frombuffer(b"".join(r[1] for r in found), dtype=np.float16).reshape(len(found), DIM)
        scores = matrix.astype(np.float32) @ q
        return [found[i][0] for i in np.argsort(-scores)[:K]]

    return search


def numpy_way(path: Path, vectors: Matrix) -> Callable[[NDArray[np.float32]], list[int]]:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE v (id INTEGER PRIMARY KEY, vec BLOB NOT NULL)")
    conn.executemany(
        "INSERT INTO v VALUES (?, ?)", ((i + 1, vectors[i].tobytes()) for i in range(len(vectors)))
    )
    conn.commit()
    blobs = [r[0] for r in conn.execute("SELECT vec FROM v ORDER BY id")]
    matrix = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), DIM)

    def search(q: NDArray[np.float32]) -> list[int]:
        scores = matrix @ q
        top = np.argpartition(-scores, K)[:K]
        return [int(i) + 1 for i in top[np.argsort(-scores[top])]]

    return search


def sqlite_vec_way(path: Path, vectors: Matrix) -> Callable[[NDArray[np.float32]], list[int]] | None:
    try:
        import apsw  # type: ignore[import-not-found, import-untyped, unused-ignore]  # optional, see the docstring
        import sqlite_vec  # type: ignore[import-not-found, import-untyped, unused-ignore]  # optional, see the docstring
    except ImportError:
        print("(sqlite-vec skipped: pip install sqlite-vec apsw)")
        return None
    conn = apsw.Connection(str(path))
    conn.enable_load_extension(True)
    conn.load_extension(sqlite_vec.loadable_path())
    conn.execute(f"CREATE VIRTUAL TABLE v USING vec0(embedding float[{DIM}])")
    with conn:
        for i in range(len(vectors)):
            conn.execute("INSERT INTO v (rowid, embedding) VALUES (?, ?)", (i + 1, vectors[i].tobytes()))

    def search(q: NDArray[np.float32]) -> list[int]:
        rows = conn.execute(
            f"SELECT rowid FROM v WHERE embedding MATCH ? AND k = {K} ORDER BY distance", (q.tobytes(),)
        ).fetchall()
        return [int(cast(int, r[0])) for r in rows]

    return search


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--vectors", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    vectors = synthetic(args.vectors, rng)
    picks = rng.integers(0, args.vectors, args.queries)
    queries = vectors[picks] + 0.5 * rng.standard_normal((args.queries, DIM), dtype=np.float32) / np.sqrt(DIM)
    queries = (queries / np.linalg.norm(queries, axis=1, keepdims=True)).astype(np.float32)
    truth = [exact_top(vectors, q) for q in queries]
    p50 = 0.0
    with tempfile.TemporaryDirectory(prefix="keel-vec-") as tmp:
        ways = {
            "sqlite-vec": sqlite_vec_way,
            "numpy float32": numpy_way,
            "keel (codes + float16)": keel_way,
        }
        print(f"{args.vectors:,} vectors of {DIM} dimensions, {args.queries} queries, top {K}")
        for name, make in ways.items():
            path = Path(tmp) / f"{name.split()[0]}.db"
            started = time.perf_counter()
            search = make(path, vectors)
            if search is None:
                continue
            built = time.perf_counter() - started
            search(queries[0])  # warm up
            times, answers = timed(search, queries)
            recall = float(np.mean([len(set(a) & t) / K for a, t in zip(answers, truth, strict=True)]))
            size = sum(p.stat().st_size for p in Path(tmp).glob(f"{path.name}*")) / 1e6
            print(
                f"{name:<24} p50 {median(times):8.2f} ms  p99 {percentile(times, 99):8.2f} ms  "
                f"recall@10 {recall:.3f}  on disk {size:8.1f} MB  loaded in {built:6.1f} s"
            )
            if name.startswith("keel"):
                p50 = median(times)
    print(f"keel_p50_ms {p50:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
