# keel's runtime: `open_session` builds a `Session` from one config. `harness` may import
# `memory` and `prompts`; they never import `harness`.
#
# `loop/`        the turn loop: Session, the transcript, model calls, the system prompt, the seams to memory
# `wiring/`      open_session: builds a Session from one config (loop/ never imports it)
# `config/`      the one validated config and its bounded loader
# `compress/`    compression with the memory flush, behind its CompressionHost protocol
# `models/`      model clients (OpenAI-compatible, Anthropic, scripted, the embedded model)
# `cachemeter/`  prefix-cache simulation and miss attribution over request traces
# `telemetry/`   OpenTelemetry export (GenAI spans, keel's cache metrics) behind a port
# `experiments/` scenarios run under several configurations, and `keel demo`
# `cli/`         the `keel` command
# `testing/`     test doubles shipped with the library
# `tools/`       everything the model can call: the registry, Python functions, keel's own
#                tools, MCP servers (`tools/mcp/`), and the one registration of a session's tools
# `errors.py` (the KeelError tree), `events.py` (what a turn streams), `types.py` (wire
# types), `usage.py` (provider usage shapes → `Usage`), `tokens.py` (tokenizers), `trace.py`
# (request traces).
import typing

from harness._lazy import lazy_names as _lazy_names
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
    SessionError,
    ToolServerError,
)
from harness.events import (
    EVENT_ADAPTER,
    CompressionFinished,
    CompressionStarted,
    Event,
    FlushCompleted,
    FlushEntry,
    MemoryWritten,
    PrefillProgress,
    RecallAttached,
    StopReason,
    TextDelta,
    ToolCallStarted,
    ToolResultReady,
    TurnEnded,
    UsageReported,
    Warning,
)
from harness.types import Message, ModelReply, ModelRequest, ToolCall, ToolSpec, Usage

if typing.TYPE_CHECKING:
    from harness.loop import Session
    from harness.models.base import ModelClient, ModelEvent, ModelTextDelta, PromptProgress, ReplyDone
    from harness.tokens import CharTokenizer, TiktokenTokenizer, Tokenizer, load_tiktoken
    from harness.tools import tool
    from harness.wiring import SessionOptions, open_session

# The loop, the model clients, the tokenizers, the tools and the wiring are imported when a
# name is first read (`harness._lazy`): a CLI command that needs none of them stays cheap.
__getattr__ = _lazy_names(
    globals(),
    {
        "harness.loop": ("Session",),
        "harness.models.base": ("ModelClient", "ModelEvent", "ModelTextDelta", "PromptProgress", "ReplyDone"),
        "harness.tokens": ("CharTokenizer", "TiktokenTokenizer", "Tokenizer", "load_tiktoken"),
        "harness.tools": ("tool",),
        "harness.wiring": ("SessionOptions", "open_session"),
    },
)

__all__ = [
    "EVENT_ADAPTER",
    "CharTokenizer",
    "CompressionFinished",
    "CompressionStarted",
    "ConfigError",
    "Event",
    "FlushCompleted",
    "FlushEntry",
    "KeelConfig",
    "KeelError",
    "LocalModelError",
    "MemoryWritten",
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
    "PrefillProgress",
    "PromptProgress",
    "RecallAttached",
    "ReplyDone",
    "RetryableModelError",
    "Session",
    "SessionError",
    "SessionOptions",
    "StopReason",
    "TextDelta",
    "TiktokenTokenizer",
    "Tokenizer",
    "ToolCall",
    "ToolCallStarted",
    "ToolResultReady",
    "ToolServerError",
    "ToolSpec",
    "TurnEnded",
    "Usage",
    "UsageReported",
    "Warning",
    "load_config",
    "load_tiktoken",
    "open_session",
    "tool",
]
