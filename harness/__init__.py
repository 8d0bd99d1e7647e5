# keel's runtime: wire types (`types`), model clients (`models/`), tokenizers (`tokens`),
# traces (`trace`), configuration (`config`) and the CLI (`cli/`). The turn loop, tool
# registry, compression and the cache meter build on these. `harness` may import `memory`
# and `prompts`; they never import `harness`.
from harness.config import KeelConfig, load_config
from harness.errors import (
    ConfigError,
    KeelError,
    LocalModelError,
    ModelAuthError,
    ModelConnectionError,
    ModelError,
    ModelRateLimitError,
    ModelRequestError,
    ModelResponseError,
    ModelServerError,
    ModelTimeoutError,
    RetryableModelError,
    ScriptExhaustedError,
    SessionError,
)
from harness.models.base import ModelClient, ModelEvent, ReplyDone, TextDelta
from harness.tokens import CharTokenizer, TiktokenTokenizer, TokenCounter, Tokenizer, load_tiktoken
from harness.types import Message, ModelReply, ModelRequest, ToolCall, ToolResult, ToolSpec, Usage

__all__ = [
    "CharTokenizer",
    "ConfigError",
    "KeelConfig",
    "KeelError",
    "LocalModelError",
    "Message",
    "ModelAuthError",
    "ModelClient",
    "ModelConnectionError",
    "ModelError",
    "ModelEvent",
    "ModelRateLimitError",
    "ModelReply",
    "ModelRequest",
    "ModelRequestError",
    "ModelResponseError",
    "ModelServerError",
    "ModelTimeoutError",
    "ReplyDone",
    "RetryableModelError",
    "ScriptExhaustedError",
    "SessionError",
    "TextDelta",
    "TiktokenTokenizer",
    "TokenCounter",
    "Tokenizer",
    "ToolCall",
    "ToolResult",
    "ToolSpec",
    "Usage",
    "load_config",
    "load_tiktoken",
]
