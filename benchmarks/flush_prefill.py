"""What the compression flush costs on the embedded model: `memory_only` vs `cache_safe`.

Both modes run the same conversation on one real llama.cpp server (SmolLM2-135M, greedy
decoding, the full default tool set: memory, session_search and the three skill tools),
then compress by hand. The flush request is the whole transcript plus a note; the only
difference is its tool list — `memory_only` offers just the memory tool, `cache_safe` the
session's unchanged list. llama-cpp-python renders tools into the system message, so a
different tool list changes the prompt from its first tokens and the server must process
all of it again. Measured per mode, side by side in one run:

- the flush call's wall time;
- the prompt tokens the server had to evaluate for it (its own log: "N prefix-match hit,
  remaining M prompt tokens to eval");
- the same estimated by the cache meter's llama.cpp rule on the trace.

    python benchmarks/flush_prefill.py [--turns 8] [--repeats 2]

Needs the `local` extra. The last line printed is `flush_extra_prefill_tokens <value>`
(median extra tokens `memory_only` makes the server evaluate, compared with `cache_safe`).
"""

from __future__ import annotations

import re
import sys
import tempfile
import time
from pathlib import Path

import anyio
import anyio.to_thread
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._util import median, script_parser
from harness.cachemeter import CanonicalRenderer, load_meter_tokenizer, measure
from harness.config import load_config
from harness.events import FlushCompleted
from harness.models.factory import local_client
from harness.models.local import start_local_model
from harness.trace import read_trace
from harness.wiring import SessionOptions, open_session

TURNS = (
    "Hi, I'm Ada. I run a bakery and I prefer short answers.",
    "Which flour works best for sourdough?",
    "My oven runs hot, about 15 degrees over the dial.",
    "How long should a rye loaf cool before slicing?",
    "Remember that we close on Mondays.",
    "What is a good hydration for a beginner's dough?",
    "Any tip for a crisper crust?",
    "Thanks, that helps.",
)
_PREFILL = re.compile(r"prefix-match hit, remaining (\d+) prompt tokens to eval")


def _log_prefills(log: Path, start: int) -> list[int]:
    text = log.read_text(encoding="utf-8", errors="replace")[start:]
    return [int(m.group(1)) for m in _PREFILL.finditer(text)]


async def _one(
    mode: str, base_url: str, model_name: str, log: Path, turns: int, root: Path, api_key: str
) -> dict[str, float]:
    env = {
        "KEEL_MODEL__MAX_OUTPUT_TOKENS": "32",
        "KEEL_MODEL__TEMPERATURE": "0",
        "KEEL_MODEL__CONTEXT_WINDOW": "8192",
        "KEEL_LIMITS__MAX_ITERATIONS": "1",
        "KEEL_COMPRESSION__ENABLED": "false",
        "KEEL_COMPRESSION__PROTECT_FIRST_N": "0",
        "KEEL_COMPRESSION__PROTECT_LAST_N": "2",
        "KEEL_COMPRESSION__FLUSH": mode,
    }
    cfg = load_config(None, environ=env)
    async with httpx.AsyncClient(timeout=600) as http:
        model = local_client(http, base_url, model_name, 600, api_key=api_key)
        async with open_session(cfg, SessionOptions(model=model, home=root / mode, source="benchmark")) as s:
            for text in TURNS[:turns]:
                async with s.run_turn(text) as events:
                    async for _ in events:
                        pass
            start = (await anyio.Path(log).stat()).st_size
            started = time.monotonic()
            events_out = await s.compress()
            compress_s = time.monotonic() - started
            flush = next((e for e in events_out if isinstance(e, FlushCompleted)), None)
            prefills = await anyio.to_thread.run_sync(_log_prefills, log, start)
    trace = s.handles.trace_path
    assert trace is not None
    records = await anyio.to_thread.run_sync(lambda: list(read_trace(trace)))
    tokenizer = await anyio.to_thread.run_sync(load_meter_tokenizer, "cl100k")
    report = measure(records, CanonicalRenderer(tokenizer), simulators=("llamacpp",))
    flush_req = next((r for r in report.requests if r.purpose == "flush"), None)
    if flush_req is None:
        raise SystemExit(
            f"{mode}: the compression made no flush call (nothing to compress?); use more --turns"
        )
    return {
        "flush_s": flush.latency_s if flush else float("nan"),
        "compress_s": compress_s,
        "server_prefill": float(prefills[0]) if prefills else float("nan"),
        "meter_prompt": float(flush_req.prompt_tokens),
        "meter_reprefill": float(flush_req.prompt_tokens - flush_req.sims["llamacpp"].reusable),
    }


async def main(turns: int, repeats: int) -> float:
    results: dict[str, list[dict[str, float]]] = {"memory_only": [], "cache_safe": []}
    with tempfile.TemporaryDirectory(prefix="keel-flush-") as tmp:
        root = Path(tmp)
        log = root / "server.log"
        async with start_local_model(n_ctx=8192, log_path=log, max_tokens=32) as lm:
            for r in range(repeats):
                for mode in ("memory_only", "cache_safe"):
                    out = await _one(mode, lm.base_url, lm.model, log, turns, root / f"run{r}", lm.api_key)
                    results[mode].append(out)
                    print(
                        f"run {r + 1} {mode:<11} flush {out['flush_s']:6.2f}s  server evaluated "
                        f"{out['server_prefill']:6.0f} tokens  (meter: {out['meter_reprefill']:.0f} of "
                        f"{out['meter_prompt']:.0f} re-prefilled)"
                    )
    med = {m: {k: median([x[k] for x in v]) for k in v[0]} for m, v in results.items()}
    for m, v in med.items():
        print(f"median {m:<11} flush {v['flush_s']:.2f}s, server evaluated {v['server_prefill']:.0f} tokens")
    extra = med["memory_only"]["server_prefill"] - med["cache_safe"]["server_prefill"]
    ratio = med["memory_only"]["flush_s"] / med["cache_safe"]["flush_s"]
    print(f"memory_only / cache_safe flush wall time: {ratio:.2f}×")
    return extra


if __name__ == "__main__":
    parser = script_parser(__doc__)
    parser.add_argument("--turns", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    print(f"flush_extra_prefill_tokens {anyio.run(main, args.turns, args.repeats):.0f}")
