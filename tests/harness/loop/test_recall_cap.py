"""A total cap on recalled text (`recall.max_chars`): however much the providers return, one
turn carries at most that much, cut at a line break with a note saying what was left out."""

from __future__ import annotations

from harness.events import RecallAttached
from harness.testing import FakeProviders, ScriptedModel, config, make_session, run_turn, say
from prompts import cap_recall


async def test_recall_from_every_provider_is_capped_in_total() -> None:
    facts = "\n".join(f"- fact number {i} about the user's garden" for i in range(2_000))
    model = ScriptedModel([say("ok")])
    cfg = config(recall__max_chars="1000")
    async with make_session(model, cfg=cfg, providers=FakeProviders(facts)) as s:
        events = await run_turn(s, "what do you know about my garden?")
    [attached] = [e for e in events if isinstance(e, RecallAttached)]
    sent = model.requests[0].messages[-1].wire_content
    assert attached.chars <= 1_100 and len(sent) < 2_000
    assert "fact number 0 " in sent and "fact number 1999" not in sent
    assert "more characters of recall left out (recall.max_chars)" in sent


def test_cap_recall_keeps_short_recall_whole_and_cuts_long_recall_at_a_line() -> None:
    assert cap_recall("a\nb", 200) == "a\nb"
    text = "\n".join(["x" * 30] * 20)  # 619 characters
    capped = cap_recall(text, 200)
    kept, note = capped.rsplit("\n", 1)
    assert len(kept) <= 200 and kept.endswith("x" * 30)
    assert note == f"[… {len(text) - len(kept):,} more characters of recall left out (recall.max_chars)]"
