# Prompt text as data (`text/*.md`) and system-prompt assembly: slot ids and order,
# the builder that returns the frozen prefix plus its slot map, context-file discovery,
# and the `<memory-context>` recall fence. `prompts` imports only the stdlib and pydantic.
#
# `slots.py` (slot ids, the default order, SystemPrompt with its slot map), `builder.py`
# (assemble slot texts into a SystemPrompt), `context_files.py` (slot 7: AGENTS.md & co.),
# `session_line.py` (slot 8), `fence.py` (the recall fence and its sanitizers); private
# `_text.py` loads `text/<name>.md` (public here as `load_text`).
from prompts._text import load_text
from prompts.builder import build_system_prompt
from prompts.context_files import discover_context_files, read_text_capped, render_context_files
from prompts.fence import attach_recall, cap_recall, strip_fence_tags
from prompts.session_line import session_line
from prompts.slots import DEFAULT_SLOT_ORDER, SlotId, SystemPrompt

__all__ = [
    "DEFAULT_SLOT_ORDER",
    "SlotId",
    "SystemPrompt",
    "attach_recall",
    "build_system_prompt",
    "cap_recall",
    "discover_context_files",
    "load_text",
    "read_text_capped",
    "render_context_files",
    "session_line",
    "strip_fence_tags",
]
