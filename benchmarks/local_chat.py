"""Tool use on the embedded default model, as a new user meets it in `keel chat`.

Scripted user turns (introductions with facts, questions about them, a request that needs
the project server) go through a real session on the configured embedded model with this
issue's tools present: keel's own, a Python function tool and the MCP project server. It
counts, over all turns: valid tool calls, refused calls (tool errors), replies that leak
template markup or an unparsed call, empty replies, and which planted facts reached
USER.md / MEMORY.md. Run it under the machine's model lock:

    flock /work/model.lock python benchmarks/local_chat.py [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path

import anyio

from harness.config import McpServerConfig, load_config
from harness.events import ToolResultReady, TurnEnded, Warning
from harness.testing import run_turn
from harness.wiring import SessionOptions, open_session

TURNS = (
    ("Hi, I'm Ana. I use neovim and deploy on Mondays.", ("neovim", "monday")),
    ("What editor do I use?", ()),
    ("Remember that my team is called Tidewater.", ("tidewater",)),
    ("Which file defines the pricing rules in the project? Look it up.", ()),
    ("When do I deploy?", ()),
)

_MARKUP = re.compile(r"<\|im_(start|end)\|>|</?tool_call>|\{\s*\"name\"\s*:\s*\"[^\"]+\"\s*,\s*\"arguments\"")


def weather(city: str) -> str:
    """The weather in a city (always mild here)."""
    return f"{city}: 18 °C, light wind"


async def main(out: Path | None) -> dict[str, object]:
    counts = {"turns": 0, "tool_calls": 0, "refused_calls": 0, "leaked_markup": 0, "empty_replies": 0}
    with tempfile.TemporaryDirectory(prefix="keel-local-chat-") as tmp:
        home = Path(tmp)
        cfg = load_config(None, environ={"KEEL_HOME": str(home)})
        server = McpServerConfig(
            name="proj", command=sys.executable, args=("-m", "harness.testing.project_server")
        )
        cfg = cfg.model_copy(update={"mcp": cfg.mcp.model_copy(update={"servers": (server,)})})
        async with open_session(
            cfg, SessionOptions(home=home, source="benchmark"), tools=[weather]
        ) as session:
            tools = len(session.tools.names)
            for text, _ in TURNS:
                events = await run_turn(session, text)
                counts["turns"] += 1
                results = [e for e in events if isinstance(e, ToolResultReady)]
                counts["tool_calls"] += sum(not r.is_error for r in results)
                counts["refused_calls"] += sum(r.is_error for r in results)
                final = [e for e in events if isinstance(e, TurnEnded)][-1].final_text
                counts["leaked_markup"] += bool(_MARKUP.search(final))
                counts["empty_replies"] += any(
                    isinstance(e, Warning) and "empty reply" in e.message for e in events
                )
                print(f"> {text}\n{final.strip()[:300]}\n", flush=True)
        saved = await anyio.to_thread.run_sync(_saved_text, home)
    facts = [f for _, fs in TURNS for f in fs]
    report: dict[str, object] = {**counts, "tools_offered": tools, "facts_planted": len(facts)}
    report["facts_saved"] = sum(f in saved for f in facts)
    for key, value in report.items():
        print(f"{key} {value}")
    if out is not None:
        await anyio.Path(out).write_text(json.dumps(report, indent=2), encoding="utf-8")
    return report


def _saved_text(home: Path) -> str:
    paths = [home / "memories" / name for name in ("USER.md", "MEMORY.md")]
    return "".join(p.read_text(encoding="utf-8").lower() for p in paths if p.exists())


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, metavar="OUT")
    anyio.run(main, parser.parse_args().json)
