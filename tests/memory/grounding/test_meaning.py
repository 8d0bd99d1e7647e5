"""The meaning checks on the traps of the facts files: an entry must not assert what the user
denied, someone else's preference, a hypothesis, a temporary state or a corrected value —
and the plain facts and paraphrases beside them pass."""

from __future__ import annotations

import pytest

from memory.grounding import Said, meaning_problem

GRAVITY = "Use g = 9.8 m/s², never 9.81, because that's what our exam board uses."
BAKERY = (
    "I need a spreadsheet for flour orders. And before you ask: I do not use Excel, I can't stand it. "
    "Everything I have is in LibreOffice Calc.\n"
    "Two. My business partner Declan swears by QuickBooks for the accounts, but that's his side of things."
)
ENGINEER = (
    "Hypothetically, if I ever moved to Vancouver I'd have to learn the Canadian codes. Not planning to.\n"
    "For now I'm stuck at home with a broken ankle, so I'm working remotely this month."
)
PLATFORM = (
    "Our services are on Node 18.\nWait, sorry, that's outdated, we finished the upgrade last week. "
    "Node 22 everywhere now."
)
ANDROID = "A banking app, Kotlin with Jetpack Compose. Min SDK 24. Hmm, no, the client raised it last sprint: min SDK 26."
DESIGNER = "我平时用Figma做设计，不用Sketch。\n我的老板喜欢用Photoshop，但那是他的习惯，不是我的。"
TEACHER = "Ο διευθυντής θέλει όλα σε Word, αλλά εγώ δεν χρησιμοποιώ Word."
# "I'm" and a word opening a sentence are capitalised without naming anything: a correction
# that follows them takes back the compiler, not the user's name
OCEAN = (
    "Hi. I'm Olafur, a postdoc in the climate group.\nThe model builds with the Intel compiler on the cluster.\n"
    "Wait, I'm behind the times. We dropped Intel in the spring; everything builds with gfortran now."
)


@pytest.mark.parametrize(
    ("said", "entry", "reason"),
    [
        (GRAVITY, "Exam board uses 9.81", "the opposite of what the user said"),
        (BAKERY, "Roisin uses Excel", "the opposite of what the user said"),
        (BAKERY, "Roisin swears by QuickBooks", "about someone else"),
        (ENGINEER, "Tobias is moving to Vancouver", "hypothetical"),
        (ENGINEER, "Tobias has a broken ankle", "temporary"),
        (PLATFORM, "Ines's services run on Node 18", "corrected"),
        (ANDROID, "The app's min SDK is 24", "corrected"),
        (DESIGNER, "用户用Sketch", "the opposite of what the user said"),
        (DESIGNER, "王丽用Photoshop", "about someone else"),
        (TEACHER, "Η Ελένη χρησιμοποιεί Word", "about someone else"),
        (OCEAN, "The model builds with the Intel compiler", "corrected"),
    ],
)
def test_an_entry_that_does_not_mean_what_the_user_said_is_refused_with_a_reason(
    said: str, entry: str, reason: str
) -> None:
    problem = meaning_problem(entry, Said(said))
    assert problem is not None and problem.startswith(reason)


@pytest.mark.parametrize(
    ("said", "entry"),
    [
        (GRAVITY, "Uses g = 9.8 m/s², never 9.81 (exam board)"),
        (BAKERY, "Roisin does not use Excel; she works in LibreOffice Calc"),
        (BAKERY, "Roisin's business partner Declan uses QuickBooks"),
        (ENGINEER, "Tobias might learn the Canadian codes if he ever moved to Vancouver"),
        (ENGINEER, "Tobias has a broken ankle this month and works remotely"),
        (PLATFORM, "Services run on Node 22"),
        (PLATFORM, "Upgraded from Node 18 to Node 22"),
        (ANDROID, "Min SDK 26"),
        (ANDROID, "Marek builds the app with Kotlin and Jetpack Compose"),
        (DESIGNER, "王丽用Figma，不用Sketch"),
        (TEACHER, "Eleni does not use Word"),
        (OCEAN, "I'm Olafur, a postdoc in the climate group"),
        (OCEAN, "Everything builds with gfortran"),
    ],
)
def test_the_plain_fact_and_its_paraphrase_pass(said: str, entry: str) -> None:
    assert meaning_problem(entry, Said(said)) is None
