"""Phrasing learnings so that they are found again: situations, facts and rules in plain words.

A learning is only useful if the next similar request retrieves it, and retrieval is a search
over its trigger and content. So the rule extractor keeps the user's own key words and states
the situation from the request that was corrected: "Restart the staging web server." becomes
"When the user asks to restart the staging web server", which shares "staging" and "server"
with the next staging request and nothing with "What is your return policy?".
"""

from __future__ import annotations

import re

from reflexio.learn.rules.text import (
    base_form,
    capitalize,
    clean,
    sentences,
    shorten,
    swap_to_third,
    trim,
    words,
)

__all__ = ["join_clauses", "lower_first", "situation", "summary"]

_POLITE = re.compile(
    r"^(?:hi|hello|hey|ok(?:ay)?|so|please|pls|kindly|quick question|one more thing)\b[\s,:!.-]*", re.I
)
_ASK_YOU = re.compile(
    r"^(?:can|could|would|will) you(?: please| kindly| maybe)?\s+(?P<body>.+)$|"
    r"^(?:please\s+)?(?:help me(?: to)?|I (?:want|need) you to|I'd like you to|I would like you to)\s+"
    r"(?P<body2>.+)$",
    re.I,
)
_WANT = re.compile(r"^I(?:'d| would)? (?P<verb>like|want|need|love)\s+(?P<body>.+)$", re.I)
_TAIL_ASK = re.compile(r"^(?P<context>.+?),\s*(?:can|could|would|will) you(?: please)?\s+(?P<body>.+)$", re.I)
_QUESTION = re.compile(r"^(?:what|how|which|where|when|who|why|is|are|do|does|did|can|should|any)\b", re.I)
_LIMIT = 200


def situation(request: str) -> str | None:
    """The situation of a request, as a trigger: "When the user asks to ..."."""
    chosen = _request_sentence(request)
    if not chosen:
        return None
    return shorten("When the user " + _phrase(chosen), _LIMIT)


def summary(text: str, limit: int = 160) -> str:
    """The first sentence of an answer, shortened (for pitfalls)."""
    first = sentences(text)[:1]
    return shorten(first[0] if first else text, limit)


def lower_first(text: str) -> str:
    """First letter lower-cased unless the first word looks like a name or acronym."""
    head = text.split(" ", 1)[0]
    if len(head) > 1 and (head[1:].lower() != head[1:] or head.isupper()):
        return text
    return text[:1].lower() + text[1:]


def join_clauses(parts: list[str]) -> str:
    """Clauses joined into one statement: "A; b; c" without repeated punctuation."""
    cleaned = [trim(p) for p in parts if trim(p)]
    if not cleaned:
        return ""
    return "; ".join([capitalize(cleaned[0]), *(lower_first(p) for p in cleaned[1:])])


def _request_sentence(request: str) -> str:
    found = [s for s in sentences(request) if s.strip()]
    if not found:
        return ""
    asks = [s for s in found if _is_ask(s)]
    chosen = " ".join(asks[:2]) if asks else " ".join(found[:2])
    return _POLITE.sub("", clean(chosen)).strip()


def _is_ask(sentence: str) -> bool:
    body = _POLITE.sub("", sentence).strip()
    tokens = words(body)
    return bool(
        body.endswith("?")
        or _ASK_YOU.match(body)
        or _WANT.match(body)
        or (tokens and base_form(tokens[0]) == tokens[0])
    )


def _phrase(sentence: str) -> str:
    body = trim(sentence)
    tail = _TAIL_ASK.match(body) or _tail_imperative(body)
    if tail:
        return f"asks to {_third(tail['body'])}: {_third(tail['context'])}"
    ask = _ASK_YOU.match(body)
    if ask:
        return f"asks to {_third(ask['body'] or ask['body2'])}"
    want = _WANT.match(body)
    if want:
        verb = "wants" if want["verb"].lower() in {"like", "want", "love"} else "needs"
        return f"{verb} {_third(want['body'])}"
    tokens = words(body)
    if sentence.rstrip().endswith("?") or _QUESTION.match(body):
        return f"asks: {_third(body)}"
    if tokens and base_form(tokens[0]) == tokens[0]:
        return f"asks to {_third(body)}"
    return f"says: {_third(body)}"


_TAIL_IMPERATIVE = re.compile(r"^(?P<context>.+?),\s*(?P<body>(?P<verb>[a-z]+)\s+.+)$", re.I)


def _tail_imperative(body: str) -> re.Match[str] | None:
    """ "The form crashes on empty email, fix it" → context and the imperative at the end."""
    m = _TAIL_IMPERATIVE.match(body)
    if m and base_form(m["verb"]) == m["verb"].lower() and words(m["context"])[:1] != [m["verb"].lower()]:
        return m
    return None


def _third(text: str) -> str:
    return lower_first(swap_to_third(trim(text)))
