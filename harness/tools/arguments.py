"""A tool call's argument text at the boundary: parsed safely, validated, described.

Everything here turns what a model sent into either a value or a message the model can act
on; nothing raises past the tool that uses it.
"""

from __future__ import annotations

import json
import re

from pydantic import BaseModel, JsonValue, ValidationError

from harness.types import JsonObject

__all__ = [
    "MAX_ARGUMENT_CHARS",
    "MAX_ARGUMENT_DEPTH",
    "ArgumentsError",
    "describe_validation",
    "model_schema",
    "parse_arguments",
]

MAX_ARGUMENT_CHARS = 1_000_000
"""The longest argument text a tool accepts (a model that sends more is looping)."""
MAX_ARGUMENT_DEPTH = 64
"""The deepest nesting of JSON arrays/objects accepted in tool arguments."""

# The tokens that can change the nesting depth or the string state of JSON text: an
# escape (a backslash and the character it escapes), a quote, a bracket.
_STRUCTURE = re.compile(r'\\.|["\[\]{}]', re.DOTALL)


class ArgumentsError(ValueError):
    """Tool arguments that cannot be used; the message tells the model what to send instead."""


def _nesting_depth(text: str, limit: int) -> int:
    """The deepest array/object nesting in JSON text, stopping once it passes `limit`.

    One linear pass over the structural tokens, skipping string contents, so it is safe on
    text that would make a recursive parser overflow the stack.
    """
    depth = deepest = 0
    in_string = False
    for match in _STRUCTURE.finditer(text):
        token = match.group()
        if token == '"':
            in_string = not in_string
        elif in_string or len(token) > 1:
            continue  # bracket inside a string, or an escape
        elif token in "[{":
            depth += 1
            deepest = max(deepest, depth)
            if deepest > limit:
                break
        else:
            depth -= 1
    return deepest


def parse_arguments(text: str) -> JsonValue:
    """Parse a tool call's argument text as JSON, safely.

    Empty text is `{}`. The text is bounded in size (`MAX_ARGUMENT_CHARS`) and nesting
    (`MAX_ARGUMENT_DEPTH`) before the parser sees it, so no input can raise
    `RecursionError` or hold the loop for long.

    Raises:
        ArgumentsError: the text is too long, nested too deeply, or not JSON; the message
            says what to send instead.
    """
    if not text.strip():
        return {}
    if len(text) > MAX_ARGUMENT_CHARS:
        raise ArgumentsError(
            f"arguments are {len(text):,} characters; the limit is {MAX_ARGUMENT_CHARS:,}. Send a short JSON object"
        )
    if _nesting_depth(text, MAX_ARGUMENT_DEPTH) > MAX_ARGUMENT_DEPTH:
        raise ArgumentsError(
            f"arguments nest deeper than {MAX_ARGUMENT_DEPTH} levels; send a flat JSON object"
        )
    try:
        parsed: JsonValue = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ArgumentsError(f"arguments are not valid JSON ({exc.msg}); send one JSON object") from None
    except RecursionError:  # defence in depth: the depth check above should make this unreachable
        raise ArgumentsError("arguments nest too deeply; send a flat JSON object") from None
    return parsed


def model_schema(model: type[BaseModel]) -> JsonObject:
    """A pydantic model's JSON schema as a tool's `parameters` (titles dropped: the model does not need them)."""
    schema = model.model_json_schema()
    schema.pop("title", None)
    props = schema.get("properties")
    if isinstance(props, dict):
        for prop in props.values():
            if isinstance(prop, dict):
                prop.pop("title", None)
    return schema


def describe_validation(exc: ValidationError) -> str:
    """A validation error as one line the model can act on."""
    problems = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        problems.append(f"{where}: {err['msg']}")
    return "invalid arguments — " + "; ".join(problems)
