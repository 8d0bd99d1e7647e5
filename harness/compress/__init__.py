# Compression with the memory flush (design.md §5).
# `plan.py` (when to compress, where to cut), `flush/` (the one flush request and what its
# reply may do), `summary.py` and `identifiers.py` (the summary message), `host.py` (the
# `CompressionHost` wall), `run.py` (the orchestration: flush, summarize, reload, rebuild,
# lineage).
from harness.compress.flush import FlushOutcome, build_flush_request, execute_flush_reply

__all__ = ["FlushOutcome", "build_flush_request", "execute_flush_reply"]
