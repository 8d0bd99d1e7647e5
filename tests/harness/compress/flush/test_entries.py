"""The checks a candidate fact must pass: echoes of the instructions, labels, grounding, passages."""

from __future__ import annotations

from harness.compress.flush import read_flush_reply
from prompts._text import load_text
from tests.harness.compress.flush.flushkit import reply as _reply

SYSTEM = "You are keel. Write entries as declarative facts: User prefers concise answers."


def test_entries_that_echo_the_instructions_are_refused() -> None:
    note_echo = load_text("flush_list").splitlines()[2][:120]
    text = f"user: {note_echo}\nuser: User prefers concise answers.\nuser: Sam uses vim."
    reading = read_flush_reply("text_list", _reply(text), instructions=[SYSTEM])
    assert [w.content for w in reading.writes] == ["Sam uses vim."]
    assert {r.reason for r in reading.refusals} == {
        "repeats the instructions instead of a fact from the conversation"
    }


def test_a_label_with_no_value_is_refused_but_a_fact_ending_in_a_colon_is_kept() -> None:
    text = "memory: timezone:\nuser: time zone:\nmemory: quill's deploy checklist has three steps, in order:"
    reading = read_flush_reply("text_list", _reply(text))
    assert [w.content for w in reading.writes] == ["quill's deploy checklist has three steps, in order:"]
    assert [r.text for r in reading.refusals] == ["timezone:", "time zone:"]
    assert {r.reason for r in reading.refusals} == {"a label with no value (e.g. 'timezone:')"}


def test_facts_the_conversation_never_stated_and_bare_names_are_refused() -> None:
    said = (
        "Caroline: I went to the LGBTQ support group yesterday and it was so powerful.\n"
        "Melanie: That's great! I painted a lake sunrise last year, my kids loved it."
    )
    text = "\n".join(
        [
            "user: Caroline",  # a name, not a fact
            "user: Caroline is a 25-year-old software engineer who works at a tech company.",  # invented
            "memory: Melanie is a senior data scientist at a bank.",  # invented, no number
            "user: Caroline went to an LGBTQ support group.",  # said
            "memory: Melanie painted a lake sunrise last year.",  # said
        ]
    )
    reading = read_flush_reply("text_list", _reply(text), said=said)
    assert [w.content for w in reading.writes] == [
        "Caroline went to an LGBTQ support group.",
        "Melanie painted a lake sunrise last year.",
    ]
    reasons = {r.text: r.reason for r in reading.refusals}
    assert reasons["Caroline"].startswith("a bare word or name, not a fact")
    for invented in (
        "Caroline is a 25-year-old software engineer who works at a tech company.",
        "Melanie is a senior data scientist at a bank.",
    ):
        assert reasons[invented].startswith("not in the conversation")
    # Without the conversation, only the bare name is refused.
    unchecked = read_flush_reply("text_list", _reply(text))
    assert [r.text for r in unchecked.refusals] == ["Caroline"]


def test_a_passage_keeps_the_sentences_that_are_facts_and_names_who_they_are_about() -> None:
    said = "Caroline: I went to the LGBTQ support group yesterday. I paint landscapes on weekends."
    passage = (
        "Caroline is a 25-year-old counselor. She went to an LGBTQ support group. "
        "She paints landscapes on weekends."
    )
    for reply in (
        _reply(f"user: {passage}"),
        _reply("", ("memory", {"target": "user", "action": "add", "content": passage})),
    ):
        reading = read_flush_reply("text_list", reply, said=said)
        assert [w.content for w in reading.writes] == [
            "Caroline went to an LGBTQ support group.",
            "Caroline paints landscapes on weekends.",
        ]
        assert reading.refusals == ()
    # A passage with no sentence that stands is refused whole, with the first sentence's reason.
    invented = "Caroline is a 25-year-old counselor. She owns a boat."
    reading = read_flush_reply("text_list", _reply(f"user: {invented}"), said=said)
    assert reading.writes == () and reading.refusals[0].text == invented
    assert reading.refusals[0].reason.startswith("not in the conversation")


def test_words_that_label_a_fact_do_not_count_against_it() -> None:
    said = "Hi, I'm Sam. I use vim. Our database is PostgreSQL 16."
    text = "user: Name: Sam\nuser: Preferences: uses vim\nmemory: Database: PostgreSQL 16\nmemory: Database: MySQL 8"
    reading = read_flush_reply("text_list", _reply(text), said=said)
    assert [w.content for w in reading.writes] == [
        "Name: Sam",
        "Preferences: uses vim",
        "Database: PostgreSQL 16",
    ]
    assert [r.text for r in reading.refusals] == ["Database: MySQL 8"]


def test_a_fact_the_user_said_is_kept_even_when_its_words_are_the_instructions_words() -> None:
    said = "user: Hi, I'm Sam.\nuser: I prefer concise answers, please."
    text = "user: The user's name is Sam.\nuser: User prefers concise answers."
    reading = read_flush_reply("text_list", _reply(text), instructions=[SYSTEM], said=said)
    assert [w.content for w in reading.writes] == ["The user's name is Sam.", "User prefers concise answers."]
    assert reading.refusals == ()


