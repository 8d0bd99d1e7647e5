"""The embedded server's prefix cache on disk: a long stable prefix's KV state outlives the process.

After a request whose prompt starts with a long stable prefix (the system prompt and the
tool list), the server saves the KV state of exactly that prefix here; a later server —
the next `keel chat` on the same home — loads it instead of evaluating the prefix again.

Layout: `<dir>/<fingerprint[:16]>/<key>.kv`, the directory 0700 and every file 0600. The
fingerprint is the SHA-256 of what makes a KV state valid: the model file's SHA-256, the
context size, the KV cache types, the batch size and the llama.cpp build. The key is the
SHA-256 of the fingerprint, the scope and the prefix tokens. A file is

    b"KEELKV1\\n" | header length (8 bytes, little endian) | header (JSON) | tokens (int32 LE) | state

and is trusted only when all of it checks out: magic, header, fingerprint, scope, token
count and the key recomputed from the tokens, the state's length and SHA-256. A file that
does not (truncated, from another model or other settings, edited) is deleted and never
loaded; the next request through that prefix writes it again. Writes go to a temporary
file in the same directory, fsynced, then renamed: a reader never sees half a file. The
whole cache is bounded in bytes and files; the least recently used files go first (a
read refreshes a file's mtime).

Only regular files are read: anything else found there (a FIFO, a device, a link) is
refused with a message in the server's log and left alone.

Blocking: call from the engine's worker thread.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import stat
import struct
import sys
from collections.abc import Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path
from typing import BinaryIO

from harness.models.local._prefix import Saved, common_prefix

__all__ = ["DiskPrefixCache", "NotRegularFileError", "fingerprint", "open_regular"]

_MAGIC = b"KEELKV1\n"
_SUFFIX = ".kv"


class NotRegularFileError(OSError):
    """A cache path that is not a regular file (a FIFO, a device, a symbolic link)."""


def open_regular(path: Path) -> BinaryIO:
    """`path` opened for reading, if it is a regular file.

    Opened non-blocking and without following links, then checked: a FIFO left in the cache
    directory would otherwise block the engine's thread (and every request) forever.

    Raises:
        NotRegularFileError: anything but a regular file, with what to do about it.
    """
    refusal = (
        f"{path} in the prefix cache is not a regular file ({{}}); it is ignored. "
        "Remove it: keel writes only regular files there"
    )
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise NotRegularFileError(refusal.format("a symbolic link")) from exc
        raise
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = "a FIFO" if stat.S_ISFIFO(mode) else "a device, socket or directory"
            raise NotRegularFileError(refusal.format(kind))
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def fingerprint(settings: Mapping[str, str | int | None]) -> str:
    """The SHA-256 of the settings a saved KV state depends on."""
    return hashlib.sha256(json.dumps(dict(settings), sort_keys=True).encode("utf-8")).hexdigest()


def _scope_id(scope: str) -> str:
    return hashlib.sha256(scope.encode("utf-8")).hexdigest()


def _token_bytes(tokens: Sequence[int]) -> bytes:
    return struct.pack(f"<{len(tokens)}i", *tokens)


@dataclass(frozen=True, slots=True)
class _Header:
    n_tokens: int
    state_size: int
    state_sha256: str


@dataclass(eq=False)
class DiskPrefixCache:
    """Saved prefix states of one model and settings, under one directory (`dir`)."""

    root: Path
    """The cache directory (`<home>/cache/local-model`)."""
    _: KW_ONLY
    fingerprint: str
    """`fingerprint(...)` of the running model and settings."""
    max_bytes: int
    """The bound on all files under `root` (every fingerprint)."""
    max_files: int
    """The bound on the number of files under `root`."""
    min_tokens: int
    """Prefixes shorter than this are not worth a file."""
    dir: Path = field(init=False)
    _index: list[Saved[Path]] | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.dir = self.root / self.fingerprint[:16]

    def key(self, tokens: Sequence[int], scope: str) -> str:
        digest = hashlib.sha256()
        digest.update(self.fingerprint.encode("ascii") + b"\0" + _scope_id(scope).encode("ascii") + b"\0")
        digest.update(_token_bytes(tokens))
        return digest.hexdigest()

    def _entries(self) -> list[Saved[Path]]:
        if self._index is None:
            self._index = []
            with contextlib.suppress(OSError):
                for path in sorted(self.dir.glob(f"*{_SUFFIX}")):
                    try:
                        entry = self._read_index(path)
                    except NotRegularFileError as exc:
                        print(f"keel local model: {exc}", file=sys.stderr, flush=True)
                        continue  # not ours: left alone, never read
                    if entry is None:
                        path.unlink(missing_ok=True)  # not ours to trust: gone, rewritten on demand
                    else:
                        self._index.append(entry)
        return self._index

    def _read_head(self, fh: BinaryIO) -> tuple[dict[str, object], list[int]] | None:
        read = fh.read
        if read(len(_MAGIC)) != _MAGIC:
            return None
        raw_len = read(8)
        if len(raw_len) != 8:
            return None
        (hlen,) = struct.unpack("<Q", raw_len)
        if hlen > 1 << 20:
            return None
        try:
            header = json.loads(read(hlen))
        except ValueError:
            return None
        if not isinstance(header, dict):
            return None
        n = header.get("n_tokens")
        if not isinstance(n, int) or n < 1 or n > 1 << 22:
            return None
        raw = read(4 * n)
        if len(raw) != 4 * n:
            return None
        return header, list(struct.unpack(f"<{n}i", raw))

    def _check(self, path: Path, header: dict[str, object], tokens: list[int]) -> _Header | None:
        scope_id = header.get("scope")
        size, digest = header.get("state_size"), header.get("state_sha256")
        if header.get("fingerprint") != self.fingerprint or not isinstance(scope_id, str):
            return None
        if not isinstance(size, int) or not isinstance(digest, str) or size < 1:
            return None
        key = hashlib.sha256()
        key.update(self.fingerprint.encode("ascii") + b"\0" + scope_id.encode("ascii") + b"\0")
        key.update(_token_bytes(tokens))
        if key.hexdigest() != path.stem:
            return None
        return _Header(len(tokens), size, digest)

    def _read_index(self, path: Path) -> Saved[Path] | None:
        try:
            with open_regular(path) as fh:
                head = self._read_head(fh)
                if head is None:
                    return None
                header, tokens = head
                checked = self._check(path, header, tokens)
                if checked is None or fh.tell() + checked.state_size != path.stat().st_size:
                    return None
                scope = header.get("scope_name")
        except NotRegularFileError:
            raise
        except OSError:
            return None
        if not isinstance(scope, str) or _scope_id(scope) != header.get("scope"):
            return None
        return Saved(tuple(tokens), scope, checked.state_size, path, used=path.stat().st_mtime_ns)

    def best(self, tokens: Sequence[int], scope: str) -> tuple[Saved[Path] | None, int]:
        """The saved prefix of `scope` sharing the most tokens with `tokens`."""
        found: Saved[Path] | None = None
        length = 0
        for e in self._entries():
            if e.scope == scope:
                n = common_prefix(e.tokens, tokens)
                if n > length:
                    found, length = e, n
        return found, length

    def has(self, tokens: Sequence[int], scope: str) -> bool:
        return any(e.scope == scope and e.tokens == tuple(tokens) for e in self._entries())

    def load(self, entry: Saved[Path]) -> bytes | None:
        """The state bytes of `entry`, verified; None (and the file deleted) when it fails a check."""
        try:
            with open_regular(entry.payload) as fh:
                head = self._read_head(fh)
                checked = None if head is None else self._check(entry.payload, head[0], head[1])
                data = fh.read() if checked is not None else b""
        except NotRegularFileError as exc:
            # replaced since it was indexed: refused, left alone, forgotten
            print(f"keel local model: {exc}", file=sys.stderr, flush=True)
            if self._index is not None:
                self._index = [e for e in self._index if e is not entry]
            return None
        except OSError:
            checked, data = None, b""
        ok = (
            checked is not None
            and len(data) == checked.state_size
            and hashlib.sha256(data).hexdigest() == checked.state_sha256
        )
        if not ok:
            self._forget(entry)
            return None
        with contextlib.suppress(OSError):
            os.utime(entry.payload)  # recently used: evicted last
        return data

    def _forget(self, entry: Saved[Path]) -> None:
        entry.payload.unlink(missing_ok=True)
        if self._index is not None:
            self._index = [e for e in self._index if e is not entry]

    def _ensure_dir(self) -> None:
        for d in (self.root, self.dir):
            d.mkdir(mode=0o700, parents=True, exist_ok=True)
            os.chmod(d, 0o700)

    def save(self, tokens: Sequence[int], scope: str, data: bytes) -> Path | None:
        """Write the state of prefix `tokens` (atomic, 0600), then evict down to the bounds."""
        if len(tokens) < self.min_tokens or not data or len(data) > self.max_bytes:
            return None
        key = self.key(tokens, scope)
        header = json.dumps(
            {
                "fingerprint": self.fingerprint,
                "scope": _scope_id(scope),
                "scope_name": scope,
                "n_tokens": len(tokens),
                "state_size": len(data),
                "state_sha256": hashlib.sha256(data).hexdigest(),
            }
        ).encode("utf-8")
        self._ensure_dir()
        path = self.dir / f"{key}{_SUFFIX}"
        tmp = self.dir / f".{key}.{os.getpid()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(_MAGIC + struct.pack("<Q", len(header)) + header + _token_bytes(tokens))
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
        entries = [e for e in self._entries() if e.payload != path]
        entries.append(Saved(tuple(tokens), scope, len(data), path, used=path.stat().st_mtime_ns))
        self._index = entries
        self._evict()
        return path

    def _evict(self) -> None:
        files: list[tuple[int, int, Path]] = []
        with contextlib.suppress(OSError):
            for p in self.root.glob(f"*/*{_SUFFIX}"):
                with contextlib.suppress(OSError):
                    st = p.stat()
                    files.append((st.st_mtime_ns, st.st_size, p))
        files.sort()
        total = sum(size for _, size, _ in files)
        while files and (total > self.max_bytes or len(files) > self.max_files):
            _, size, p = files.pop(0)
            p.unlink(missing_ok=True)
            total -= size
            if self._index is not None:
                self._index = [e for e in self._index if e.payload != p]
