"""Assemble the system prompt from slot texts in a configurable order."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from prompts.slots import DEFAULT_SLOT_ORDER, SLOT_IDS, SlotId, SlotSpan, SystemPrompt

__all__ = ["SEPARATOR", "build_system_prompt"]

SEPARATOR = "\n\n"


def build_system_prompt(
    slot_texts: Mapping[SlotId, str],
    *,
    order: Sequence[SlotId] = DEFAULT_SLOT_ORDER,
    count_tokens: Callable[[str], int] | None = None,
) -> SystemPrompt:
    """Join the non-empty slots in `order`, separated by a blank line, and map them.

    Args:
        slot_texts: text per slot; missing or blank slots are left out of the text but
            still appear in the slot map (as empty spans) so every map has every slot.
        order: the slot order (config `prompt.slot_order`); each id at most once. Slots
            not named in `order` are left out.
        count_tokens: when given, token offsets are filled in by counting each slot's
            prefix of the final text (exact for the tokenizer used).

    Raises:
        ValueError: `order` names an unknown slot or one slot twice.
    """
    unknown = [s for s in order if s not in SLOT_IDS]
    if unknown:
        raise ValueError(f"unknown prompt slot(s) {unknown!r}; known slots: {sorted(SLOT_IDS)!r}")
    if len(set(order)) != len(order):
        raise ValueError(f"slot order {list(order)!r} lists a slot twice")

    parts: list[str] = []
    raw_spans: list[tuple[SlotId, int, int]] = []
    pos = 0
    for name in order:
        text = slot_texts.get(name, "").strip("\n")
        if not text.strip():
            raw_spans.append((name, pos, pos))
            continue
        if parts:
            pos += len(SEPARATOR)
        raw_spans.append((name, pos, pos + len(text)))
        parts.append(text)
        pos += len(text)
    full = SEPARATOR.join(parts)

    if count_tokens is None:
        return SystemPrompt(full, tuple(SlotSpan(name, start, end) for name, start, end in raw_spans))
    counted: dict[int, int] = {}  # each distinct prefix counted once (empty slots share offsets)

    def upto(offset: int) -> int:
        if offset not in counted:
            counted[offset] = count_tokens(full[:offset])
        return counted[offset]

    spans = [SlotSpan(name, start, end, upto(start), upto(end)) for name, start, end in raw_spans]
    return SystemPrompt(full, tuple(spans))
