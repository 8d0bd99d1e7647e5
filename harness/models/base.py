"""The model-client contract every backend implements."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Literal, Protocol, TypeAlias

from harness.types import ModelReply, ModelRequest

__all__ = ["ModelClient", "ModelEvent", "ModelTextDelta", "PromptProgress", "ReplyDone", "provider_name"]


@dataclass(frozen=True, slots=True)
class ModelTextDelta:
    """A piece of assistant text as it streams in."""

    text: str
    kind: Literal["text_delta"] = "text_delta"


@dataclass(frozen=True, slots=True)
class ReplyDone:
    """The complete reply; always the last event of a stream."""

    reply: ModelReply
    kind: Literal["reply_done"] = "reply_done"


@dataclass(frozen=True, slots=True)
class PromptProgress:
    """The server is still reading the prompt: `done` of `total` prompt tokens are in its
    state (keel's embedded server reports this during a long prefill; others never do)."""

    done: int
    total: int
    kind: Literal["prompt_progress"] = "prompt_progress"


ModelEvent: TypeAlias = ModelTextDelta | PromptProgress | ReplyDone


class ModelClient(Protocol):
    """A chat model endpoint.

    `stream` yields zero or more `ModelTextDelta`s (and `PromptProgress`es, before the text)
    and then exactly one `ReplyDone`; errors are
    raised as `harness.errors.ModelError` subclasses, never as third-party exceptions.
    """

    @property
    def model_name(self) -> str:
        """The model identifier sent on the wire (recorded in traces)."""
        ...

    async def complete(self, request: ModelRequest) -> ModelReply:
        """Send one request and return the whole reply."""
        ...

    def stream(self, request: ModelRequest) -> AbstractAsyncContextManager[AsyncIterator[ModelEvent]]:
        """Send one request and stream the reply as events."""
        ...


def provider_name(client: object) -> str:
    """A client's `gen_ai.provider.name` for telemetry: its `provider_name` attribute (keel's
    clients have one; it is not part of `ModelClient`), else `_OTHER`."""
    name = getattr(client, "provider_name", None)
    return name if isinstance(name, str) else "_OTHER"
