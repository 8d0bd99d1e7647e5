"""How events look on a terminal (chat, run, demo)."""

from __future__ import annotations

import json

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from harness.cli._common import err_console
from harness.events import (
    CompressionFinished,
    CompressionStarted,
    Event,
    FlushCompleted,
    MemoryWritten,
    PrefillProgress,
    RecallAttached,
    TextDelta,
    ToolCallStarted,
    ToolResultReady,
    TurnEnded,
    UsageReported,
    Warning,
)

__all__ = ["PREFILL_SHOWN_FROM", "EventPrinter", "progress_bars", "short_result"]


def progress_bars() -> Progress:
    """Named bars with counts and elapsed time, on stderr (an experiment's arms, an eval's)."""
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err_console,
    )


PREFILL_SHOWN_FROM = 1024
"""Prompt tokens left to read from which a prefill's progress is shown."""


def _short(text: str, n: int = 100) -> str:
    one = " ".join(text.split())
    return one if len(one) <= n else one[: n - 1] + "…"


def short_result(content: str, *, is_error: bool, n: int = 100) -> str:
    """A tool result in one line: an error's message, else the text's start and, if long, its size."""
    if is_error:
        try:
            payload = json.loads(content)
        except json.JSONDecodeError:
            payload = None
        if isinstance(payload, dict) and isinstance(payload.get("error"), str):
            return _short(payload["error"], n)
    if len(content) <= n:
        return _short(content, n)
    return f"{len(content):,} chars: {_short(content, n - 16)}"


class EventPrinter:
    """Prints a turn's events: streamed text inline, everything else as dim notes."""

    def __init__(self, console: Console, *, show_usage: bool = False) -> None:
        self.console = console
        self.show_usage = show_usage
        self._mid_text = False
        self._prefill_shown = -1  # the last quarter of a prefill shown (-1: none yet)

    def _prefill(self, ev: PrefillProgress) -> None:
        """A long prefill shows where it is: at its start, then at each quarter."""
        if self._prefill_shown < 0 and ev.total - ev.done < PREFILL_SHOWN_FROM:
            return  # a short prefill (most of the prompt was cached): nothing to show
        quarter = 4 * ev.done // max(ev.total, 1)
        if quarter > self._prefill_shown:
            self._prefill_shown = quarter
            self._note(f"reading the prompt: {ev.done:,} of {ev.total:,} tokens…")

    def _note(self, text: str, style: str = "dim") -> None:
        if self._mid_text:
            self.console.print()
            self._mid_text = False
        self.console.print(f"[{style}]{text}[/]")

    def __call__(self, ev: Event) -> None:
        if isinstance(ev, TextDelta):
            self.console.print(ev.text, end="", markup=False, highlight=False, soft_wrap=True)
            self._mid_text = True
        elif isinstance(ev, ToolCallStarted):
            self._note(f"→ {escape(ev.name)}({escape(_short(ev.arguments, 80))})")
        elif isinstance(ev, ToolResultReady):
            mark = "✗" if ev.is_error else "✓"
            short = short_result(ev.content, is_error=ev.is_error)
            self._note(f"  {mark} {escape(ev.name)}: {escape(short)}", "red" if ev.is_error else "dim")
        elif isinstance(ev, MemoryWritten):
            self._note(f"🧠 saved to {ev.target}: {escape(_short(ev.content, 80))}", "green")
        elif isinstance(ev, RecallAttached):
            self._note(f"🧠 recalled {ev.chars:,} chars of memory for this turn")
        elif isinstance(ev, CompressionStarted):
            how = "by request" if ev.manual else f"at {ev.tokens_before:,} ≥ {ev.threshold:,} tokens"
            self._note(f"🗜 compressing ({how}): flush, summary, reload…", "yellow")
        elif isinstance(ev, FlushCompleted):
            saved = [e for e in ev.entries if e.saved]
            refused = [e for e in ev.entries if not e.saved]
            self._note(
                f"  flush ({ev.mode}) saved {len(saved)}, refused {len(refused)} in {ev.latency_s:.1f}s",
                "yellow",
            )
            for e in saved:
                self._note(f"    + {e.target}: {escape(_short(e.content, 80))}", "green")
            for e in refused:
                self._note(f"    - {escape(_short(e.content, 60))}: {escape(_short(e.reason, 60))}")
        elif isinstance(ev, CompressionFinished):
            if ev.aborted:
                self._note("  compression aborted; nothing was dropped", "yellow")
            else:
                self._note(
                    f"  compressed {ev.messages_before} → {ev.messages_after} messages, "
                    f"~{ev.tokens_before:,} → ~{ev.tokens_after:,} tokens"
                    + (" (fallback summary)" if ev.summary_fallback else ""),
                    "yellow",
                )
        elif isinstance(ev, PrefillProgress):
            self._prefill(ev)
        elif isinstance(ev, Warning):
            self._note(f"warning: {escape(ev.message)}", "bold yellow")
        elif isinstance(ev, UsageReported):
            self._prefill_shown = -1  # the call is over; the next one's prefill starts afresh
            if self.show_usage:
                src = "reported" if ev.reported else "estimated"
                self._note(
                    f"  [{ev.purpose}] in {ev.input:,} + cached {ev.cache_read:,} → out {ev.output:,} "
                    f"({src}, {ev.latency_s:.2f}s)"
                )
        elif isinstance(ev, TurnEnded) and self._mid_text:
            self.console.print()
            self._mid_text = False
