# Model clients. `base` holds the `ModelClient` protocol and the stream events; each
# backend lives in its own public module over an injected `httpx.AsyncClient`:
# `openai` (chat completions) and `anthropic` (Messages API with cache breakpoints), with
# their wire mapping and SSE parsing in private `_openai_*` / `_anthropic_*` modules and the
# shared HTTP error boundary in `_http`. `retry` wraps any client with backoff, `scripted`
# is the deterministic test model (its data form for scenario files is in `_script_data`).
# Provider usage shapes are normalized by `harness.usage`, beside `harness.types.Usage`.
from harness.models.anthropic import AnthropicClient
from harness.models.base import ModelClient, ModelEvent, ModelTextDelta, PromptProgress, ReplyDone
from harness.models.openai import OpenAIClient
from harness.models.retry import RetryAttempt, RetryingClient

__all__ = [
    "AnthropicClient",
    "ModelClient",
    "ModelEvent",
    "ModelTextDelta",
    "OpenAIClient",
    "PromptProgress",
    "ReplyDone",
    "RetryAttempt",
    "RetryingClient",
]
