"""The meaning checks on lower-case words, sarcasm, whose clause it is, and values taken back
later: "pnpm, not npm", "my neighbour grows dahlias", "Oh great, poison … No thanks.",
"I dropped SketchUp" — and the plain facts beside them still pass."""

from __future__ import annotations

import pytest

from memory.grounding import Said, meaning_problem

FRONTEND = "We use React with TypeScript, and our package manager is pnpm, not npm."
GARDEN = (
    "Mostly potatoes and beans. I garden organically, no synthetic fertiliser at all.\n"
    "Oh great, poison, exactly what my organic plot needs. No thanks.\n"
    "My neighbour Clive grows prize dahlias and swears by Miracle-Gro, but that's him, not me."
)
TRIP = (
    "My brother Emre is coming along and he's the opposite: wants a hotel right in Kreuzberg for the clubs."
)
DINNER = "For me it has to be gluten-free. Jonas is vegan, and I eat everything else."
CAD = (
    "Looks right. I'll draw it up in SketchUp first.\nUgh, habit. I dropped SketchUp last year. "
    "Everything is in Onshape now."
)
ASSETS = "Our assets build with gulp.\nSorry, old habit: we dropped gulp in May, it's all esbuild now."
TRACKER = (
    "I'll log it in Jira.\nHmm, I said Jira out of habit. We switched to Linear in March.\n"
    "My boss still swears by Jira, so the argument goes on."
)
CHOIR = "The men are two retired gentlemen who both sing low, so there is no tenor line."
SPREADSHEET = "I do not use Excel, I can't stand it. Everything I have is in LibreOffice Calc."
ACCOUNTS = "Ha, sure, because I have SO much free time for a new accounting package. No."


@pytest.mark.parametrize(
    ("said", "entry", "reason"),
    [
        (FRONTEND, "The team uses npm", "the opposite of what the user said"),
        (GARDEN, "Gwen grows dahlias", "about someone else"),
        (GARDEN, "Gwen wants poison for her organic plot", "sarcasm"),
        (ACCOUNTS, "Has much free time for a new accounting package", "sarcasm"),
        (TRIP, "The user wants a hotel in Kreuzberg", "about someone else"),
        (DINNER, "The user is vegan", "about someone else"),
        (CAD, "Draws furniture in SketchUp", "corrected"),
        (ASSETS, "Assets build with gulp", "corrected"),
        (TRACKER, "The user tracks work in Jira", "corrected"),
    ],
)
def test_a_wrong_entry_on_plain_words_is_refused_with_its_reason(said: str, entry: str, reason: str) -> None:
    problem = meaning_problem(entry, Said(said))
    assert problem is not None and problem.startswith(reason)


@pytest.mark.parametrize(
    ("said", "entry"),
    [
        (FRONTEND, "Uses pnpm, not npm"),
        (FRONTEND, "Prefers pnpm over npm"),
        (GARDEN, "Gwen gardens organically"),
        (GARDEN, "Clive grows dahlias"),
        (GARDEN, "Gwen uses no synthetic fertiliser"),
        (TRIP, "Emre wants a hotel in Kreuzberg"),
        (DINNER, "Jonas is vegan; the user needs gluten-free food"),
        (CAD, "Dropped SketchUp; designs in Onshape"),
        (ASSETS, "Assets build with esbuild"),
        (TRACKER, "Tracks work in Linear"),
        (CHOIR, "The men sing low"),
        (SPREADSHEET, "Uses LibreOffice Calc"),
    ],
)
def test_the_plain_facts_beside_them_pass(said: str, entry: str) -> None:
    assert meaning_problem(entry, Said(said)) is None


@pytest.mark.parametrize(
    ("said", "entry"),
    [
        ("أعمل في دبي وأستخدم Python، ولا أستخدم MATLAB.", "The user uses MATLAB"),
        ("मैं Python इस्तेमाल करता हूँ, पर मैं Excel इस्तेमाल नहीं करता।", "The user uses Excel"),
    ],
)
def test_a_negation_is_read_where_the_language_puts_it(said: str, entry: str) -> None:
    # Arabic joins "and" to its "not" (ولا); Hindi puts "not" after the object and verb
    problem = meaning_problem(entry, Said(said))
    assert problem is not None and problem.startswith("the opposite of what the user said")


def test_a_hindi_fact_without_negation_passes() -> None:
    said = "मैं Python इस्तेमाल करता हूँ, पर मैं Excel इस्तेमाल नहीं करता।"
    assert meaning_problem("The user uses Python", Said(said)) is None
