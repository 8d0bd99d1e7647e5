"""The embedded server's thread count under load: 1 vs 2 threads with the harness busy.

Starts the embedded model once per thread count and, while a second process keeps one core
busy the way keel's own work does (JSON serialization and hashing in a loop), sends the same
requests: a fresh prompt of about `--prompt-tokens` tokens (evaluated whole) and a short reply.
The thread counts alternate (1, 2, 1, 2, ...), each run on a fresh server so no state is
shared, and the medians are reported side by side. Run it under the machine's model lock:

    flock /work/model.lock python benchmarks/local_threads.py [--model smollm2-135m] [--repeats 3]

It ends with `two_thread_speedup <prompt tokens/s with 2 threads / with 1>` (above 1: two
threads are faster under load).

Measured (2026-11-25, SmolLM2, `--repeats 2`, a loaded 2-core machine): median prompt 56.0
tok/s with 1 thread and 64.2 with 2, generation 20.7 and 12.2 tok/s; `two_thread_speedup
1.15`. Generation slows by 0.59x with two threads, and once the prefix cache holds the
conversation a turn is mostly generation: the default stays one thread on two cores.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import sys
import tempfile
import time
from pathlib import Path

import anyio
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._util import median
from harness.config import LocalModelName
from harness.models.local import start_local_model

WORDS = [
    "the",
    "harness",
    "keeps",
    "prefixes",
    "stable",
    "so",
    "the",
    "model",
    "evaluates",
    "each",
    "prompt",
    "token",
    "once",
]


def _busy(stop_at: float) -> None:
    """One core of harness-like work: serialize and hash a growing transcript."""
    transcript: list[dict[str, str]] = []
    while time.time() < stop_at:
        transcript.append({"role": "user", "content": " ".join(WORDS) * 4})
        hashlib.sha256(json.dumps(transcript[-200:]).encode()).hexdigest()


async def _one(
    model: LocalModelName, threads: int, prompt_tokens: int, models_dir: Path, seed: int
) -> tuple[float, float]:
    text = " ".join(WORDS[(i + seed) % len(WORDS)] for i in range(int(prompt_tokens * 0.8)))
    async with (
        start_local_model(
            model=model, n_ctx=4096, threads=threads, models_dir=models_dir, max_tokens=32
        ) as lm,
        httpx.AsyncClient(timeout=1800, headers={"Authorization": f"Bearer {lm.api_key}"}) as http,
    ):
        r = await http.post(
            f"{lm.base_url}/chat/completions",
            json={
                "messages": [{"role": "user", "content": f"{seed}: {text}\nSummarize in one line."}],
                "max_tokens": 32,
                "temperature": 0,
            },
        )
        r.raise_for_status()
        t = r.json()["timings"]
    prompt_tps = t["prompt_n"] / (t["prompt_ms"] / 1000)
    gen_tps = t["predicted_n"] / (t["predicted_ms"] / 1000) if t["predicted_ms"] else float("nan")
    return prompt_tps, gen_tps


async def main(model: LocalModelName, repeats: int, prompt_tokens: int, models_dir: Path) -> float:
    results: dict[int, list[tuple[float, float]]] = {1: [], 2: []}
    busy = multiprocessing.Process(target=_busy, args=(time.time() + 3600,), daemon=True)
    busy.start()
    try:
        for r in range(repeats):
            for threads in (1, 2) if r % 2 == 0 else (2, 1):
                out = await _one(model, threads, prompt_tokens, models_dir, seed=r * 2 + threads)
                results[threads].append(out)
                print(
                    f"run {r + 1} threads {threads}: prompt {out[0]:.1f} tok/s, generation {out[1]:.1f} tok/s",
                    flush=True,
                )
    finally:
        busy.terminate()
    med = {n: (median([p for p, _ in v]), median([g for _, g in v])) for n, v in results.items()}
    for n, (p, g) in med.items():
        print(f"median threads {n}: prompt {p:.1f} tok/s, generation {g:.1f} tok/s")
    return med[2][0] / med[1][0]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--prompt-tokens", type=int, default=600)
    parser.add_argument("--models-dir", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="keel-threads-") as tmp:
        where = args.models_dir or Path(tmp)
        speedup = anyio.run(main, args.model, args.repeats, args.prompt_tokens, where)
    print(f"two_thread_speedup {speedup:.2f}")
