"""Exceptions out of task groups as the caller expects them: one error, not a group of one.

anyio task groups wrap whatever escapes them in an `ExceptionGroup`, even a single error,
so `except ModelError` around `open_session` or `run_turn` would miss it. At those public
boundaries a group holding exactly one exception is unwrapped; a group of several (real
concurrent failures) is raised as it is.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["single_error"]


def _leaves(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    out: list[BaseException] = []
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            out.extend(_leaves(exc))
        else:
            out.append(exc)
    return out


@contextmanager
def single_error() -> Iterator[None]:
    """Re-raise a one-exception group as that exception (with its own traceback)."""
    try:
        yield
    except BaseExceptionGroup as group:
        leaves = _leaves(group)
        if len(leaves) == 1:
            raise leaves[0] from leaves[0].__cause__
        raise
