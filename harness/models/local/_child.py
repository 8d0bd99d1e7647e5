"""Entry point of the embedded model's child process: load the GGUF, serve it on loopback.

`python -m harness.models.local._child --gguf PATH --name NAME --port N ...` loads the model
with llama-cpp-python (`logits_all` off: only the last position's logits are kept, which is
all sampling needs — measured faster and far smaller than the server default), builds its
chat format from the GGUF's own template, and serves `_server.build_app` on
127.0.0.1 only.

Linux sends this process SIGTERM when its parent dies: if keel is killed outright
(SIGKILL, a crashed terminal), the server must not live on holding a CPU and a port.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import signal
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import llama_cpp
import numpy as np
import numpy.typing as npt
import uvicorn
from llama_cpp.llama_grammar import LlamaGrammar
from pydantic import JsonValue

from harness.modelfiles import TOOL_CALL_OPEN, ChatTemplate, TemplateRenderer
from harness.models.local._disk import DiskPrefixCache, fingerprint
from harness.models.local._engine import Engine, NextProbs, Sampler
from harness.models.local._prefix import PrefixPolicy
from harness.models.local._server import ServerLimits, build_app

_PR_SET_PDEATHSIG = 1
TOKEN_ENV = "KEEL_LOCAL_MODEL_TOKEN"
"""The bearer token every request must carry, handed over in the environment (not argv,
which any local user can read in the process list)."""
# Used when a GGUF carries no chat template: plain ChatML.
_CHATML = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] "
    "+ '<|im_end|>\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
_END_MARKERS = ("<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|end|>", "<end_of_turn>")


def _die_with_parent() -> None:
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        return  # best effort: without it, keel's own shutdown still stops the server


def _args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="keel-local-model")
    p.add_argument("--gguf", required=True)
    p.add_argument("--name", required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--n-ctx", type=int, default=8192)
    p.add_argument("--n-batch", type=int, default=512)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--threads-batch", type=int, default=0, help="prefill threads (0: as --threads)")
    p.add_argument("--max-tokens", type=int, default=512)
    p.add_argument("--model-sha256", default="")
    p.add_argument("--ram-states", type=int, default=4)
    p.add_argument("--ram-mb", type=int, default=1024)
    p.add_argument("--cache-dir", default="")
    p.add_argument("--cache-mb", type=int, default=2048)
    p.add_argument("--cache-files", type=int, default=16)
    p.add_argument("--cache-min-tokens", type=int, default=256)
    p.add_argument("--max-body-mb", type=int, default=16)
    p.add_argument("--max-queue", type=int, default=8)
    p.add_argument("--call-confidence", type=float, default=0.0, help="the call hint's threshold (0: off)")
    return p.parse_args(argv)


class LlamaKv:
    """The live KV state of sequence 0 of a `llama_cpp.Llama` (see `_engine.Kv`).

    Snapshots hold that sequence's cells only (`llama_state_seq_get_data`): no logits, no
    sampler state — the next request always evaluates at least its last prompt token.
    """

    def __init__(self, llm: llama_cpp.Llama) -> None:
        self.llm = llm

    def tokens(self) -> list[int]:
        return [int(t) for t in self.llm.input_ids[: self.llm.n_tokens]]

    def snapshot(self) -> bytes:
        ctx = self.llm.ctx
        size = llama_cpp.llama_state_seq_get_size(ctx, 0)
        buf = (ctypes.c_uint8 * size)()
        n = llama_cpp.llama_state_seq_get_data(ctx, buf, size, 0)
        return bytes(memoryview(buf)[:n])

    def restore(self, data: bytes, tokens: Sequence[int]) -> bool:
        self.reset()
        buf = (ctypes.c_uint8 * len(data)).from_buffer_copy(data)
        if not llama_cpp.llama_state_seq_set_data(self.llm.ctx, buf, len(data), 0):
            self.reset()
            return False
        n = len(tokens)
        self.llm.input_ids[:n] = tokens
        self.llm.n_tokens = n
        return True

    def advance(self, tokens: Sequence[int]) -> None:
        held = self.tokens()
        n = 0
        for a, b in zip(held, tokens, strict=False):
            if a != b:
                break
            n += 1
        if n == 0:
            self.reset()
        self.llm.n_tokens = n
        self.llm.eval(list(tokens[n:]))

    def reset(self) -> None:
        self.llm.reset()  # type: ignore[no-untyped-call]  # llama_cpp leaves it unannotated
        mem = llama_cpp.llama_get_memory(self.llm.ctx)
        if mem is not None:
            llama_cpp.llama_memory_clear(mem, True)


def fingerprint_settings(args: argparse.Namespace) -> dict[str, str | int | None]:
    """What a saved KV state depends on besides its tokens (see `_disk`)."""
    return {
        "model_sha256": args.model_sha256 or None,
        "gguf": None if args.model_sha256 else str(Path(args.gguf).resolve()),
        "n_ctx": args.n_ctx,
        "n_batch": args.n_batch,
        "type_k": "f16",
        "type_v": "f16",
        "flash_attn": "off",
        "llama_cpp": llama_cpp.__version__,
        "format": 1,
    }


def _sampler(llm: llama_cpp.Llama) -> Sampler:
    """Token generation with an optional JSON-schema grammar and banned tokens."""
    grammars: dict[str, LlamaGrammar] = {}

    def sample(
        tokens: list[int], temperature: float, schema: dict[str, JsonValue] | None, banned: list[int]
    ) -> Iterator[int]:
        grammar = None
        if schema is not None:
            key = json.dumps(schema, sort_keys=True)
            if key not in grammars:
                grammars[key] = LlamaGrammar.from_json_schema(key, verbose=False)
            grammar = grammars[key]
        processors = None
        if banned:

            def ban(_ids: npt.NDArray[np.intc], scores: npt.NDArray[np.single]) -> npt.NDArray[np.single]:
                scores[banned] = -np.inf
                return scores

            processors = llama_cpp.LogitsProcessorList([ban])
        return llm.generate(
            tokens,
            temp=temperature,
            top_k=40,
            top_p=0.95,
            min_p=0.05,
            repeat_penalty=1.0,
            grammar=grammar,
            logits_processor=processors,
        )

    return sample


def _token_text(llm: llama_cpp.Llama, token: int) -> str:
    return llm.detokenize([token], special=True).decode("utf-8", errors="replace") if token >= 0 else ""


def chat_template(llm: llama_cpp.Llama, gguf: str) -> TemplateRenderer:
    """The model's own chat template (plain ChatML when the GGUF carries none), compiled."""
    source = llm.metadata.get("tokenizer.chat_template")
    return TemplateRenderer(
        ChatTemplate(
            source or _CHATML,
            bos_token=_token_text(llm, llm.token_bos()),
            eos_token=_token_text(llm, llm.token_eos()),
            origin=f"{gguf}#tokenizer.chat_template" if source else "ChatML (the GGUF has no template)",
        )
    )


