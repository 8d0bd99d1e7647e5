"""`keel cache lint TRACE`: the habits that break the prompt cache, quoted, each with a fix.

Exit status: 0 when no habit was found, 1 when one was (notes count too with `--strict`), 2
on bad input — so a CI job can run it on a recorded trace.
"""

from __future__ import annotations

import argparse
import textwrap
from pathlib import Path

import anyio
import anyio.to_thread
from rich.text import Text

from harness.cachemeter import LintFinding, LintReport, MeterError, lint
from harness.cli._common import Subparsers
from harness.cli.commands.cache._out import text_console, write_json

__all__ = ["add_lint_verb", "lint_text"]


def _finding_text(finding: LintFinding, show: int) -> Text:
    mark, style = ("✗", "bold red") if finding.severity == "habit" else ("•", "bold yellow")
    out = Text()
    count = len(finding.occurrences)
    out.append(f"{mark} {finding.rule}", style=style)
    lost = sum(o.tokens for o in finding.occurrences)
    cost = f", ~{lost:,} tokens re-read" if lost else ""
    out.append(f": {finding.title} — {count} request{'s' if count != 1 else ''}{cost}\n")
    for occ in finding.occurrences[:show]:
        spent = f" (~{occ.tokens:,} tokens re-read)" if occ.tokens else ""
        out.append(
            f"  line {occ.line} (against line {occ.previous_line}), {occ.where}{spent}\n", style="bold"
        )
        for line in occ.removed:
            out.append(f"    - {line}\n", style="red")
        for line in occ.added:
            out.append(f"    + {line}\n", style="green")
    rest = finding.occurrences[show:]
    if rest:
        lines = ", ".join(str(o.line) for o in rest[:12]) + (", …" if len(rest) > 12 else "")
        out.append(
            f"  … {len(rest)} more at line{'s' if len(rest) > 1 else ''} {lines} (--show N or --json for all)\n"
        )
    out.append("  fix: ", style="bold cyan")
    out.append("\n".join(textwrap.wrap(finding.fix, width=100, subsequent_indent="       ")) + "\n")
    return out


def lint_text(report: LintReport, trace: str, *, show: int = 3) -> Text:
    """The lint report as text for the terminal: a summary line, then each finding."""
    habits, notes = len(report.habits), len(report.notes)
    out = Text(
        f"keel cache lint {trace}: {report.requests:,} requests, "
        f"{habits} habit{'s' if habits != 1 else ''}, {notes} note{'s' if notes != 1 else ''}\n",
        style="bold",
    )
    if not report.findings:
        out.append(
            "no cache-breaking habit found: every request extends the one before it "
            "(a compression's one rebuild aside)\n",
            style="green",
        )
    for finding in report.findings:
        out.append("\n")
        out.append_text(_finding_text(finding, show))
    return out


async def _run(args: argparse.Namespace) -> int:
    trace: Path = args.trace
    if args.show < 0:
        raise MeterError(f"--show must be 0 or more, got {args.show!r}")
    report = await anyio.to_thread.run_sync(lint, trace)
    if report.requests == 0:
        raise MeterError(f"trace file {str(trace)!r} holds no requests")
    if args.json_out is not None:
        await write_json(args.json_out, report.to_json())
    if args.json_out != "-":
        text_console().print(lint_text(report, str(trace), show=args.show), end="")
    failing = report.findings if args.strict else report.habits
    return 1 if failing else 0


def _lint(args: argparse.Namespace) -> int:
    return anyio.run(_run, args)


def add_lint_verb(verbs: Subparsers) -> None:
    """Register `lint` under the `cache` noun."""
    v = verbs.add_parser(
        "lint",
        help="find the habits that break the prompt cache, with the changed bytes and a fix",
        description="Compare every request of TRACE (a keel trace or OpenAI-style chat JSONL) with the "
        "request it should extend and name the habit behind each difference: volatile values in the "
        "system prompt, memory written into it, tool list or model changes, history rewritten in "
        "place. Exit status 1 when a habit is found.",
    )
    v.add_argument("trace", type=Path, metavar="TRACE", help="JSONL trace file")
    v.add_argument(
        "--show", type=int, default=3, metavar="N", help="occurrences quoted per habit (default 3)"
    )
    v.add_argument(
        "--json", dest="json_out", metavar="OUT", help="write the findings as JSON to OUT ('-': stdout)"
    )
    v.add_argument(
        "--strict", action="store_true", help="exit 1 on notes too (e.g. a flush with other tools)"
    )
    v.set_defaults(handler=_lint)
