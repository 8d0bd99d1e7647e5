# `keel cache`: the cache meter's verbs. `_report.py` (`keel cache report`: measure a trace
# against the simulated caches, sweep timeouts, route replicas; it registers the noun) and
# `_lint.py` (`keel cache lint`: the habits behind the misses). The work is
# `harness.cachemeter`; these modules parse arguments, print and write files.
from harness.cli.cache._report import register

__all__ = ["register"]
