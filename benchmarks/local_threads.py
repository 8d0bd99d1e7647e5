"""The embedded server's threads and batch size under load, side by side.

Starts the embedded model once per setting — generation threads, prefill threads
(llama.cpp's `n_threads_batch`), `n_batch` — and, while a second process keeps one core busy
the way keel's own work does (JSON serialization and hashing in a loop), sends the same
requests: a fresh prompt of about `--prompt-tokens` tokens (evaluated whole) and a short reply.
The settings alternate in order from run to run, each on a fresh server so no state is shared,
and the medians are reported side by side. Run it under the machine's model lock:

    flock /work/model.lock python benchmarks/local_threads.py [--model smollm2-135m] [--repeats 3]

It ends with `prefill_threads_speedup <prompt tok/s with 2 prefill threads / with 1>` and
`prefill_threads_generation_ratio` (generation with the same comparison: about 1, since
generation keeps one thread).

Measured (2026-11-25, SmolLM2, `--repeats 2`, a loaded 2-core machine): median prompt 56.0
tok/s with 1 thread and 64.2 with 2, generation 20.7 and 12.2 tok/s; `two_thread_speedup
1.15`. Generation slows by 0.59x with two threads, and once the prefix cache holds the
conversation a turn is mostly generation: the default stays one thread on two cores.
"""

from __future__ import annotations

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

from benchmarks._util import median, script_parser
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


Setting = tuple[int, int, int]
"""(generation threads, prefill threads, n_batch)."""
SETTINGS: tuple[Setting, ...] = ((1, 1, 512), (1, 2, 512), (2, 2, 512), (1, 2, 128))
"""The old default, the new one (two prefill threads), two threads for both, a small batch."""


async def _one(
    model: LocalModelName, setting: Setting, prompt_tokens: int, models_dir: Path, seed: int
) -> tuple[float, float, int]:
    threads, threads_batch, n_batch = setting
    text = " ".join(WORDS[(i + seed) % len(WORDS)] for i in range(int(prompt_tokens * 0.8)))
    async with (
        start_local_model(
            model=model,
            n_ctx=4096,
            n_batch=n_batch,
            threads=threads,
            threads_batch=threads_batch,
            models_dir=models_dir,
            max_tokens=32,
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
    return prompt_tps, gen_tps, t["prompt_n"]


def _name(s: Setting) -> str:
    return f"threads {s[0]} prefill {s[1]} n_batch {s[2]}"


async def main(
    model: LocalModelName, repeats: int, prompt_tokens: int, models_dir: Path
) -> dict[Setting, tuple[float, float]]:
    results: dict[Setting, list[tuple[float, float]]] = {s: [] for s in SETTINGS}
    busy = multiprocessing.Process(target=_busy, args=(time.time() + 3600,), daemon=True)
    busy.start()
    try:
        for r in range(repeats):
            for k, setting in enumerate(SETTINGS if r % 2 == 0 else SETTINGS[::-1]):
                p, g, n = await _one(model, setting, prompt_tokens, models_dir, seed=r * 10 + k)
                results[setting].append((p, g))
                print(
                    f"run {r + 1} {_name(setting)}: {n} prompt tokens at {p:.1f} tok/s, generation {g:.1f} tok/s",
                    flush=True,
                )
    finally:
        busy.terminate()
    med = {s: (median([p for p, _ in v]), median([g for _, g in v])) for s, v in results.items()}
    for s, (p, g) in med.items():
        print(f"median {_name(s)}: prompt {p:.1f} tok/s, generation {g:.1f} tok/s")
    return med


if __name__ == "__main__":
    parser = script_parser(__doc__)
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--prompt-tokens", type=int, default=600)
    parser.add_argument("--models-dir", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="keel-threads-") as tmp:
        where = args.models_dir or Path(tmp)
        med = anyio.run(main, args.model, args.repeats, args.prompt_tokens, where)
    old, new = med[SETTINGS[0]], med[SETTINGS[1]]
    print(f"prefill_threads_speedup {new[0] / old[0]:.2f}")
    print(f"prefill_threads_generation_ratio {new[1] / old[1]:.2f}")
