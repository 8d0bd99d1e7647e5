# The prompt-cache lifecycle: act on what the cache meter knows about a provider's cache.
# `economics.py` (a provider's TTL and cache prices), `policy.py` (at a prefix's deadline:
# refresh, compact, or let it expire), `controller.py` (the async keeper that runs during
# a turn's tool calls and a user's idle time, and traces every refresh).
"""Keep-warm and compaction before expiry."""
