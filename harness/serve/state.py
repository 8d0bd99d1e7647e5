"""`ServeState`: what the routes share — the keys, the body cap, and the worker once started."""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.serve.auth import Keys
from harness.serve.worker import Worker

__all__ = ["ServeState"]


@dataclass(slots=True)
class ServeState:
    keys: Keys
    cap: int
    _worker: Worker | None = field(default=None)

    @property
    def worker(self) -> Worker:
        if self._worker is None:
            raise RuntimeError("the server has not started (its lifespan opens the worker)")
        return self._worker

    def started(self, worker: Worker | None) -> None:
        self._worker = worker
