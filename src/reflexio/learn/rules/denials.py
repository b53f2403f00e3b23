"""A user's reply denying what the agent just said: "There is no courtesy waiver."

A flat contradiction carries no cue word ("wrong", "not true"): the user negates, on the same
topic, a claim the agent's answer made. So a reply *denies* an answer when one of its clauses
holds a negation ("no", "not", "never", "n't", "no longer", "any more") and shares a content
word with a claim of the answer: a statement, not a question, that does not itself negate
that word ("Your fee was waived" / "The waiver never happened"; "I've refunded it" / "I never
got the refund").

Not denials, however they start:

* a "no" that answers the agent's question ("Anything else?" / "No, thanks."): ``answers_no``
  tells the caller to read the reply without it;
* a negation about something the answer did not claim ("That's no problem");
* agreeing with a negative answer ("There is no fee for that." / "Right, no fee then.");
* the user's own state ("I don't have a receipt" after "Refunds need a receipt"): a clause
  about the user denies only what the user should have received or seen ("I never got it").
"""

from __future__ import annotations

import re

from reflexio.learn.rules.lexicon import word_list
from reflexio.learn.rules.text import clauses, informative, overlap, sentences, words

__all__ = ["answers_no", "asks", "denies"]

_NEGATIONS = word_list(
    """
    no not never none nothing nobody nowhere neither nor isn't aren't wasn't weren't doesn't don't
    didn't hasn't haven't hadn't can't cannot won't wouldn't couldn't shouldn't
    """
)
_NEGATION_PHRASES = re.compile(r"\b(?:no longer|any ?more)\b", re.I)
_FIRST_PERSON = word_list("i i'm i've i'd we we've my our")
#: What a user can deny about themselves: what the agent said they would get or see.
_RECEIVED = word_list(
    """
    get got gotten receive received see seen saw notice noticed find found hear heard arrive
    arrived show showed
    """
)
_NO_ANSWER = re.compile(r"^\s*(?:no|nope|nah|not really|not yet|not now)\b[\s,.;:!-]*", re.I)


def asks(answer: str) -> bool:
    """Whether the agent's turn ends on a question (a "no" then answers it)."""
    found = sentences(answer)
    return bool(found) and found[-1].rstrip().endswith("?")


def answers_no(reply: str, answer: str) -> str | None:
    """The reply without the "no" that answers the answer's closing question, if it starts so.

    ``None`` when the reply does not start with a "no" or the answer asked nothing; an empty
    string when the "no" was all the reply said.
    """
    found = _NO_ANSWER.match(reply)
    if found is None or not asks(answer):
        return None
    return reply[found.end() :].strip()


def _negated(clause: str) -> bool:
    return any(w in _NEGATIONS for w in words(clause)) or _NEGATION_PHRASES.search(clause) is not None


def _about_user(clause: str) -> bool:
    tokens = words(clause)
    return bool(tokens) and tokens[0] in _FIRST_PERSON and not any(t in _RECEIVED for t in tokens)


def _claims(answer: str) -> tuple[frozenset[str], frozenset[str]]:
    """(content stems the answer asserts, content stems it negates)."""
    said: set[str] = set()
    denied: set[str] = set()
    for sentence in sentences(answer):
        if sentence.rstrip().endswith("?"):
            continue
        for clause in clauses(sentence):
            (denied if _negated(clause) else said).update(informative(clause))
    return frozenset(said), frozenset(denied)


def denies(reply: str, answer: str) -> bool:
    """Whether the reply negates, on the same topic, something the answer claimed."""
    said, denied = _claims(answer)
    if not said:
        return False
    for sentence in sentences(reply):
        if sentence.rstrip().endswith("?"):
            continue
        for clause in clauses(sentence):
            if not _negated(clause) or _about_user(clause):
                continue
            topic = informative(clause) - overlap(informative(clause), denied)
            if overlap(topic, said):
                return True
    return False
