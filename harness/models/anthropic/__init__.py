"""`AnthropicClient`: the Anthropic Messages API over an injected httpx client."""

from harness.models.anthropic.client import AnthropicClient

__all__ = ["AnthropicClient"]
