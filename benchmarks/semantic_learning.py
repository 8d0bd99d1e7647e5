"""What learning from one turn costs on the embedded model, and what it keeps.

The semantic provider learns after every exchange: one extraction call, then one
reconciliation call per candidate fact that is neither clearly new nor clearly known (see
`memory/providers/semantic/extract.py`). This replays the twelve conversations of
`local_flush_conversations.yaml` (written for keel; 61 planted durable facts) exchange by
exchange through a real `SemanticProvider` — real embedder, real SQLite store in a
temporary home, the real prompts — with the embedded model as the `Completer`, and reports
per model:

- model calls per turn (mean) and seconds per turn (median and p90; extraction, embedding,
  reconciliation and storage together, as `sync_turn` spends it in the background);
- facts: planted facts found in the stored memories at the end (a fact counts when one
  memory of at most 300 characters contains every term of one of its alternatives);
- memories stored, and how the candidates were decided (similarity, model, fallback).

    python benchmarks/semantic_learning.py [--models qwen2.5-coder-1.5b,smollm2-135m] [--limit 12]

It ends with `name value` lines per model and, last, `extract_seconds_per_turn <median>` for
the first model given.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import anyio
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._util import median, percentile
from benchmarks.local_flush import DATA, Conversation, load_conversations, matches
from harness.config import DEFAULT_LOCAL_MODEL, LocalModelName
from harness.models.base import ModelClient
from harness.models.factory import local_client
from harness.models.local import BUILTIN_MODELS, start_local_model
from harness.types import ModelReply, ModelRequest
from harness.wiring.semantic import SessionCompleter
from memory import ProviderContext, TurnMessage
from memory.providers.semantic import SemanticProvider, embedder_unavailable_reason
from prompts import load_text


class LocalCompleter:
    """The embedded model as the provider's `Completer` (keel's own `SessionCompleter`),
    counting its calls."""

    def __init__(self, client: ModelClient, *, max_tokens: int) -> None:
        self._client = client
        self._inner = SessionCompleter(self._send, max_tokens=max_tokens)
        self.calls = 0

    async def _send(self, request: ModelRequest) -> ModelReply:
        self.calls += 1
        return await self._client.complete(request)

    async def complete(self, messages: Sequence[TurnMessage]) -> str:
        return await self._inner.complete(messages)


def exchanges(conversation: Conversation) -> list[tuple[str, str]]:
    msgs = conversation.messages
    return [
        (msgs[i].content, msgs[i + 1].content if i + 1 < len(msgs) else "")
        for i in range(0, len(msgs), 2)
        if msgs[i].role == "user"
    ]


async def run_model(
    name: LocalModelName, conversations: list[Conversation], max_tokens: int
) -> dict[str, float]:
    seconds: list[float] = []
    calls: list[int] = []
    decided: Counter[str] = Counter()
    found = planted = stored = 0
    async with (
        start_local_model(model=name, n_ctx=4096, max_tokens=max_tokens) as lm,
        httpx.AsyncClient(timeout=1800) as http,
    ):
        client = local_client(http, lm.base_url, lm.model, 1800.0, api_key=lm.api_key)
        for conversation in conversations:
            completer = LocalCompleter(client, max_tokens=max_tokens)
            provider = SemanticProvider(
                completer=completer,
                extract_prompt=load_text("semantic_extract"),
                reconcile_prompt=load_text("semantic_reconcile"),
            )
            with tempfile.TemporaryDirectory(prefix="keel-semantic-") as tmp:
                await provider.initialize(
                    ProviderContext("bench", agent_context="primary", home=Path(tmp), platform="cli")
                )
                try:
                    for user, assistant in exchanges(conversation):
                        before = completer.calls
                        started = time.perf_counter()
                        await provider.sync_turn(user, assistant, session_id="bench")
                        seconds.append(time.perf_counter() - started)
                        calls.append(completer.calls - before)
                        report = provider.last_turn
                        for item in report.learned if report is not None else []:
                            decided[f"{item.action}/{item.decided_by}"] += 1
                    assert provider.store is not None
                    memories = [m.content for m in provider.store.recent(limit=1000)]
                finally:
                    await provider.shutdown()
            stored += len(memories)
            planted += len(conversation.facts)
            hits = [f.id for f in conversation.facts if any(matches(m, f) for m in memories)]
            found += len(hits)
            print(
                f"  {conversation.id}: {len(memories)} memories, facts {len(hits)}/{len(conversation.facts)}"
            )
            for memory in memories:
                print(f"    - {memory}")
    turns = len(seconds)
    print(
        f"{name}: {turns} turns, {sum(calls) / turns:.2f} model calls/turn, "
        f"{median(seconds):.1f} s/turn median, {percentile(seconds, 90):.1f} s p90, "
        f"facts {found}/{planted}, {stored} memories; decided: {dict(sorted(decided.items()))}"
    )
    return {
        "model_calls_per_turn": sum(calls) / turns,
        "seconds_per_turn": median(seconds),
        "seconds_per_turn_p90": percentile(seconds, 90),
        "facts_captured": found / planted if planted else 0.0,
        "memories": float(stored),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--models", default=DEFAULT_LOCAL_MODEL, help="comma-separated built-in model names")
    parser.add_argument("--limit", type=int, default=12, help="conversations to replay")
    parser.add_argument("--max-tokens", type=int, default=256)
    args = parser.parse_args(argv)
    reason = embedder_unavailable_reason()
    if reason is not None:
        print(f"the semantic provider cannot run here: {reason}", file=sys.stderr)
        return 2
    names: list[LocalModelName] = []
    for raw in str(args.models).split(","):
        known = [m for m in BUILTIN_MODELS if m == raw.strip()]
        if not known:
            print(f"unknown model {raw!r}; built-in: {', '.join(BUILTIN_MODELS)}", file=sys.stderr)
            return 2
        names.append(known[0])
    conversations = load_conversations(DATA)[: args.limit]
    results = {name: anyio.run(run_model, name, conversations, args.max_tokens) for name in names}
    print()
    for name, figures in results.items():
        key = name.replace(".", "").replace("-", "_")
        for metric, value in figures.items():
            print(f"{key}_{metric} {value:.3f}")
    print(f"extract_seconds_per_turn {results[names[0]]['seconds_per_turn']:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
