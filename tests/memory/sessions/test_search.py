"""The session_search tool: every mode, lineage grouping, caps, summaries, bad input."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from pydantic import JsonValue

from memory import (
    SessionDB,
    SessionSearchTool,
    SessionStore,
    StoredMessage,
    open_session_db,
    session_search_schema,
)

T0 = 1_700_000_000.0


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[SessionDB]:
    async with open_session_db(tmp_path / "state.db") as store:
        yield store


async def add_session(
    db: SessionDB, sid: str, texts: list[str], *, parent: str | None = None, at: float = T0
) -> list[int]:
    await db.create_session(sid, source="cli", model="m1", started_at=at, parent_session_id=parent, title=sid)
    messages = [
        StoredMessage(role="user" if i % 2 == 0 else "assistant", content=t, timestamp=at + i)
        for i, t in enumerate(texts)
    ]
    return await db.append_messages(sid, messages)


def tool(db: SessionDB, current: str | None = None, **kw: object) -> SessionSearchTool:
    return SessionSearchTool(db, current_session_id=lambda: current, **kw)  # type: ignore[arg-type]  # test options


async def call(t: SessionSearchTool, arguments: object) -> dict[str, JsonValue]:
    reply = await t.handle(arguments)
    payload = json.loads(reply)
    assert isinstance(payload, dict)
    return payload


def results_of(reply: dict[str, JsonValue]) -> list[dict[str, JsonValue]]:
    results = reply["results"]
    assert isinstance(results, list)
    return [r for r in results if isinstance(r, dict)]


def dicts(value: JsonValue) -> list[dict[str, JsonValue]]:
    assert isinstance(value, list)
    return [v for v in value if isinstance(v, dict)]


def ids_of(messages: JsonValue) -> list[int]:
    assert isinstance(messages, list)
    return [int(m["id"]) for m in messages if isinstance(m, dict) and isinstance(m["id"], int)]


def filler(n: int, word: str = "ordinary") -> list[str]:
    return [f"{word} message {i}" for i in range(n)]


async def test_discover_returns_five_messages_each_side_and_the_bookends(db: SessionDB) -> None:
    texts = filler(40)
    texts[20] = "we talked about the zeppelin museum"
    ids = await add_session(db, "s1", texts)
    reply = await call(tool(db), {"query": "zeppelin"})
    assert (reply["success"], reply["mode"], reply["count"]) == (True, "discover", 1)
    (result,) = results_of(reply)
    assert (result["session_id"], result["lineage_root"], result["match_message_id"]) == ("s1", "s1", ids[20])
    assert (result["source"], result["model"], result["when"]) == ("cli", "m1", "2023-11-14 22:13 UTC")
    assert ids_of(result["messages"]) == ids[15:26]
    matched = [m for m in dicts(result["messages"]) if m.get("match")]
    assert [m["id"] for m in matched] == [ids[20]]
    assert ids_of(result["bookend_start"]) == ids[:3]
    assert ids_of(result["bookend_end"]) == ids[37:]
    assert (result["messages_before"], result["messages_after"]) == (15, 14)
    assert ">>>zeppelin<<<" in str(result["snippet"])


async def test_a_lineage_counts_once_and_its_root_is_reported(db: SessionDB) -> None:
    await add_session(db, "a", ["the zeppelin plan", "ok"])
    await add_session(db, "b", ["zeppelin zeppelin details", "ok"], parent="a")
    await add_session(db, "c", ["more zeppelin", "ok"], parent="b")
    await add_session(db, "d", ["a separate zeppelin chat", "ok"])
    reply = await call(tool(db), {"query": "zeppelin", "limit": 10})
    results = reply["results"]
    assert isinstance(results, list)
    roots = sorted(str(r["lineage_root"]) for r in results if isinstance(r, dict))
    assert roots == ["a", "d"]


async def test_the_current_lineage_is_skipped(db: SessionDB) -> None:
    await add_session(db, "a", ["the zeppelin plan", "ok"])
    await add_session(db, "b", ["zeppelin details", "ok"], parent="a")
    await add_session(db, "d", ["a separate zeppelin chat", "ok"])
    reply = await call(tool(db, current="b"), {"query": "zeppelin", "limit": 10})
    results = reply["results"]
    assert isinstance(results, list)
    assert [r["session_id"] for r in results if isinstance(r, dict)] == ["d"]


async def test_an_ancestor_ended_by_compression_stays_searchable_from_its_continuation(db: SessionDB) -> None:
    await add_session(db, "a", ["the zeppelin plan in full detail", "ok"])
    await db.end_session("a", reason="compression", ended_at=T0 + 50)
    await add_session(db, "b", ["zeppelin summary only", "ok"], parent="a")
    reply = await call(tool(db, current="b"), {"query": "zeppelin", "limit": 10})
    assert [r["session_id"] for r in results_of(reply)] == ["a"]


async def test_long_messages_are_capped_and_flagged(db: SessionDB) -> None:
    texts = ["opening " + "o" * 3000, "reply", *filler(10), "zeppelin " + "z" * 9991, *filler(10)]
    ids = await add_session(db, "s1", texts)
    reply = await call(tool(db), {"query": "zeppelin"})
    results = reply["results"]
    assert isinstance(results, list)
    assert isinstance(results[0], dict)
    window = results[0]["messages"]
    assert isinstance(window, list)
    anchor = next(m for m in window if isinstance(m, dict) and m["id"] == ids[12])
    assert isinstance(anchor, dict)
    assert (anchor["truncated"], anchor["chars"], len(str(anchor["content"]))) == (True, 10_000, 4001)
    start = results[0]["bookend_start"]
    assert isinstance(start, list)
    assert isinstance(start[0], dict)
    assert (start[0]["truncated"], start[0]["chars"], len(str(start[0]["content"]))) == (True, 3008, 1201)
    assert all(isinstance(m, dict) and "truncated" not in m for m in window if m is not anchor)


async def test_limit_defaults_to_three_and_is_clamped_to_one_through_ten(db: SessionDB) -> None:
    for i in range(12):
        await add_session(db, f"s{i:02d}", [f"zeppelin story {i}", "ok"], at=T0 + i)
    t = tool(db)
    assert (await call(t, {"query": "zeppelin"}))["count"] == 3
    assert (await call(t, {"query": "zeppelin", "limit": 50}))["count"] == 10
    assert (await call(t, {"query": "zeppelin", "limit": 0}))["count"] == 1
    assert (await call(tool(db, default_limit=5), {"query": "zeppelin"}))["count"] == 5


async def test_read_returns_a_short_session_whole(db: SessionDB) -> None:
    ids = await add_session(db, "s1", filler(30))
    reply = await call(tool(db), {"session_id": "s1"})
    assert reply["mode"] == "read"
    assert ids_of(reply["messages"]) == ids
    assert "hint" not in reply
    assert isinstance(reply["session"], dict)
    assert reply["session"]["message_count"] == 30


async def test_read_of_a_long_session_gives_the_head_the_tail_and_a_scroll_hint(db: SessionDB) -> None:
    ids = await add_session(db, "s1", filler(31))
    reply = await call(tool(db), {"session_id": "s1"})
    assert ids_of(reply["messages"]) == ids[:20]
    assert ids_of(reply["messages_end"]) == ids[21:]
    assert reply["omitted"] == 1
    assert "around_message_id" in str(reply["hint"])


async def test_scroll_shows_the_window_around_a_message(db: SessionDB) -> None:
    ids = await add_session(db, "s1", filler(30))
    t = tool(db)
    reply = await call(t, {"session_id": "s1", "around_message_id": ids[10], "window": 2})
    assert (reply["mode"], reply["around_message_id"]) == ("scroll", ids[10])
    assert ids_of(reply["messages"]) == ids[8:13]
    assert (reply["messages_before"], reply["messages_after"]) == (8, 17)
    assert "bookend_start" not in reply
    wide = await call(t, {"session_id": "s1", "around_message_id": ids[10], "window": 99})
    assert ids_of(wide["messages"]) == ids[0:30][:31]  # clamped to 20 each side: the whole session
    default = await call(t, {"around_message_id": ids[10]})  # the session follows from the message
    assert ids_of(default["messages"]) == ids[5:16]


async def test_scroll_and_read_refuse_the_current_session_and_wrong_ids(db: SessionDB) -> None:
    ids = await add_session(db, "s1", filler(5))
    await add_session(db, "s2", filler(5), parent="s1")
    t = tool(db, current="s2")
    # The parent of the current session ended up summarized: reading it is allowed.
    assert (await call(t, {"session_id": "s1"}))["success"] is True
    refused = await call(t, {"session_id": "s2"})
    assert refused["success"] is False
    assert "already in your context" in str(refused["error"])
    wrong = await call(t, {"session_id": "s2", "around_message_id": ids[0]})
    assert wrong["success"] is False
    assert "not in session 's2'" in str(wrong["error"])
    missing = await call(t, {"session_id": "nope"})
    assert missing["success"] is False
    assert "no session 'nope'" in str(missing["error"])


async def test_browse_lists_recent_sessions_with_previews_outside_the_current_lineage(db: SessionDB) -> None:
    await add_session(db, "old", ["an old question about gardening", "answer"], at=T0)
    await add_session(db, "newer", ["how do I bake bread " + "x" * 200, "answer"], at=T0 + 100)
    await add_session(db, "cur-root", ["start"], at=T0 + 200)
    await add_session(db, "cur", ["continued"], parent="cur-root", at=T0 + 300)
    reply = await call(tool(db, current="cur"), {})
    assert reply["mode"] == "browse"
    sessions = reply["sessions"]
    assert isinstance(sessions, list)
    assert [s["session_id"] for s in sessions if isinstance(s, dict)] == ["newer", "old"]
    first = sessions[0]
    assert isinstance(first, dict)
    assert str(first["preview"]).startswith("how do I bake bread")
    assert len(str(first["preview"])) == 80
    assert (await call(tool(db, current="cur"), {"limit": 1}))["count"] == 1


async def test_browse_looks_past_a_long_current_lineage(db: SessionDB) -> None:
    await add_session(db, "elsewhere", ["an older topic"], at=T0)
    parent = None
    for i in range(25):  # a long conversation compressed 24 times, all more recent
        await add_session(db, f"c{i:02d}", [f"part {i}"], parent=parent, at=T0 + 10 + i)
        parent = f"c{i:02d}"
    reply = await call(tool(db, current=parent), {"limit": 3})
    assert [s["session_id"] for s in dicts(reply["sessions"])] == ["elsewhere"]


async def test_an_empty_store_answers_every_mode_politely(db: SessionDB) -> None:
    t = tool(db)
    found = await call(t, {"query": "anything"})
    assert (found["success"], found["count"], found["message"]) == (True, 0, "No matching sessions found.")
    browse = await call(t, None)
    assert (browse["success"], browse["count"], browse["message"]) == (True, 0, "No past sessions yet.")


BAD_ARGUMENTS: list[tuple[object, str]] = [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "invalid arguments"),
    ({"query": "x", "surprise": 1}, "surprise"),
    ({"limit": "many"}, "limit"),
    ({"around_message_id": "abc"}, "around_message_id"),
    ({"query": "x", "session_id": "s1"}, "not both"),
    ({"around_message_id": 999_999}, "not in session"),
    ({"around_message_id": 2**70}, "around_message_id"),
    ({"session_id": "\ud800"}, "no session '\ufffd'"),
    (42, "invalid arguments"),
]


async def test_bad_arguments_come_back_as_errors(db: SessionDB) -> None:
    # A loop, not parametrize: async tests here cannot be parametrized (see the report).
    for arguments, fragment in BAD_ARGUMENTS:
        reply = await call(tool(db), arguments)
        assert reply["success"] is False, arguments
        assert fragment in str(reply["error"]), (arguments, reply)


HOSTILE = [
    '"',
    '""',
    "*",
    "**",
    "NOT",
    "AND OR NOT",
    "NEAR(a b, 3)",
    "a:b",
    "-x",
    "^start",
    "' OR 1=1 --",
    "%_%",
    "\\",
    "\x00\x01\x02",
    "\ud800 lone surrogate",
    "😀 emoji",
    "中",
    "中文",
    "x" * 10_000,
    "word " * 3000,
    "(((((((((",
    '"unbalanced phrase',
    "{col1 col2}: x",
    "lone \udfff half",
]


async def test_hostile_queries_never_raise(db: SessionDB) -> None:
    await add_session(db, "s1", ["the chat-send script", "中文搜索引擎 works", "100% done"])
    for query in HOSTILE:
        for strategy in ("all_terms", "any_terms", "best"):
            reply = await call(tool(db, strategy=strategy), {"query": query})
            assert reply["success"] is True, (query, reply)


async def test_a_failing_summarizer_falls_back_to_the_raw_window(db: SessionDB) -> None:
    await add_session(db, "good", ["zeppelin plans for spring", "ok"])
    await add_session(db, "bad", ["zeppelin crash report", "ok"], at=T0 + 1)
    seen: list[tuple[str, str]] = []

    async def summarizer(topic: str, transcript: str) -> str:
        seen.append((topic, transcript))
        if "crash" in transcript:
            raise ConnectionError("auxiliary model unreachable")
        return "They planned a zeppelin trip."

    reply = await call(tool(db, summarize=True, summarizer=summarizer), {"query": "zeppelin", "limit": 5})
    results = {str(r["session_id"]): r for r in results_of(reply)}
    assert results["good"]["summary"] == "They planned a zeppelin trip."
    assert "messages" not in results["good"]
    assert "summary" not in results["bad"]
    assert results["bad"]["note"] == "[Raw window — summarization failed]"
    assert "auxiliary model unreachable" in str(results["bad"]["summary_error"])
    assert ids_of(results["bad"]["messages"])  # the raw window is still there
    assert {topic for topic, _ in seen} == {"zeppelin"}
    assert any("[USER]: zeppelin plans for spring" in text for _, text in seen)


async def test_summaries_run_at_most_max_concurrency_at_once(db: SessionDB) -> None:
    for i in range(6):
        await add_session(db, f"s{i}", [f"zeppelin {i}", "ok"], at=T0 + i)
    running = 0
    peak = 0

    async def summarizer(topic: str, transcript: str) -> str:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await anyio.sleep(0.02)
        running -= 1
        return "summary"

    t = tool(db, summarize=True, summarizer=summarizer, max_concurrency=2)
    reply = await call(t, {"query": "zeppelin", "limit": 6})
    assert reply["count"] == 6
    assert peak == 2


async def test_a_slow_summary_times_out_into_the_raw_window(db: SessionDB) -> None:
    await add_session(db, "s1", ["zeppelin", "ok"])

    async def summarizer(topic: str, transcript: str) -> str:
        await anyio.sleep(5)
        return "late"

    t = tool(db, summarize=True, summarizer=summarizer, summary_timeout_s=0.05)
    reply = await call(t, {"query": "zeppelin"})
    results = reply["results"]
    assert isinstance(results, list)
    assert isinstance(results[0], dict)
    assert results[0]["note"] == "[Raw window — summarization failed]"


def test_summarize_without_a_summarizer_is_refused_at_construction() -> None:
    with pytest.raises(ValueError, match="needs a summarizer"):
        SessionSearchTool(None, current_session_id=lambda: None, summarize=True)  # type: ignore[arg-type]  # never used


async def test_an_oversized_reply_sheds_bookends_then_windows_from_the_bottom(db: SessionDB) -> None:
    for i in range(3):
        await add_session(db, f"s{i}", [f"zeppelin {i} " + "w" * 3000 for _ in range(20)], at=T0 + i)
    reply = await call(tool(db, max_reply_chars=45_000), {"query": "zeppelin", "limit": 3})
    assert len(json.dumps({"results": reply["results"]}, ensure_ascii=False, separators=(",", ":"))) <= 45_000
    results = results_of(reply)
    assert all("bookend_start" not in r for r in results)
    assert results[-1]["detail"] == "compact"
    assert len(dicts(results[-1]["messages"])) == 1
    assert "detail" not in results[0]


async def test_a_store_failure_is_an_error_reply(tmp_path: Path) -> None:
    store = await SessionDB.open(tmp_path / "state.db")
    await store.aclose()
    reply = await call(tool(store), {"query": "x"})
    assert reply["success"] is False
    assert "closed" in str(reply["error"])


def test_the_schema_names_the_tool_and_its_parameters() -> None:
    schema = session_search_schema("Search past sessions.")
    assert schema["name"] == "session_search"
    assert schema["description"] == "Search past sessions."
    parameters = schema["parameters"]
    assert isinstance(parameters, dict)
    assert isinstance(parameters["properties"], dict)
    assert set(parameters["properties"]) == {
        "query",
        "limit",
        "session_id",
        "around_message_id",
        "window",
        "message_id",
        "offset",
    }
    assert parameters["additionalProperties"] is False


def test_the_shipped_description_and_guidance_load() -> None:
    from prompts._text import load_text

    description = load_text("tool_session_search")
    guidance = load_text("guidance_session_search")
    assert "around_message_id" in description
    assert "session_search" in guidance
    assert session_search_schema(description)["description"] == description


async def test_message_mode_reads_one_message_whole_a_page_at_a_time_even_in_the_current_session(
    store: SessionStore,
) -> None:
    await store.create_session("now", source="cli", started_at=T0)
    body = "".join(f'line {i}: "quoted"\n' for i in range(600))
    [mid] = await store.append_messages(
        "now", [StoredMessage(role="tool", content=body, timestamp=T0, tool_name="run_tests")]
    )
    t = SessionSearchTool(store, current_session_id=lambda: "now", page_chars=3_000)
    pages: list[str] = []
    offset = 100
    while True:
        reply = await call(t, {"message_id": mid, "offset": offset})
        assert (reply["mode"], reply["session_id"], reply["tool_name"]) == ("message", "now", "run_tests")
        assert reply["chars"] == len(body) and reply["offset"] == offset
        content = reply["content"]
        assert isinstance(content, str)
        # measured as sent: quotes and newlines are escaped in the reply
        assert len(json.dumps(content, ensure_ascii=False)) <= 3_000
        pages.append(content)
        if "next_offset" not in reply:
            break
        next_offset = reply["next_offset"]
        assert isinstance(next_offset, int) and str(next_offset) in str(reply["hint"])
        offset = next_offset
    assert len(pages) > 3 and "".join(pages) == body[100:]
    past_end = await call(t, {"message_id": mid, "offset": 10**9})
    assert past_end["content"] == "" and "next_offset" not in past_end


async def test_message_mode_refuses_bad_combinations_and_other_users_messages(db: SessionDB) -> None:
    ids = await add_session(db, "s1", filler(3))
    await db.create_session("theirs", source="cli", started_at=T0, user_id="bob")
    [bobs] = await db.append_messages("theirs", [StoredMessage(role="user", content="secret", timestamp=T0)])
    t = SessionSearchTool(db, current_session_id=lambda: "s1", user_ids=[""])
    cases: list[tuple[dict[str, object], str]] = [
        ({"offset": 5}, "offset goes with message_id"),
        ({"message_id": ids[0], "query": "x"}, "without query"),
        ({"message_id": ids[0], "around_message_id": ids[1]}, "without query or around_message_id"),
        ({"message_id": ids[0], "session_id": "other"}, f"no message {ids[0]}"),
        ({"message_id": 999_999}, "no message 999999"),
        ({"message_id": bobs}, f"no message {bobs}"),  # another user's: exactly as missing
        ({"message_id": ids[0], "offset": -1}, "offset"),
    ]
    for arguments, expected in cases:
        reply = await call(t, arguments)
        assert reply["success"] is False, arguments
        assert expected in str(reply["error"]), (arguments, reply)
    ok = await call(t, {"message_id": ids[1], "session_id": "s1"})
    assert ok["content"] == filler(3)[1]
