# Compression with the memory flush (docs/architecture.md §5).
# `plan.py` (when to compress, where to cut), `flush/` (the one flush request and what its
# reply may do), `pieces.py` (one memory-only call per piece, the loop the flush and the
# review share), `summary.py` and `identifiers.py` (the summary message), `host.py` (the
# `CompressionHost` wall), `run.py` (the orchestration: flush, summarize, reload, rebuild,
# lineage). The façade: the wall a session implements, its settings, and the `Compressor`
# that runs on it; the flush's parts are in `harness.compress.flush`.
from harness.compress.host import CompressionHost, CompressionSettings
from harness.compress.run import Compressor

__all__ = ["CompressionHost", "CompressionSettings", "Compressor"]
