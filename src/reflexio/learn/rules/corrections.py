"""Factual corrections: a user telling the agent how things are, after a wrong answer.

"That's wrong. The refund policy is 30 days, and only with a receipt.", "No, refunds are only
allowed within 30 days", "Denver is Mountain Time", "Billing was migrated to Postgres two years
ago", "The label says 5 ml every 4 to 6 hours". None of these is about the user or an
instruction, yet each is a lesson for the agent: the next answer to that kind of request must
state the corrected fact. A *world statement* is a clause with a subject that is neither the
user nor the agent and a finite verb; it counts as a correction when it answers an agent turn
and the message says the answer was wrong, or when it is about what the answer was about (it
shares a content word with the request or the answer) while adding something the answer did
not say.

Not corrections: complaints ("That is dangerous and wrong"), reports of the user's own state
("dark mode hurts my eyes", "mornings don't work for me"), someone's opinion ("my boss says
...") and states after a fix ("contacts are back").
"""

from __future__ import annotations

import itertools
import re

from reflexio.learn.rules.lexicon import DOCUMENT_SPEAKERS, EVALUATIVE, word_list
from reflexio.learn.rules.text import base_form, capitalize, informative, is_past, trim, words

__all__ = ["about", "continues", "has_verb", "world_statement"]

_AUX = word_list(
    """
    is are was were has have had does do did can could will would should must may might isn't
    aren't wasn't weren't hasn't haven't hadn't doesn't don't didn't can't cannot won't wouldn't
    shouldn't mustn't needs it's that's there's they're
    """
)
_NOT_SUBJECT = word_list(
    """
    i you we i'm you're we're i've you've we've i'd you'd we'd i'll you'll we'll let's please he
    she they he's she's they're what why how which who where when if whether do does did can could
    would will should is are was were thanks thank yes no ok okay sure
    """
)
_PRONOUN_SUBJECT = word_list("it that this there it's that's this is there's those these")
_FIRST_PERSON = re.compile(r"\b(?:i|me|my|mine|myself|i'm|i've|i'd|i'll)\b", re.I)
_CONTINUATION = re.compile(r"^(?:and|but|plus|only|except|not|no|never|with|without|unless|so|or)\b", re.I)
_REPORT = re.compile(
    r"^(?P<speaker>(?:[\w'-]+\s+){0,3}?[\w'-]+)\s+(?:says?|said|tells?|told|thinks?|thought|claims?|"
    r"reckons?|insists?|recommends?|suggests?)\b",
    re.I,
)


def world_statement(segment: str) -> str | None:
    """The clause as a fact for the agent, if it states how things are; else None."""
    text = trim(segment.strip())
    report = _REPORT.match(text)
    if report and report["speaker"].split()[-1].lower() not in DOCUMENT_SPEAKERS:
        return None  # someone's opinion ("my boss says ..."); a label or a policy is a source
    tokens = words(text)
    if len(tokens) < 3 or text.endswith("?") or tokens[0] in _NOT_SUBJECT or tokens[0] in {"my", "your"}:
        return None
    compound = "-" in text.split()[0]  # "check-in at that hotel begins at 3pm"
    if _FIRST_PERSON.search(text) or (
        base_form(tokens[0]) == tokens[0] and not compound and not _noun_led(tokens)
    ):
        return None  # about the user, or an imperative
    verb = (
        0
        if tokens[0] in _AUX
        else next((i for i, t in enumerate(tokens[1:8], 1) if _finite(t, tokens[i - 1])), None)
    )
    if verb is None:
        return None
    predicate = [t for t in tokens[verb:] if t not in _AUX]
    topical = informative(" ".join(predicate)) - _evaluative_stems()
    pronoun = tokens[0] in _PRONOUN_SUBJECT
    if not topical or (pronoun and (len(topical) < 2 or any(t in EVALUATIVE for t in tokens))):
        return None  # "that is wrong", "it's too slow", "that fixed it", "that was the wrong purchase"
    return capitalize(text)


def _noun_led(tokens: list[str]) -> bool:
    """ "Rent is due", "release notes are out": a word that is also a verb, then a verb."""
    return len(tokens) > 1 and tokens[1] in _AUX


def _finite(token: str, before: str = "") -> bool:
    """A verb form that makes a clause a statement ("is", "closes", "was migrated"; "go" after a
    plural subject such as "timesheets")."""
    if token in _AUX:
        return True
    base = base_form(token)
    if base is None:
        return False
    if base == token:
        return before.endswith("s") and not before.endswith("ss") and before not in _NOT_SUBJECT
    return token.endswith("s") or is_past(token)


def _evaluative_stems() -> frozenset[str]:
    return informative(" ".join(EVALUATIVE))


def continues(segment: str) -> bool:
    """Whether a verbless clause continues the statement before it ("..., and only with a receipt")."""
    tokens = words(segment)
    return bool(_CONTINUATION.match(segment.strip())) and not any(
        _finite(t, p) for p, t in itertools.pairwise(tokens)
    )


_DETAIL = re.compile(r"[\w./*@:$%-]*[\d/*@$%][\w./*@:$%-]*")


def about(statement: str, context: str) -> bool:
    """Whether a statement is about what the request or answer was about, and adds to it
    (a new word, number or identifier such as "release/*")."""
    mine = informative(statement) | frozenset(_DETAIL.findall(statement.lower()))
    theirs = informative(context) | frozenset(_DETAIL.findall(context.lower()))
    return bool(mine & theirs) and bool(mine - theirs)


_SUBJECTS = word_list("i you we they he she i'd i'm i've i'll we'd we're we've we'll you're they're")


def has_verb(clause: str, *, third_person: bool = True) -> bool:
    """Whether a clause has a finite verb (a clause of its own, not a phrase).

    Args:
        clause: The clause.
        third_person: Count a verb's "-s" form after a noun ("Postgres listens"); off for
            phrases, where "window seats" is a noun.
    """
    tokens = words(clause)
    if not tokens:
        return False
    if tokens[0] in _AUX or (tokens[0] in _SUBJECTS and len(tokens) > 1):
        return True
    pairs = itertools.pairwise(tokens)
    return any(_finite(t, p) and (third_person or not t.endswith("s") or t in _AUX) for p, t in pairs)
