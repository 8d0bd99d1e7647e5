"""`MemoryStore` against hostile files: FIFOs, device links, symlinks, read-only, oversized, hand-written.

Each one gets a clear error or a safe refusal — never a hang, a leak, an overwrite or a
silent loss. Hang guards are pytest timeouts, not timed assertions.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from memory import DriftError, MemoryStore, StoreReadError, StoreWriteError
from memory.curated._disk import read_store_file
from memory.curated._entries import ENTRY_DELIMITER, RULE


def _dir(tmp_path: Path) -> Path:
    directory = tmp_path / "memories"
    directory.mkdir()
    return directory


def _store(directory: Path, *, memory_char_limit: int = 2_200) -> MemoryStore:
    return MemoryStore(directory, memory_char_limit=memory_char_limit, clock=lambda: 1_750_000_000.0)


def _block_body(block: str) -> str:
    """The entries part of a rendered block (after the header and the second rule)."""
    return block.split(f"{RULE}\n", 2)[2]


@pytest.mark.timeout(30)
async def test_a_fifo_memory_file_is_reported_unreadable_without_blocking_and_writes_are_refused(
    tmp_path: Path,
) -> None:
    directory = _dir(tmp_path)
    os.mkfifo(directory / "MEMORY.md")
    store = _store(directory)
    await store.load()
    assert "named pipe" in (store.read_error("memory") or "")
    assert store.snapshot("memory") == ""
    with pytest.raises(StoreReadError, match="named pipe"):
        await store.add("memory", "User likes tea.")
    assert stat.S_ISFIFO(os.lstat(directory / "MEMORY.md").st_mode)


@pytest.mark.timeout(30)
async def test_a_symlink_to_dev_zero_is_refused_without_reading_it(tmp_path: Path) -> None:
    directory = _dir(tmp_path)
    (directory / "MEMORY.md").symlink_to("/dev/zero")
    store = _store(directory)
    await store.load()
    assert "symbolic link" in (store.read_error("memory") or "")
    assert "/dev/zero" in (store.read_error("memory") or "")


async def test_a_symlink_to_another_file_neither_enters_the_prompt_nor_is_replaced_by_a_write(
    tmp_path: Path,
) -> None:
    directory = _dir(tmp_path)
    secret = tmp_path / "id_rsa"
    secret.write_text("-----PRIVATE KEY MATERIAL-----\n", encoding="utf-8")
    (directory / "USER.md").symlink_to(secret)
    store = _store(directory)
    await store.load()
    assert store.snapshot("user") == ""
    assert "PRIVATE" not in store.snapshot("user")
    with pytest.raises(StoreReadError, match="symbolic link"):
        await store.add("user", "User likes tea.")
    assert (directory / "USER.md").is_symlink()
    assert secret.read_text(encoding="utf-8") == "-----PRIVATE KEY MATERIAL-----\n"


def test_a_directory_in_place_of_the_memory_file_is_reported_as_one(tmp_path: Path) -> None:
    path = tmp_path / "MEMORY.md"
    path.mkdir()
    read = read_store_file(path)
    assert read.exists and read.error is not None and "directory" in read.error


async def test_a_read_only_memory_file_is_never_rewritten(tmp_path: Path) -> None:
    directory = _dir(tmp_path)
    path = directory / "MEMORY.md"
    path.write_text("User likes tea.\n", encoding="utf-8")
    path.chmod(0o444)
    store = _store(directory)
    await store.load()
    with pytest.raises(StoreWriteError, match=r"read-only \(mode 0444\).*chmod u\+w"):
        await store.add("memory", "User lives in Lyon.")
    with pytest.raises(StoreWriteError, match="read-only"):
        await store.remove("memory", "tea")
    assert path.read_text(encoding="utf-8") == "User likes tea.\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o444
    assert store.entries("memory") == ("User likes tea.",)


async def test_an_over_budget_file_shows_only_what_fits_and_says_so_in_the_block(tmp_path: Path) -> None:
    directory = _dir(tmp_path)
    entries = [f"Fact number {n} about the project." for n in range(200_000)]
    (directory / "MEMORY.md").write_text(ENTRY_DELIMITER.join(entries) + "\n", encoding="utf-8")
    store = _store(directory, memory_char_limit=2_200)
    await store.load()
    block = store.snapshot("memory")
    body = _block_body(block)
    assert len(body) <= 2_200
    assert "OVER BUDGET" in block
    assert body.startswith("Fact number 0 about")
    assert "did not fit the 2,200-char budget and are not shown" in body
    assert "still in the file" in body
    assert len(store.entries("memory")) == 200_000  # nothing lost
    assert store.usage("memory").over_budget


async def test_an_over_budget_file_with_one_giant_entry_shows_the_notice_not_the_entry(
    tmp_path: Path,
) -> None:
    directory = _dir(tmp_path)
    (directory / "MEMORY.md").write_text("x" * 5_000_000 + "\n", encoding="utf-8")
    store = _store(directory)
    await store.load()
    body = _block_body(store.snapshot("memory"))
    assert "xxxx" not in body
    assert body.startswith("[1 more entry (5,000,000 chars)")


async def test_removing_a_line_from_a_hand_written_one_entry_file_backs_up_and_changes_nothing(
    tmp_path: Path,
) -> None:
    directory = _dir(tmp_path)
    path = directory / "MEMORY.md"
    original = "- User likes tea.\n- User lives in Paris.\n- User uses vim.\n"
    path.write_text(original, encoding="utf-8")
    store = _store(directory)
    await store.load()
    with pytest.raises(DriftError, match="3 lines but no '§' separator lines") as info:
        await store.remove("memory", "Paris")
    assert path.read_text(encoding="utf-8") == original
    assert info.value.backup is not None
    assert info.value.backup.read_text(encoding="utf-8") == original


async def test_a_multi_line_entry_can_still_be_removed_by_its_whole_text(tmp_path: Path) -> None:
    directory = _dir(tmp_path)
    store = _store(directory)
    await store.add("memory", "Deploy steps:\nbuild\npush")
    await store.remove("memory", "Deploy steps:\nbuild\npush")
    assert store.entries("memory") == ()
