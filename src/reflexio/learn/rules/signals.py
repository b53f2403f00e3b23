"""Reading one user message for explicit signals: facts about the user, tastes, instructions.

The offline extractor learns only from what a user says outright, so this module's job is to
tell, clause by clause, a lasting statement ("I only ever use Linux", "always confirm the order
ID with me", "stop asking me for confirmation on routine tasks, just do them") from everything
else a user writes: the task itself, chit-chat, thanks, questions, hypotheticals, other
people's opinions ("my boss says never use tabs") and indifference ("I don't mind Macs").

Instructions are accepted more readily in a message that reacts to an agent answer (that is
where corrections live) than in a request, where "don't use semicolons" is usually part of the
task: a request must mark persistence ("from now on", "always", "never") to teach a rule, and a
bare imperative in a reply must look general ("before", "first", "every", "again") or come with
a correction ("wrong order again").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from reflexio.learn.rules.clauses import segments
from reflexio.learn.rules.corrections import about, has_verb, world_statement
from reflexio.learn.rules.facts import object_of, self_statements
from reflexio.learn.rules.instructions import (
    Signal,
    alternative,
    declarative,
    forgotten,
    imperative,
    lower,
    negative_rule,
    pattern_rule,
    question_rule,
    rule,
)
from reflexio.learn.rules.lexicon import (
    CORRECTION_CUES,
    DOCUMENT_SPEAKERS,
    GENERAL_CUES,
    HYPOTHETICAL_OPENERS,
    ITEM_VERBS,
    PERSISTENCE_CUES,
    REASON_CUES,
    REPORTING_VERBS,
    RESTATEMENT_CUES,
    REVERSAL_CUES,
    word_list,
)
from reflexio.learn.rules.recipes import confirms_fix
from reflexio.learn.rules.tastes import aversion, judged, terse
from reflexio.learn.rules.text import (
    base_form,
    clean,
    finish,
    has_phrase,
    participle,
    sentences,
    swap_to_user,
    trim,
    words,
)
from reflexio.learn.standing import facets

__all__ = ["Reading", "Signal", "read_message"]


@dataclass(slots=True)
class Reading:
    """What a message says: its signals, its tone, and the task it asks for."""

    signals: list[Signal] = field(default_factory=list)
    correction: bool = False
    restated: bool = False
    reversal: bool = False
    instructive: bool = False
    reacting: bool = False
    confirms: bool = False  # the user says the agent's action fixed their problem
    grumbling: bool = False  # the sentence being read opens with "ugh", "seriously", ...
    context: str | None = ""
    request: list[str] = field(default_factory=list)


_OPENER = re.compile(
    r"^(?:ok(?:ay)?|so|well|and|but|also|oh|hmm+|look|listen|hey|btw|by the way|honestly|seriously|"
    r"ugh|come on|please|pls|plz|kindly|once again|again|as I (?:said|mentioned)|like I said|"
    r"I (?:already |have |'ve )?(?:told|asked) you(?: before| already)?|I said|remember|note|fyi|"
    r"one more thing|for the last time|actually|in fact|then|now|great|thanks|thank you|"
    r"these days|nowadays|lately|recently|at the moment|for now|to be honest|tbh|honestly|"
    r"scratch that(?: preference)?|change of plan|on second thoughts?|come to think of it|"
    r"I(?:'ve| have) changed my mind|"
    r"no|nope|wrong|sorry|hi|hello)(?:[\s,:;.!-]+|$)",
    re.IGNORECASE,
)
# Openers that only count as such when punctuation follows ("No Macs" is a taste, "No," is not).
_PUNCT_ONLY = {"no", "nope", "wrong", "great", "sorry", "hi", "hello", "look"}
_GRUMBLE = re.compile(r"^(?:ugh+|argh+|seriously|come on|oh no|yikes|ew+|meh|sigh|great\.\.\.|wow)\b", re.I)
_PERSIST_LEAD = re.compile(
    r"^(?:from now on|from here on(?: out)?|going forward|moving forward|in (?:the )?future|next time|"
    r"in general|as a rule|by default|for future reference|for the future)\b[\s,:]*",
    re.IGNORECASE,
)
_PERSIST_TAIL = re.compile(
    r"[\s,]*\b(?:from now on|going forward|moving forward|in (?:the )?future|next time|by default|"
    r"in general|every time|each time)\s*[.!]*$",
    re.IGNORECASE,
)
_ONLY_TASTE = re.compile(
    r"^(?:only\s+(?P<a>[\w .+#'-]{2,40})|(?P<b>[\w .+#'-]{2,40}?)\s+only)$", re.IGNORECASE
)
_NO_TASTE = re.compile(r"^no\s+(?:more\s+)?(?P<obj>[\w .+#'-]{2,40})$", re.IGNORECASE)
_NEG_TASTE = re.compile(
    r"^(?:please\s+)?(?P<lead>do not|don't|dont|never|stop)\s+(?P<body>.+)$", re.IGNORECASE
)
_NOT_TASTE = word_list(
    """
    problem problems worries worry thanks idea way rush need doubt kidding than matter clue one
    offense offence pressure
    """
)
_CONSTRAINT = re.compile(r"\b(?:without|before|after|until|unless|if|when|whenever|because|so that)\b", re.I)
_CONTRAST = re.compile(r",\s*not\s+\w|\binstead of\b|\brather than\b", re.I)
_NOT_SPEAKER = word_list(
    """
    don't do dont never please always just can could would will did
    """
)


def read_message(text: str, *, reacting: bool, context: str | None = "") -> Reading:
    """The signals of one user message.

    Args:
        text: The message.
        reacting: The message answers an agent turn (corrections are expected there).
        context: The request and the answer the message reacts to: a statement of how things
            are ("Denver is on Mountain Time") corrects the answer when it is about them.
            None reads every such statement as a correction (to ask whether the answer matters).
    """
    reading = Reading(reacting=reacting, context=context)
    low = " ".join(words(text))
    reading.confirms = reacting and confirms_fix(text)
    reading.correction = reacting and has_phrase(text, CORRECTION_CUES)  # raw: "no," keeps its comma
    reading.restated = has_phrase(low, RESTATEMENT_CUES)
    reading.reversal = has_phrase(low, REVERSAL_CUES)
    for n, sentence in enumerate(sentences(text)):
        found = [replace(s, sentence=n) for s in _read_sentence(sentence, reading, reacting)]
        reading.signals.extend(found)
        if all(s.kind == "fact" for s in found) and _looks_like_request(sentence):
            reading.request.append(sentence)
    reading.signals = _resolve_pronouns(reading.signals)
    return reading


def _read_sentence(sentence: str, reading: Reading, reacting: bool) -> list[Signal]:
    body = _strip_openers(sentence)
    if not body or _hypothetical(body):
        return []
    if body.endswith("?"):
        lasting, question = _persistence(body.rstrip("?! "))
        facts = [f for seg in segments(question) if not _reported(seg) for f in _facts(seg)]
        asked = question_rule(question) if reacting or reading.instructive else None
        if asked is None and lasting:  # "Can you talk to me in Portuguese from now on?"
            asked = _lasting_request(question)
        return facts + ([asked] if asked is not None else [])
    out: list[Signal] = []
    sentence_persists, body = _persistence(body)
    reading.grumbling = _GRUMBLE.match(sentence) is not None  # "Ugh, a middle seat." names no wish
    parts = segments(body)
    reasons = [_gives_reason(part) for part in parts]
    for n, segment in enumerate(parts):
        if _reported(segment):
            continue
        persistent, text = _persistence(finish(_strip_openers(segment)))
        justified = reacting and any(reasons[n + 1 :]) and imperative(text)
        if text:
            lasting = persistent or sentence_persists or justified
            out.extend(_read_segment(text, reading, reacting, lasting, out))
    return out


def _gives_reason(segment: str) -> bool:
    """A clause that justifies the one before it: "..., otherwise I cannot judge it", "...,
    it matters to a lot of us", "..., I work at night". A reply's imperative followed by its
    reason is a standing wish (a one-off request rarely comes with why it should always hold),
    as a fact stated first makes one ("I'm diabetic, so keep desserts low in sugar")."""
    opening = " ".join(words(segment)[:3])  # before openers are stripped: "so that" opens one
    return has_phrase(opening, REASON_CUES) or bool(self_statements(_strip_openers(segment)))


_ASKS = re.compile(r"^(?:can|could|would|will) you (?:please\s+)?(?P<body>.+)$", re.I)


def _lasting_request(question: str) -> Signal | None:
    """A request marked as lasting is an instruction: "could you reply in French from now on?"."""
    m = _ASKS.match(question)
    return rule(m["body"], negative=False, source=question) if m and imperative(m["body"]) else None


def _read_segment(
    segment: str, reading: Reading, reacting: bool, persistent: bool, earlier: list[Signal]
) -> list[Signal]:
    if earlier:
        instead = alternative(segment, earlier[-1])
        if instead is not None:
            earlier[-1] = instead
            return []
        if earlier[-1].kind == "world" and _detail(segment):  # "..., and only with a receipt"
            earlier[-1] = replace(earlier[-1], text=f"{earlier[-1].text}, {lower(segment)}")
            return []
    wishing = (reacting or persistent) and not reading.confirms
    averse = aversion(segment) if wishing else None
    if averse is not None:
        return [averse]
    facts = _facts(segment, persistent)
    if facts:
        return facts
    taste = (_taste(segment) or judged(segment)) if wishing else None
    if taste is not None:
        return [taste]
    because = any(s.kind == "fact" for s in earlier)  # "I'm diabetic, so keep desserts low in sugar"
    told = persistent or not reading.confirms  # "No more prompts, that fixed it!" reports, not asks
    found = _instruction(segment, reading, reacting, persistent or (because and reacting)) if told else None
    if found is not None:
        reading.instructive = True
        return [found]
    wish = (
        terse(segment, plausible=_plausible(reading, persistent))
        if wishing and not reading.grumbling
        else None
    )
    if wish is not None:
        return [wish]
    world = world_statement(segment) if reacting and not reading.confirms else None
    if world is not None and (reading.correction or reading.context is None or about(world, reading.context)):
        return [Signal(kind="world", text=world, source=segment)]
    return []


def _detail(segment: str) -> bool:
    """A verbless clause that adds to the statement before it (no instruction of its own)."""
    return not has_verb(segment) and not imperative(segment) and pattern_rule(segment) is None


def _plausible(reading: Reading, persistent: bool) -> bool:
    """A verbless reply is a wish when the message marks it lasting, corrected, restated or changed."""
    return persistent or reading.correction or reading.reversal or reading.restated


def _facts(segment: str, persistent: bool = False) -> list[Signal]:
    return [
        Signal(kind=f.kind, text=f.text, negative=f.negative, ttl=f.ttl, source=segment)
        for f in self_statements(_strip_openers(segment), persistent=persistent)
    ]


def _strip_openers(text: str) -> str:
    out = clean(text).strip()
    for _ in range(6):
        m = _OPENER.match(out)
        if not m:
            break
        word = m.group(0).strip(" ,:;.!-").lower()
        if word in _PUNCT_ONLY and not re.match(r"^\w+[,:;.!-]", m.group(0).strip()):
            follow = _OPENER.match(out[m.end() :])  # "Wrong again, ...", "No no, ..."
            if follow is None or follow.group(0).strip(" ,:;.!-").lower() in _PUNCT_ONLY - {"no", "wrong"}:
                break
        out = out[m.end() :].strip()
    return out


def _hypothetical(text: str) -> bool:
    low = " ".join(words(text))
    return any(low.startswith(h) for h in HYPOTHETICAL_OPENERS)


def _reported(text: str) -> bool:
    """Someone else's words: "my boss says never use tabs", "people recommend X", "he told me X".

    The speaker is a short noun phrase that is neither "I" nor "you", and the verb is a
    reporting verb in the third person or past tense (a base form only after a plural speaker,
    so "it's important to mention X" is no report).
    """
    tokens = words(_strip_openers(text))[:7]
    for i, token in enumerate(tokens):
        if token not in REPORTING_VERBS or i == 0:
            continue
        speaker = tokens[:i]
        if speaker[0] in _NOT_SPEAKER or base_form(speaker[0]) is not None or len(speaker) > 4:
            return False
        if any(t in {"i", "you", "we", "i've", "i'd", "to", "it's", "it"} for t in speaker):
            return False
        if speaker[-1] in DOCUMENT_SPEAKERS:
            return False  # "the label says 5 ml": a source, not an opinion
        inflected = token.endswith(("s", "ed")) or token in {"said", "told", "thought", "wrote", "swore"}
        return (
            inflected
            or speaker[-1] in {"they", "people", "everyone", "others", "folks"}
            or speaker[-1].endswith("s")
        )
    return False


def _persistence(body: str) -> tuple[bool, str]:
    lead = _PERSIST_LEAD.match(body)
    if lead:
        return True, body[lead.end() :]
    tail = _PERSIST_TAIL.search(body)
    if tail and tail.start() > 0:
        return True, body[: tail.start()]
    marked = re.match(r"^(?:please\s+)?(?:always|never)\b", body, re.IGNORECASE) is not None
    return marked or has_phrase(body, PERSISTENCE_CUES), body


def _instruction(segment: str, reading: Reading, reacting: bool, persistent: bool) -> Signal | None:
    if not (reacting or persistent):
        return None
    found = pattern_rule(segment)
    if found is not None:
        return found
    if persistent and imperative(segment):
        return rule(segment, negative=False, source=segment)
    if not reacting:
        return None
    found = forgotten(segment)
    if found is not None:
        return found
    general = (
        has_phrase(segment, GENERAL_CUES)
        or _CONTRAST.search(segment) is not None
        or reading.correction
        or reading.restated
        or reading.instructive
        or bool(facets(segment))  # how to answer ("skip the chit-chat", "switch me to 24-hour")
    )
    if general and imperative(segment):
        return rule(segment, negative=False, source=segment)
    return declarative(segment) if general else None


def _taste(segment: str) -> Signal | None:
    """What the user wants offered or not: "Linux only", "no Macs", "don't suggest Macs"."""
    m = _NEG_TASTE.match(segment)
    if m:
        tokens = words(m["body"])
        verb = base_form(tokens[0]) if tokens else None
        obj = " ".join(m["body"].split()[1:])
        if verb not in ITEM_VERBS or not obj or len(obj.split()) > 5 or _CONSTRAINT.search(obj):
            return None
        obj = re.sub(r"\s+(?:to|for) (?:me|us)$", "", re.sub(r"^(?:me|us)\s+", "", trim(obj)))
        obj = swap_to_user(obj)
        placed = re.search(r"\b(?:in|on|at|for|with|into|from)\b", obj)
        text = f"does not want {obj}" if placed else f"does not want {obj} {participle(verb or '')}"
        as_rule = negative_rule(m["lead"], m["body"], segment)
        return Signal(
            kind="taste", text=text, negative=True, source=segment, rule=as_rule.text if as_rule else ""
        )
    m = _NO_TASTE.match(segment)
    if m and words(m["obj"]) and words(m["obj"])[0] not in _NOT_TASTE and not _CONSTRAINT.search(m["obj"]):
        obj = trim(m["obj"])
        return Signal(
            kind="taste",
            text=f"does not want {obj}",
            negative=True,
            source=segment,
            rule=f"Do not offer {obj}",
        )
    m = _ONLY_TASTE.match(segment) if not has_verb(segment) else None
    if m:
        item = trim(m["a"] or m["b"] or "")
        if item and base_form(words(item)[0]) is None and len(item.split()) <= 4:
            return Signal(kind="taste", text=f"wants {item} only", source=segment, rule=f"Offer only {item}")
    return None


def _resolve_pronouns(signals: list[Signal]) -> list[Signal]:
    """ "Did you run the test? Run it and ..." → "Run the test and ..."; drop the restated part."""
    out: list[Signal] = []
    for sig in signals:
        previous = out[-1] if out else None
        if previous is not None and previous.kind == "fact" and sig.kind != "fact":
            sig = _it_is(sig, previous)
        m = re.match(r"^(?P<verb>\w+)\s+(?:it|them)\b", sig.text, re.I) if sig.kind == "instruction" else None
        if previous is not None and m and previous.obj and base_form(m["verb"]) == previous.verb:
            sig = replace(sig, text=f"{m['verb']} {previous.obj}{sig.text[m.end() :]}", obj=previous.obj)
        if previous is not None and previous.kind == sig.kind == "instruction" and _subsumed(previous, sig):
            out[-1] = sig
            continue
        out.append(sig)
    return out


def _it_is(sig: Signal, fact: Signal) -> Signal:
    """ "I hate cilantro, never put it in my recipes": "it" is what the fact was about."""
    obj = object_of(fact.text)
    if not obj or not re.search(r"\b(?:it|them)\b", sig.text, re.I):
        return sig
    text = re.sub(r"\b(?:it|them)\b", obj, sig.text, count=1, flags=re.I)
    return replace(sig, text=text, avoid=re.sub(r"\b(?:it|them)\b", obj, sig.avoid, count=1, flags=re.I))


def _subsumed(small: Signal, big: Signal) -> bool:
    a, b = set(words(small.text)), set(words(big.text))
    return bool(a) and len(a & b) / len(a) >= 0.8


def _looks_like_request(sentence: str) -> bool:
    """A sentence asking for the task itself (imperative, question, "I need/want ...")."""
    body = _strip_openers(sentence)
    low = body.lower()
    if low.endswith("?"):
        return True
    if re.match(r"^(?:can|could|would|will) you\b|^I(?:'d| would)? (?:like|want|need)\b|^help me\b", low):
        return True
    return imperative(body)
