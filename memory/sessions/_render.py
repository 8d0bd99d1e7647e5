"""How session_search shows stored messages to a model: capped, flagged, compact JSON.

Every message the tool returns carries its id (so the model can scroll from it), its
role, and its content cut to a cap with `truncated` and the original length when cut.
"""

from __future__ import annotations

import re
from datetime import datetime, tzinfo

from pydantic import JsonValue

from memory.sessions._fts_query import extract_terms
from memory.sessions._records import AnchoredView, MessageRecord, SessionRecord

__all__ = [
    "BOOKEND_CHARS",
    "WINDOW_CHARS",
    "format_when",
    "make_snippet",
    "message_json",
    "session_meta",
    "transcript",
    "view_json",
]

WINDOW_CHARS = 4000
"""Cap per message inside a result window."""
BOOKEND_CHARS = 1200
"""Cap per opening/closing message of a session."""
_SNIPPET_CHARS = 240
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")


def format_when(timestamp: float, tz: tzinfo) -> str:
    """`2023-05-08 13:56 UTC`: date and minute, in the tool's time zone."""
    return datetime.fromtimestamp(timestamp, tz).strftime("%Y-%m-%d %H:%M %Z").strip()


def message_json(record: MessageRecord, *, cap: int, match: bool = False) -> dict[str, JsonValue]:
    """One message as the tool returns it, content cut to `cap` characters."""
    m = record.message
    text = _ANSI.sub("", m.content)
    out: dict[str, JsonValue] = {"id": record.id, "role": m.role}
    if m.tool_name:
        out["tool_name"] = m.tool_name
    if m.summary:
        out["summary"] = True
    if match:
        out["match"] = True
    if len(text) > cap:
        out["content"] = text[:cap] + "…"
        out["truncated"] = True
        out["chars"] = len(text)
    else:
        out["content"] = text
    return out


def session_meta(session: SessionRecord | None, tz: tzinfo) -> dict[str, JsonValue]:
    """What the model needs to place a session: when, where, which model, its title."""
    if session is None:
        return {}
    meta: dict[str, JsonValue] = {
        "session_id": session.id,
        "when": format_when(session.started_at, tz),
        "source": session.source,
        "model": session.model,
        "title": session.title,
        "message_count": session.message_count,
    }
    if session.parent_session_id is not None:
        meta["parent_session_id"] = session.parent_session_id
    if session.end_reason is not None:
        meta["end_reason"] = session.end_reason
    return meta


def view_json(view: AnchoredView, *, bookends: bool) -> dict[str, JsonValue]:
    """The window around a match (and, when asked, the session's bookends) as JSON."""
    window: list[JsonValue] = [message_json(r, cap=WINDOW_CHARS) for r in view.before]
    window.append(message_json(view.anchor, cap=WINDOW_CHARS, match=True))
    window += [message_json(r, cap=WINDOW_CHARS) for r in view.after]
    out: dict[str, JsonValue] = {"messages": window}
    if bookends:
        out["bookend_start"] = [message_json(r, cap=BOOKEND_CHARS) for r in view.bookend_start]
        out["bookend_end"] = [message_json(r, cap=BOOKEND_CHARS) for r in view.bookend_end]
    out["messages_before"] = view.messages_before
    out["messages_after"] = view.messages_after
    return out


def make_snippet(content: str, query: str) -> str:
    """A short excerpt of `content` around the first query term, terms marked `>>>x<<<`."""
    text = " ".join(_ANSI.sub("", content).split())
    stems = [t[:5] if len(t) > 5 else t for t in extract_terms(query)]
    stems = [s for s in stems if s]
    if not stems:
        return text[:_SNIPPET_CHARS]
    # A term is matched by its first five letters (stemming makes "painting" find
    # "paints"), and the whole word around them is marked.
    alternatives = "|".join(re.escape(s) for s in sorted(stems, key=len, reverse=True))
    pattern = re.compile(rf"\w*(?:{alternatives})\w*", re.IGNORECASE)
    first = pattern.search(text)
    start = 0 if first is None else max(0, first.start() - _SNIPPET_CHARS // 3)
    excerpt = text[start : start + _SNIPPET_CHARS]
    marked = pattern.sub(lambda mo: f">>>{mo.group(0)}<<<", excerpt)
    prefix = "…" if start > 0 else ""
    suffix = "…" if start + _SNIPPET_CHARS < len(text) else ""
    return prefix + marked + suffix


def transcript(view: AnchoredView) -> str:
    """The window as a plain transcript for a summarizer: `[USER]: ...` lines."""
    parts: list[str] = []
    if view.bookend_start:
        parts += [_line(r) for r in view.bookend_start]
        parts.append("[…]")
    parts += [_line(r) for r in (*view.before, view.anchor, *view.after)]
    if view.bookend_end:
        parts.append("[…]")
        parts += [_line(r) for r in view.bookend_end]
    return "\n".join(parts)


def _line(record: MessageRecord) -> str:
    m = record.message
    label = f"TOOL:{m.tool_name}" if m.role == "tool" and m.tool_name else m.role.upper()
    text = m.content if len(m.content) <= WINDOW_CHARS else m.content[:WINDOW_CHARS] + "…"
    return f"[{label}]: {text}"
