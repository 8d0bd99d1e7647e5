"""Whose voice a clause has and in what tone: about the user or someone else, meant or sarcastic.

`subjects` names who else each clause of a sentence is about — by a cue ("my partner", "our
CTO"), by a clause that opens with a name and a verb of preference ("Mikkel is vegan",
"Ines's group has …"), or carried over from an earlier clause to one without I, my or we
("My colleague Rui is coming too: wants the hotel in Shibuya"); `ironic` finds sarcasm ("Oh
great, poison, exactly what my plot needs. No thanks."). Both are English heuristics; a
clause in another script keeps only the cue words listed for it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["ironic", "subjects"]

_OTHER_PERSON = re.compile(
    r"\b(?:my|our|his|her|their)\s+(?:\w+\s+)?(?:colleague|co-?worker|partner|boss|(?<!package )(?<!password )(?<!window )(?<!task )manager|lead|cto|ceo|"
    r"brother|sister|mother|father|mum|mom|dad|wife|husband|girlfriend|boyfriend|friend|neighbou?r|teammate|"
    r"co-?host|apprentice|supervisor|pianist|client|customer|son|daughter|director|principal|nephew|niece)s?\b"
    r"|\bthe client's\b|коллег|老板|同事|διευθυντ|زميل|लीड",
    re.IGNORECASE,
)
_FIRST_PERSON = re.compile(
    r"\b(?:i|i'm|i've|i'd|i'll|me|my|mine|we|we're|we've|our|ours|us)\b", re.IGNORECASE
)
_NAMED_SUBJECT = re.compile(
    r"^\W*(?:and\s+|so\s+)?([A-Z][\w-]+)(?:'s\s+[a-z]+|\s+(?:in|from|at|on)\s+[\w-]+)?\s+"
    r"(?:is|was|has|wants|loves|likes|prefers|swears|keeps|eats|thinks|says|insists|grows|hates)\b"
)
"""A clause about a person named at its start ("Mikkel is vegan", "Gareth in audit is the one
with …", "Ines's group has …"); only when the clause has no I, my or we."""
_NOT_A_PERSON = frozenset(
    [
        "it",
        "that",
        "this",
        "there",
        "here",
        "what",
        "everything",
        "everyone",
        "nobody",
        "which",
        "who",
        "the",
        "name",
    ]
)
_IRONIC_OPENER = re.compile(
    r"^\W*(?:oh,?\s+|ha,?\s+|yeah,?\s+)?(?:great|wonderful|perfect|brilliant|fantastic|lovely|sure|right)[,!]",
    re.IGNORECASE,
)
_IRONIC_SIGN = re.compile(
    r"\b(?:exactly|just) what\b|\bbecause I (?:have|love|need)\b|\b(?:SO|SUCH|TOTALLY|REALLY|LOVE|EXACTLY)\b"
)
_REJECTION = re.compile(r"^\W*(?:no|nope|no thanks?|no way|not a chance|hard pass)\W*$", re.IGNORECASE)


def ironic(sentences: Sequence[str], n: int) -> bool:
    """Sarcasm: "Oh great, poison, exactly what my plot needs. No thanks." — an ironic opener
    with a sign of irony in the sentence, or a flat refusal right after it."""
    if not _IRONIC_OPENER.search(sentences[n]):
        return False
    after = sentences[n + 1] if n + 1 < len(sentences) else ""
    return _IRONIC_SIGN.search(sentences[n]) is not None or _REJECTION.match(after) is not None


def subjects(clauses: Sequence[str], word: str) -> list[tuple[str, str | None]]:
    """Each clause with who else it is about, or None when it may be the user. A clause with
    no I, my or we goes on about the person an earlier clause named ("My colleague Rui is
    coming too: wants the hotel in Shibuya")."""
    out: list[tuple[str, str | None]] = []
    carried: str | None = None
    for clause in clauses:
        person = _OTHER_PERSON.search(clause)
        named = _NAMED_SUBJECT.match(clause)
        mine = _FIRST_PERSON.search(clause) is not None
        if person is not None:
            name = re.match(r"\s+([A-Z][\w'-]+)", clause[person.end() :])
            carried = " ".join(
                [person.group(0).split()[-1].lower(), *([name.group(1).lower()] if name else [])]
            )
            out.append((clause, carried))
        elif named is not None and not mine and named.group(1).lower() not in {word, *_NOT_A_PERSON}:
            out.append((clause, named.group(1).lower()))
        else:
            carried = None if mine or not clause.isascii() else carried
            out.append((clause, carried))
    return out
