"""The `fact_store` and `fact_feedback` tools: JSON schemas, argument models, the handler.

Arguments come from the model, so they are validated with pydantic at this boundary and
every problem — a wrong type, a missing field for the action, an unknown fact id — comes
back as a JSON `{"error": ...}` result the model can read and correct. The handler never
raises on bad input and never changes anything when it refuses. It is synchronous (SQLite);
the provider runs it in a worker thread.

The tool descriptions are constants here rather than `prompts/text` files because `memory`
cannot import `prompts`; they are short, and the schema shape depends on them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    ValidationError,
    model_validator,
)

from memory.errors import HolographicError
from memory.providers.holographic.contract import CATEGORIES, Category, Fact, FactBackend
from memory.providers.holographic.retrieval import Contradiction, Retriever, ScoredFact

__all__ = ["FACT_FEEDBACK_DESCRIPTION", "FACT_STORE_DESCRIPTION", "FactTools", "tool_schemas"]

FactAction = Literal["add", "search", "probe", "related", "reason", "contradict", "update", "remove", "list"]
_ACTIONS: tuple[FactAction, ...] = (
    "add",
    "search",
    "probe",
    "related",
    "reason",
    "contradict",
    "update",
    "remove",
    "list",
)

FACT_STORE_DESCRIPTION = (
    "Your long-term fact memory, kept on this machine. Store durable facts as short standalone "
    "sentences and look them up later. Actions: add (content; optional category, tags) stores a fact; "
    "search (query) ranks facts by keywords and meaning; probe (entity) lists facts that name an "
    "entity; related (entity) also finds facts that mention it in passing; reason (entities) finds "
    "facts that name all of the given entities; contradict lists pairs of facts about the same "
    "entities that say different things; update (fact_id with content, category, tags or "
    "trust_delta) edits one; remove (fact_id) deletes one; list (optional category) shows the most "
    "trusted. Before answering a question about the user, their people or their projects, search "
    "or probe first."
)

FACT_FEEDBACK_DESCRIPTION = (
    "Rate a fact that memory returned: 'helpful' raises its trust a little, 'unhelpful' lowers it "
    "twice as much. Facts whose trust falls below the recall floor are no longer recalled."
)

_MAX_ID = 2**62


def tool_schemas() -> list[dict[str, JsonValue]]:
    """The two tools in OpenAI function shape."""
    categories: list[JsonValue] = list(CATEGORIES)
    actions: list[JsonValue] = list(_ACTIONS)
    fact_store: dict[str, JsonValue] = {
        "name": "fact_store",
        "description": FACT_STORE_DESCRIPTION,
        "parameters": {
            "type": "object",
            "properties": {
                "action": {"type": "string", "enum": actions},
                "content": {"type": "string", "description": "The fact to add, or its new wording (update)."},
                "query": {"type": "string", "description": "What to search for (search)."},
                "entity": {
                    "type": "string",
                    "description": "A person, place, project or thing (probe, related).",
                },
                "entities": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "Entities that must all be named (reason).",
                },
                "fact_id": {"type": "integer", "description": "The fact to update or remove."},
                "category": {"type": "string", "enum": categories},
                "tags": {"type": "string", "description": "Comma-separated keywords."},
                "trust_delta": {"type": "number", "description": "Trust adjustment for update, -1 to 1."},
                "min_trust": {"type": "number", "description": "Only facts at least this trusted (0 to 1)."},
                "threshold": {"type": "number", "description": "Minimum contradiction score (contradict)."},
                "limit": {"type": "integer", "description": "Maximum results (1 to 50)."},
            },
            "required": ["action"],
        },
    }
    fact_feedback: dict[str, JsonValue] = {
        "name": "fact_feedback",
        "description": FACT_FEEDBACK_DESCRIPTION,
        "parameters": {
            "type": "object",
            "properties": {
                "action": {"type": "string", "enum": ["helpful", "unhelpful"]},
                "fact_id": {"type": "integer"},
            },
            "required": ["action", "fact_id"],
        },
    }
    return [fact_store, fact_feedback]


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FactStoreArgs(_Args):
    """`fact_store` arguments; which fields are required depends on `action`."""

    action: FactAction
    content: str | None = Field(None, max_length=4000)
    query: str | None = Field(None, max_length=1000)
    entity: str | None = Field(None, max_length=200)
    entities: list[Annotated[str, Field(max_length=200)]] | None = Field(None, max_length=8)
    fact_id: int | None = Field(None, ge=1, le=_MAX_ID)
    category: Category | None = None
    tags: str | None = Field(None, max_length=500)
    trust_delta: float | None = Field(None, ge=-1.0, le=1.0, allow_inf_nan=False)
    min_trust: float | None = Field(None, ge=0.0, le=1.0, allow_inf_nan=False)
    threshold: float | None = Field(None, ge=0.0, le=1.0, allow_inf_nan=False)
    limit: int | None = Field(None, ge=1, le=50)

    @model_validator(mode="after")
    def _required_for_action(self) -> FactStoreArgs:
        def blank(text: str | None) -> bool:
            return text is None or not text.strip()

        action = self.action
        if action == "add" and blank(self.content):
            raise ValueError("action 'add' needs 'content': the fact to remember")
        if action == "search" and blank(self.query):
            raise ValueError("action 'search' needs 'query'")
        if action in ("probe", "related") and blank(self.entity):
            raise ValueError(f"action {action!r} needs 'entity'")
        if action == "reason" and not [e for e in self.entities or [] if e.strip()]:
            raise ValueError("action 'reason' needs 'entities': a list of one or more names")
        if action in ("update", "remove") and self.fact_id is None:
            raise ValueError(f"action {action!r} needs 'fact_id'; use 'search' or 'list' to find it")
        if action == "update" and all(
            v is None for v in (self.content, self.category, self.tags, self.trust_delta)
        ):
            raise ValueError("action 'update' needs at least one of content, category, tags, trust_delta")
        return self


class FactFeedbackArgs(_Args):
    """`fact_feedback` arguments."""

    action: Literal["helpful", "unhelpful"]
    fact_id: int = Field(ge=1, le=_MAX_ID)


def _fact(fact: Fact) -> dict[str, JsonValue]:
    entities: list[JsonValue] = list(fact.entities)
    return {
        "fact_id": fact.fact_id,
        "content": fact.content,
        "category": fact.category,
        "tags": fact.tags,
        "trust": round(fact.trust, 3),
        "entities": entities,
    }


def _scored(hits: list[ScoredFact]) -> dict[str, JsonValue]:
    results: list[JsonValue] = [{**_fact(h.fact), "score": round(h.score, 4)} for h in hits]
    return {"results": results, "count": len(results)}


def _contradictions(found: list[Contradiction]) -> dict[str, JsonValue]:
    pairs: list[JsonValue] = [
        {
            "first": _fact(c.first),
            "second": _fact(c.second),
            "score": round(c.score, 4),
            "shared_entities": list(c.shared_entities),
        }
        for c in found
    ]
    return {"contradictions": pairs, "count": len(pairs)}


def _dump(payload: dict[str, JsonValue]) -> str:
    return json.dumps(payload, ensure_ascii=False)


def _error(message: str) -> str:
    return _dump({"error": message})


def _validation_message(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        where = ".".join(str(p) for p in err.get("loc", ())) or "arguments"
        parts.append(f"{where}: {err.get('msg', 'invalid')}")
    return "invalid arguments — " + "; ".join(parts)


class FactTools:
    """Runs `fact_store` / `fact_feedback` calls against a store (synchronously).

    Args:
        store: the fact store.
        retriever: the ranking over that store.
        min_trust: the default recall floor for searches.
    """

    def __init__(self, store: FactBackend, retriever: Retriever, *, min_trust: float) -> None:
        self._store = store
        self._retriever = retriever
        self._min_trust = min_trust

    def handle(self, name: str, arguments: object) -> str:
        """JSON text for one tool call; bad input becomes an `{"error": ...}` result."""
        if not isinstance(arguments, Mapping):
            return _error("arguments must be a JSON object")
        try:
            if name == "fact_store":
                return _dump(self._fact_store(FactStoreArgs.model_validate(dict(arguments))))
            if name == "fact_feedback":
                return _dump(self._feedback(FactFeedbackArgs.model_validate(dict(arguments))))
        except ValidationError as exc:
            return _error(_validation_message(exc))
        except HolographicError as exc:
            return _error(str(exc))
        return _error(f"unknown tool {name!r}; this provider has 'fact_store' and 'fact_feedback'")

    def _feedback(self, args: FactFeedbackArgs) -> dict[str, JsonValue]:
        change = self._store.feedback(args.fact_id, helpful=args.action == "helpful")
        return {
            "fact_id": change.fact_id,
            "old_trust": round(change.old, 3),
            "new_trust": round(change.new, 3),
        }

    def _fact_store(self, args: FactStoreArgs) -> dict[str, JsonValue]:
        retriever = self._retriever
        min_trust = self._min_trust if args.min_trust is None else args.min_trust
        limit = args.limit or 10
        match args.action:
            case "add":
                result = self._store.add_fact(
                    args.content or "", category=args.category or "general", tags=args.tags or ""
                )
                return {"fact_id": result.fact_id, "created": result.created}
            case "search":
                hits = retriever.search(
                    args.query or "",
                    category=args.category,
                    min_trust=min_trust,
                    limit=limit,
                    count_retrieval=True,
                )
                return _scored(hits)
            case "probe":
                return _scored(
                    retriever.probe(
                        args.entity or "", category=args.category, min_trust=min_trust, limit=limit
                    )
                )
            case "related":
                return _scored(
                    retriever.related(
                        args.entity or "", category=args.category, min_trust=min_trust, limit=limit
                    )
                )
            case "reason":
                return _scored(
                    retriever.reason(
                        args.entities or [], category=args.category, min_trust=min_trust, limit=limit
                    )
                )
            case "contradict":
                threshold = 0.3 if args.threshold is None else args.threshold
                return _contradictions(
                    retriever.contradict(category=args.category, threshold=threshold, limit=limit)
                )
            case "update":
                assert args.fact_id is not None  # checked by the model validator
                if args.trust_delta is not None and not math.isfinite(args.trust_delta):
                    raise HolographicError("trust_delta must be a finite number")
                fact = self._store.update_fact(
                    args.fact_id,
                    content=args.content,
                    category=args.category,
                    tags=args.tags,
                    trust_delta=args.trust_delta,
                )
                return {"updated": _fact(fact)}
            case "remove":
                assert args.fact_id is not None  # checked by the model validator
                return {"removed": _fact(self._store.remove_fact(args.fact_id))}
            case "list":
                facts = self._store.list_facts(
                    category=args.category, min_trust=args.min_trust or 0.0, limit=limit
                )
                listed: list[JsonValue] = [_fact(f) for f in facts]
                return {"facts": listed, "count": len(listed)}
