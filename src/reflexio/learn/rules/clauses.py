"""Cutting a sentence into clauses, each read on its own by ``signals``.

"I only ever use Linux, so please don't suggest Macs" holds a fact and a wish; "Light mode
actually, dark mode hurts my eyes" a wish and a complaint; "Mornings don't work for me any
more, afternoons are better now" two judgements. A sentence is cut before "I", "just", "can
you", an imperative verb and the like, and at a comma between two clauses or between a clause
and a short phrase that stands alone at either end. A comma before "not ...", "and ...", a
name ("sign with my own name, Priya Raman") or a restatement in the middle ("we moved to
spaces, four spaces, no more tabs") does not cut.
"""

from __future__ import annotations

import re

from reflexio.learn.rules.corrections import continues, has_verb
from reflexio.learn.rules.lexicon import VERBS
from reflexio.learn.rules.text import words

__all__ = ["segments"]

_SEGMENT = re.compile(
    r",\s+(?=(?:I|I'm|I've|we|my|our|just|instead|rather|that|this|it|and|but|so|because|since|then|"
    r"otherwise|or|please|can|could|would|will|do|does|what|how|which|where|any|is|are|never|always|don't|"
    r"do not|stop)\b)|\s+and\s+(?=(?:I|I'm|I've|we|my|our)\b)|;\s+|:\s+|\s+-\s+"
)
_VERB_SEGMENT = re.compile(r",\s+(?=(\w+)\b)")


def segments(body: str) -> list[str]:
    """Clauses of a sentence: cut before "I", "just", "can you", an imperative verb, ..."""
    out: list[str] = []
    for part in _SEGMENT.split(body):
        start = 0
        leading_contrast = part.lower().startswith(("instead of ", "rather than "))
        for m in _VERB_SEGMENT.finditer(part):
            if leading_contrast and start == 0:
                leading_contrast = False
                continue
            if m.group(1).lower() in VERBS:
                out.append(part[start : m.start()])
                start = m.end()
        out.append(part[start:])
    return [c for s in out if s and s.strip(" ,") for c in _clauses_at_commas(s.strip(" ,"))]


#: Longest verbless phrase that stands as a clause of its own beside a full one.
_PHRASE_WORDS = 4


def _name(phrase: str) -> bool:
    """ "Priya Raman", "The Acme Support Team": an appositive name, not a clause of its own."""
    tokens = phrase.strip(" .!").split()
    return len(tokens) >= 2 and all(t[:1].isupper() for t in tokens if t.lower() not in {"the", "of", "and"})


def _phrase(part: str) -> bool:
    """A short verbless part that is not a name."""
    return len(words(part)) <= _PHRASE_WORDS and not has_verb(part) and not _name(part)


def _clauses_at_commas(segment: str) -> list[str]:
    """ "Light mode actually, dark mode hurts", "mornings don't work for me, afternoons are better":
    a comma between two clauses, or between a clause and a short phrase, ends a clause; a comma
    before "not ..." or "and ..." does not ("It's Canberra, not Sydney")."""
    parts = segment.split(", ")
    out = [parts[0]]
    for k, part in enumerate(parts[1:], 1):
        left, right = out[-1], part
        clause_pair = has_verb(left) and has_verb(right)
        # a phrase stands alone first or last ("Light mode actually, dark mode hurts", "..., Celsius
        # only"), not in the middle, where it restates ("We moved to spaces, four spaces, ...")
        phrase_pair = (k == 1 and _phrase(left) and has_verb(right)) or (
            k == len(parts) - 1 and has_verb(left) and _phrase(right)
        )
        if not continues(right) and (clause_pair or phrase_pair):
            out.append(right)
        else:
            out[-1] = f"{left}, {right}"
    return out
