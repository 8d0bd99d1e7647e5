"""`keel models list|show|path`: which local model keel runs, and where its weights came from."""

from __future__ import annotations

import argparse
import os

import anyio
from rich.markup import escape
from rich.table import Table

from harness.cli._common import Subparsers, config_from_args, console, verb_parsers
from harness.config import KeelConfig
from harness.errors import ModelFileError
from harness.modelfiles import ChatTemplate, TemplateRenderer, read_gguf_metadata
from harness.models.local import BUILTIN_MODELS, find_weights, installed_part

__all__ = ["register"]

_META = ("general.name", "general.size_label", "general.architecture", "tokenizer.chat_template")


def _models_dir(cfg: KeelConfig) -> str:
    return str(cfg.model.models_dir or cfg.resolved_home(os.environ) / "models")


def _list(args: argparse.Namespace) -> int:
    cfg = config_from_args(args)
    m = cfg.model
    table = Table("model", "weights", "size", "installed", "in use")
    for model in BUILTIN_MODELS.values():
        found = sum(installed_part(p) is not None for p in model.parts)
        state = "yes" if found == len(model.parts) else f"no — {model.install}"
        if 0 < found < len(model.parts):
            state = f"{found}/{len(model.parts)} parts — {model.install}"
        in_use = (
            m.provider == "local" and m.gguf is None and m.base_url is None and m.local_model == model.name
        )
        table.add_row(
            model.name, model.title, f"{model.size / 1e6:,.0f} MB", escape(state), "◀" if in_use else ""
        )
    console.print(table)
    if m.provider != "local":
        console.print(f"the configured provider is {m.provider!r}: no local model runs")
    elif m.base_url:
        console.print(f"model.base_url is set: keel talks to the server at {escape(m.base_url)}, starts none")
    elif m.gguf is not None:
        console.print(f"in use: your GGUF {escape(str(m.gguf))} (model.gguf)")
    console.print(
        "[dim]choose with model.local_model (or KEEL_MODEL__LOCAL_MODEL), or run your own file with model.gguf[/]"
    )
    return 0


def _native_tools(source: str) -> bool:
    try:
        return TemplateRenderer(ChatTemplate(source)).native_tools
    except ModelFileError:
        return False  # the server cannot run it either; its log says why


def _show(args: argparse.Namespace) -> int:
    cfg = config_from_args(args)
    m = cfg.model
    if m.provider != "local" or m.base_url:
        console.print(f"no embedded model: provider {m.provider!r}, base_url {m.base_url!r}")
        return 0
    weights = anyio.run(
        lambda: find_weights(
            model=m.local_model,
            gguf=m.gguf,
            gguf_sha256=m.gguf_sha256,
            models_dir=cfg.model.models_dir or cfg.resolved_home(os.environ) / "models",
        )
    )
    try:
        meta = read_gguf_metadata(weights.path, _META)
    except ModelFileError as exc:
        meta = {}
        console.print(f"[yellow]could not read the GGUF metadata: {escape(str(exc))}[/]")
    template = meta.get("tokenizer.chat_template")
    native = isinstance(template, str) and _native_tools(template)
    rows = [
        ("model", weights.name),
        ("from", weights.source),
        ("file", str(weights.path)),
        ("size", f"{weights.path.stat().st_size:,} bytes"),
        (
            "sha256",
            f"{weights.sha256} (verified)" if weights.sha256 else "not pinned (set model.gguf_sha256)",
        ),
        ("GGUF name", str(meta.get("general.name", "?"))),
        ("size class", str(meta.get("general.size_label", "?"))),
        (
            "chat template",
            "none (ChatML is used)"
            if template is None
            else (
                "its own, with native tool calls"
                if native
                else "its own; tools are described in the system prompt"
            ),
        ),
        ("assembled in", _models_dir(cfg)),
    ]
    table = Table(show_header=False)
    for key, value in rows:
        table.add_row(key, escape(value))
    console.print(table)
    return 0


def _path(args: argparse.Namespace) -> int:
    console.print(_models_dir(config_from_args(args)), markup=False)
    return 0


def register(sub: Subparsers) -> None:
    verbs = verb_parsers(sub, "models")
    verbs.add_parser("list", help="built-in models, whether installed, which is in use").set_defaults(
        handler=_list
    )
    verbs.add_parser(
        "show", help="the model in use: file, source, verified sha256, GGUF metadata (assembles it if needed)"
    ).set_defaults(handler=_show)
    verbs.add_parser("path", help="where built-in weights are assembled").set_defaults(handler=_path)
