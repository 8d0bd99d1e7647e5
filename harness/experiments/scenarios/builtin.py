"""Built-in scenarios, generated deterministically from our own templates.

`synthetic-200`: a 200-turn working session between a user and an agent on a made-up data
project. Turns are agentic — many of them call tools before answering (session search,
skill lookups, memory writes every few turns) — the way real long sessions look. Personal
facts are planted mid-session and become probes; the scripted assistant does not save them
itself, so only the compression flush can. Out-of-band memory writes happen now and then
(as if another process or the CLI wrote), and one compression is forced near the end.
"""

from __future__ import annotations

import random
from typing import Literal

from harness.experiments.scenarios.spec import (
    InitialMemory,
    MemoryWriteSpec,
    ProbeSpec,
    ReplySpec,
    Scenario,
    ToolCallSpec,
    TurnSpec,
)

__all__ = ["BUILTIN_SCENARIOS", "builtin_scenario", "synthetic_200"]

_TOPICS = [
    ("the ingest job", "reads the nightly CSV drops from the storage bucket and normalizes the column names"),
    ("the dedupe step", "hashes each record on its natural key and keeps the newest version"),
    ("the schema registry", "stores one JSON schema per table and rejects writes that drift from it"),
    ("the retry queue", "holds failed batches for up to six hours with exponential backoff"),
    ("the metrics exporter", "publishes row counts and lag per table every minute"),
    ("the backfill script", "replays a date range from the archive into the staging tables"),
    ("the alerting rules", "page the on-call person when lag exceeds fifteen minutes"),
    ("the config loader", "merges the base YAML with per-environment overrides at start-up"),
    ("the test fixtures", "build a tiny warehouse in a temporary directory for every test"),
    ("the release checklist", "covers migrations, a canary run and the rollback plan"),
]
_ASKS = [
    "Can you walk me through how {t} works right now?",
    "I think {t} has a bug when the input is empty. What would you check first?",
    "How would you make {t} faster without changing its output?",
    "Write down the main risks in {t} before we touch it.",
    "What tests are missing for {t}?",
    "Explain {t} to a new teammate in a few sentences.",
    "Is there anything in {t} that depends on the local timezone?",
    "Could {t} run twice at the same time, and what would break if it did?",
]
_ANSWER_OPENERS = [
    "Here is how I would think about {t}.",
    "Looking at {t} as it is described so far:",
    "Short version first, then the details for {t}.",
    "I went through {t} step by step.",
]
_ANSWER_BODY = [
    "It {d}, so the first thing to confirm is that the input contract is written down and tested.",
    "The part most likely to fail is the boundary between this step and the next one, because errors there are "
    "easy to swallow and hard to see in the metrics.",
    "I would add a small test with an empty input, one with a duplicate key, and one with a malformed row, and "
    "assert on the exact counts that come out.",
    "Making it idempotent is worth more than making it fast: a rerun after a partial failure should leave the "
    "same state as a clean run.",
    "Logging the batch identifier at every stage makes it possible to follow one batch through the pipeline "
    "when something goes wrong at night.",
    "If it has to scale, batching the writes and keeping the per-row work free of network calls gives most of "
    "the gain for little risk.",
    "None of this needs a redesign; the changes are small and can ship behind a flag.",
]
_FACTS: list[tuple[Literal["memory", "user"], str, str, str, str]] = [
    (
        "user",
        "User's dog is named Biscuit",
        "Biscuit",
        "By the way, my dog Biscuit keeps me company while I work.",
        "What is my dog's name?",
    ),
    (
        "user",
        "User is based in Lisbon",
        "Lisbon",
        "I'm based in Lisbon, so my mornings are your afternoons.",
        "Which city am I in?",
    ),
    (
        "memory",
        "The staging warehouse is called heron-stg",
        "heron-stg",
        "The staging warehouse is called heron-stg, not prod.",
        "What is the staging warehouse called?",
    ),
    (
        "user",
        "User prefers answers with bullet points",
        "bullet",
        "I prefer answers with bullet points, please.",
        "How do I like answers formatted?",
    ),
    (
        "memory",
        "Deploys happen on Tuesdays only",
        "Tuesday",
        "Remember: we only deploy on Tuesdays.",
        "Which day do we deploy?",
    ),
]
_OUT_OF_BAND = [
    "The CI runner image was updated to Python 3.12",
    "The team moved the stand-up to 09:30",
    "The archive bucket is now versioned",
    "On-call rotation changes every Monday",
]


