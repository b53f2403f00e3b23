"""Preferences said without a verb of liking: terse wishes and judgements of options.

Users often state a preference in a few words: "Japan time, please.", "Celsius.", "Shorter,
please.", "Window seats from now on.", "Light mode actually." Or they judge an option
instead of naming a wish: "mornings don't work for me any more", "afternoons are better now",
"casual is fine", "comedies are my thing now", "a table would be easier", "Fahrenheit is
useless to me", "I've gone off horror", "you can drop the formal tone". Each reads as a taste
(what the user wants offered or not), phrased the way ``signals`` phrases tastes ("wants ...",
"does not want ...").

A verbless reply is a preference only where a preference is plausible: it names how to answer
(a language, a unit, a time zone, a length, a format), or the message marks it as lasting,
corrected, restated or reversed. "The blue one." or "Tuesday." answer a question; "Thanks!",
"Perfect." and "Way too expensive." judge the answer; none of them is a taste.
"""

from __future__ import annotations

import re

from reflexio.learn.rules.corrections import has_verb
from reflexio.learn.rules.instructions import Signal
from reflexio.learn.rules.lexicon import EVALUATIVE, TERSE_NOT, word_list
from reflexio.learn.rules.text import base_form, is_past, swap_to_third, trim, words
from reflexio.learn.standing import Facet, facets

__all__ = ["aversion", "judged", "terse"]

#: Longest verbless reply read as a wish.
MAX_TERSE_WORDS = 6

_FOREIGN = (
    (r"\b(?:en|in) espa[nñ]ol\b", "in Spanish"),
    (r"\ben fran[cç]ais\b", "in French"),
    (r"\bauf deutsch\b", "in German"),
    (r"\bin italiano\b", "in Italian"),
    (r"\bem portugu[eê]s\b", "in Portuguese"),
    (r"\bin het nederlands\b", "in Dutch"),
)
_POLITE_TAIL = re.compile(
    r"(?:,?\s*(?:please|pls|plz|por favor|s'il (?:te|vous) pla[iî]t|bitte|per favore|if you can|"
    r"if possible|if you don't mind|thanks|thank you|actually|instead|though|again))+\s*[.!]*$",
    re.I,
)
_HEAD_NOT = word_list(
    """
    it this that these those one ones everything anything something nothing option choice first
    second third last other same monday tuesday wednesday thursday friday saturday sunday today
    tomorrow tonight yesterday morning afternoon evening january february march april may june july
    august september october november december
    """
)
_FINITE = word_list(
    """
    is are was were am be been being has have had does do did can could will would should must may
    might shall isn't aren't wasn't weren't hasn't haven't doesn't don't didn't can't won't
    wouldn't shouldn't 's 're 've 'd 'll that's it's there's what's here's i'm you're we're they're
    i've i'd i'll let's
    """
)
_NOT_FIRST = word_list(
    """
    never always don't dont do not no stop please you i we they he she it let's can could would
    will should must did does
    """
)
_NOT_HEAD = word_list(
    """
    late early after before on at in for with by from to about than then also too still even around
    until since during per each every some any all both either neither here there now
    """
)
_COMPARATIVE = word_list(
    """
    shorter longer simpler briefer clearer formal casual informal concise detailed brief short
    simple plainer friendlier
    """
)
_THING = r"(?P<x>(?:[\w.+#/'-]+\s){0,5}?[\w.+#/'%-]+)"
_LIKED = re.compile(
    rf"^{_THING}\s+(?:is|are|'s|'re|would be|will be|works?|suits?|reads?|looks?|sounds?|feels?)\s+"
    r"(?:much |a lot |way )?(?:better|best|fine|okay|ok|great|perfect|enough|plenty|easier|preferable|"
    r"ideal|nicer|clearer|my thing|what i (?:want|need|prefer|like)|my preference|good for me)\b",
    re.I,
)
_DISLIKED = re.compile(
    rf"^{_THING}\s+(?:(?:don't|doesn't|do not|does not|no longer|won't|will not)\s+(?:work|suit|help)\b|"
    r"(?:is|are|'s|'re)\s+(?:useless|no good|no use|out|a pain|not for me|not my thing|too \w+)\b)",
    re.I,
)
_DROP = re.compile(
    rf"^(?:you can |please |just )?(?:drop|ditch|lose|forget)\s+{_THING}(?:\s+with me)?$", re.I
)
_AVERSION = re.compile(
    r"^I(?:(?:'ve| have)?\s+(?:gone off|got(?:ten)? tired of|grown out of|lost interest in|given up(?: on)?)|"
    rf"(?:'m| am)\s+(?:so\s+)?(?:over|done with|tired of|sick of|fed up with|bored (?:of|with)))\s+{_THING}$",
    re.I,
)


