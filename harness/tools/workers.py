"""Where Python tools run, so that no tool can take the session down.

- A **sync** function runs on a daemon thread: an idle one kept from an earlier call
  (`_SyncWorkers`; starting a thread per call cost more than most tools), else a new one.
  Python cannot interrupt a thread: at its timeout the call is abandoned (the turn goes on
  with a tool error), its thread never comes back for another call, and, being a daemon, it
  never keeps the process alive at exit — unlike a `concurrent.futures` pool's worker, which
  the interpreter joins. The loop is woken without waiting for it (`run_sync_soon`).
- An **async** function runs on the *tool loop*: one event loop in a daemon thread of its
  own, started at the first async call and kept for the process (so state a tool binds to
  its loop, an HTTP client in a module, lives across calls). The session's loop only waits
  for the result: a tool that swallows cancellation is abandoned at its timeout, and a
  blocking call in it (`time.sleep`, a sync HTTP request) stalls the tool loop, not the
  session. A ticker beside each async call measures how long the tool loop went without
  running it; a stall past `BLOCKED_S` is reported with the result.
- Whatever the function raises — `Exception`, but also `SystemExit` (argparse given a bad
  flag), `KeyboardInterrupt` or `GeneratorExit` from the tool's own code — comes back as an
  `Outcome`, never as a raise. Only the session's own cancellation propagates.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import contextvars
import queue
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial

import anyio
import anyio.from_thread
import anyio.lowlevel
from anyio.from_thread import BlockingPortal

__all__ = ["BLOCKED_S", "Outcome", "run_async", "run_sync"]

BLOCKED_S = 0.5
"""A stall of the tool loop this long during an async call is reported as a blocking call."""

_TICK_S = 0.05


@dataclass(frozen=True, slots=True)
class Outcome:
    """How one call ended: a value, an exception it raised, or its timeout."""

    value: object = None
    error: BaseException | None = None
    timed_out: bool = False
    blocked_s: float = 0.0
    """The longest stretch the tool loop could not run anything else during the call."""


def _caught(fn: Callable[[], object]) -> Outcome:
    try:
        return Outcome(value=fn())
    except BaseException as exc:  # the tool's SystemExit or KeyboardInterrupt too: it is its error
        return Outcome(error=exc)


async def _wait(future: concurrent.futures.Future[Outcome], timeout_s: float) -> Outcome:
    """The future's outcome, or a timed-out one; the future is cancelled when we stop waiting."""
    token = anyio.lowlevel.current_token()
    loop_thread = threading.get_ident()
    done = anyio.Event()

    def wake(_: concurrent.futures.Future[Outcome]) -> None:
        if threading.get_ident() == loop_thread:  # already done, or cancelled below
            done.set()
            return
        with contextlib.suppress(RuntimeError):  # the loop is gone: nobody waits any more
            token.backend_class.run_sync_soon(done.set, (), token.native_token)  # no wait for the loop

    future.add_done_callback(wake)
    try:
        with anyio.move_on_after(timeout_s):
            if not future.done():
                await done.wait()
    finally:
        if not future.done():
            future.cancel()  # abandon it: a thread cannot be stopped, a stubborn task is left
    if future.cancelled() or not future.done():
        return Outcome(timed_out=True)
    return future.result()


class _SyncWorkers:
    """Daemon threads that run sync calls one after another, kept idle between calls.

    A call takes an idle thread or starts one; a thread goes back to the idle list when its
    call returns, and ends instead when `keep` are idle already. A call that never returns
    keeps its thread (abandoned, as before), so the next call simply gets another.
    """

    def __init__(self, *, keep: int = 4) -> None:
        self._keep = keep
        self._lock = threading.Lock()
        self._idle: list[queue.SimpleQueue[Callable[[], None]]] = []

    def submit(self, job: Callable[[], None], *, name: str) -> None:
        """Run `job` on a worker thread named `keel tool <name>` (not blocking)."""
        with self._lock:
            inbox = self._idle.pop() if self._idle else None
        if inbox is not None:
            inbox.put(partial(self._named, job, name))
            return
        inbox = queue.SimpleQueue()
        inbox.put(partial(self._named, job, name))
        threading.Thread(target=self._serve, args=(inbox,), name=f"keel tool {name}", daemon=True).start()

    @staticmethod
    def _named(job: Callable[[], None], name: str) -> None:
        threading.current_thread().name = f"keel tool {name}"
        job()

    def _serve(self, inbox: queue.SimpleQueue[Callable[[], None]]) -> None:
        while True:
            inbox.get()()  # a job never raises: its outcome goes to its future
            with self._lock:
                if len(self._idle) >= self._keep:
                    return
                self._idle.append(inbox)


_SYNC_WORKERS = _SyncWorkers()
"""One per process, like the tool loop: threads start at the first calls, never at import."""


async def run_sync(fn: Callable[[], object], *, name: str, timeout_s: float) -> Outcome:
    """Run `fn` on a daemon worker thread; abandon it after `timeout_s`."""
    future: concurrent.futures.Future[Outcome] = concurrent.futures.Future()
    context = contextvars.copy_context()

    def work() -> None:
        if not future.set_running_or_notify_cancel():
            return
        future.set_result(context.run(_caught, fn))

    _SYNC_WORKERS.submit(work, name=name)
    return await _wait(future, timeout_s)


async def _watched(fn: Callable[[], Awaitable[object]]) -> Outcome:
    """Await `fn()` on the tool loop beside a ticker that measures how long the loop stalled."""
    last = time.monotonic()
    worst = 0.0

    async def tick() -> None:
        nonlocal last, worst
        while True:
            await anyio.sleep(_TICK_S)
            now = time.monotonic()
            worst = max(worst, now - last - _TICK_S)
            last = now

    outcome = Outcome()
    async with anyio.create_task_group() as tg:
        tg.start_soon(tick)
        try:
            outcome = Outcome(value=await fn())
        except anyio.get_cancelled_exc_class():
            raise
        except BaseException as exc:  # the tool's own SystemExit or KeyboardInterrupt: its error
            outcome = Outcome(error=exc)
        # A tool that blocked and then returned without yielding: the stall ends here.
        worst = max(worst, time.monotonic() - last - _TICK_S)
        tg.cancel_scope.cancel()
    return Outcome(outcome.value, outcome.error, blocked_s=max(0.0, worst))


class _ToolLoop:
    """The event loop async tools run on: a daemon thread with a portal into it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._portal: BlockingPortal | None = None

    def portal(self) -> BlockingPortal:
        """The portal, starting the loop's thread the first time (blocking: call from a thread)."""
        with self._lock:
            if self._portal is None:
                ready = threading.Event()
                holder: list[BlockingPortal] = []

                async def serve() -> None:
                    async with BlockingPortal() as portal:
                        holder.append(portal)
                        ready.set()
                        await portal.sleep_until_stopped()

                threading.Thread(target=anyio.run, args=(serve,), name="keel tool loop", daemon=True).start()
                ready.wait()
                self._portal = holder[0]
            return self._portal


_TOOL_LOOP = _ToolLoop()
"""One per process, like a thread pool: made at the first async call, never at import."""


async def run_async(fn: Callable[[], Awaitable[object]], *, timeout_s: float) -> Outcome:
    """Run `fn()` on the tool loop; abandon it after `timeout_s` (its task is cancelled)."""
    portal = await anyio.to_thread.run_sync(_TOOL_LOOP.portal)
    future: concurrent.futures.Future[Outcome] = portal.start_task_soon(_watched, fn)
    return await _wait(future, timeout_s)
