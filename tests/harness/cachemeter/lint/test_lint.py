"""The lint: each habit found on a hand-made trace (and not on the same trace without it),
quoted with the changing bytes and a fix; no false alarm on keel's own frozen traces."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
from pydantic import JsonValue

from harness.cachemeter import LintReport, MeterRequest, lint
from harness.cachemeter.lint._lint import LINT_SCHEMA
from harness.cachemeter.lint._rules import HABIT_RULES
from harness.cachemeter.traces import request_from_chat
from harness.trace import TraceSlot, record_for_request
from harness.types import Message, ModelRequest, ToolSpec

SYSTEM = "You are a careful assistant. Answer briefly and say when you are unsure."
TOOLS: list[JsonValue] = [
    {"type": "function", "function": {"name": "search", "description": "Search the web.", "parameters": {}}},
    {"type": "function", "function": {"name": "read", "description": "Read a file.", "parameters": {}}},
]


def line(messages: Sequence[Mapping[str, object]], **fields: object) -> dict[str, JsonValue]:
    """A chat JSONL line (built through JSON, as a trace file would hold it)."""
    body: dict[str, JsonValue] = json.loads(json.dumps({"model": "gpt-4o", "tools": TOOLS, **fields}))
    body["messages"] = json.loads(json.dumps(list(messages)))
    return body


def requests(*lines: dict[str, JsonValue]) -> list[MeterRequest]:
    return [request_from_chat(obj, line=i) for i, obj in enumerate(lines, 1)]


def conversation(systems: list[str], **fields: object) -> list[MeterRequest]:
    """One growing conversation: request k has system `systems[k]` and k user/assistant pairs."""
    history: list[dict[str, str]] = []
    out = []
    for k, system in enumerate(systems):
        history.append({"role": "user", "content": f"question {k}"})
        out.append(line([{"role": "system", "content": system}, *history], **fields))
        history.append({"role": "assistant", "content": f"answer {k}"})
    return requests(*out)


def rules(report: LintReport) -> list[str]:
    return [f.rule for f in report.findings]


# ---------------------------------------------------------------- volatile values in the system prompt

VOLATILE = [
    ("system-clock", "Current time: 12:03:07 UTC.", "Current time: 12:04:11 UTC.", "12:04:11"),
    ("system-date", "Today is Monday, November 23.", "Today is Tuesday, November 24.", "Tuesday"),
    ("system-counter", "This is turn 3 of the session.", "This is turn 4 of the session.", "turn 4"),
    (
        "system-random-id",
        "Request id: 3f9a2c1be07d44aa.",
        "Request id: 9c0d11aa2f3e5b17.",
        "9c0d11aa2f3e5b17",
    ),
    ("system-usage", "Context used: 43% of the window.", "Context used: 47% of the window.", "47%"),
    ("system-edited", "Be formal.", "Be casual and friendly.", "Be casual"),
]


@pytest.mark.parametrize(("rule", "before", "after", "quoted"), VOLATILE, ids=[v[0] for v in VOLATILE])
def test_a_changing_value_in_the_system_prompt_is_named_quoted_and_given_a_fix(
    rule: str, before: str, after: str, quoted: str
) -> None:
    report = lint(conversation([f"{SYSTEM}\n{before}", f"{SYSTEM}\n{after}", f"{SYSTEM}\n{after}"]))
    assert rules(report) == [rule]
    (finding,) = report.findings
    assert finding.severity == "habit"
    assert finding.fix
    (occ,) = finding.occurrences
    assert (occ.line, occ.previous_line) == (2, 1)
    assert occ.where == "system prompt"
    assert occ.removed == (before,)
    assert any(quoted in text for text in occ.added)


@pytest.mark.parametrize(("rule", "before", "after", "quoted"), VOLATILE, ids=[v[0] for v in VOLATILE])
def test_the_same_system_prompt_replayed_unchanged_is_clean(
    rule: str, before: str, after: str, quoted: str
) -> None:
    report = lint(conversation([f"{SYSTEM}\n{before}"] * 3))
    assert report.findings == ()
    assert report.requests == 3


def test_a_clock_is_found_in_a_long_one_line_system_prompt_and_quoted_around_the_change() -> None:
    long = "x " * 400
    report = lint(conversation([f"{long}time 09:15:00 {long}", f"{long}time 09:16:30 {long}"]))
    (finding,) = report.findings
    assert finding.rule == "system-clock"
    (occ,) = finding.occurrences
    assert "09:16:30" in occ.added[0]
    assert len(occ.added[0]) < 130


def test_a_clock_that_changes_between_sessions_is_found_but_a_new_date_is_not() -> None:
    def session(sid: str, system: str) -> dict[str, JsonValue]:
        return line(
            [{"role": "system", "content": system}, {"role": "user", "content": "hi"}], session_id=sid
        )

    clock = lint(requests(session("a", "Started 09:15. " + SYSTEM), session("b", "Started 10:40. " + SYSTEM)))
    assert rules(clock) == ["system-clock"]
    date = lint(
        requests(session("a", "Date: 2026-11-23. " + SYSTEM), session("b", "Date: 2026-11-24. " + SYSTEM))
    )
    assert date.findings == ()


# ---------------------------------------------------------------- memory in the system prompt


def keel_record(
    system: str, memory: tuple[int, int], n: int, *, purpose: str = "turn", session: str = "s"
) -> str:
    req = ModelRequest(
        system=system,
        messages=tuple(Message("user", f"q{k}") for k in range(n)),
        tools=(ToolSpec("memory", "Save a durable fact."),),
        purpose=purpose,  # type: ignore[arg-type]  # test builder: callers pass valid purposes
    )
    slots = [
        TraceSlot(name="identity", start=0, end=memory[0]),
        TraceSlot(name="memory", start=memory[0], end=memory[1]),
        TraceSlot(name="session", start=memory[1], end=len(system)),
    ]
    return record_for_request(
        req, session_id=session, turn=n, model="m", slots=slots, timestamp=float(n)
    ).model_dump_json()


def memory_system(entries: list[str]) -> tuple[str, tuple[int, int]]:
    used = len("\n§\n".join(entries))
    block = f"MEMORY (your personal notes) [{used * 100 // 2200}% — {used:,}/2,200 chars]\n" + "\n§\n".join(
        entries
    )
    head = "You are keel.\n\n"
    return f"{head}{block}\n\nConversation started: Monday", (len(head), len(head) + len(block))


def test_a_memory_write_shown_in_the_prompt_mid_session_is_quoted_with_its_entry(tmp_path: Path) -> None:
    before, slot_a = memory_system(["quill uses PostgreSQL 16"])
    after, slot_b = memory_system(["quill uses PostgreSQL 16", "Sam deploys on Fridays only"])
    trace = tmp_path / "live.jsonl"
    trace.write_text(
        "\n".join([keel_record(before, slot_a, 1), keel_record(after, slot_b, 2)]) + "\n", encoding="utf-8"
    )
    report = lint(trace)
    assert rules(report) == ["memory-write"]
    (occ,) = report.findings[0].occurrences
    assert occ.where == "system prompt, slot 'memory'"
    assert occ.removed == ("MEMORY (your personal notes) [1% — 24/2,200 chars]",)
    assert occ.added == ("MEMORY (your personal notes) [2% — 54/2,200 chars]", "Sam deploys on Fridays only")
    assert "snapshot_policy: frozen" in report.findings[0].fix


def test_a_memory_section_of_a_chat_trace_is_recognized_by_its_heading() -> None:
    base = f"{SYSTEM}\n\n## Memory\n- likes tea\n"
    report = lint(conversation([base, base + "- uses vim\n"]))
    assert rules(report) == ["memory-write"]
    assert report.findings[0].occurrences[0].added == ("- uses vim",)


def test_the_rebuild_after_a_compression_is_allowed(tmp_path: Path) -> None:
    before, slot_a = memory_system(["quill uses PostgreSQL 16"])
    after, slot_b = memory_system(["quill uses PostgreSQL 16", "Sam deploys on Fridays only"])
    lines = [
        keel_record(before, slot_a, 1),
        keel_record(before, slot_a, 2),
        keel_record("Summarize.", (0, 0), 1, purpose="summary"),
        keel_record(after, slot_b, 1, session="child"),  # the child session: new memory, short history
        keel_record(after, slot_b, 2, session="child"),
    ]
    trace = tmp_path / "t.jsonl"
    trace.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert lint(trace).findings == ()


# ---------------------------------------------------------------- tools and model


def test_a_reordered_tool_list_is_found_and_a_stable_one_is_not() -> None:
    user = [{"role": "user", "content": "hi"}]
    swapped = [TOOLS[1], TOOLS[0]]
    report = lint(requests(line(user), line(user, tools=swapped)))
    assert rules(report) == ["tools-order"]
    occ = report.findings[0].occurrences[0]
    assert (occ.removed, occ.added) == (("search, read",), ("read, search",))
    assert lint(requests(line(user), line(user))).findings == ()


def test_a_tool_description_changed_between_requests_is_quoted() -> None:
    user = [{"role": "user", "content": "hi"}]
    changed = json.loads(json.dumps(TOOLS))
    changed[0]["function"]["description"] = "Search the web (3 searches left)."
    report = lint(requests(line(user), line(user, tools=changed)))
    assert rules(report) == ["tools-changed"]
    occ = report.findings[0].occurrences[0]
    assert occ.where == "tool 'search'"
    assert any("3 searches left" in text for text in occ.added)


def test_a_tool_added_mid_session_is_named() -> None:
    user = [{"role": "user", "content": "hi"}]
    write: JsonValue = {
        "type": "function",
        "function": {"name": "write", "description": "Write.", "parameters": {}},
    }
    more = [*TOOLS, write]
    report = lint(requests(line(user), line(user, tools=more)))
    occ = report.findings[0].occurrences[0]
    assert (report.findings[0].rule, occ.added) == ("tools-changed", ("tool 'write'",))


def test_a_model_switch_mid_conversation_is_found() -> None:
    lines = conversation([SYSTEM, SYSTEM])
    switched = [
        lines[0],
        request_from_chat(
            {
                **line([]),
                "model": "gpt-4o-mini",
                "messages": [
                    {"role": "system", "content": SYSTEM},
                    {"role": "user", "content": "question 0"},
                    {"role": "assistant", "content": "answer 0"},
                    {"role": "user", "content": "question 1"},
                ],
            },
            line=2,
        ),
    ]
    report = lint(switched)
    assert rules(report) == ["model-switch"]
    assert report.findings[0].occurrences[0].added == ("gpt-4o-mini",)
    assert lint(lines).findings == ()


# ---------------------------------------------------------------- history rewritten in place


def call(arguments: str) -> Mapping[str, object]:
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "search", "arguments": arguments}}
        ],
    }


def replay(first: Sequence[Mapping[str, object]], again: Sequence[Mapping[str, object]]) -> LintReport:
    tail = [{"role": "user", "content": "and then?"}]
    return lint(requests(line(first), line([*again, *tail])))


def test_tool_arguments_dumped_again_are_found_and_replayed_bytes_are_not() -> None:
    sent = [{"role": "user", "content": "find tea"}, call('{"q": "tea", "n": 3}')]
    redumped = [{"role": "user", "content": "find tea"}, call('{"n":3,"q":"tea"}')]
    report = replay(sent, redumped)
    assert rules(report) == ["history-tool-args"]
    occ = report.findings[0].occurrences[0]
    assert (occ.where, occ.removed, occ.added) == (
        "message 1 (assistant)",
        ('{"q": "tea", "n": 3}',),
        ('{"n":3,"q":"tea"}',),
    )
    assert replay(sent, sent).findings == ()


def test_reasoning_stripped_after_it_was_sent_is_found() -> None:
    sent = [
        {"role": "user", "content": "2+2?"},
        {"role": "assistant", "content": "<think>add them</think>It is 4."},
    ]
    stripped = [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "It is 4."}]
    report = replay(sent, stripped)
    assert rules(report) == ["history-reasoning"]
    assert report.findings[0].occurrences[0].removed == ("<think>add them</think>",)
    assert replay(sent, sent).findings == ()


def test_recall_rendered_again_into_an_old_message_is_found() -> None:
    fenced = "<memory-context>\nSam likes tea\n</memory-context>\n\nwhat should I drink?"
    sent = [{"role": "user", "content": fenced}, {"role": "assistant", "content": "Tea."}]
    dropped = [{"role": "user", "content": "what should I drink?"}, {"role": "assistant", "content": "Tea."}]
    report = replay(sent, dropped)
    assert rules(report) == ["history-recall"]
    assert "Sam likes tea" in report.findings[0].occurrences[0].removed
    assert replay(sent, sent).findings == ()


def test_an_edited_message_and_a_cut_history_are_history_rewritten() -> None:
    sent = [{"role": "user", "content": "my name is Sam"}, {"role": "assistant", "content": "Hi Sam."}]
    edited = [
        {"role": "user", "content": "my name is [redacted]"},
        {"role": "assistant", "content": "Hi Sam."},
    ]
    report = replay(sent, edited)
    assert rules(report) == ["history-rewritten"]
    assert report.findings[0].occurrences[0].added == ("my name is [redacted]",)
    long = [{"role": "user", "content": f"m{k}"} for k in range(8)]
    cut = lint(requests(line(long), line([*long[3:], {"role": "user", "content": "next"}])))
    assert rules(cut) == ["history-rewritten"]
    assert cut.findings[0].occurrences[0].where == "message 0 (user)"


def test_a_new_conversation_in_a_chat_trace_is_not_a_rewrite() -> None:
    first = [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}]
    report = lint(requests(line(first), line([{"role": "user", "content": "a different chat"}])))
    assert report.findings == ()


# ---------------------------------------------------------------- keel's own traces


def test_no_false_alarm_on_keels_frozen_policy_trace(keel_traces: dict[str, Path]) -> None:
    report = lint(keel_traces["frozen"])
    assert report.requests > 40
    assert report.habits == ()
    # The default memory_only flush sends the memory tool alone: a note, not a failure.
    assert [f.rule for f in report.notes] == ["flush-prefix"]
    # Its pieces go with a system prompt of their own: named as a prefix it does not share,
    # never mistaken for a memory write.
    assert any("system prompt" in o.where for o in report.notes[0].occurrences)


@pytest.mark.parametrize("policy", ["live", "invalidate_on_write"])
def test_memory_re_read_mid_session_is_found_on_keels_own_traces(
    policy: str, keel_traces: dict[str, Path]
) -> None:
    report = lint(keel_traces[policy])
    assert [f.rule for f in report.habits] == ["memory-write"]
    occurrences = report.habits[0].occurrences
    assert len(occurrences) >= 3
    assert all(o.where.startswith("system prompt, slot 'memory'") or "'user'" in o.where for o in occurrences)
    assert any(text.startswith("Working note") for o in occurrences for text in o.added)


def test_the_json_report_lists_every_occurrence(keel_traces: dict[str, Path]) -> None:
    data = lint(keel_traces["live"]).to_json()
    assert data["schema"] == LINT_SCHEMA
    findings = data["findings"]
    assert isinstance(findings, list)
    first = findings[0]
    assert isinstance(first, dict)
    assert first["rule"] == "memory-write"
    assert first["count"] == len(first["occurrences"])  # type: ignore[arg-type]  # a list in this schema
    assert set(first) == {"rule", "severity", "title", "fix", "count", "occurrences"}


def test_every_rule_has_a_title_and_a_fix() -> None:
    from harness.cachemeter.lint._rules import RULES

    assert set(RULES) == set(HABIT_RULES)
    assert all(r.title and r.fix for r in RULES.values())


def test_tools_changed_mid_session_says_what_changed_and_the_tokens_it_cost() -> None:
    user = [{"role": "user", "content": "hi " * 400}]
    write: JsonValue = {
        "type": "function",
        "function": {"name": "write", "description": "Write.", "parameters": {}},
    }
    report = lint(requests(line(user), line(user, tools=[TOOLS[0], write])))
    finding = report.findings[0]
    assert finding.title.startswith("tools changed mid-session")
    occ = finding.occurrences[0]
    assert occ.where == "tool list: 1 added, 1 removed"
    assert occ.tokens > 300  # the whole request re-read: 1,200 characters of user text alone
    assert report.to_json()["findings"][0]["occurrences"][0]["tokens"] == occ.tokens  # type: ignore[index,call-overload]  # JSON
    reordered = lint(requests(line(user), line(user, tools=[TOOLS[1], TOOLS[0]])))
    assert reordered.findings[0].occurrences[0].tokens > 300
    assert reordered.findings[0].title == "tools changed mid-session: the same tools re-ordered"
