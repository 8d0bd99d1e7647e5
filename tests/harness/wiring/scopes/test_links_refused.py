"""`open_session` never follows a symbolic link into the prompt: a context file (`AGENTS.md`)
or SOUL.md pointing at a secret is left out, and the user is warned with the first turn."""

from __future__ import annotations

from pathlib import Path

from harness.events import Warning
from harness.testing import FakeTokenizer, ScriptedModel, config, run_turn, say
from harness.wiring import SessionOptions, open_session


async def test_linked_agents_md_and_soul_md_are_refused_with_a_warning(home: Path, tmp_path: Path) -> None:
    secret = tmp_path / "credentials"
    secret.write_text("aws_secret_access_key = SECRET789\n")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "AGENTS.md").symlink_to(secret)
    (home / "SOUL.md").symlink_to(secret)
    model = ScriptedModel([say("hi")])
    opts = SessionOptions(model=model, home=home, tokenizer=FakeTokenizer(), cwd=repo)
    async with open_session(config(), opts) as s:
        events = await run_turn(s, "hello")
        prompt = s.prompt.text
    assert "SECRET789" not in prompt
    assert all("SECRET789" not in m.content for r in model.requests for m in r.messages)
    warnings = [e.message for e in events if isinstance(e, Warning)]
    assert any("AGENTS.md" in w and "symbolic link" in w for w in warnings)
    assert any("SOUL.md" in w and "symbolic link" in w for w in warnings)
