# Replicas: N servers behind a router, simulated over one trace or many interleaved by time.
# `_router` holds the policies (round_robin, session, prefix), `_fleet` N simulators behind
# one router as a simulator (with the `routed_away` miss cause), `_run` every policy and fleet
# size side by side in one pass over the meter's stream (`ReplicaPass`, driven by
# `harness.cachemeter.run`), `_table` the table; the plot is in `harness.cachemeter.plot`.
"""Replicas and routing: what each policy would cost on your own traces before you deploy."""

from harness.cachemeter.replicas._router import ROUTING_POLICIES, RoutingPolicy
from harness.cachemeter.replicas._run import ReplicaPass, ReplicaReport
from harness.cachemeter.replicas._table import replica_table

__all__ = [
    "ROUTING_POLICIES",
    "ReplicaPass",
    "ReplicaReport",
    "RoutingPolicy",
    "replica_table",
]
