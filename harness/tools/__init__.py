# Everything the model can call, in one room. `registry.py` (the Tool protocol, ToolOutput,
# the registry that runs calls and never raises), `arguments.py` (argument text parsed and
# validated at the boundary), `cut.py` (the one head-and-tail cutter: a tool's output cap and
# the transcript's cap), `functions.py` (Python functions as tools), `workers.py` (where they
# run: daemon threads, the tool loop), `builtin.py` (keel's own tools: memory, session_search,
# skills, the provider's), `mcp/` (MCP servers as tool sources), `deferral.py` (many MCP tools
# behind `tool_search`), `register.py` (the one registration of a session's tools, in prefix
# order), `listing.py` (`keel tools list`, from that same registration).
# The façade stays light: the registration, the listing, deferral and MCP are imported from
# their modules.
from harness.tools.cut import capped_result
from harness.tools.functions import ToolFunction, tool
from harness.tools.registry import (
    FunctionTool,
    RawTool,
    Tool,
    ToolOutput,
    ToolRegistry,
    ToolSource,
    error_json,
)

__all__ = [
    "FunctionTool",
    "RawTool",
    "Tool",
    "ToolFunction",
    "ToolOutput",
    "ToolRegistry",
    "ToolSource",
    "capped_result",
    "error_json",
    "tool",
]