def _engine(llm: llama_cpp.Llama, args: argparse.Namespace) -> Engine:
    """The engine over a loaded model: its chat template, stop tokens and sampler."""

    def single(text: str) -> int | None:
        ids = llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)
        return ids[0] if len(ids) == 1 else None

    stops = {llm.token_eos(), *(t for t in (single(m) for m in _END_MARKERS) if t is not None)}
    opener = single(TOOL_CALL_OPEN)
    chat = chat_template(llm, args.gguf)
    return Engine(
        llm,
        chat,
        name=args.name,
        max_tokens_cap=args.max_tokens,
        sample=_sampler(llm),
        kv=LlamaKv(llm),
        stop_ids=frozenset(stops),
        banned_ids=(opener,) if opener is not None else (),
        policy=PrefixPolicy(ram_states=args.ram_states, ram_bytes=args.ram_mb * 1024 * 1024),
        disk=_disk(args),
        call_confidence=args.call_confidence or None,
        next_probs=_next_probs(llm),
    )


def _next_probs(llm: llama_cpp.Llama) -> NextProbs:
    """The next-token probabilities of given tokens after the last evaluated position."""

    def probs(ids: Sequence[int]) -> list[float]:
        raw = llama_cpp.llama_get_logits_ith(llm.ctx, -1)
        logits = np.ctypeslib.as_array(raw, shape=(llm.n_vocab(),)).astype(np.float64)
        weights = np.exp(logits - logits.max())
        total = float(weights.sum())
        return [float(weights[i]) / total for i in ids]

    return probs


def _disk(args: argparse.Namespace) -> DiskPrefixCache | None:
    if not args.cache_dir or args.cache_mb <= 0:
        return None
    return DiskPrefixCache(
        Path(args.cache_dir),
        fingerprint=fingerprint(fingerprint_settings(args)),
        max_bytes=args.cache_mb * 1024 * 1024,
        max_files=args.cache_files,
        min_tokens=args.cache_min_tokens,
    )


def main(argv: list[str]) -> None:
    _die_with_parent()
    args = _args(argv)
    started = time.monotonic()
    llm = llama_cpp.Llama(
        model_path=args.gguf,
        n_ctx=args.n_ctx,
        n_batch=args.n_batch,
        n_threads=args.threads,
        n_threads_batch=args.threads_batch or args.threads,
        logits_all=False,
        verbose=False,
    )
    engine = _engine(llm, args)
    print(
        f"keel local model: {args.name} from {args.gguf}; n_ctx {args.n_ctx}, n_batch {args.n_batch}, "
        f"{args.threads} threads ({args.threads_batch or args.threads} for prefill), native tools {engine.chat.native_tools}, "
        f"loaded in {time.monotonic() - started:.1f} s",
        file=sys.stderr,
        flush=True,
    )
    token = os.environ.pop(TOKEN_ENV, "")
    if not token:
        raise SystemExit(
            f"keel local model: no bearer token in ${TOKEN_ENV}; start it with start_local_model"
        )
    limits = ServerLimits(max_body=args.max_body_mb * 1024 * 1024, max_queue=args.max_queue)
    config = uvicorn.Config(
        build_app(engine, token=token, limits=limits),
        host="127.0.0.1",
        port=args.port,
        log_level="warning",
        access_log=False,
        lifespan="off",
    )
    uvicorn.Server(config).run()


if __name__ == "__main__":
    main(sys.argv[1:])
