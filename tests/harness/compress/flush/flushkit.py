"""A flush reply built by hand, for the flush tests."""

from __future__ import annotations

import json

from harness.types import Message, ModelReply, ToolCall


def reply(text: str = "", *calls: tuple[str, object]) -> ModelReply:
    """An assistant reply with `text` and one tool call per (name, arguments) pair."""
    return ModelReply(
        message=Message(
            "assistant",
            text,
            tool_calls=tuple(
                ToolCall(f"c{i}", name, args if isinstance(args, str) else json.dumps(args))
                for i, (name, args) in enumerate(calls)
            ),
        )
    )