def _answer(rng: random.Random, topic: str, detail: str, length: int) -> str:
    parts = [rng.choice(_ANSWER_OPENERS).format(t=topic)]
    body = [b.format(d=detail) for b in _ANSWER_BODY]
    rng.shuffle(body)
    parts.extend(body[:length])
    return " ".join(parts)


def _search_call(rng: random.Random, topic: str) -> ToolCallSpec:
    return ToolCallSpec(name="session_search", arguments={"query": topic.replace("the ", "")})


def synthetic_200(*, turns: int = 200, seed: int = 7, compress_at: int = 170) -> Scenario:
    """The built-in long session; `turns`/`compress_at` shrink it for tests."""
    rng = random.Random(seed)
    fact_turns = {round(turns * f): i for i, f in enumerate((0.15, 0.3, 0.45, 0.6, 0.7))}
    specs: list[TurnSpec] = []
    probes: list[ProbeSpec] = []
    for n in range(1, turns + 1):
        topic, detail = _TOPICS[(n * 7 + rng.randrange(3)) % len(_TOPICS)]
        ask = rng.choice(_ASKS).format(t=topic)
        replies: list[ReplySpec] = []
        writes: list[MemoryWriteSpec] = []
        if n in fact_turns:
            target, fact, keyword, said, question = _FACTS[fact_turns[n]]
            ask = f"{said} {ask}"
            probes.append(ProbeSpec(fact=fact, target=target, turn=n, keyword=keyword, question=question))
            # The scripted assistant does not save planted facts during the turn: whether
            # they survive the compression is then up to the flush (and the summary).
        elif n % 5 == 0:
            replies.append(
                ReplySpec(
                    tool_calls=(
                        ToolCallSpec(
                            name="memory",
                            arguments={
                                "action": "add",
                                "target": "memory",
                                "content": f"Working note {n}: {topic} {detail[:60]}",
                            },
                        ),
                    )
                )
            )
        if n % 3 == 0:
            replies.append(ReplySpec(tool_calls=(_search_call(rng, topic),)))
        if n % 4 == 1:
            replies.append(ReplySpec(tool_calls=(ToolCallSpec(name="skills_list", arguments={}),)))
        replies.append(ReplySpec(say=_answer(rng, topic, detail, 3 + rng.randrange(4))))
        if n % 25 == 12:
            writes.append(
                MemoryWriteSpec(target="memory", content=_OUT_OF_BAND[(n // 25) % len(_OUT_OF_BAND)])
            )
        specs.append(
            TurnSpec(user=ask, replies=tuple(replies), memory_writes=tuple(writes), compress=n == compress_at)
        )
    return Scenario(
        name="synthetic-200" if turns == 200 else f"synthetic-{turns}",
        description=(
            "A long agentic working session: tool calls in most turns, a memory write every five turns, "
            "personal facts planted mid-session and saved by no one until the flush, out-of-band memory "
            "writes, and one forced compression near the end."
        ),
        config={
            "model": {"context_window": 200_000},
            "memory": {"memory_char_limit": 20_000, "user_char_limit": 5_000},
        },
        initial_memory=InitialMemory(
            memory=("The data project lives in the repository 'tidewater'",), user=("User's name is Dana",)
        ),
        turns=tuple(specs),
        probes=tuple(probes),
    )


BUILTIN_SCENARIOS = {"synthetic-200": synthetic_200}


def builtin_scenario(name: str) -> Scenario | None:
    """A built-in scenario by name, or None."""
    factory = BUILTIN_SCENARIOS.get(name)
    return None if factory is None else factory()
