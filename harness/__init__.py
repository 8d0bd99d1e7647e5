# keel's runtime. `runtime.open_session` builds a `session.Session` (the turn loop) from a
# config: model clients (`models/`, `clients`, `local` for the embedded model), tokenizers
# (`tokens`), the tool registry (`tools`), prompt assembly (`prompt`), compression
# (`compression` + `compressor` + `flush`), the seams to memory (`ports`, `adapters`),
# traces (`trace`) and the cache meter (`cachemeter/`); `experiments/` and `demo` run
# scenarios; `cli/` is the `keel` command. `harness` may import `memory` and `prompts`;
# they never import `harness`.
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
from harness.loop.open import open_session
from harness.loop.session import Session
from harness.models.base import ModelClient, ModelEvent, ModelTextDelta, ReplyDone
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
    "ModelTextDelta",
    "ModelTimeoutError",
    "ReplyDone",
    "RetryableModelError",
    "ScriptExhaustedError",
    "Session",
    "SessionError",
    "TiktokenTokenizer",
    "TokenCounter",
    "Tokenizer",
    "ToolCall",
    "ToolResult",
    "ToolSpec",
    "Usage",
    "load_config",
    "load_tiktoken",
    "open_session",
]