def _thing(text: str) -> str:
    """The option named, re-voiced ("my local time" → "their local time"), without filler."""
    return swap_to_third(
        trim(re.sub(r"\s+(?:for|to|with|by) (?:me|us)\b|\s+(?:now|these days|any ?more)$", "", text))
    )


def _is_option(text: str) -> bool:
    tokens = words(text)
    return bool(tokens) and tokens[-1] not in _HEAD_NOT and tokens[0] not in {"it", "this", "that", "they"}


def terse(segment: str, *, plausible: bool) -> Signal | None:
    """A verbless wish: "Japan time, please" → "wants times in Japan time".

    Args:
        segment: One clause of a reply to the agent.
        plausible: The message marks a preference (lasting, corrected, restated, reversed);
            without it only a phrase about how to answer counts.
    """
    text = segment
    for pattern, repl in _FOREIGN:
        text = re.sub(pattern, repl, text, flags=re.I)
    text = re.sub(r"^just\s+", "", trim(_POLITE_TAIL.sub("", text.strip())), flags=re.I)
    tokens = words(_CONTRAST.sub("", text))  # "Google Docs links instead of Word files": the head
    if not tokens or len(tokens) > MAX_TERSE_WORDS or not _verbless(tokens):
        return None
    if all(t in TERSE_NOT or t in EVALUATIVE for t in tokens) or not _is_option(text):
        return None
    named = facets(text)
    if any(t.isdigit() for t in tokens) and not named:
        return None  # "Order 4412.", "Option 2": a choice, not a taste
    if tokens[0] in _NOT_HEAD and not named:
        return None  # "late after the 5th", "before noon": a detail, not a wish
    if not (named or plausible):
        return None
    return Signal(kind="taste", text=f"wants {_phrased(text, named)}", source=segment)


def _verbless(tokens: list[str]) -> bool:
    """A noun phrase: no auxiliary, no subject or instruction word first, no imperative verb
    first ("window seats", "numbered list"; not "never round the totals", "stop", "you forgot")."""
    if tokens[0] in _NOT_FIRST or any(t in _FINITE for t in tokens) or any(is_past(t) for t in tokens[1:]):
        return False  # "management changed the policy" (a participle first is an adjective)
    if has_verb(" ".join(tokens), third_person=False) or _VERB_THEN_OBJECT.search(" ".join(tokens)):
        return False  # "backups run every night", "dark mode hurts my eyes"
    return not (base_form(tokens[0]) == tokens[0] and tokens[0] not in _COMPARATIVE)


_CONTRAST = re.compile(r"(?:,\s*|\s+)(?:instead of|rather than|not|over)\s+.+$", re.I)
_VERB_THEN_OBJECT = re.compile(r"\b\w+s (?:my|me|the|a|an|their|our|your|his|her|it|them|us)\b")


def _proper(named: frozenset[Facet]) -> bool:
    """Languages and zones are names ("Spanish", "Japan time"): their case is kept."""
    return bool({f.name for f in named} & {"language", "timezone"})


def _phrased(text: str, named: frozenset[Facet]) -> str:
    """The wish as a taste: bare adjectives are about answers, zones about times."""
    thing = _thing(text)
    names = {f.name for f in named}
    if not _proper(named):
        thing = thing[:1].lower() + thing[1:]  # "More professional tone" mid-sentence
    low = thing.lower()
    body = re.sub(r"^in\s+", "", thing, flags=re.I)
    if low in _COMPARATIVE:
        return f"{thing} answers"
    if "timezone" in names:
        return body if re.search(r"\btimes\b", low) else f"times in {body}"
    if "language" in names:
        return thing if re.search(r"\b(?:answers?|repl(?:y|ies))\b", low) else f"answers in {body}"
    return body


def judged(segment: str) -> Signal | None:
    """An option judged: "afternoons are better now" (wanted), "mornings don't work for me" (not)."""
    text = trim(segment)
    for pattern, negative in ((_DISLIKED, True), (_LIKED, False), (_DROP, True)):
        m = pattern.match(text)
        if m and _is_option(m["x"]):
            thing = _thing(m["x"])
            thing = thing if _proper(facets(thing)) else thing[:1].lower() + thing[1:]
            wording = f"does not want {thing}" if negative else f"prefers {thing}"
            return Signal(kind="taste", text=wording, negative=negative, source=segment)
    return None


def aversion(segment: str) -> Signal | None:
    """ "I've gone off horror", "I'm over jazz": something they no longer like."""
    m = _AVERSION.match(trim(segment))
    if not m or not _is_option(m["x"]):
        return None
    return Signal(kind="taste", text=f"no longer likes {_thing(m['x'])}", negative=True, source=segment)
