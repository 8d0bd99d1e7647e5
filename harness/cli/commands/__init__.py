# The `keel` nouns, a module each (`chat.py`, `memory.py`, `storage.py`, …; the meter's verbs
# in `cache/`), each exposing `register(subparsers)`. `harness.cli._app` imports only the
# module of the noun being run, so this file holds only the table of nouns: `keel memory path`
# must not pay for the model clients, MCP or the meter.

__all__ = ["COMMANDS"]

# Every noun: the module of `harness.cli.commands` that registers it (`module:function` when the
# function is not `register`) and its one-line help for `keel --help`. Only the module of
# the noun being run is imported (`_selected`): `keel memory path` must not pay for the model
# clients, MCP or the meter that `keel chat` and `keel cache` need. A module that registers
# several nouns lists each of them. `tests/harness/cli/test_startup.py` checks this table
# against the modules.
COMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("demo", "the main job: frozen vs live memory on the embedded model, then a compression"),
    "chat": ("chat", "talk to the agent interactively (embedded model unless configured)"),
    "run": ("experiment", "play a scenario's user turns through a session"),
    "scenario": ("experiment", "list, show or build scenarios"),
    "experiment": ("experiment", "one scenario under several configurations, metered side by side"),
    "eval": ("eval", "evaluations on the configured model"),
    "memory": (
        "memory",
        "list, show, add or remove curated memory entries; confirm or discard held writes",
    ),
    "sessions": ("sessions", "list, show and search past sessions"),
    "skills": ("skills", "list and read saved skills"),
    "storage": ("storage", "where state lives, how big it is; prune it; move a home into PostgreSQL"),
    "serve": ("serve", "serve sessions over HTTP (native API, OpenAI-compatible doors)"),
    "tools": ("tools", "list the tools the agent gets (keel's, yours, MCP servers')"),
    "cache": ("cache", "measure prompt-cache reuse in request traces"),
    "config": ("config", "check the configuration"),
    "models": ("models", "the embedded local models: which is in use, where its weights came from"),
}
