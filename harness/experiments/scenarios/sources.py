"""Where scenarios come from: built-in names, files, and LoCoMo conversations.

`scenario_from_locomo` turns one LoCoMo sample into a scenario at run time: the first
speaker's utterances become user turns, the second speaker's the scripted replies, and a few
question/answer annotations become fact-retention probes. LoCoMo is licensed separately
(CC BY-NC 4.0): nothing derived from it is ever stored in this repository.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import JsonValue

from harness.errors import ConfigError
from harness.experiments.scenarios.builtin import BUILTIN_SCENARIOS, builtin_scenario
from harness.experiments.scenarios.spec import ProbeSpec, ReplySpec, Scenario, TurnSpec, load_scenario

__all__ = ["resolve_scenario", "scenario_from_locomo", "truncate_scenario"]


def resolve_scenario(name_or_path: str) -> Scenario:
    """A built-in scenario by name, or a scenario file.

    Raises:
        ConfigError: neither a built-in name nor a readable, valid scenario file.
    """
    builtin = builtin_scenario(name_or_path)
    if builtin is not None:
        return builtin
    path = Path(name_or_path)
    if not path.exists():
        names = ", ".join(sorted(BUILTIN_SCENARIOS))
        raise ConfigError(f"no scenario {name_or_path!r}: give a YAML/JSON file or a built-in name ({names})")
    return load_scenario(path)


def truncate_scenario(scenario: Scenario, turns: int) -> Scenario:
    """The first `turns` turns; later probes are dropped, and a compression is forced on the
    last kept turn if the original had one later (so short runs still compress)."""
    if turns >= len(scenario.turns):
        return scenario
    kept = list(scenario.turns[:turns])
    if any(t.compress for t in scenario.turns[turns:]) and not any(t.compress for t in kept):
        kept[-1] = kept[-1].model_copy(update={"compress": True})
    return scenario.model_copy(
        update={
            "name": f"{scenario.name}[:{turns}]",
            "turns": tuple(kept),
            "probes": tuple(p for p in scenario.probes if p.turn <= turns),
        }
    )


def _sessions(conv: dict[str, JsonValue]) -> list[list[dict[str, JsonValue]]]:
    keys = sorted(
        (k for k in conv if k.startswith("session_") and not k.endswith("date_time")),
        key=lambda k: int(k.split("_")[1]),
    )
    out: list[list[dict[str, JsonValue]]] = []
    for k in keys:
        value = conv[k]
        if isinstance(value, list):
            out.append([t for t in value if isinstance(t, dict)])
    return out


def scenario_from_locomo(
    path: Path, sample_id: str, *, sessions: int | None = None, compress_at: float = 0.8
) -> Scenario:
    """Build a scenario from one LoCoMo sample.

    Args:
        sessions: use only the first N dated sessions.
        compress_at: force one compression after this fraction of the turns.

    Raises:
        ConfigError: the file is not LoCoMo-shaped or the sample id is unknown.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(f"cannot read LoCoMo data {str(path)!r}: {exc}") from exc
    samples = data if isinstance(data, list) else []
    sample = next((s for s in samples if isinstance(s, dict) and s.get("sample_id") == sample_id), None)
    if sample is None:
        ids = [s.get("sample_id") for s in samples if isinstance(s, dict)]
        raise ConfigError(f"sample {sample_id!r} is not in {str(path)!r}; it holds {ids!r}")
    conv = sample.get("conversation")
    if not isinstance(conv, dict):
        raise ConfigError(f"sample {sample_id!r} has no conversation")
    speaker_a = conv.get("speaker_a")
    turns: list[TurnSpec] = []
    dia_turn: dict[str, int] = {}
    pending_user: list[str] = []
    pending_ids: list[str] = []
    for session in _sessions(conv)[:sessions]:
        for utt in session:
            text = utt.get("text")
            dia = utt.get("dia_id")
            if not isinstance(text, str) or not text.strip():
                continue
            if utt.get("speaker") == speaker_a:
                pending_user.append(text)
                if isinstance(dia, str):
                    pending_ids.append(dia)
            elif pending_user:
                turns.append(TurnSpec(user=" ".join(pending_user), replies=(ReplySpec(say=text),)))
                for d in pending_ids:
                    dia_turn[d] = len(turns)
                if isinstance(dia, str):
                    dia_turn[dia] = len(turns)
                pending_user, pending_ids = [], []
    if not turns:
        raise ConfigError(f"sample {sample_id!r} yielded no turns")
    k = max(1, min(len(turns), round(len(turns) * compress_at)))
    turns[k - 1] = turns[k - 1].model_copy(update={"compress": True})
    probes: list[ProbeSpec] = []
    qa = sample.get("qa")
    for item in qa if isinstance(qa, list) else []:
        if not isinstance(item, dict) or len(probes) >= 5:
            continue
        answer, evidence, question = item.get("answer"), item.get("evidence"), item.get("question")
        if not (isinstance(answer, str | int) and isinstance(evidence, list) and isinstance(question, str)):
            continue
        answer = str(answer)
        planted = [dia_turn[e] for e in evidence if isinstance(e, str) and e in dia_turn]
        if len(answer.split()) > 3 or not planted or not 0.2 * k <= planted[0] < k:
            continue
        probes.append(
            ProbeSpec(
                fact=f"{question} {answer}", target="user", turn=planted[0], keyword=answer, question=question
            )
        )
    return Scenario(
        name=f"locomo-{sample_id}",
        description=f"LoCoMo {sample_id} (CC BY-NC 4.0), built at run time",
        config={"model": {"context_window": 200_000}},
        turns=tuple(turns),
        probes=tuple(probes),
    )
