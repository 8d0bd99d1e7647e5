"""Where the first turn's prompt tokens go on the embedded model: per system-prompt slot, per
tool schema, the chat template's own markup and the user's message.

Builds the first request of a new `keel chat` session exactly as keel does (`open_session` on
a fresh home, the configured tools and prompt; a recording model answers), renders it with the
model's own chat template in the `keel` dialect and counts tokens with the model's own
vocabulary (no generation: this needs no lock and no server):

    python benchmarks/local_prompt_tokens.py [--model qwen2.5-coder-1.5b] [--set KEEL_X=V ...]

Each row is `tokens share name`; the last lines are `first_turn_prompt_tokens N`,
`tools_tokens N` and `memory_write_rereads N of M (share S)`: the prompt again with a line
written into the memory slot (what the first turn after a compression with a flush sends),
and how many of its tokens come after the first one that differs (what the server evaluates
again).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import replace
from functools import partial
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._util import add_set_option, overrides, script_parser
from harness.config import load_config
from harness.modelfiles import TemplateRenderer, load_gguf_tokenizer, template_from_gguf
from harness.models.base import ModelEvent, ModelTextDelta, ReplyDone
from harness.models.local import find_weights
from harness.models.openai._wire import build_body, tool_json
from harness.types import Message, ModelReply, ModelRequest
from harness.wiring import SessionOptions, open_session
from prompts.slots import SlotSpan


class Recorder:
    """A model that records what it is asked and answers "Hi."."""

    def __init__(self) -> None:
        self.requests: list[ModelRequest] = []

    @property
    def model_name(self) -> str:
        return "recorder"

    async def complete(self, request: ModelRequest) -> ModelReply:
        self.requests.append(request)
        return ModelReply(message=Message("assistant", "Hi."), finish_reason="stop", model="recorder")

    @asynccontextmanager
    async def stream(self, request: ModelRequest) -> AsyncIterator[AsyncIterator[ModelEvent]]:
        reply = await self.complete(request)

        async def events() -> AsyncIterator[ModelEvent]:
            yield ModelTextDelta(reply.message.content)
            yield ReplyDone(reply)

        yield events()


async def first_request(home: Path, extra: Mapping[str, str]) -> tuple[ModelRequest, tuple[SlotSpan, ...]]:
    """The first turn's request of a new session on `home`, and its prompt state's slot map."""
    cfg = load_config(None, environ={"KEEL_HOME": str(home), **extra})
    model = Recorder()
    async with open_session(cfg, SessionOptions(model=model, home=home, source="benchmark")) as s:
        async with s.run_turn("Hi, I'm Ana. What can you do?") as events:
            async for _ in events:
                pass
        slots = s.system.prompt.slots
    return model.requests[0], slots


async def main(model: str, extra: Mapping[str, str], models_dir: Path | None) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="keel-prompt-tokens-") as tmp:
        home = Path(tmp) / "home"
        home.mkdir()
        weights = await find_weights(model=model, models_dir=models_dir or Path(tmp) / "models")  # type: ignore[arg-type]
        # what `keel chat` shows the embedded model (the recorder is a client handed in)
        env = {"KEEL_MODEL__LOCAL_MODEL": model, "KEEL_PROMPT__TOOL_PROFILE": "compact", **extra}
        cfg = load_config(None, environ={"KEEL_HOME": str(home), **env})
        request, slots = await first_request(home, env)
        tok = load_gguf_tokenizer(weights.path)
        renderer = TemplateRenderer(template_from_gguf(weights.path))
        split = cfg.memory_after_tools

        def tokens(req: ModelRequest) -> list[int]:
            body = build_body(req, model="m", stream=False, split_system=split)
            return tok.encode(renderer.render(body["messages"], body.get("tools") or [], dialect="keel"))  # type: ignore[arg-type]

        full = tokens(request)
        total = len(full)
        rows: list[tuple[int, str]] = []
        for span in slots:
            text = request.system[span.start : span.end]
            rows.append((tok.count(text) if text else 0, f"slot {span.name}"))
        tool_total = 0
        for t in request.tools:
            n = tok.count(json.dumps(tool_json(t), ensure_ascii=False))
            tool_total += n
            rows.append((n, f"tool {t.name}"))
        rows.append((tok.count(request.messages[-1].content), "user message"))
        rows.append((total - sum(n for n, _ in rows), "template markup"))
        # A memory write shows in the memory slot after the next compression: where does
        # the rendered prompt first differ, and how much of it is read again?
        at = next(sp.start for sp in slots if sp.name == "memory")
        written = request.system[:at] + "- The user's name is Ana.\n\n" + request.system[at:]
        cut = min(request.stable_prefix_chars or at, at) if split else len(written)
        changed = replace(request, system=written, stable_prefix_chars=cut)
        other = tokens(changed)
        same = next(
            (i for i, (a, b) in enumerate(zip(full, other, strict=False)) if a != b),
            min(len(full), len(other)),
        )
        reread = len(other) - same
    print(f"model {model}: first turn of a new session, {len(request.tools)} tools")
    for n, name in rows:
        print(f"{n:7d} {n / total:6.1%}  {name}")
    share = reread / len(other)
    print(f"layout: {'memory after tools' if split else 'one system message'}")
    print(f"first_turn_prompt_tokens {total}")
    print(f"tools_tokens {tool_total}")
    print(f"memory_write_rereads {reread} of {len(other)} (share {share:.3f})")
    return {"total": total, "tools": tool_total, "rows": rows, "memory_write_reread_share": share}


def _parse() -> argparse.Namespace:
    p = script_parser(__doc__)
    p.add_argument(
        "--model", default="qwen2.5-coder-1.5b", help="built-in model whose template and vocabulary count"
    )
    p.add_argument(
        "--models-dir", type=Path, default=None, help="where weights are assembled (default: a temporary one)"
    )
    add_set_option(p)
    return p.parse_args()


if __name__ == "__main__":
    args = _parse()
    anyio.run(partial(main, args.model, overrides(args), args.models_dir))
