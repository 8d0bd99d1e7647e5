"""Miss attribution: why a request did not reuse more of its prompt (docs/architecture.md §7).

Two questions, answered per request:

1. **Content** (`content_break`, one answer per request): compare the request with the
   earlier request that shares the longest prefix (the `ideal` view) and map the first
   divergent token through the segments: `tools_changed`, `system_changed[:<slot>]`,
   `messages_changed:<index>`. `model_changed` when a request of another model shared
   more; `first_request` for the first request of its model; `none` when the earlier
   request is wholly a prefix of this one (only a new suffix was appended — no break).
2. **Per simulator** (`attribute`): a simulator can reuse less than the content allows.
   `ttl_expired` / `evicted`: the longer prefix was cached once and was gone
   (`routed_away`: it was on another server of a fleet, `harness.cachemeter.replicas`); the
   simulator's rules — `block_rounding` (vLLM blocks, OpenAI 128-token steps),
   `below_minimum` (OpenAI 1,024, Anthropic per-model), `no_breakpoint` (no Anthropic
   breakpoint where an earlier request wrote one) — kept it below the shared prefix.

Each candidate reason comes with the tokens it cost; the simulator's reason is the costliest
(ties: content first, then loss, then policy), `none` when nothing was lost beyond the new
suffix and the unavoidable last token.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

from harness.cachemeter.render import Rendered
from harness.cachemeter.sim import PrefixMatch, SimStep

__all__ = ["Attribution", "ReasonKind", "attribute", "content_break"]

ReasonKind: TypeAlias = Literal[
    "none",
    "first_request",
    "model_changed",
    "tools_changed",
    "system_changed",
    "messages_changed",
    "ttl_expired",
    "evicted",
    "routed_away",
    "below_minimum",
    "block_rounding",
    "no_breakpoint",
]


@dataclass(frozen=True, slots=True)
class Attribution:
    """One reason, the prompt tokens it cost, and where the content diverged.

    Attributes:
        kind: the reason.
        detail: the slot name (`system_changed`) or message index (`messages_changed`).
        lost: prompt tokens the reason cost (not reused because of it).
        position: the first divergent token, for content reasons.
    """

    kind: ReasonKind
    detail: str | None = None
    lost: int = 0
    position: int | None = None

    @property
    def label(self) -> str:
        """`system_changed:memory`, `messages_changed:3`, `none`, ..."""
        return self.kind if self.detail is None else f"{self.kind}:{self.detail}"


NONE = Attribution("none")


def content_break(
    match: PrefixMatch,
    rendered: Rendered,
    *,
    first: bool,
    source_generation_start: int | None = None,
    message_base: int = 0,
) -> Attribution:
    """Why this request's content is not wholly a continuation of an earlier one.

    Args:
        match: the ideal simulator's view of the request.
        rendered: the request's tokens and segments.
        first: no request at all came before this one.
        source_generation_start: where `match.source`'s trailing generation prompt starts;
            diverging only there means the source was a complete prefix.
        message_base: added to message indices (system messages lifted out of a chat line).
    """
    n = rendered.n_tokens
    shared = match.prefix
    if first:
        return Attribution("first_request", lost=n, position=0)
    if match.other_prefix > shared:
        return Attribution("model_changed", lost=n - shared, position=shared)
    if not match.seen_model:
        return Attribution("first_request", lost=n, position=0)
    if shared >= n or match.source_is_prefix:
        return NONE
    if source_generation_start is not None and shared >= source_generation_start:
        return NONE
    seg = rendered.segment_at(shared)
    if seg is None or seg.kind == "generation":
        return NONE
    lost = n - shared
    if seg.kind == "tools":
        return Attribution("tools_changed", lost=lost, position=shared)
    if seg.kind == "system":
        return Attribution("system_changed", seg.slot, lost, shared)
    index = (seg.index or 0) + message_base
    return Attribution("messages_changed", str(index), lost, shared)


def attribute(content: Attribution, step: SimStep, *, n: int, shared: int) -> Attribution:
    """The reason one simulator reused only `step.reusable` tokens of an `n`-token request.

    Args:
        content: the request's `content_break`.
        step: the simulator's answer.
        n: the request's length in tokens.
        shared: the longest prefix shared with an earlier request of the same model.
    """
    if content.kind == "first_request":
        return content
    candidates: list[Attribution] = []
    if content.kind != "none":
        candidates.append(content)
    lost_to_cache = step.potential - step.reusable
    if lost_to_cache > 0 and step.loss is not None:
        candidates.append(Attribution(step.loss, lost=lost_to_cache, position=step.reusable))
    lost_to_rules = min(shared, n - 1) - step.potential
    if lost_to_rules > 0 and step.policy is not None:
        candidates.append(Attribution(step.policy, lost=lost_to_rules, position=step.potential))
    best = NONE
    for c in candidates:
        if c.lost > best.lost:
            best = c
    return best
