"""The disk prefix cache: a later engine resumes from the saved stable prefix; files are
owner-only, written whole, bounded, and never trusted when they do not check out."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest
from pydantic import JsonValue

from harness.models.local._disk import DiskPrefixCache, fingerprint
from harness.models.local._engine import Engine, Generation
from tests.harness.models.local.test_engine import _engine

SYSTEM = "You are keel. You keep the user's notes and answer briefly. " * 6
FP = fingerprint({"model_sha256": "abc", "n_ctx": 4000})


def _cache(root: Path, fp: str = FP, **kw: int) -> DiskPrefixCache:
    opts = {"max_bytes": 1 << 20, "max_files": 8, "min_tokens": 32, **kw}
    return DiskPrefixCache(root, fingerprint=fp, **opts)


def _ask(engine: Engine, text: str) -> Generation:
    messages: list[JsonValue] = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": text}]
    return engine.generate(engine.prepare({"messages": messages}), lambda _: None, threading.Event())


def _process(root: Path, fp: str = FP) -> tuple[Engine, Generation, int]:
    """A new server process on the same home: a fresh engine, one request."""
    engine, _, llm = _engine("ok", n_ctx=4000, disk=_cache(root, fp))
    gen = _ask(engine, "Hello, what is new?")
    return engine, gen, llm.evaluated


def test_a_second_process_loads_the_stable_prefix_and_evaluates_only_the_tail(tmp_path: Path) -> None:
    _, first, evaluated_first = _process(tmp_path)
    _, second, evaluated_second = _process(tmp_path)
    assert first.cached_tokens == 0 and evaluated_first == first.prompt_tokens
    assert second.cached_tokens >= len(SYSTEM)
    assert evaluated_second == second.prompt_tokens - second.cached_tokens
    assert evaluated_second < evaluated_first / 3


def test_files_are_owner_only(tmp_path: Path) -> None:
    _process(tmp_path)
    (d,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    (f,) = list(d.glob("*.kv"))
    assert stat.S_IMODE(tmp_path.stat().st_mode) == 0o700 and stat.S_IMODE(d.stat().st_mode) == 0o700
    assert stat.S_IMODE(f.stat().st_mode) == 0o600
    assert not list(d.glob(".*")), "no temporary file is left behind"


def _only_file(root: Path) -> Path:
    (f,) = list(root.glob("*/*.kv"))
    return f


def test_a_truncated_file_is_ignored_and_rewritten(tmp_path: Path) -> None:
    _process(tmp_path)
    f = _only_file(tmp_path)
    whole = f.read_bytes()
    f.write_bytes(whole[: len(whole) - 5])
    _, gen, evaluated = _process(tmp_path)
    assert gen.cached_tokens == 0 and evaluated == gen.prompt_tokens, "never trusted"
    assert _only_file(tmp_path).read_bytes() == whole, "written again, whole"


def test_a_state_whose_bytes_were_changed_is_ignored(tmp_path: Path) -> None:
    _process(tmp_path)
    f = _only_file(tmp_path)
    data = bytearray(f.read_bytes())
    data[-1] ^= 0xFF
    f.write_bytes(bytes(data))
    _, gen, _ = _process(tmp_path)
    assert gen.cached_tokens == 0


@pytest.mark.parametrize("other", ["model", "settings"])
def test_a_file_from_another_model_or_other_settings_is_ignored_and_replaced(
    tmp_path: Path, other: str
) -> None:
    theirs = fingerprint(
        {"model_sha256": "zzz" if other == "model" else "abc", "n_ctx": 4000 if other == "model" else 8000}
    )
    _process(tmp_path, theirs)
    foreign = _only_file(tmp_path)
    # Put their file where ours would be: same name, our directory.
    ours = _cache(tmp_path)
    mine = ours.dir / foreign.name
    mine.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    mine.write_bytes(foreign.read_bytes())
    _, gen, evaluated = _process(tmp_path)
    assert gen.cached_tokens == 0 and evaluated == gen.prompt_tokens
    assert not mine.exists() or mine.read_bytes() != foreign.read_bytes()
    assert len(list(ours.dir.glob("*.kv"))) == 1, "our own prefix was written"


def test_the_cache_stays_within_its_file_bound_least_recently_used_out(tmp_path: Path) -> None:
    cache = _cache(tmp_path, max_files=2)
    paths = [cache.save(list(range(i, i + 40)), "", os.urandom(100)) for i in range(3)]
    left = sorted(p.name for p in tmp_path.glob("*/*.kv"))
    assert paths[0] is not None and paths[0].name not in left and len(left) == 2


def test_a_prefix_saved_for_one_scope_is_not_offered_to_another(tmp_path: Path) -> None:
    cache = _cache(tmp_path)
    cache.save(list(range(40)), "alice", b"state")
    assert cache.best(list(range(50)), "bob") == (None, 0)
    found, shared = _cache(tmp_path).best(list(range(50)), "alice")
    assert found is not None and shared == 40 and _cache(tmp_path).load(found) == b"state"


def test_a_fifo_in_the_cache_is_refused_with_a_message_not_waited_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _process(tmp_path)
    f = _only_file(tmp_path)
    f.unlink()
    os.mkfifo(f)  # where the saved prefix was: nobody will ever write to it
    os.mkfifo(f.with_name("0" * 64 + ".kv"))
    done: list[Generation] = []
    worker = threading.Thread(target=lambda: done.append(_process(tmp_path)[1]), daemon=True)
    worker.start()
    worker.join(30)
    assert not worker.is_alive(), "the engine hung on a FIFO"
    assert done[0].cached_tokens == 0 and done[0].text == "ok"
    err = capsys.readouterr().err
    assert err.count("in the prefix cache is not a regular file (a FIFO); it is ignored. Remove it") == 2
    assert stat.S_ISFIFO(f.with_name("0" * 64 + ".kv").lstat().st_mode), "left alone"


def test_a_symbolic_link_in_the_cache_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _process(tmp_path)
    f = _only_file(tmp_path)
    target = tmp_path / "elsewhere.kv"
    f.rename(target)
    f.symlink_to(target)
    _, gen, _ = _process(tmp_path)
    assert gen.cached_tokens == 0
    assert "not a regular file (a symbolic link)" in capsys.readouterr().err
