"""A `tools/call` result as the text the model reads.

Text blocks are kept as they are; an image or audio block becomes a one-line placeholder
(the model is text-only here); an embedded resource contributes its text, a resource link
its URI. Structured content is shown as JSON when the server sent no text for it. The
whole text is capped (head and tail kept, with a marker).
"""

from __future__ import annotations

import json

from mcp import types

from harness.tools.cut import cap_text
from harness.tools.registry import ToolOutput

__all__ = ["result_output"]


def _block_text(block: object) -> str:
    if isinstance(block, types.TextContent):
        return block.text
    if isinstance(block, types.ImageContent):
        return f"[image: {block.mime_type}, {len(block.data) * 3 // 4:,} bytes — not shown]"
    if isinstance(block, types.AudioContent):
        return f"[audio: {block.mime_type}, {len(block.data) * 3 // 4:,} bytes — not shown]"
    if isinstance(block, types.EmbeddedResource):
        resource = block.resource
        if isinstance(resource, types.TextResourceContents):
            return resource.text
        return f"[binary resource {resource.uri} — not shown]"
    if isinstance(block, types.ResourceLink):
        return f"[resource: {block.uri}]"
    return f"[{type(block).__name__} content — not shown]"


def result_output(result: types.CallToolResult, *, max_chars: int) -> ToolOutput:
    """The model's view of one result; `is_error` follows the server's flag."""
    parts = [_block_text(block) for block in result.content]
    has_text = any(isinstance(b, types.TextContent) for b in result.content)
    if result.structured_content is not None and not has_text:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False, default=str))
    text = "\n".join(p for p in parts if p)
    return ToolOutput(cap_text(text, max_chars), is_error=bool(result.is_error))
