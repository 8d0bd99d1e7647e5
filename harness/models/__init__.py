# Model clients. `base` holds the `ModelClient` protocol and the stream events; each
# backend (openai, anthropic, scripted) lives in its own module over an injected
# `httpx.AsyncClient`; `retry` wraps any client with backoff.
from harness.models.base import ModelClient, ModelEvent, ReplyDone, TextDelta

__all__ = ["ModelClient", "ModelEvent", "ReplyDone", "TextDelta"]
