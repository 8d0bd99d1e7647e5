# Grounding: is what a model wrote down supported by what was said, and does it mean what
# was said? `_tokens` (Unicode words, stems, `grounded`: the words are there), `_meaning`
# (the meaning checks: polarity, whose fact it is, modality, corrections), `_voice` (whom a
# clause is about, and sarcasm), `_spelling` (a name across scripts: Андрей / Andrei).
from memory.grounding._meaning import Said, meaning_problem
from memory.grounding._tokens import content_stems, content_words, grounded, stem, tokens

__all__ = ["Said", "content_stems", "content_words", "grounded", "meaning_problem", "stem", "tokens"]
