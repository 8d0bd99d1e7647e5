"""What each of the flush's checks did on a retention run: facts lost, wrong memories stopped.

A retention run (`benchmarks/retention_locomo.py --facts FILE --json OUT`) keeps every entry
each arm's flush saved and every candidate it refused, with the reason. This script reads
that JSON and the facts file (no model) and, per check — grounding, "already in memory",
each meaning check (`memory.grounding.meaning_problem`: the opposite of what the user said,
someone else's, hypothetical, a question, temporary, corrected), copied chat lines —
counts the candidates it refused, how many of them held a planted fact (the gain the check
cost) and how many were wrong memories by the file's `must_not` traps (the wrong memories it
stopped). The saved entries are scored the same way: facts kept, wrong memories let through.

    python benchmarks/check_effects.py --facts benchmarks/facts_heldout3.yaml --json OUT.json

Last line: `checks_refused N facts_lost F wrong_stopped W saved_wrong S`.

With `--rejudge`, every candidate of the run (saved or refused) is judged again by today's
checks (`read_flush_reply` against the file's user messages: the filler's lines are not in
it, so a filler entry reads as ungrounded, which moves no count): what the checks as they
are now would have kept. Last line: `rejudged_kept K facts_kept F wrong_kept W`.

Without `--json` (no run at all) it asks the meaning checks alone about the facts file: each
planted fact's user message, as an entry, must pass; each trap's first alternative, as "The
user uses …", must be refused. Last line: `sentences_refused R of N traps_stopped T of M`.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

from harness.compress.flush import read_flush_reply
from harness.experiments.retention.facts import (
    FactConversation,
    chat_lines,
    fact_in,
    load_facts,
    wrong_memory,
)
from harness.types import Message, ModelReply
from memory.grounding import Said, meaning_problem

CHECKS = (
    ("opposite", "the opposite of what the user said"),
    ("someone else", "about someone else"),
    ("hypothetical", "hypothetical"),
    ("question", "a question the user asked"),
    ("temporary", "temporary"),
    ("corrected", "corrected"),
    ("already in memory", "already in memory"),
    ("copied line", "a chat line copied whole"),
    ("grounding", "not in the conversation"),
)


def _check(reason: str) -> str:
    return next((name for name, prefix in CHECKS if reason.startswith(prefix)), "other")


def _judge(entry: str, convs: tuple[FactConversation, ...], lines: tuple[str, ...]) -> tuple[bool, bool]:
    """(holds a planted fact, is a wrong memory)."""
    fact = any(fact_in(entry, f) for c in convs for f in c.facts)
    rules = [r for c in convs for r in c.must_not]
    return fact, wrong_memory(entry, rules, lines) is not None


def effects(state: dict[str, object], convs: tuple[FactConversation, ...]) -> list[str]:
    """The per-check table and the totals line."""
    lines = chat_lines((role, text) for c in convs for role, text in c.messages)
    refused: Counter[str] = Counter()
    lost: Counter[str] = Counter()
    stopped: Counter[str] = Counter()
    saved = saved_facts = saved_wrong = 0
    arms = state.get("arms")
    for arm in arms if isinstance(arms, list) else []:
        if not isinstance(arm, dict) or arm.get("arm") == "off":
            continue
        for snap in arm.get("snapshots") or []:
            for text in snap.get("refused") or []:
                entry, _, reason = str(text).rpartition(" — ")
                check = _check(reason)
                fact, wrong = _judge(entry, convs, lines)
                refused[check] += 1
                lost[check] += fact
                stopped[check] += wrong
            for text in snap.get("saved") or []:
                entry = str(text).partition(": ")[2]
                fact, wrong = _judge(entry, convs, lines)
                saved += 1
                saved_facts += fact
                saved_wrong += wrong
    out = [f"{'check':<20}{'refused':>8}{'facts lost':>12}{'wrong stopped':>15}"]
    for name in [n for n, _ in CHECKS] + ["other"]:
        if refused[name]:
            out.append(f"{name:<20}{refused[name]:>8}{lost[name]:>12}{stopped[name]:>15}")
    out.append(f"saved {saved} entries: {saved_facts} hold a planted fact, {saved_wrong} wrong memories")
    total = sum(refused.values())
    out.append(
        f"checks_refused {total} facts_lost {sum(lost.values())} wrong_stopped {sum(stopped.values())} "
        f"saved_wrong {saved_wrong}"
    )
    return out


def sentences(convs: tuple[FactConversation, ...]) -> list[str]:
    """The meaning checks alone on the file's own sentences and traps (see the module)."""
    refused = facts = stopped = traps = 0
    out: list[str] = []
    for c in convs:
        said = Said("\n".join(text for role, text in c.messages if role == "user"))
        for f in c.facts:
            first = next((t for role, t in c.messages if role == "user" and fact_in(t, f)), None)
            if first is not None:
                facts += 1
                problem = meaning_problem(first, said)
                if problem is not None:
                    refused += 1
                    out.append(f"refused {c.id}/{f.id}: {problem}")
        for rule in c.must_not:
            traps += 1
            if meaning_problem("The user uses " + " ".join(rule.match[0]), said) is not None:
                stopped += 1
            else:
                out.append(f"let through {c.id}/{rule.id}")
    return [*out, f"sentences_refused {refused} of {facts} traps_stopped {stopped} of {traps}"]


def _candidates(state: dict[str, object]) -> list[str]:
    out: list[str] = []
    arms = state.get("arms")
    for arm in arms if isinstance(arms, list) else []:
        if not isinstance(arm, dict) or arm.get("arm") == "off":
            continue
        for snap in arm.get("snapshots") or []:
            out += [str(t).rpartition(" — ")[0] for t in snap.get("refused") or []]
            out += [str(t).partition(": ")[2] for t in snap.get("saved") or []]
    return [c for c in dict.fromkeys(out) if c.strip() and not c.lstrip().startswith("{")]


def rejudge(state: dict[str, object], convs: tuple[FactConversation, ...]) -> list[str]:
    """Every candidate of the run judged by today's checks (see the module)."""
    lines = chat_lines((role, text) for c in convs for role, text in c.messages)
    said = "\n".join(text for c in convs for role, text in c.messages if role == "user")
    kept = facts = wrong = 0
    out: list[str] = []
    for candidate in _candidates(state):
        line = " ".join(candidate.split())
        reply = ModelReply(message=Message("assistant", f"user: {line}"))
        reading = read_flush_reply("text_list", reply, said=said)
        if not reading.writes:
            continue
        kept += 1
        fact, is_wrong = _judge(line, convs, lines)
        facts += fact
        wrong += is_wrong
        if is_wrong:
            out.append(f"kept wrong: {line}")
    return [*out, f"rejudged_kept {kept} facts_kept {facts} wrong_kept {wrong}"]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--facts", type=Path, required=True, help="the facts file the run planted")
    p.add_argument("--json", type=Path, help="the run's --json output (none: the checks on the file alone)")
    p.add_argument(
        "--rejudge", action="store_true", help="judge the run's candidates again by today's checks"
    )
    args = p.parse_args(argv)
    if args.json is None:
        print("\n".join(sentences(load_facts(args.facts))))
        return 0
    try:
        state = json.loads(args.json.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        print(f"cannot read {args.json}: {exc}; pass the --json a retention run wrote", file=sys.stderr)
        return 2
    convs = load_facts(args.facts)
    print("\n".join(rejudge(state, convs) if args.rejudge else effects(state, convs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
