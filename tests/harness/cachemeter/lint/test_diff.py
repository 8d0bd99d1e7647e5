"""The character-level helpers the lint's quotes are cut with."""

from __future__ import annotations

import pytest

from harness.cachemeter.lint._diff import shared_prefix


@pytest.mark.parametrize(
    ("a", "b", "shared"),
    [
        ("", "", 0),
        ("abc", "", 0),
        ("abc", "abc", 3),
        ("abc", "abd", 2),
        ("abc", "abcdef", 3),
        ("xbc", "abc", 0),
        ("prefix é then", "prefix é than", 11),
    ],
)
def test_shared_prefix_counts_the_leading_characters_in_common(a: str, b: str, shared: int) -> None:
    assert shared_prefix(a, b) == shared == shared_prefix(b, a)


def test_shared_prefix_agrees_with_a_plain_scan_on_long_strings() -> None:
    base = "system prompt line\n" * 400
    for cut in (0, 1, 7, 1000, len(base) - 1):
        changed = base[:cut] + "#" + base[cut + 1 :]
        assert shared_prefix(base, changed) == cut
