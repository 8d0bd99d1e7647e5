"""Loading the configuration: a YAML file read as untrusted input, then `KEEL_*` overrides.

The file is read up to `MAX_CONFIG_BYTES`, YAML nesting is bounded (`MAX_YAML_DEPTH`) and so
is the size of the document with every alias expanded (`MAX_YAML_NODES`) — a 400-byte
"billion laughs" file is refused before anything walks it — and error messages quote values
shortened to a snippet, at most `_MAX_ERRORS` of them.
"""

from __future__ import annotations

import os
import reprlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml
from pydantic import ValidationError
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from harness.config._schema import KeelConfig
from harness.errors import ConfigError

__all__ = [
    "MAX_CONFIG_BYTES",
    "MAX_YAML_DEPTH",
    "MAX_YAML_NODES",
    "RETIRED_KEYS",
    "RetiredKey",
    "load_config",
]


_ENV_PREFIX = "KEEL_"
_TEST_PREFIX = "KEEL_TEST_"

MAX_CONFIG_BYTES = 1_048_576
"""The largest config file read (a real one is a few kilobytes)."""
MAX_YAML_DEPTH = 32
"""The deepest YAML nesting accepted (the config itself is three levels deep)."""
MAX_YAML_NODES = 20_000
"""The most YAML nodes a document may hold with every alias expanded."""
_MAX_ENV_CHARS = 65_536
_MAX_ERRORS = 20
_QUOTE_CHARS = 120


@dataclass(frozen=True, slots=True)
class RetiredKey:
    """A key an older keel read: the keys that took its place, and how to carry a value over."""

    replaced_by: tuple[str, ...]
    how: str


RETIRED_KEYS: dict[str, RetiredKey] = {
    "model.local_cache": RetiredKey(
        ("model.local_server.ram_states", "model.local_server.ram_mb"),
        "true is now their default (4 states in RAM), false is ram_states: 0",
    ),
}
"""Keys that were renamed or replaced, by their old dotted path: an old config is refused
with the new keys named, instead of "unknown key"."""


