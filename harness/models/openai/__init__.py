"""`OpenAIClient`: any OpenAI-compatible chat-completions endpoint over an injected httpx client."""

from harness.models.openai._wire import ToolResultStyle
from harness.models.openai.client import OpenAIClient

__all__ = ["OpenAIClient", "ToolResultStyle"]
