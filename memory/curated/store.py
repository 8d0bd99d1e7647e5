"""`MemoryStore`: the curated MEMORY.md / USER.md stores and their prompt snapshot.

Two parallel realities. The *snapshot* is the rendered block the system prompt shows; with
the default `frozen` policy it is captured at `load()` and does not move, so the prompt
prefix stays byte-identical and provider caches keep hitting. The *live* entries advance
with every committed write (which is durable on disk at once) and are what `entries()`,
`usage()` and tool replies report.

Every write: validate → scan → take the writer's lock → re-read the document under it →
(drift check for replace/remove/batch) → plan → scan the entries joined (a write must not
complete an attack split over entries) → archive evictions → atomic replace. All
blocking work runs in worker threads through `anyio.to_thread.run_sync`.

Where the documents live is a `CuratedBackend` (`_backend.py`): the files of a home (the
sidecar lock, `os.replace`) or PostgreSQL rows (`_pg.py`: a row lock, a version per write).
Every rule above is this module's, whatever the backend. `snapshot_pin()` names the versions
a snapshot was built from; `load(pinned=...)` rebuilds it on another worker.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, get_args

import anyio

from memory.curated._backend import ARCHIVE_NAME, CuratedBackend, DocRead, DocTxn, FileBackend, text_hash
from memory.curated._entries import (
    DEFAULT_MEMORY_CHAR_LIMIT,
    DEFAULT_USER_CHAR_LIMIT,
    FILE_NAMES,
    MemoryTarget,
    MemoryUsage,
    check_content,
    dedupe,
    fit_to_budget,
    measure,
    parse_entries,
    preview,
    render_block,
    round_trips,
    serialize_entries,
)
from memory.curated._ops import (
    AddOp,
    CommittedOp,
    MemoryOp,
    OverflowPolicy,
    RemoveOp,
    ReplaceOp,
    plan_write,
)
from memory.errors import (
    DriftError,
    InvalidWriteError,
    ScanBlockedError,
    SnapshotUnavailableError,
    StoreReadError,
    StoreWriteError,
    TargetDisabledError,
)
from memory.scanner import (
    SCAN_WINDOW,
    Finding,
    MeaningCheck,
    blocked_placeholder,
    describe_findings,
    oversize_finding,
    scan,
    scan_joined,
)
from memory.scope import Principal

__all__ = [
    "ARCHIVE_NAME",
    "MemoryBlocks",
    "MemoryStore",
    "SnapshotPolicy",
    "WriteResult",
    "memories_dir",
    "sanitize_entry",
]

SnapshotPolicy = Literal["frozen", "invalidate_on_write", "live"]
_TARGETS: tuple[MemoryTarget, ...] = ("memory", "user")
_ENABLE_KEYS: dict[MemoryTarget, str] = {"memory": "memory_enabled", "user": "user_profile_enabled"}


@dataclass(frozen=True, slots=True)
class MemoryBlocks:
    """The two rendered prompt blocks (`""` for an empty or disabled store)."""

    memory: str
    user: str


@dataclass(frozen=True, slots=True)
class WriteResult:
    """What a successful write did.

    Attributes:
        target: the store written.
        message: a short human summary ("Entry added.", "Applied 3 operation(s).", ...).
        usage: the store's usage after the write.
        committed: the changes that landed, in order (empty when nothing changed, e.g. an
            add of an entry that already exists).
        evicted: entries moved to ARCHIVE.jsonl to make room (`evict_oldest` only).
    """

    target: MemoryTarget
    message: str
    usage: MemoryUsage
    committed: tuple[CommittedOp, ...]
    evicted: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class _Outcome:
    entries: tuple[str, ...]
    committed: tuple[CommittedOp, ...]
    evicted: tuple[str, ...]
    skipped_duplicates: int


SnapshotPin = dict[MemoryTarget, tuple[int | None, str]]


def _parse_pin(text: str) -> SnapshotPin:
    try:
        raw = json.loads(text)
        return {t: (None if v[0] is None else int(v[0]), str(v[1])) for t, v in raw.items() if t in _TARGETS}
    except (ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
        raise SnapshotUnavailableError(f"the recorded memory snapshot {text[:80]!r} is not readable") from exc


def _doc_hash(text: str) -> str:
    # A file ends with one newline a row does not have: the same document hashes the same on both.
    return text_hash(text.removesuffix("\n"))


def _copied(backup: Path | None) -> str:
    return "the document was kept as it was" if backup is None else f"the file was copied to {str(backup)!r}"


def memories_dir(home: Path, *, user_id: str | None = None) -> Path:
    """`<home>/memories`, or `<home>/users/<user_id>/memories` for a user (see `memory.scope`).

    Raises:
        ScopeError: `user_id` is not a safe directory name (a `ValueError`; see
            `memory.scope.check_scope_id`).
    """
    return Principal(user_id=user_id).user_memories_dir(home)


def sanitize_entry(target: MemoryTarget, entry: str) -> str:
    """`entry` itself, or a `[BLOCKED: ...]` placeholder when the strict scan objects to it.

    Used for the prompt snapshot and for every reply that echoes entries back to the model,
    so a poisoned entry can neither enter the prompt nor re-enter through an error path.
    """
    findings: tuple[Finding, ...]
    findings = (oversize_finding(len(entry)),) if len(entry) > SCAN_WINDOW else scan(entry, "strict")
    if not findings:
        return entry
    return blocked_placeholder(
        f"{FILE_NAMES[target]} entry",
        findings,
        remedy=(
            "Removed from the system prompt; the original is still in the file. Delete it with the memory "
            f"tool (action 'remove', target {target!r}) or `keel memory remove {target} '<part of it>'`."
        ),
    )


def _refuse_split_attack(
    target: MemoryTarget, before: Sequence[str], after: Sequence[str], *, batch: bool
) -> None:
    """Refuse a write whose new entry completes an attack with the entries beside it (see
    `scan_joined`). Only new text is read this way: a removal adds nothing to complete."""
    old = set(before)
    for index, entry in enumerate(after):
        joined = () if entry in old else scan_joined(after, index, "strict")
        if joined:
            suffix = " No operations were applied (batch is all-or-nothing)." if batch else ""
            raise ScanBlockedError(
                f"{describe_findings(joined)} Read together with the entries beside it in {FILE_NAMES[target]}, "
                f"this entry would complete it; nothing was changed.{suffix}",
                findings=joined,
            )


class MemoryStore:
    """The curated memory: MEMORY.md (target `memory`) and USER.md (target `user`).

    Args:
        directory: the memories directory (see `memories_dir`); created on the first write.
            It holds MEMORY.md, its ARCHIVE.jsonl, and USER.md unless `user_directory` is given.
        user_directory: where USER.md lives when it is not `directory` (a user's file beside a
            workspace's MEMORY.md; see `memory.scope.Principal`). Each file has its own lock.
        memory_title: the heading of the MEMORY.md block instead of the usual one (a shared
            workspace's notes, shown read-only).
        memory_char_limit: budget of MEMORY.md in characters, delimiters included.
        user_char_limit: budget of USER.md.
        policy: when the prompt snapshot changes — `frozen` (only at `load()`),
            `invalidate_on_write` (the next `prompt_blocks()` after a committed write or an
            `invalidate()` re-reads disk), `live` (every `prompt_blocks()` re-reads disk).
        overflow: `reject` refuses a write that would exceed the budget; `evict_oldest`
            moves the oldest entries to ARCHIVE.jsonl instead.
        lock_timeout_s: how long a write waits for the sidecar lock.
        memory_enabled: `False` disables the `memory` target.
        user_profile_enabled: `False` disables the `user` target.
        clock: returns Unix seconds; used for backup names and archive timestamps.
        meaning: the scanner's second layer (`memory.scanner.MeaningCheck`); when given, new
            content it flags is refused like a rule finding. None: the rules alone.
        backend: where the documents live (`CuratedBackend`; default: the files in
            `directory` and `user_directory`). Every rule above is the store's, whatever the backend.
    """

    def __init__(
        self,
        directory: Path,
        *,
        memory_char_limit: int = DEFAULT_MEMORY_CHAR_LIMIT,
        user_char_limit: int = DEFAULT_USER_CHAR_LIMIT,
        policy: SnapshotPolicy = "frozen",
        overflow: OverflowPolicy = "reject",
        lock_timeout_s: float = 10.0,
        memory_enabled: bool = True,
        user_profile_enabled: bool = True,
        clock: Callable[[], float] = time.time,
        user_directory: Path | None = None,
        memory_title: str | None = None,
        meaning: MeaningCheck | None = None,
        backend: CuratedBackend | None = None,
    ) -> None:
        if memory_char_limit <= 0 or user_char_limit <= 0:
            raise ValueError("memory_char_limit and user_char_limit must be positive")
        if policy not in get_args(SnapshotPolicy):
            raise ValueError(f"policy {policy!r} is unknown; use 'frozen', 'invalidate_on_write' or 'live'")
        if overflow not in get_args(OverflowPolicy):
            raise ValueError(f"overflow {overflow!r} is unknown; use 'reject' or 'evict_oldest'")
        self._directory = directory
        self._dirs: dict[MemoryTarget, Path] = {"memory": directory, "user": user_directory or directory}
        self._backend: CuratedBackend = backend or FileBackend(directory, user_directory=user_directory)
        self._loaded: dict[MemoryTarget, tuple[int | None, str]] = {}
        self.pin_missed: list[MemoryTarget] = []
        """Targets the last pinned `load` could not rebuild (files keep no older version): it
        used the current document instead, so that prompt block differs from the session's start."""
        self._titles: dict[MemoryTarget, str | None] = {"memory": memory_title, "user": None}
        self._limits: dict[MemoryTarget, int] = {"memory": memory_char_limit, "user": user_char_limit}
        self._enabled: dict[MemoryTarget, bool] = {"memory": memory_enabled, "user": user_profile_enabled}
        self._policy: SnapshotPolicy = policy
        self._overflow: OverflowPolicy = overflow
        self._lock_timeout_s = lock_timeout_s
        self._clock = clock
        self._live: dict[MemoryTarget, tuple[str, ...]] = {"memory": (), "user": ()}
        self._read_errors: dict[MemoryTarget, str | None] = {"memory": None, "user": None}
        self._snapshot: dict[MemoryTarget, str] = {"memory": "", "user": ""}
        self._generation = 0
        self._rendered_generation = 0
        self._meaning = meaning
        # Serializes this instance's writes so the live view follows commit order.
        self._write_lock = anyio.Lock()

    # ------------------------------------------------------------------ properties and views

    @property
    def directory(self) -> Path:
        """The memories directory."""
        return self._directory

    @property
    def archive_path(self) -> Path:
        """Where `evict_oldest` appends entries evicted from MEMORY.md (see `archive_path_of`)."""
        return self._directory / ARCHIVE_NAME

    def archive_path_of(self, target: MemoryTarget) -> Path:
        """Where evictions from `target` go: the ARCHIVE.jsonl beside its file."""
        return self._dirs[target] / ARCHIVE_NAME

    @property
    def policy(self) -> SnapshotPolicy:
        """The snapshot policy."""
        return self._policy

    @property
    def generation(self) -> int:
        """Bumped by every committed write and every `invalidate()`."""
        return self._generation

    def path(self, target: MemoryTarget) -> Path:
        """The file of `target` (MEMORY.md or USER.md)."""
        return self._dirs[target] / FILE_NAMES[target]

    def limit(self, target: MemoryTarget) -> int:
        """The character budget of `target`."""
        return self._limits[target]

    def enabled(self, target: MemoryTarget) -> bool:
        """Whether `target` is enabled."""
        return self._enabled[target]

    def entries(self, target: MemoryTarget) -> tuple[str, ...]:
        """The live entries (raw text, de-duplicated) as of the last load or write."""
        return self._live[target] if self._enabled[target] else ()

    def usage(self, target: MemoryTarget) -> MemoryUsage:
        """Live usage of `target`."""
        return measure(target, self.entries(target), self._limits[target])

    def read_error(self, target: MemoryTarget) -> str | None:
        """Why `target`'s file could not be read at the last load, else `None`."""
        return self._read_errors[target]

    def snapshot(self, target: MemoryTarget) -> str:
        """The rendered block the prompt currently shows (`""` when empty or disabled)."""
        return self._snapshot[target]

    def invalidate(self) -> None:
        """Mark the snapshot stale (compression calls this).

        Under `invalidate_on_write` the next `prompt_blocks()` re-reads disk; `live` re-reads
        anyway. Under `frozen` the snapshot changes only at `load()` — call that instead.
        """
        self._generation += 1

    # ------------------------------------------------------------------ reading

    @property
    def backend(self) -> CuratedBackend:
        """Where the documents live (files, or PostgreSQL rows)."""
        return self._backend

    def location(self, target: MemoryTarget) -> str:
        """Where `target` lives, safe to print (its file, or its PostgreSQL schema and scope)."""
        return self._backend.location(target)

    def _read_all(self, pinned: SnapshotPin | None) -> dict[MemoryTarget, DocRead]:
        reads: dict[MemoryTarget, DocRead] = {}
        for t in _TARGETS:
            if not self._enabled[t]:
                continue
            reads[t] = self._backend.read(t)
            pin = None if pinned is None else pinned.get(t)
            if pin is not None and _doc_hash(reads[t].text) != pin[1]:
                if pin[0] is None:  # files keep no history: carry on with today's document, and say so
                    self.pin_missed.append(t)
                    continue
                older = self._backend.read_version(t, pin[0])
                if older is None or _doc_hash(older.text) != pin[1]:
                    raise SnapshotUnavailableError(
                        f"{FILE_NAMES[t]} changed since this session started and {self.location(t)!r} keeps "
                        "no copy of the version it started with; start a new session"
                    )
                reads[t] = older
        return reads

    def snapshot_pin(self) -> str:
        """The versions and hashes the current snapshot was built from, as text for the session row.

        `load(pinned=...)` with it rebuilds the same snapshot bytes, on any worker, while the
        backend keeps those versions (PostgreSQL keeps every version; files only the current).
        """
        return json.dumps({t: list(self._loaded[t]) for t in _TARGETS if t in self._loaded}, sort_keys=True)

    def _render(self, target: MemoryTarget) -> str:
        raw = self.entries(target)
        usage = measure(target, raw, self._limits[target])
        if usage.over_budget:
            # A hand-edited file can be any size; the prompt shows what fits and says so.
            sanitize = functools.partial(sanitize_entry, target)
            shown = fit_to_budget(target, raw, usage.limit, sanitize)
            return render_block(target, shown, usage, title=self._titles[target])
        return render_block(
            target, [sanitize_entry(target, e) for e in raw], usage, title=self._titles[target]
        )

    async def load(self, *, pinned: str | None = None) -> None:
        """Read both files, de-duplicate, and freeze a new snapshot.

        `pinned` (a `snapshot_pin()` recorded at a session's start) reads the versions that
        session saw instead of the current ones: a resumed session rebuilds the same bytes.
        A pin from the files backend (no history) whose document changed falls back to the
        current document and lists the target in `pin_missed`; a pinned PostgreSQL version
        that is gone raises `SnapshotUnavailableError`.

        A missing file is an empty store; a file that cannot be read or decoded is shown
        as empty (see `read_error`) and every write to it is refused until it is fixed.
        Entries the strict scan objects to appear in the snapshot as `[BLOCKED: ...]`
        placeholders; `entries()` keeps their raw text so they can be removed.
        """
        # Under the write lock, so a write of ours cannot commit between the read and the
        # update and leave the live view older than the disk.
        async with self._write_lock:
            generation = self._generation
            pin = None if pinned is None else _parse_pin(pinned)
            self.pin_missed = []
            reads = await anyio.to_thread.run_sync(self._read_all, pin)  # blocking: read both documents
            self._loaded = {t: (r.version, _doc_hash(r.text)) for t, r in reads.items()}
            for target in _TARGETS:
                read = reads.get(target)
                self._live[target] = dedupe(parse_entries(read.text)) if read else ()
                self._read_errors[target] = read.error if read else None
            self._snapshot = {t: self._render(t) for t in _TARGETS}
            self._rendered_generation = generation

    async def prompt_blocks(self) -> MemoryBlocks:
        """The blocks for the next request, applying the snapshot policy."""
        stale = self._generation != self._rendered_generation
        if self._policy == "live" or (self._policy == "invalidate_on_write" and stale):
            await self.load()
        return MemoryBlocks(memory=self._snapshot["memory"], user=self._snapshot["user"])

    # ------------------------------------------------------------------ writing

    async def add(self, target: MemoryTarget, content: str) -> WriteResult:
        """Append an entry. An exact duplicate succeeds without writing."""
        return await self._write(target, (AddOp(content),), batch=False)

    async def replace(self, target: MemoryTarget, old_text: str, content: str) -> WriteResult:
        """Replace the whole entry `old_text` designates (a unique substring) with `content`."""
        return await self._write(target, (ReplaceOp(old_text, content),), batch=False)

    async def remove(self, target: MemoryTarget, old_text: str) -> WriteResult:
        """Delete the entry `old_text` designates (a unique substring)."""
        return await self._write(target, (RemoveOp(old_text),), batch=False)

    async def batch(self, target: MemoryTarget, ops: Sequence[MemoryOp]) -> WriteResult:
        """Apply several ops all-or-nothing; the budget is checked on the final state only."""
        return await self._write(target, tuple(ops), batch=True)

    def _require_enabled(self, target: MemoryTarget) -> None:
        if target not in _TARGETS:
            raise InvalidWriteError(f"target {target!r} is unknown; use 'memory' or 'user'.")
        if self._enabled[target]:
            return
        others = [t for t in _TARGETS if self._enabled[t]]
        if not others:
            raise TargetDisabledError("Memory is not available in this session; answer without saving.")
        raise TargetDisabledError(
            f"target {target!r} is disabled in this session (memory.{_ENABLE_KEYS[target]} is false); "
            f"use {others[0]!r} or answer without saving."
        )

    @staticmethod
    def _prevalidate(ops: Sequence[MemoryOp], *, batch: bool) -> None:
        # Cheap checks and the scan happen before touching the lock or the disk.
        if not ops:
            raise InvalidWriteError("operations is empty; give at least one add, replace or remove.")
        suffix = " No operations were applied (batch is all-or-nothing)." if batch else ""
        for n, op in enumerate(ops, start=1):
            prefix = f"Operation {n}: " if batch else ""
            try:
                if op.kind != "remove":
                    text = check_content(op.content)
                    findings = (
                        (oversize_finding(len(text)),) if len(text) > SCAN_WINDOW else scan(text, "strict")
                    )
                    if findings:
                        raise ScanBlockedError(describe_findings(findings), findings=findings)
                if op.kind != "add" and not op.old_text.strip():
                    raise InvalidWriteError(
                        f"{op.kind} needs old_text: a short unique part of the entry to {op.kind}."
                    )
            except (InvalidWriteError, ScanBlockedError) as exc:
                exc.args = (f"{prefix}{exc.args[0]}{suffix}",)
                raise

    @staticmethod
    async def _check_meaning(meaning: MeaningCheck, ops: Sequence[MemoryOp], *, batch: bool) -> None:
        numbered = [(n, op.content) for n, op in enumerate(ops, start=1) if op.kind != "remove"]
        scores = await anyio.to_thread.run_sync(
            meaning.scores, [text for _, text in numbered]
        )  # blocking: the embedder
        for (n, _), score in zip(numbered, scores, strict=True):
            if findings := meaning.findings_for(score):
                prefix = f"Operation {n}: " if batch else ""
                suffix = " No operations were applied (batch is all-or-nothing)." if batch else ""
                raise ScanBlockedError(f"{prefix}{describe_findings(findings)}{suffix}", findings=findings)

    async def _write(self, target: MemoryTarget, ops: Sequence[MemoryOp], *, batch: bool) -> WriteResult:
        self._require_enabled(target)
        self._prevalidate(ops, batch=batch)
        if self._meaning is not None:
            await self._check_meaning(self._meaning, ops, batch=batch)
        drift_check = batch or any(op.kind != "add" for op in ops)
        transact = functools.partial(self._transact, target, ops, batch=batch, drift_check=drift_check)
        async with self._write_lock:
            # Shielded: once the transaction started, finish it and record its outcome, so the
            # live view never disagrees with disk; cancellation is delivered right after.
            with anyio.CancelScope(shield=True):
                outcome = await anyio.to_thread.run_sync(transact)  # blocking: lock, read, fsync, replace
                self._live[target] = dedupe(outcome.entries)
                self._read_errors[target] = None
                if outcome.committed:
                    self._generation += 1
        return WriteResult(
            target=target,
            message=self._message(target, ops, outcome, batch=batch),
            usage=self.usage(target),
            committed=outcome.committed,
            evicted=outcome.evicted,
        )

    def _transact(
        self, target: MemoryTarget, ops: Sequence[MemoryOp], *, batch: bool, drift_check: bool
    ) -> _Outcome:
        name = FILE_NAMES[target]
        with self._backend.transaction(target, self._lock_timeout_s) as txn:
            read = txn.read
            if read.error is not None:
                raise StoreReadError(
                    f"{name} exists but could not be read: {read.error}. Nothing was changed, and "
                    "writes to it are refused so it is never overwritten. "
                    f"Fix or move {self.location(target)!r}, then retry."
                )
            txn.check_writable()
            current = parse_entries(read.text)
            if drift_check:
                self._check_drift(target, txn)
                self._check_hand_written(target, txn, current, ops)
            plan = plan_write(
                target, current, ops, limit=self._limits[target], overflow=self._overflow, batch=batch
            )
            if plan.committed:
                _refuse_split_attack(target, current, plan.entries, batch=batch)
                if plan.evicted:
                    stamp = datetime.fromtimestamp(self._clock(), tz=UTC).isoformat(timespec="seconds")
                    txn.archive([{"target": target, "content": e, "evicted_at": stamp} for e in plan.evicted])
                txn.replace(serialize_entries(plan.entries))
                entries = plan.entries
            else:
                entries = dedupe(current)
            return _Outcome(entries, plan.committed, plan.evicted, plan.skipped_duplicates)

    def _check_drift(self, target: MemoryTarget, txn: DocTxn) -> None:
        read, name = txn.read, FILE_NAMES[target]
        limit = self._limits[target]
        entries = parse_entries(read.text)
        if round_trips(read.text) and all(len(e) <= limit for e in entries):
            return
        why = (
            "it does not follow the entry format (entries separated by a line holding only '§')"
            if not round_trips(read.text)
            else f"one entry is longer than the whole {limit:,}-char budget"
        )
        remedy = (
            "Re-add any facts you still need one at a time with 'add', then clean up the file "
            "(`keel memory path` shows where it is)."
        )
        try:
            backup = txn.backup(read.raw or b"", int(self._clock()))
        except StoreWriteError as exc:
            raise DriftError(
                f"{name} was edited outside the memory tool: {why}. Nothing was changed, and the "
                f"backup copy could not be written ({exc}). {remedy}",
                backup=None,
            ) from exc
        raise DriftError(
            f"{name} was edited outside the memory tool: {why}; this change would rewrite it. "
            f"Nothing was changed; {_copied(backup)}. {remedy}",
            backup=backup,
        )

    def _check_hand_written(
        self, target: MemoryTarget, txn: DocTxn, current: Sequence[str], ops: Sequence[MemoryOp]
    ) -> None:
        """Refuse (with a backup) a replace/remove that would wipe a whole hand-written file.

        A file someone wrote by hand as several lines, without the `§` separator lines,
        parses as ONE entry. Removing "the entry containing X" would then delete every
        line, though the user meant one. When the file holds a single multi-line entry and
        old_text is neither that whole entry nor spans a line break, it is treated like
        drift: copy to a backup, change nothing, explain.
        """
        if len(current) != 1 or "\n" not in current[0]:
            return
        entry = current[0]
        for op in ops:
            if op.kind == "add":
                continue
            needle = op.old_text.strip()
            if needle == entry or "\n" in needle or needle not in entry:
                continue
            lines = len([line for line in entry.split("\n") if line.strip()])
            backup = txn.backup(txn.read.raw or b"", int(self._clock()))
            raise DriftError(
                f"{FILE_NAMES[target]} holds {lines} lines but no '§' separator lines, so to the memory tool it is "
                f"one entry, and this {op.kind} would rewrite all {lines} lines, not just the one containing "
                f"{preview(needle, 60)!r}. Nothing was changed; {_copied(backup)}. "
                "Put a line holding only '§' between separate entries (`keel memory path` shows where the "
                "file is), or give the whole entry as old_text to act on all of it.",
                backup=backup,
            )

    @staticmethod
    def _message(target: MemoryTarget, ops: Sequence[MemoryOp], outcome: _Outcome, *, batch: bool) -> str:
        name = FILE_NAMES[target]
        if batch:
            text = f"Applied {len(outcome.committed)} operation(s) to {name}."
            if outcome.skipped_duplicates:
                text += f" Skipped {outcome.skipped_duplicates} add(s) of entries that already exist."
        elif not outcome.committed:
            text = (
                f"That entry already exists in {name}; nothing was added."
                if ops[0].kind == "add"
                else f"The entry already has that text; {name} is unchanged."
            )
        else:
            text = {"add": "Entry added", "replace": "Entry replaced", "remove": "Entry removed"}[ops[0].kind]
            text += f" in {name}."
        if outcome.evicted:
            text += (
                f" Moved {len(outcome.evicted)} oldest entr{'y' if len(outcome.evicted) == 1 else 'ies'} to "
            )
            text += f"{ARCHIVE_NAME} to make room."
        return text