def test_an_invented_part_of_an_entry_is_refused_though_most_of_it_was_said() -> None:
    said = "user: I'm Tim, I play basketball for the city team and I use a Mac at home for software."
    text = "user: User is Tim, a software engineer.\nuser: Tim plays basketball for the city team."
    reading = read_flush_reply("text_list", _reply(text), said=said)
    assert [w.content for w in reading.writes] == ["Tim plays basketball for the city team."]
    assert (
        reading.refusals[0].reason
        == "not in the conversation: one part of it was never said (an invented detail?)"
    )


def test_questions_and_greetings_copied_from_the_chat_are_not_facts() -> None:
    said = "user: Hello, I'm Léa.\nassistant: Hello Léa! What do you need?"
    text = "memory: Hello Léa! What do you need?\nuser: What do you need?\nuser: The user's name is Léa."
    reading = read_flush_reply("text_list", _reply(text), said=said)
    assert [w.content for w in reading.writes] == ["The user's name is Léa."]
    assert {r.reason for r in reading.refusals} == {
        "a question or a greeting copied from the chat, not a fact"
    }


MEMORY_BLOCK = (
    "USER PROFILE [40% — 120/300 chars]\nSam O'Neill maintains a Rust web service called quill.\n§\n"
    "Sam's services run on Node 18."
)


def test_an_entry_the_memory_block_already_holds_is_refused_as_already_in_memory() -> None:
    system = f"You are keel.\n\n{MEMORY_BLOCK}\n\nBe brief."
    said = "I'm Sam O'Neill, I maintain a Rust web service called quill. We moved to Node 22 last week."
    text = (
        "user: Sam O'Neill maintains a Rust web service called quill.\nuser: Sam's services run on Node 22."
    )
    reading = read_flush_reply(
        "text_list", _reply(text), instructions=[system], said=said, memory=MEMORY_BLOCK
    )
    # the corrected value is new; the echo is named for what it is, not "repeats the instructions"
    assert [w.content for w in reading.writes] == ["Sam's services run on Node 22."]
    assert [r.reason for r in reading.refusals] == [
        "already in memory: an entry there says this (nothing new to save)"
    ]


def test_without_the_snapshot_apart_the_same_echo_reads_as_the_instructions() -> None:
    system = f"You are keel.\n\n{MEMORY_BLOCK}"
    text = "user: Sam O'Neill maintains a Rust web service called quill."
    reading = read_flush_reply("text_list", _reply(text), instructions=[system], said="nothing of it")
    assert [r.reason for r in reading.refusals] == [
        "repeats the instructions instead of a fact from the conversation"
    ]


def test_every_refusal_of_a_malformed_call_says_what_to_send_instead() -> None:
    ops = [
        {"action": "drop", "content": "x"},
        {"action": "remove"},
        {"action": "replace", "content": "Sam uses vim daily."},
    ]
    reading = read_flush_reply(
        "free_calls", _reply("", ("memory", {"operations": ops})), said="Sam uses vim daily."
    )
    reasons = [r.reason for r in reading.refusals]
    assert reasons == [
        "unknown action 'drop'; use add, replace or remove",
        "remove without old_text (the entry's text to remove)",
        "replace without old_text (the entry's text to replace)",
    ]


def test_facts_in_other_scripts_pass_the_flush_as_latin_ones_do() -> None:
    said = "Меня зовут Андрей, я технический переводчик.\n你好！我叫王丽，是杭州的一名平面设计师。\nΕίμαι η Ελένη, δασκάλα μαθηματικών."
    text = "user: Андрей — технический переводчик.\nuser: 王丽是杭州的平面设计师。\nuser: Η Ελένη είναι δασκάλα μαθηματικών."
    reading = read_flush_reply("text_list", _reply(text), said=said)
    assert len(reading.writes) == 3 and reading.refusals == ()


def test_an_entry_that_inverts_or_misattributes_what_the_user_said_is_refused_with_what_they_said() -> None:
    said = (
        "Use g = 9.8 m/s², never 9.81, because that's what our exam board uses.\n"
        "My business partner Declan swears by QuickBooks for the accounts, but that's his side of things."
    )
    text = "user: Exam board uses 9.81\nuser: Swears by QuickBooks for the accounts\nuser: Uses g = 9.8 m/s²"
    reading = read_flush_reply("text_list", _reply(text), said=said)
    assert [w.content for w in reading.writes] == ["Uses g = 9.8 m/s²"]
    assert [r.reason.split(" (")[0] for r in reading.refusals] == [
        "the opposite of what the user said",
        "about someone else, not the user",
    ]
    assert "never 9.81" in reading.refusals[0].reason


def test_a_chat_line_copied_with_its_speaker_is_refused() -> None:
    said = (
        "Caroline: The support group has made me feel accepted and given me courage to embrace myself.\n"
        "Caroline: Thanks, Mel!"
    )
    text = (
        "user: Caroline: The support group has made me feel accepted and given me courage\n"
        "user: Caroline: Thanks, Mel!\nuser: Caroline felt accepted by her support group"
    )
    reading = read_flush_reply("text_list", _reply(text), said=said)
    assert [r.reason for r in reading.refusals] == [
        "a chat line copied whole with its speaker, not a fact: say what it tells about the user"
    ] * 2
    assert [w.content for w in reading.writes] == ["Caroline felt accepted by her support group"]
