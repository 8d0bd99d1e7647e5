"""Hugging Face tokenizers, offline: a tokenizer.json or a directory, with its chat template."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tokenizers import Tokenizer

from harness.cachemeter import (
    JinjaRenderer,
    MeterError,
    MeterMessage,
    MeterRequest,
    load_meter_tokenizer,
    make_renderer,
    parse_tokenizer,
)
from harness.errors import ModelFileError
from harness.modelfiles import hf_template
from harness.modelfiles._hf import HFTokenizer
from tests.harness.cachemeter.meterkit import CHATML_TEMPLATE, CORPUS, build_bpe

SAMPLES = [
    *CORPUS,
    "<|im_start|>user\nhello, wörld — ünïcode and emoji 🙂<|im_end|>\n",
    "",
    "   leading spaces and\ttabs\n\nand blank lines",
]


@pytest.mark.parametrize("which", ["file", "directory"])
def test_counts_equal_the_tokenizers_library_without_the_post_processor_specials(
    bpe_dir: Path, which: str
) -> None:
    library = Tokenizer.from_file(str(bpe_dir / "tokenizer.json"))
    choice = parse_tokenizer(str(bpe_dir if which == "directory" else bpe_dir / "tokenizer.json"))
    ours = load_meter_tokenizer(choice)
    assert isinstance(ours, HFTokenizer)
    assert ours.name == "hf:tiny-bpe"
    for text in SAMPLES:
        expected = library.encode(text, add_special_tokens=False).ids
        assert ours.encode(text) == expected
        assert ours.count(text) == len(expected)
    # The library's default adds the BOS the chat template writes itself; the meter must not.
    assert library.encode("hi").ids[0] == library.token_to_id("<s>")
    assert library.token_to_id("<s>") not in ours.encode("hi")


def test_special_tokens_in_text_are_single_ids(bpe_dir: Path) -> None:
    ours = load_meter_tokenizer(bpe_dir)
    start = Tokenizer.from_file(str(bpe_dir / "tokenizer.json")).token_to_id("<|im_start|>")
    assert ours.encode("<|im_start|>")[0] == start
    assert ours.encode("<|im_start|>") == [start]


def test_the_directory_chat_template_and_bos_token_feed_the_jinja_renderer(bpe_dir: Path) -> None:
    template = hf_template(bpe_dir)
    assert template.source == CHATML_TEMPLATE
    assert (template.bos_token, template.eos_token) == ("<s>", "<|im_end|>")
    tokenizer = load_meter_tokenizer(bpe_dir)
    renderer = make_renderer("jinja", tokenizer, hf=bpe_dir)
    assert isinstance(renderer, JinjaRenderer)
    request = MeterRequest(kind="chat", model="m", system="be brief", messages=(MeterMessage("user", "hi"),))
    rendered = renderer.render(request)
    expected = (
        "<s><|im_start|>system\nbe brief<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    )
    library = Tokenizer.from_file(str(bpe_dir / "tokenizer.json"))
    assert rendered.ids() == library.encode(expected, add_special_tokens=False).ids


def test_a_chat_template_jinja_file_wins_and_named_templates_pick_default(tmp_path: Path) -> None:
    folder = build_bpe(tmp_path / "named", template=None)
    config = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    config["chat_template"] = [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D"}]
    (folder / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    assert hf_template(folder).source == "D"
    (folder / "chat_template.jinja").write_text("J", encoding="utf-8")
    assert hf_template(folder).source == "J"
    assert hf_template(folder / "tokenizer.json").source == "J"  # a file finds its directory's template


def test_missing_and_broken_tokenizers_are_errors_that_name_the_fix(tmp_path: Path) -> None:
    with pytest.raises(MeterError, match="neither one of cl100k, chars, gguf nor an existing"):
        parse_tokenizer("HuggingFaceTB/SmolLM2-135M")  # a hub name: never downloaded
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(MeterError, match=r"has no tokenizer\.json"):
        load_meter_tokenizer(empty)
    garbage = tmp_path / "tokenizer.json"
    garbage.write_text("{not json", encoding="utf-8")
    with pytest.raises(MeterError, match="is not a Hugging Face tokenizer file"):
        load_meter_tokenizer(garbage)
    with pytest.raises(ModelFileError, match="has no chat template"):
        hf_template(build_bpe(tmp_path / "plain", template=None))
    bad = build_bpe(tmp_path / "bad", template=None)
    (bad / "tokenizer_config.json").write_text(
        json.dumps({"chat_template": [{"name": "x", "template": "y"}]})
    )
    with pytest.raises(ModelFileError, match="no 'default'"):
        hf_template(bad)
