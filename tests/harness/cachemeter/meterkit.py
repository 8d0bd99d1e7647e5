"""Building blocks for meter tests: a locally trained Hugging Face tokenizer, offline."""

from __future__ import annotations

import json
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

__all__ = ["CHATML_TEMPLATE", "CORPUS", "build_bpe"]

CHATML_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
"""A ChatML template that never reads `tools` (as SmolLM2's does not)."""

CORPUS = [
    "You are a careful assistant. Answer briefly and say when you are unsure.",
    "The user prefers short answers, uses vim, and deploys the quill service on Fridays.",
    "Search the web, read a file, write a note, save a durable fact to memory.",
    '{"name": "search", "description": "Search the web.", "parameters": {"type": "object"}}',
    "What is a sensible way to structure error handling in a Rust web service?",
]


def build_bpe(folder: Path, *, template: str | None = CHATML_TEMPLATE) -> Path:
    """Train a small byte-level BPE on `CORPUS` and save it as a Hugging Face tokenizer directory:
    tokenizer.json, plus tokenizer_config.json carrying `template` and a BOS token."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=["<s>", "<|im_start|>", "<|im_end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(CORPUS * 20, trainer)
    # What `add_special_tokens=True` would add: a BOS the chat template writes itself.
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 0)])
    folder.mkdir(parents=True, exist_ok=True)
    tok.save(str(folder / "tokenizer.json"))
    config: dict[str, object] = {"bos_token": {"content": "<s>", "special": True}, "eos_token": "<|im_end|>"}
    if template is not None:
        config["chat_template"] = template
    (folder / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    return folder
