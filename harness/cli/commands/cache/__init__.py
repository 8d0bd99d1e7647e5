# `keel cache`: the cache meter's verbs. `_report.py` (`keel cache report`: measure a trace
# against the simulated caches, sweep timeouts, route replicas; it registers the noun) and
# `_lint.py` (`keel cache lint`: the habits behind the misses); `_out.py` writes what both
# print (the JSON report, the wide text). The work is `harness.cachemeter`; these modules
# parse arguments, print and write files.
from harness.cli.commands.cache._report import register

__all__ = ["register"]
