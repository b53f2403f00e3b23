"""Instructions in a user's words, turned into rules the agent can follow.

Users tell an agent how to behave in many shapes: "don't X", "never X", "stop X-ing, just Y",
"always X", "make sure to X", "you should have X-ed", "did you actually X?", "why did you X?",
"you forgot X", "X, not Y", "X instead of Y", "for legal questions always X", "routine work
doesn't need my confirmation", or a bare imperative in a reply ("Ask for the order number
before refunding."). Each shape is a pattern here, and each produces an ``Signal`` whose text
is the rule in the imperative, with the user's key words kept and "me" re-voiced as "the
user". What the user said to avoid goes to ``avoid`` (the pitfall) rather than the rule's
text, so that the rule that replaces an old one does not repeat the old one's words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from reflexio.learn.rules.lexicon import INDIFFERENCE, VERBS
from reflexio.learn.rules.text import base_form, capitalize, finish, gerund_to_base, swap_to_user, trim, words

__all__ = [
    "Signal",
    "alternative",
    "declarative",
    "forgotten",
    "imperative",
    "lower",
    "pattern_rule",
    "question_rule",
    "rule",
]


@dataclass(frozen=True, slots=True)
class Signal:
    """One explicit signal, phrased for storage.

    Attributes:
        kind: "fact" (about the user), "indifferent" ("I don't mind X"), "taste" (what the
            user wants offered or not) or "instruction" (how the agent should behave).
        text: Third-person fact, taste clause, or imperative instruction.
        negative: The signal is about what not to do or not to offer.
        avoid: For instructions: the behaviour to avoid, when the user named one.
        ttl: Time to live of a fact.
        source: The user's words it came from.
        verb: The instruction's main verb (to resolve "it" in a following sentence).
        obj: The instruction's object (what "it" refers to).
        rule: For tastes: the same wish as an instruction (when only playbooks are learned).
        sentence: Index of the sentence it came from (facts of one sentence go together).
    """

    kind: str
    text: str
    negative: bool = False
    avoid: str = ""
    ttl: str = "infinity"
    source: str = ""
    verb: str = ""
    obj: str = ""
    rule: str = ""
    sentence: int = 0


_NEGATIVE = re.compile(
    r"^(?:please\s+)?(?P<lead>do not|don't|dont|never ever|never|don't ever|do not ever|stop|quit|avoid|"
    r"no more|refrain from|you (?:shouldn't|should not|mustn't|must not|can't|cannot|need not|needn't|"
    r"don't need to|do not need to|don't have to|do not have to|never need to)|"
    r"(?:there's |there is )?no need to)\s+(?P<body>.+)$",
    re.IGNORECASE,
)
_POSITIVE = re.compile(
    r"^(?:please\s+)?(?P<lead>always|make sure(?: that)?(?: you)?(?: to)?|be sure to|remember to|"
    r"don't forget to|do not forget to|never forget to|you (?:should|must|need to|have to|ought to|"
    r"'ll have to|will have to|will need to|always have to|always need to)(?: always)?|"
    r"I (?:want|need|'d like|would like|expect) you to(?: always)?|try to|ensure(?: that)?|"
    r"it's important to|it is important to)\s+(?P<body>.+)$",
    re.IGNORECASE,
)
_SHOULD_HAVE = re.compile(r"^you (?:should|could|would|ought to) have\s+(?P<body>.+)$", re.IGNORECASE)
_FORGOT = re.compile(
    r"^you (?:forgot|missed|skipped|left out|omitted|ignored|didn't include|did not include|"
    r"didn't mention|did not mention|didn't check|did not check|neglected|failed|"
    r"didn't (?:give|tell|send|show) me|did not (?:give|tell|send|show) me|didn't (?:give|provide|add)|"
    r"did not (?:give|provide|add))\s+(?:to\s+)?(?P<body>.+)$",
    re.IGNORECASE,
)
_SCOPE = re.compile(
    r"^(?P<scope>(?:for|in|on|with|when|whenever|if|during|before|after|at|once)\b[^,]{1,60}?)(?:,\s*|\s+)"
    r"(?=(?:always|never|don't|do not|please|make sure|be sure|remember to|you should|you must|stop|"
    r"avoid)\b)",
    re.IGNORECASE,
)
_RHETORICAL = re.compile(
    r"^(?:did|have|had) you (?:actually |even |really |ever |at least |also )*(?P<verb>\w+)\s*(?P<body>.*)$",
    re.IGNORECASE,
)
_WHY_NOT = re.compile(
    r"^why (?:didn't|did not|haven't|have not|wouldn't|don't|do not|won't) you\s+(?P<body>.+)$", re.IGNORECASE
)
_WHY = re.compile(r"^why (?:did|would|do|are|have) you\s+(?P<body>.+)$", re.IGNORECASE)
_TOLD_YOU = re.compile(
    r"^(?:didn't|did not|haven't|have not) I (?:tell|ask|say to|told|asked) you "
    r"(?P<neg>not )?to\s+(?P<body>.+)$",
    re.IGNORECASE,
)
_CAN_YOU = re.compile(
    r"^(?:can|could|would|will) you (?:please\s+)?(?P<body>(?:always|never|stop|not|start)\b.+)$",
    re.IGNORECASE,
)
_DECLARATIVE = re.compile(
    r"^(?P<subj>(?:the |all |any |every |each |our |my |these |those )?(?:[\w'-]+\s){0,5}?[\w'-]+)\s+"
    r"(?P<modal>should|must|has to|have to|needs to|need to|ought to|shouldn't|should not|mustn't|must not|"
    r"doesn't need|does not need|don't need|do not need|never needs?)\s+(?P<body>.+)$",
    re.IGNORECASE,
)
_PERMISSION = re.compile(
    r"^(?:my |your |the user's |any |an? |explicit )?(?P<what>confirmation|approval|permission|sign-off|"
    r"signoff|ok|okay|go-ahead|consent|review|check-in)\b",
    re.I,
)
_CONTRAST_TAIL = re.compile(r"(?:,\s*|\s+)(?:instead of|rather than|not)\s+(?P<b>[^,;]+)$", re.IGNORECASE)
_IT = re.compile(r"^(?P<verb>\w+)\s+(?P<pro>it|them|this|that)\b", re.IGNORECASE)
_LAST_OBJECT = re.compile(
    r".*\b(?:on|about|for|with|in|during|regarding|around|to|of)\s+(?P<obj>[^,;]+)$", re.I
)
_INSTEAD_LEAD = re.compile(r"^(?:instead of|rather than)\s+(?P<b>[^,]+),\s*(?P<a>.+)$", re.IGNORECASE)
_ALTERNATIVE = re.compile(r"^(?:just|instead|rather|simply)\s*,?\s+(?P<alt>.+)$", re.IGNORECASE)
_NOT_SUBJECTS = {"i", "you", "it", "that", "this", "there", "he", "she", "they", "we", "what", "which"}


def lower(text: str) -> str:
    """First letter lower-cased (for a phrase placed mid-sentence)."""
    return text[:1].lower() + text[1:]


def pattern_rule(segment: str) -> Signal | None:
    """A rule marked as one ("don't", "always", "you should have", "for X, always Y")."""
    scope = _SCOPE.match(segment)
    if scope:
        found = pattern_rule(segment[scope.end() :])
        if found is None:
            return None
        prefix = swap_to_user(trim(scope["scope"]))
        return replace(found, text=f"{capitalize(prefix)}, {lower(found.text)}")
    m = _SHOULD_HAVE.match(segment)
    if m:
        return rule(present(m["body"]), negative=False, source=segment)
    m = _INSTEAD_LEAD.match(segment)
    if m:
        found = rule(m["a"], negative=False, source=segment)
        return replace(found, avoid=gerund(present(trim(m["b"])))) if found else None
    m = _NEGATIVE.match(segment)
    if m:
        return negative_rule(m["lead"], m["body"], segment)
    m = _POSITIVE.match(segment)
    if m:
        lead = "always " if "always" in m["lead"].lower() else ""
        return rule(lead + m["body"], negative=False, source=segment)
    if segment.lower().startswith("start "):
        return rule(gerund_to_base(segment[6:]), negative=False, source=segment)
    return None


def question_rule(body: str) -> Signal | None:
    """Rhetorical questions in a reply: "did you actually X?", "why did you X?"."""
    m = _TOLD_YOU.match(body)
    if m:
        return rule(m["body"], negative=bool(m["neg"]), source=body)
    m = _WHY_NOT.match(body)
    if m:
        return rule(m["body"], negative=False, source=body)
    m = _WHY.match(body)
    if m and words(m["body"]) and base_form(words(m["body"])[0]) is not None:
        return rule(present(m["body"]), negative=True, source=body)
    m = _CAN_YOU.match(body)
    if m:
        return pattern_rule(m["body"])
    m = _RHETORICAL.match(body)
    if m and base_form(m["verb"]) is not None:
        return rule(f"{base_form(m['verb'])} {m['body']}", negative=False, source=body)
    return None


def present(body: str) -> str:
    """ "deleted my branch" → "delete my branch" (first word to its base form)."""
    head, _, rest = body.partition(" ")
    base = base_form(head)
    return f"{base} {rest}".strip() if base else body


def negative_rule(lead: str, body: str, source: str) -> Signal | None:
    """ "don't X" / "stop X-ing" / "never X" as a rule, with X as what to avoid."""
    first = words(body)[0] if words(body) else ""
    if not first or first in INDIFFERENCE or first in {"mind", "sweat", "panic"}:
        return None
    action = gerund_to_base(body) if first.endswith("ing") else body
    verb = base_form(words(action)[0]) if words(action) else None
    if verb is None and not lead.lower().startswith(("never", "don't", "do not", "no more", "avoid")):
        return None
    if verb is None and lead.lower() == "avoid":
        return Signal(
            kind="instruction",
            text=f"Avoid {swap_to_user(finish(body))}",
            negative=True,
            avoid=swap_to_user(finish(body)),
            source=source,
        )
    word = "Never" if lead.lower().startswith("never") else "Do not"
    phrase = swap_to_user(lower(finish(action)))
    return Signal(
        kind="instruction",
        text=f"{word} {phrase}",
        negative=True,
        avoid=swap_to_user(gerund(finish(action))),
        source=source,
        verb=verb or "",
        obj=_object(action),
    )


def gerund(action: str) -> str:
    """ "ask the user" → "Asking the user" (for a pitfall)."""
    head, _, rest = action.partition(" ")
    base = base_form(head)
    if base is None:
        return capitalize(action)
    if base.endswith("e") and not base.endswith("ee"):
        ing = base[:-1] + "ing"
    elif re.search(r"[^aeiou][aeiou][bdgmnpt]$", base) and len(base) <= 4:
        ing = base + base[-1] + "ing"
    else:
        ing = base + "ing"
    return capitalize(f"{ing} {rest}".strip())


def rule(body: str, *, negative: bool, source: str) -> Signal | None:
    """An instruction from its imperative body; "X instead of Y" keeps Y as what to avoid."""
    text = finish(body)
    tokens = words(text)
    if not tokens or len(tokens) > 60:
        return None
    if negative:
        return negative_rule("do not", text, source)
    avoid = ""
    contrast = _CONTRAST_TAIL.search(text)
    if contrast and contrast.start() > 0 and len(words(text[: contrast.start()])) >= 2:
        avoid = capitalize(swap_to_user(trim(contrast["b"])))
        text = trim(text[: contrast.start()])
    verb = base_form(tokens[1]) if tokens[0] == "always" and len(tokens) > 1 else base_form(tokens[0])
    phrased = _gloss(capitalize(swap_to_user(text)))
    return Signal(
        kind="instruction", text=phrased, avoid=avoid, source=source, verb=verb or "", obj=_object(text)
    )


def _gloss(text: str) -> str:
    """Say what a permission idiom means: "ask the user before X" is asking for confirmation."""
    return re.sub(
        r"\b(ask|check with) the user (before|first)\b", r"\1 the user for confirmation \2", text, flags=re.I
    )


def _object(action: str) -> str:
    tokens = action.split()
    if len(tokens) < 2:
        return ""
    rest = " ".join(tokens[1:])
    rest = re.split(r"\b(?:before|after|when|if|until|unless|and|or|first|so|because)\b|[,;]", rest)[0]
    return swap_to_user(rest.strip())


def forgotten(segment: str) -> Signal | None:
    """ "you forgot the tracking number" → "Include the tracking number"; "forgot to X" → "X"."""
    m = _FORGOT.match(segment)
    if not m:
        return None
    body = m["body"]
    head = words(body)[0] if words(body) else ""
    text = present(body) if base_form(head) is not None else f"include {body}"
    return rule(text, negative=False, source=segment)


def imperative(segment: str) -> bool:
    """Whether a segment opens with a verb in the imperative ("Check the order number first")."""
    tokens = words(segment)
    if not tokens:
        return False
    first = tokens[1] if tokens[0] in {"always", "just", "also", "then"} and len(tokens) > 1 else tokens[0]
    if first not in VERBS:
        return False
    return not (len(tokens) > 1 and tokens[1] in {"is", "are", "was", "were", "looks", "seems", "'s", "s"})


def declarative(segment: str) -> Signal | None:
    """ "Refunds should always go to the original card"; "routine work doesn't need my ok"."""
    m = _DECLARATIVE.match(segment)
    if not m or m["subj"].lower().split()[0] in _NOT_SUBJECTS:
        return None
    modal = m["modal"].lower()
    negated = any(n in modal for n in ("not", "n't", "never"))
    subject = lower(swap_to_user(m["subj"]))
    if negated and "need" in modal and _PERMISSION.match(m["body"]):
        what = _PERMISSION.match(m["body"])
        noun = what["what"] if what else "confirmation"
        return Signal(
            kind="instruction",
            text=f"Just do {subject} without asking",
            avoid=f"Asking the user for {noun} on {subject}",
            source=segment,
        )
    negative = negated or words(m["body"])[:1] == ["not"]
    avoid = swap_to_user(finish(m["body"])) if negative else ""
    return Signal(
        kind="instruction",
        text=capitalize(swap_to_user(finish(segment))),
        negative=negative,
        avoid=avoid,
        source=segment,
    )


def alternative(segment: str, prior: Signal) -> Signal | None:
    """ "..., just do them" after "stop asking me about X": the rule says what to do instead.

    The alternative replaces the negative rule's text and the negative part stays as what to
    avoid; "do them"/"do it" takes its object from the negative part ("routine tasks").
    """
    if prior.kind != "instruction" or not prior.negative:
        return None
    m = _ALTERNATIVE.match(segment)
    if m is None and not imperative(segment):
        return None
    alt = m["alt"] if m else segment
    lead = "Just " if m and m.group(0).lower().startswith("just") else ""
    pronoun = _IT.match(alt)
    if pronoun:
        target = _LAST_OBJECT.search(prior.avoid)
        verb = words(prior.avoid)[0] if words(prior.avoid) else ""
        alt = f"{pronoun['verb']} {target['obj'] if target else ''}".strip()
        alt += f" without {verb}" if verb.endswith("ing") else ""
    text = swap_to_user(trim(alt))
    return replace(prior, text=f"{lead}{lower(text)}" if lead else capitalize(text), negative=False)
