# MCP servers as tool sources, behind one wall: the rest of keel sees `McpToolSource`s
# (tools plus a re-list at prompt rebuilds) and never the SDK. `_connection.py` (one server
# in a host task of its own: start, initialize, list, call, stop; failures after the start
# become tool errors), `_stdio.py` and `_http.py` (the transports' seams: caps as replies
# stream, transport errors as JSON-RPC errors), `_tools.py` (a server's tools as
# `<server>__<tool>` registry tools: sorted, capped, bad ones left out), `_results.py` (a call
# result as text: images as placeholders, structured content as JSON, capped).
from harness.tools.mcp._connection import connect
from harness.tools.mcp._tools import McpToolSource

__all__ = ["McpToolSource", "connect"]
