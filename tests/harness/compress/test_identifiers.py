"""The identifier index: exact strings from the compressed middle, mechanically."""

from __future__ import annotations

from harness.compress.identifiers import extract_identifiers
from harness.compress.summary import summary_message
from harness.types import Message, ToolCall

MIDDLE = [
    Message(
        "user",
        "Hi, I'm Caroline O'Neill. We deploy ./scripts/deploy.sh to prod-eu-2 every Friday at 16:30; "
        "the DB is PostgreSQL 15.4 on db-7.internal (ticket JIRA-4312). My zone is Europe/Lisbon.",
    ),
    Message(
        "assistant",
        'Noted "deploy on Fridays". Costs $1,200 at 85% CPU; docs at https://example.com/docs?x=1, '
        "mail ops@example.org, version v2.3.1, since 12 March 2023.",
        tool_calls=(ToolCall("c1", "memory", '{"content": "path /etc/nginx/sites-enabled/app.conf"}'),),
    ),
]


def test_the_index_keeps_names_numbers_dates_paths_ids_and_quotes_verbatim() -> None:
    found = extract_identifiers(MIDDLE)
    for expected in (
        "Caroline O'Neill",
        "./scripts/deploy.sh",
        "prod-eu-2",
        "16:30",
        "PostgreSQL",
        "15.4",
        "db-7.internal",
        "JIRA-4312",
        "Europe/Lisbon",
        "deploy on Fridays",
        "$1,200",
        "85%",
        "https://example.com/docs?x=1",
        "ops@example.org",
        "v2.3.1",
        "12 March 2023",
        "/etc/nginx/sites-enabled/app.conf",
    ):
        assert expected in found, expected


def test_grammar_words_and_small_numbers_are_not_identifiers() -> None:
    found = extract_identifiers([Message("user", "Hi! Yes, I think we can. The plan has 3 steps. Thanks.")])
    assert found == []


def test_the_index_is_ordered_deduplicated_and_capped() -> None:
    many = [Message("user", " ".join(f"ID-{i:04d}" for i in range(500)) + " ID-0001")]
    found = extract_identifiers(many, max_items=50)
    assert found[:3] == ["ID-0000", "ID-0001", "ID-0002"]
    assert len(found) == 50 and len(set(found)) == 50
    capped = extract_identifiers(many, max_chars=100)
    assert sum(len(x) + 2 for x in capped) <= 100


def test_previous_summaries_are_not_indexed_again() -> None:
    old = summary_message("## Goal\nJIRA-9999 was closed")
    assert "JIRA-9999" not in extract_identifiers([old, Message("user", "and JIRA-1000?")])
