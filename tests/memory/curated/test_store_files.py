"""The curated files on disk: owner-only, and read the same whatever line endings an editor left."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from memory import MemoryStore


@pytest.mark.parametrize("target", ["memory", "user"])
async def test_memory_files_are_owner_only_even_when_they_were_world_readable(
    tmp_path: Path, target: str
) -> None:
    store = MemoryStore(tmp_path)
    await store.load()
    await store.add(target, "the user keeps bees")  # type: ignore[arg-type]  # parametrized target
    name = "MEMORY.md" if target == "memory" else "USER.md"
    assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o600
    (tmp_path / name).chmod(0o644)  # made by an older keel, or by hand
    await store.add(target, "the user lives in Porto")  # type: ignore[arg-type]  # parametrized target
    assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o600


@pytest.mark.parametrize("newline", ["\r", "\r\n", "\n"])
async def test_entries_split_the_same_on_any_line_ending_and_remove_deletes_only_one(
    tmp_path: Path, newline: str
) -> None:
    entries = ["Project uses uv", "Tests run with pytest -q", "Deploys go through staging"]
    (tmp_path / "MEMORY.md").write_bytes(f"{newline}§{newline}".join(entries).encode("utf-8"))
    store = MemoryStore(tmp_path)
    await store.load()
    assert store.entries("memory") == tuple(entries)
    await store.remove("memory", "pytest")
    assert store.entries("memory") == (entries[0], entries[2])
    await store.load()
    assert store.entries("memory") == (entries[0], entries[2])
