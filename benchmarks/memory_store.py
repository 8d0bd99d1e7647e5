"""MemoryStore write latency on a near-full store, alone and under multi-process contention.

    python benchmarks/memory_store.py [--iterations 200] [--procs 16] [--contended-iterations 30]

Each timed operation is one full transaction: lock, re-read, plan, temp file + fsync,
`os.replace`, directory fsync. The store is filled to ~95% of the 2,200-char MEMORY.md
budget first; every cycle adds a fresh entry (timed), replaces it (timed) and removes it.
Under contention, N processes run the same cycle on the same file at the same time (the
limit is raised by exactly the room N concurrent entries need, so the file has the same
near-full size). The last line is `add_median_ms <value>` for the uncontended add.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run as a script from anywhere: this checkout's packages win

from benchmarks._util import median, percentile  # noqa: E402

LIMIT = 2200
FILL_RATIO = 0.95
ENTRY_LEN = 40


def _entry(worker: int, n: int, tag: str) -> str:
    return f"bench {tag} w{worker:02d} n{n:05d} ".ljust(ENTRY_LEN, "x")


def _use_checkout() -> None:
    # Measure this checkout's code even when another copy of keel is installed.
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))


def _fill(directory: Path) -> int:
    """Write ~95% of LIMIT worth of filler entries; return their joined length."""
    base = [f"filler fact {i:03d} ".ljust(60, ".") for i in range(int(LIMIT * FILL_RATIO) // 63)]
    text = "\n§\n".join(base)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "MEMORY.md").write_text(text + "\n", encoding="utf-8")
    return len(text)


async def _cycles(
    directory: Path, worker: int, iterations: int, limit: int, warmup: int
) -> tuple[list[float], list[float]]:
    from memory import MemoryStore

    store = MemoryStore(directory, memory_char_limit=limit, lock_timeout_s=600)
    adds: list[float] = []
    replaces: list[float] = []
    for n in range(warmup + iterations):
        first, second = _entry(worker, n, "a"), _entry(worker, n, "b")
        t0 = time.perf_counter()
        await store.add("memory", first)
        t1 = time.perf_counter()
        await store.replace("memory", first, second)
        t2 = time.perf_counter()
        await store.remove("memory", second)
        if n >= warmup:
            adds.append((t1 - t0) * 1000)
            replaces.append((t2 - t1) * 1000)
    return adds, replaces


def _child(directory: Path, worker: int, iterations: int, limit: int, start_at: float, out: Path) -> None:
    import anyio

    _use_checkout()
    time.sleep(max(0.0, start_at - time.time()))  # all children start together
    began = time.time()
    adds, replaces = anyio.run(_cycles, directory, worker, iterations, limit, 2)
    ended = time.time()
    out.write_text(json.dumps({"add": adds, "replace": replaces, "span": [began, ended]}), encoding="utf-8")


def _contended(directory: Path, procs: int, iterations: int) -> tuple[list[float], list[float], float]:
    limit = LIMIT + procs * (ENTRY_LEN + 3)
    start_at = time.time() + 3.0 + procs * 0.25  # time for every interpreter to start
    outs = [directory / f"lat-{w}.json" for w in range(procs)]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    children = [
        subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--child",
                str(directory),
                str(w),
                str(iterations),
                str(limit),
                repr(start_at),
                str(outs[w]),
            ],
            env=env,
        )
        for w in range(procs)
    ]
    for child in children:
        if child.wait() != 0:
            raise SystemExit(f"a contending writer failed with exit code {child.returncode}")
    adds: list[float] = []
    replaces: list[float] = []
    spans: list[tuple[float, float]] = []
    for out in outs:
        data = json.loads(out.read_text(encoding="utf-8"))
        adds += data["add"]
        replaces += data["replace"]
        spans.append((data["span"][0], data["span"][1]))
    # How long every writer was running at once, as a share of the longest writer's run.
    together = min(end for _, end in spans) - max(start for start, _ in spans)
    longest = max(end - start for start, end in spans)
    return adds, replaces, max(0.0, together) / longest if longest > 0 else 0.0


def _line(label: str, samples: list[float]) -> str:
    return (
        f"{label:<28} median {median(samples):8.2f} ms   p90 {percentile(samples, 90):8.2f} ms   "
        f"n={len(samples)}"
    )


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        d, w, it, lim, start, out = sys.argv[2:8]
        _child(Path(d), int(w), int(it), int(lim), float(start), Path(out))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=200, help="uncontended add/replace cycles")
    parser.add_argument("--procs", type=int, default=16, help="contending writer processes")
    parser.add_argument("--contended-iterations", type=int, default=30, help="cycles per contending process")
    parser.add_argument("--dir", type=Path, default=None, help="where to put the store (default: a temp dir)")
    args = parser.parse_args()

    _use_checkout()
    import anyio

    root = args.dir or Path(tempfile.mkdtemp(prefix="keel-bench-"))
    alone_dir, busy_dir = root / "alone", root / "contended"
    filled = _fill(alone_dir)
    _fill(busy_dir)
    print(
        f"MemoryStore writes, MEMORY.md pre-filled to {filled:,}/{LIMIT:,} chars "
        f"({filled * 100 // LIMIT}%), fsync on, store in {root}"
    )
    # The uncontended run is split around the contended one so slow drift in the machine's
    # fsync latency (other work on the disk) affects both sides alike.
    half = max(1, args.iterations // 2)
    add_before, replace_before = anyio.run(_cycles, alone_dir, 0, half, LIMIT, 5)
    add_busy, replace_busy, overlap = _contended(busy_dir, args.procs, args.contended_iterations)
    add_after, replace_after = anyio.run(_cycles, alone_dir, 1, args.iterations - half, LIMIT, 5)
    add_alone, replace_alone = add_before + add_after, replace_before + replace_after
    print(
        f"uncontended add median before/after the contended run: "
        f"{median(add_before):.2f} / {median(add_after):.2f} ms"
    )
    print(_line("add, 1 process", add_alone))
    print(_line("replace, 1 process", replace_alone))
    print(_line(f"add, {args.procs} processes", add_busy))
    print(_line(f"replace, {args.procs} processes", replace_busy))
    print(f"all {args.procs} writers ran at the same time for {overlap:.0%} of the longest writer's run")
    print(
        f"contention ratio (median {args.procs} processes / 1 process): "
        f"add {median(add_busy) / median(add_alone):.1f}x, "
        f"replace {median(replace_busy) / median(replace_alone):.1f}x"
    )
    if args.dir is None:
        shutil.rmtree(root, ignore_errors=True)
    print(f"add_median_ms {median(add_alone):.3f}")


if __name__ == "__main__":
    main()
