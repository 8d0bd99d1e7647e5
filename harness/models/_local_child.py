"""Entry point of the embedded model server's child process.

Runs `llama_cpp.server` as `python -m llama_cpp.server` would, with two guards:

- Linux sends this process SIGTERM when its parent dies: if keel is killed outright
  (SIGKILL, a crashed terminal), the server must not live on holding a CPU and a port.
- Every generation is capped at `KEEL_LOCAL_MAX_TOKENS` tokens. llama-cpp-python's
  chatml-function-calling handler ignores the request's `max_tokens` when the model may
  choose a tool (it passes `max_tokens=None`), and a small model can then generate until
  the context is full — minutes on a CPU, during which every other request waits, because
  the server keeps generating after the client has given up.
"""

from __future__ import annotations

import ctypes
import os
import runpy
import signal
import sys

_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        return  # best effort: without it, keel's own shutdown still stops the server


def _cap_generation(limit: int) -> None:
    import llama_cpp

    original = llama_cpp.Llama.create_completion

    def capped(self: object, *args: object, **kwargs: object) -> object:
        requested = kwargs.get("max_tokens")
        if not isinstance(requested, int) or requested <= 0 or requested > limit:
            kwargs["max_tokens"] = limit
        return original(self, *args, **kwargs)  # type: ignore[arg-type]  # forwarding as called

    llama_cpp.Llama.create_completion = capped  # type: ignore[method-assign, assignment]  # the guard above


if __name__ == "__main__":
    _die_with_parent()
    cap = os.environ.get("KEEL_LOCAL_MAX_TOKENS", "")
    if cap.isdigit() and int(cap) > 0:
        _cap_generation(int(cap))
    sys.argv[0] = "llama_cpp.server"
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
