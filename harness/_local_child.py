"""Entry point of the embedded model server's child process.

Runs `llama_cpp.server` exactly as `python -m llama_cpp.server` would, after asking Linux to
send this process SIGTERM when its parent dies: if keel is killed outright (SIGKILL, a
crashed terminal), the model server must not live on as an orphan holding a CPU and a port.
"""

from __future__ import annotations

import ctypes
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


if __name__ == "__main__":
    _die_with_parent()
    sys.argv[0] = "llama_cpp.server"
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
