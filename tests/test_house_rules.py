"""The house rules that keep the tree readable, checked on the source (AST and file names).

- no function or method over 80 lines;
- no folder with more than 15 modules (a folder holds one family; past that it wants rooms);
- no folder whose modules are told apart by a name prefix (three or more modules starting
  with the same word: `_openai_wire`, `_openai_stream`, `openai` want an `openai/` folder);
- the top-level façades export exactly the names listed here, so growing the public surface is
  a decision taken in review, not a side effect of an import.
"""

from __future__ import annotations

import ast
import importlib
from collections import Counter
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
ROOTS = ("harness", "memory", "prompts")
MAX_FUNCTION_LINES = 80
MAX_MODULES_PER_FOLDER = 15


def _sources() -> list[Path]:
    return sorted(p for root in ROOTS for p in (REPO / root).rglob("*.py"))


def _folders() -> list[Path]:
    return sorted({p.parent for p in _sources()})


def _modules(folder: Path) -> list[str]:
    return sorted(p.stem for p in folder.glob("*.py") if p.name != "__init__.py")


def long_functions(source: str, limit: int = MAX_FUNCTION_LINES) -> list[tuple[str, int]]:
    found: list[tuple[str, int]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno is not None:
            length = node.end_lineno - node.lineno + 1
            if length > limit:
                found.append((node.name, length))
    return found


def prefix_families(modules: list[str]) -> dict[str, int]:
    words = Counter(name.lstrip("_").split("_")[0] for name in modules)
    return {word: n for word, n in words.items() if n >= 3}


def test_the_checks_find_what_they_look_for() -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(81))
    assert long_functions(f"def f():\n{body}\n") == [("f", 82)]
    assert long_functions("def g():\n    return 1\n") == []
    assert prefix_families(["openai", "_openai_wire", "_openai_stream", "base"]) == {"openai": 3}
    assert prefix_families(["openai", "anthropic", "base"]) == {}


def test_the_walk_sees_the_tree() -> None:
    folders = {f.relative_to(REPO).as_posix() for f in _folders()}
    assert {"harness/loop", "harness/wiring", "memory/sessions/sqlite", "prompts"} <= folders


def test_no_function_is_over_80_lines() -> None:
    offenders = [
        f"{path.relative_to(REPO)}:{name} ({n} lines)"
        for path in _sources()
        for name, n in long_functions(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_no_folder_holds_more_than_15_modules() -> None:
    crowded = {
        f.relative_to(REPO).as_posix(): len(_modules(f))
        for f in _folders()
        if len(_modules(f)) > MAX_MODULES_PER_FOLDER
    }
    assert crowded == {}


def test_no_folder_is_a_family_told_apart_by_prefixes() -> None:
    families = {f.relative_to(REPO).as_posix(): prefix_families(_modules(f)) for f in _folders()}
    assert {folder: fam for folder, fam in families.items() if fam} == {}


FACADES = {
    "harness": (
        "CharTokenizer CompressionFinished CompressionStarted ConfigError EVENT_ADAPTER Event "
        "FlushCompleted FlushEntry KeelConfig KeelError LocalModelError MemoryWritten Message "
        "ModelAuthError ModelClient ModelConnectionError ModelError ModelEvent "
        "ModelRateLimitError ModelReply ModelRequest ModelRequestError ModelResponseError "
        "ModelServerError ModelTextDelta ModelTimeoutError PrefillProgress PromptProgress RecallAttached ReplyDone "
        "RetryableModelError Session SessionError SessionOptions StopReason TextDelta "
        "TiktokenTokenizer Tokenizer ToolCall ToolCallStarted ToolResultReady ToolServerError "
        "ToolSpec TurnEnded Usage UsageReported Warning load_config load_tiktoken open_session "
        "tool"
    ),
    "memory": (
        "AddOp AgentContext AmbiguousMatchError DriftError EndReason FlushMode InvalidWriteError "
        "LockRetryPolicy MEMORY_TOOL_NAME MemoryBlocks MemoryLayerError MemoryManager MemoryOp "
        "MemoryProvider MemoryStore MemoryTarget MemoryTool MemoryWrite MessageRecord "
        "NoMatchError PendingWrites PgSessionStore Principal ProviderContext RemoveOp ReplaceOp "
        "STATE_DB_NAME ScanBlockedError ScopeError SessionBusyError SessionConflictError "
        "SessionDB SessionNotFoundError SessionRecord SessionSchemaError SessionSearchTool "
        "SessionStore SessionStoreBusyError SessionStoreCorruptError SessionStoreError "
        "SessionStoreUnavailableError SnapshotPolicy SnapshotUnavailableError StoreError "
        "StoreFullError StoreIOError StoreLockTimeout StoreReadError StoreWriteError "
        "StoredMessage StoredUsage SwitchReason TargetDisabledError TurnMessage WriteRefused WriteResult "
        "atomic_write check_scope_id is_trivial memory_tool_schema open_session_db "
        "open_session_store redact_url scan session_search_schema session_store_location"
    ),
    "prompts": (
        "DEFAULT_SLOT_ORDER SlotId SystemPrompt attach_recall build_system_prompt cap_recall "
        "discover_context_files load_text read_text_capped render_context_files session_line "
        "strip_fence_tags"
    ),
}


@pytest.mark.parametrize("package", ["harness", "memory", "prompts"])
def test_the_facades_export_exactly_the_listed_names(package: str) -> None:
    listed = set(FACADES[package].split())
    exported = set(importlib.import_module(package).__all__)
    assert sorted(exported - listed) == [], "new public names: add them here if they are meant for users"
    assert sorted(listed - exported) == [], "names gone from the façade: drop them here"
