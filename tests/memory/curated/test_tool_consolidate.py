"""The consolidation nudge (the seeds' 80%): a write that leaves a store at least 80% full
tells the model to consolidate before adding more; below that, or on a remove, it does not."""

from __future__ import annotations

import json
from pathlib import Path

from memory import MemoryStore, MemoryTool


async def test_a_write_crossing_80_percent_asks_the_model_to_consolidate(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path, memory_char_limit=100)
    tool = MemoryTool(store)
    await store.load()
    below = json.loads((await tool.handle({"action": "add", "target": "memory", "content": "a" * 70})).text)
    assert below["success"] is True and "consolidate" not in below
    above = json.loads((await tool.handle({"action": "add", "target": "memory", "content": "b" * 10})).text)
    assert above["success"] is True and above["usage"].startswith("83%")
    assert "MEMORY.md is 83% full" in above["consolidate"] and "replace" in above["consolidate"]
    await tool.handle({"action": "add", "target": "memory", "content": "c" * 5})
    removed = json.loads(
        (await tool.handle({"action": "remove", "target": "memory", "old_text": "ccc"})).text
    )
    # Still over 80%, but a remove is the consolidation itself: no nudge.
    assert removed["success"] is True and removed["usage"].startswith("83%") and "consolidate" not in removed