class _YamlTooComplex(ValueError):
    """The document nests too deeply or expands to too many nodes."""


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader with a nesting bound on the (recursive) composer."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Node | None, index: int) -> Node | None:
        self._depth += 1
        try:
            if self._depth > MAX_YAML_DEPTH:
                mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]  # untyped in PyYAML
                raise _YamlTooComplex(
                    f"it nests deeper than {MAX_YAML_DEPTH} levels (at {mark.line + 1}:{mark.column + 1})"
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _expanded_size(root: Node) -> int:
    """Nodes in the document with every alias expanded (capped just past `MAX_YAML_NODES`).

    Aliases make the composed graph a DAG of shared nodes, so each distinct node is sized
    once (memoized): linear in the file, however many copies it implies.

    Raises:
        _YamlTooComplex: an alias refers to a node that contains it (a cycle).
    """
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()
    # Iterative post-order, so not even a deep document can exhaust the Python stack here.
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        children: list[Node] = []
        if isinstance(node, SequenceNode):
            children = list(node.value)
        elif isinstance(node, MappingNode):
            children = [part for pair in node.value for part in pair]
        if children_done:
            open_nodes.discard(id(node))
            sizes[id(node)] = min(1 + sum(sizes[id(c)] for c in children), MAX_YAML_NODES + 1)
            continue
        if id(node) in sizes:
            continue
        if id(node) in open_nodes:
            raise _YamlTooComplex("an alias (*name) refers to a value that contains it")
        open_nodes.add(id(node))
        stack.append((node, True))
        for child in children:
            if id(child) in open_nodes:
                raise _YamlTooComplex("an alias (*name) refers to a value that contains it")
            if id(child) not in sizes:
                stack.append((child, False))
    return sizes[id(root)]


def _safe_yaml(text: str) -> object:
    """`yaml.safe_load` with bounded nesting and alias expansion.

    Raises:
        yaml.YAMLError: the text is not YAML.
        _YamlTooComplex: it is YAML, but nests too deeply or expands to too many nodes.
    """
    loader = _BoundedLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if _expanded_size(node) > MAX_YAML_NODES:
            raise _YamlTooComplex(
                f"it expands to more than {MAX_YAML_NODES:,} values once its aliases (*name) are "
                "resolved; write the values out instead of nesting aliases"
            )
        return loader.construct_document(node)
    finally:
        loader.dispose()


_REPR = reprlib.Repr()
_REPR.maxlevel = 3
_REPR.maxstring = _QUOTE_CHARS
_REPR.maxother = _QUOTE_CHARS


def _quote(value: object) -> str:
    """A shortened `repr(value)`: error messages never echo a whole (possibly huge) value."""
    # reprlib bounds the items shown per level and the depth, so even a shared-reference
    # graph with billions of implied elements is quoted in constant time.
    text = _REPR.repr(value)
    return text if len(text) <= _QUOTE_CHARS + 20 else text[: _QUOTE_CHARS + 20] + "…"


def _env_value(key: str, raw: str) -> object:
    if raw == "":
        return ""
    if len(raw) > _MAX_ENV_CHARS:
        raise ConfigError(
            f"environment variable {key} is {len(raw):,} characters; the limit is {_MAX_ENV_CHARS:,}. "
            "Unset it or give a short value."
        )
    try:
        return _safe_yaml(raw)
    except yaml.YAMLError:
        return raw  # not YAML: the text itself is the value
    except _YamlTooComplex as exc:
        raise ConfigError(f"environment variable {key} is refused: {exc}. Unset it or simplify it.") from None


# Ids an environment override must name: `null`, `Null`, `NULL` or `~` would silently mean "none".
_ID_KEYS = {("scope", "user"), ("scope", "workspace"), ("memory", "user_id")}


_NULL_TAG = "tag:yaml.org,2002:null"


def _odd_null_ids(text: str) -> list[tuple[str, str]]:
    """The id keys the file sets to YAML null in a spelling other than `null` (`Null`, `NULL`,
    `~`): (dotted key, spelling). Such a value reads as "no id", the default user, though it
    looks like a name."""
    loader = _BoundedLoader(text)
    try:
        root = loader.get_single_node()
    finally:
        loader.dispose()
    found: list[tuple[str, str]] = []
    sections = root.value if isinstance(root, MappingNode) else []
    for section_key, section in sections:
        if not isinstance(section, MappingNode):
            continue
        for key, value in section.value:
            path = (section_key.value, key.value)
            if (
                path in _ID_KEYS
                and isinstance(value, ScalarNode)
                and value.tag == _NULL_TAG
                and value.value not in ("null", "")
            ):
                found.append((".".join(path), value.value))
    return found


def _apply_env(data: dict[str, object], environ: Mapping[str, str]) -> None:
    for key, raw in sorted(environ.items()):
        if not key.startswith(_ENV_PREFIX) or key.startswith(_TEST_PREFIX):
            continue  # KEEL_TEST_* configure keel's own test suite, not keel
        parts = [p.lower() for p in key[len(_ENV_PREFIX) :].split("__") if p]
        if not parts or parts[0] in {"config", "data_dir"}:
            continue  # KEEL_CONFIG names the file; KEEL_DATA_DIR is for tests/benchmarks
        value = _env_value(key, raw)
        if value is None and tuple(parts) in _ID_KEYS:
            raise ConfigError(
                f"environment variable {key}={raw!r} reads as no id (YAML null), which means the default "
                "user; unset the variable for the default user, or pick another id"
            )
        node = data
        for part in parts[:-1]:
            child = node.get(part)
            if not isinstance(child, dict):
                child = {}
                node[part] = child
            node = child
        node[parts[-1]] = value


def _format_validation(exc: ValidationError, source: str) -> str:
    errors = exc.errors(include_url=False, include_context=False)
    lines = [f"{source} is invalid:"]
    for err in errors[:_MAX_ERRORS]:
        path = ".".join(str(p) for p in err["loc"][:8]) or "(top level)"
        if len(err["loc"]) > 8:
            path += ".…"
        retired = RETIRED_KEYS.get(path) if err["type"] == "extra_forbidden" else None
        if retired is not None:
            fix = (
                f"this key was replaced by {' and '.join(retired.replaced_by)}: {retired.how}; remove {path}"
            )
        elif err["type"] == "extra_forbidden":
            fix = "this key is unknown; check its spelling against config.example.yaml"
        else:
            fix = err["msg"][:200]
        got = err.get("input")
        shown = f" (got {_quote(got)})" if got is not None and err["type"] != "extra_forbidden" else ""
        if err["loc"][:1] == ("sessions",):
            shown = ""  # the URL may hold a password; the message itself names what is wrong
        lines.append(f"  {path}: {fix}{shown}")
    if len(errors) > _MAX_ERRORS:
        lines.append(f"  … and {len(errors) - _MAX_ERRORS:,} more problems")
    return "\n".join(lines)


def _read_file(path: Path) -> dict[str, object]:
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_CONFIG_BYTES + 1)
    except FileNotFoundError as exc:
        raise ConfigError(f"config file {str(path)!r} does not exist; create it or drop --config") from exc
    except OSError as exc:
        raise ConfigError(f"config file {str(path)!r} could not be read: {exc}") from exc
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(
            f"config file {str(path)!r} is larger than {MAX_CONFIG_BYTES:,} bytes; a config file is a few "
            "kilobytes. Check that --config names the right file."
        )
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"config file {str(path)!r} could not be read: {exc}") from exc
    try:
        loaded = _safe_yaml(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"config file {str(path)!r} is not valid YAML: {str(exc)[:500]}") from exc
    except _YamlTooComplex as exc:
        raise ConfigError(f"config file {str(path)!r} is refused: {exc}") from None
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise ConfigError(f"config file {str(path)!r} must hold a mapping of keys at the top level")
    nulls = [
        (section, key)
        for section, key in _ID_KEYS
        if isinstance(loaded.get(section), dict) and key in loaded[section] and loaded[section][key] is None
    ]
    odd = _odd_null_ids(text) if nulls else []  # composed again only when an id reads as null
    if odd:
        key, spelling = odd[0]
        raise ConfigError(
            f"config file {str(path)!r}: {key} is {spelling}, which YAML reads as no id (null), which "
            "means the default user; write null (or leave the key out) for the default user, or pick "
            "another id"
        )
    return loaded


def load_config(path: Path | None = None, environ: Mapping[str, str] | None = None) -> KeelConfig:
    """Read, override and validate the configuration.

    Args:
        path: a YAML file; `None` means defaults plus environment overrides only.
        environ: the environment to read `KEEL_*` overrides from (default: `os.environ`).

    Raises:
        ConfigError: the file is missing, too large, not YAML or too deeply nested / too
            alias-expanded, or a key/value is invalid. The message names each bad key path
            and what to do, quoting values in shortened form.
    """
    env = os.environ if environ is None else environ
    data: dict[str, object] = {}
    source = "configuration"
    if path is not None:
        source = str(path)
        data = _read_file(path)
    _apply_env(data, env)
    try:
        return KeelConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_format_validation(exc, source)) from exc
