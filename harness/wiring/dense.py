"""Hybrid session search as a session builds it: is it on, and the background indexer.

`session_search.dense` decides: `auto` turns it on when the semantic extra's embedder is
installed, `on` requires it (a session without it refuses to open, saying how to install
it), `off` keeps words only. When on, the session gets a `DenseIndex` over its session
store, passed to the `session_search` tool, and a background task in the session's exit
stack that embeds new messages every `dense_interval_s` seconds, `dense_batch` at a time
(never inside a turn: the turn's write does not wait for an embedding).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING

import anyio

from harness.config import KeelConfig
from harness.errors import ConfigError
from memory.sessions import SessionReader, open_vectors

if TYPE_CHECKING:  # the index loads numpy: imported when hybrid search is on
    from memory.sessions import DenseIndex

__all__ = ["DenseChoice", "dense_choice", "dense_index", "start_dense"]


@dataclass(frozen=True, slots=True)
class DenseChoice:
    """Whether hybrid search is on, and why (one sentence, with the fix when it is off)."""

    on: bool
    reason: str


def dense_choice(config: KeelConfig, *, unavailable: Callable[[], str | None] | None = None) -> DenseChoice:
    """What `session_search.dense` means on this machine.

    Args:
        config: the configuration.
        unavailable: why the embedder cannot run here, or None (tests pass their own;
            default: the semantic package's `embedder_unavailable_reason`).

    Raises:
        ConfigError: `dense: on` and the embedder is not installed.
    """
    mode = config.session_search.dense
    if mode == "off":
        return DenseChoice(False, "session_search.dense is off: words only")
    if unavailable is None:
        # Here and below, not at import: the CLI's session commands import this module, and
        # only a search needs the semantic package (the embedder).
        from memory.providers.semantic import embedder_unavailable_reason

        missing = embedder_unavailable_reason()
    else:
        missing = unavailable()
    if missing is None:
        return DenseChoice(True, f"session_search.dense is {mode} and the embedder is installed")
    if mode == "on":
        raise ConfigError(f"session_search.dense is on but the embedder is unavailable: {missing}")
    return DenseChoice(False, f"session_search.dense is auto and the embedder is unavailable: {missing}")


def dense_index(config: KeelConfig, db: SessionReader) -> DenseIndex | None:
    """The store's dense index when hybrid search is on here (nothing is opened yet), else None."""
    vectors = open_vectors(db) if dense_choice(config).on else None
    if vectors is None:
        return None
    from memory.providers.semantic import MiniLmEmbedder
    from memory.sessions import DenseIndex

    threads = config.memory.semantic.embedder_threads
    return DenseIndex(vectors, MiniLmEmbedder(threads=threads), batch=config.session_search.dense_batch)


async def start_dense(stack: AsyncExitStack, config: KeelConfig, db: SessionReader) -> DenseIndex | None:
    """`dense_index`, with its background indexer running until `stack` closes."""
    index = dense_index(config, db)
    if index is None:
        return None
    stack.push_async_callback(index.aclose)
    tg = await stack.enter_async_context(anyio.create_task_group())
    stack.callback(tg.cancel_scope.cancel)  # runs first on the way out: the loop never ends itself
    tg.start_soon(_index_forever, index, config.session_search.dense_interval_s)
    return index


async def _index_forever(index: DenseIndex, interval_s: float) -> None:
    await index.run(interval_s=interval_s)
