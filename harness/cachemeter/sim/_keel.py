"""keel's own embedded server: the live KV state, states saved in RAM, and the disk prefix cache.

The server decides which state a request resumes from with `harness.models.local`'s prefix
policy (`plan_resume`); this simulator runs that same code over the meter's tokens, so its
reuse is the server's `cached_tokens` when the tokens are the server's (the `jinja` renderer
in the `keel` dialect with the model's GGUF vocabulary gives them). What the live state holds
after a request is its prompt plus the reply tokens the model evaluated (`generated`, when the
trace knows them); the system turn and tools (`stable` tokens) are saved to disk the first
time they are evaluated, and a `restart()` (a new server process) keeps the disk and loses
the rest.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.cachemeter._seq import unpack
from harness.cachemeter.sim._llamacpp import slot_step
from harness.cachemeter.sim._types import SimRequest, SimStep
from harness.models.local import PrefixPolicy, RamStates, Saved, common_prefix, plan_resume

__all__ = ["KeelLocalSimulator"]


@dataclass(slots=True)
class _Live:
    tokens: tuple[int, ...] = ()
    req: int | None = None
    scope: str = ""


class KeelLocalSimulator:
    """keel's embedded server (see the module docstring).

    Args:
        policy: the server's prefix-cache knobs (`model.local_server` in the config).
        disk: whether the disk prefix cache is on.
        disk_min_tokens: shorter stable prefixes are not saved.
    """

    def __init__(
        self, *, policy: PrefixPolicy | None = None, disk: bool = True, disk_min_tokens: int = 256
    ) -> None:
        self.policy = policy or PrefixPolicy()
        self.disk = disk
        self.disk_min_tokens = disk_min_tokens
        self._disk: dict[str, list[Saved[int]]] = {}
        self._model = ""
        self._count = 0
        self.restart()

    @property
    def name(self) -> str:
        return "keel"

    def restart(self) -> None:
        """New server processes: RAM and the live states are gone, the disk cache stays."""
        self._servers: dict[str, tuple[_Live, RamStates[int]]] = {}

    def _disk_best(self, tokens: list[int], scope: str) -> tuple[Saved[int] | None, int]:
        found: Saved[int] | None = None
        length = 0
        for e in self._disk.get(self._model, []) if self.disk else []:
            n = common_prefix(e.tokens, tokens) if e.scope == scope else 0
            if n > length:
                found, length = e, n
        return found, length

    def feed(self, request: SimRequest) -> SimStep:
        idx = self._count
        self._count += 1
        tokens = unpack(request.tokens)
        self._model = request.model  # each model is its own server, with its own caches
        live, ram = self._servers.get(request.model) or (_Live(), RamStates[int](self.policy))
        chosen = plan_resume(
            self.policy,
            live=live.tokens,
            live_scope=live.scope,
            tokens=tokens,
            scope=request.scope,
            ram=ram,
            disk=self._disk_best(tokens, request.scope),
        )
        if chosen.save_live and live.req is not None:
            ram.add(Saved(live.tokens, live.scope, len(live.tokens), live.req))
        if chosen.ram_entry is not None:
            ram.touch(chosen.ram_entry)
            live = _Live(chosen.ram_entry.tokens, chosen.ram_entry.payload, request.scope)
        elif chosen.disk_entry is not None:
            live = _Live(chosen.disk_entry.tokens, chosen.disk_entry.payload, request.scope)
        elif chosen.reset:
            live = _Live()
        source = live.req
        shared = common_prefix(live.tokens, tokens)
        k = request.stable
        if self.disk and self.disk_min_tokens <= k < len(tokens) and shared < k:
            prefix = tuple(tokens[:k])
            saved = self._disk.setdefault(request.model, [])
            if not any(e.tokens == prefix and e.scope == request.scope for e in saved):
                saved.append(Saved(prefix, request.scope, k, idx))
        self._servers[request.model] = (_Live((*tokens, *unpack(request.generated)), idx, request.scope), ram)
        return slot_step(request, shared, source if shared else None)
