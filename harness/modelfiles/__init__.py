# Model files, read the same way by everything that needs them (the cache meter, the embedded
# server, `keel models`): `_gguf` reads GGUF metadata (the chat template, special tokens) and
# loads a GGUF's vocabulary; `_hf` loads a Hugging Face `tokenizer.json` and its directory's chat
# template; `_template` is the one Jinja sandbox chat templates render in, over what `_items`
# builds from OpenAI messages (in the `hf` or the `keel` dialect). Nothing here downloads.
from harness.modelfiles._gguf import (
    load_gguf_tokenizer,
    read_gguf_metadata,
    smollm2_gguf_path,
    template_from_gguf,
)
from harness.modelfiles._hf import hf_template, load_hf_tokenizer
from harness.modelfiles._items import TOOL_CALL_CLOSE, TOOL_CALL_OPEN, Dialect, TemplateInput
from harness.modelfiles._parts import Part
from harness.modelfiles._template import ChatTemplate, TemplateRenderer, template_from_file

__all__ = [
    "TOOL_CALL_CLOSE",
    "TOOL_CALL_OPEN",
    "ChatTemplate",
    "Dialect",
    "Part",
    "TemplateInput",
    "TemplateRenderer",
    "hf_template",
    "load_gguf_tokenizer",
    "load_hf_tokenizer",
    "read_gguf_metadata",
    "smollm2_gguf_path",
    "template_from_file",
    "template_from_gguf",
]
