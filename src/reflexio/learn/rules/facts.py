"""Self-statements: the facts and preferences a user states about themselves.

"I'm vegetarian", "I only ever use Linux", "we deploy with Terraform", "my budget is $800",
"I can't stand layovers" are lasting facts worth a profile; "I'm not sure", "I need a laptop",
"I think so", "I changed the config", "I have a question", "I don't mind Macs" are not. The
difference is mostly in the verb and its tense, so this module reads the clause's subject, its
adverbs and its verb, keeps what describes the user, and re-voices it in the third person
("Only ever uses Linux") with the user's own key words so the fact stays searchable.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from reflexio.learn.rules.lexicon import (
    INDIFFERENCE,
    NOT_SELF_ADJECTIVES,
    NOT_SELF_VERBS,
    SELF_PROGRESSIVE,
    word_list,
)
from reflexio.learn.rules.text import (
    capitalize,
    informative,
    is_past,
    swap_to_third,
    third_person,
    trim,
    words,
)

__all__ = ["Fact", "object_of", "self_statements", "ttl_of"]


@dataclass(frozen=True, slots=True)
class Fact:
    """A fact about the user in the third person, with its polarity and time to live."""

    text: str
    negative: bool = False
    ttl: str = "infinity"
    kind: str = "fact"


_ADVERBS = (
    r"(?:only|usually|always|never|mostly|generally|normally|typically|really|ever|also|mainly|exclusively|"
    r"rarely|often|sometimes|strongly|absolutely|definitely|totally|still|all|both|honestly|actually|now|just|"
    r"recently|finally|officially|"
    r"no longer|don't|do not|dont|can't|cannot|can not|won't|will not|wouldn't|would never|'d never|"
    r"'ve|have(?=\s+(?:been|never|always|lived|worked|used|had|become|switched|moved|\w+ed)\b)|can|'d|would|"
    r"'ll|will)"
)
_I_VERB = re.compile(
    rf"^(?P<subj>I|we)\b(?P<adv>(?:\s*{_ADVERBS}\b)*)\s+(?P<verb>[a-z][a-z']+)\b(?P<rest>.*)$", re.I
)
_BE = re.compile(r"^(?P<subj>I|we)(?:'m|'re| am| are)\s+(?P<rest>.+)$", re.I)
_MY = re.compile(
    r"^(?P<poss>my|our)\s+(?P<noun>(?:[\w'-]+\s){0,3}?[\w'-]+)\s+(?P<verb>is|are|'s|has|have|was|were|lives|works|uses|"
    r"needs|can't|cannot|doesn't|does not|don't|do not)\s+(?P<rest>.+)$",
    re.I,
)
_PREFERENCE = word_list(
    """
    prefer like love hate dislike enjoy adore detest loathe avoid favour
    """
)
_DESIRE = word_list(
    """
    want need
    """
)
_HABIT = word_list(
    """
    always only usually never generally normally typically mostly exclusively
    """
)
_LIFE_CHANGE = word_list(
    """
    moved switched became started stopped quit retired married graduated converted relocated joined
    gave grew was been lived worked used had
    """
)
_CAN_FACT = word_list(
    """
    eat drink have tolerate digest stand handle fly drive walk swim afford travel work speak code
    cook do spend read hear see
    """
)
_TRANSIENT_OBJECTS = word_list(
    """
    question questions problem problems issue issues error bug idea doubt concern request complaint
    suggestion feeling meeting call minute second look go try chance moment few quick follow-up
    followup update new time
    """
)
_ATTRIBUTES = word_list(
    """
    name budget timezone zone email phone address birthday age job role title team company employer
    wife husband partner son daughter kids kid children child family dog cat pet diet allergy
    allergies language languages home hometown city country location office stack setup editor ide
    os shell preference preferences goal goals salary income rent mortgage height weight size skin
    hair blood doctor insurance bank currency units unit seat favourite favorite native first mother
    father parents brother sister baby car laptop computer machine platform distro browser keyboard
    deadline schedule hours shift commute airline airport gym sport level experience background
    """
)
# "I click save and nothing happens": a bug report told in the present, not a habit.
_NARRATION = re.compile(
    r"\band (?:it|nothing|then|I|the \w+ (?:crashes|fails|breaks))\b|\bnothing happens\b", re.I
)
_PRONOUN_OBJECT = word_list(
    """
    it this that them these those yours your the how what when
    """
)
_TTL_CUES = (
    (r"\b(?:today|tonight|right now|at the moment|this (?:morning|afternoon|evening))\b", "one_day"),
    (
        r"\b(?:this|next) week(?:end)?\b|\bfor (?:a|the) (?:few|couple of) days\b|\bstaying\b|\bvisiting\b",
        "one_week",
    ),
    (r"\b(?:this|next) month\b|\bfor (?:a|the) (?:few|couple of) weeks\b|\btravell?ing\b", "one_month"),
    (r"\b(?:this|next) (?:quarter|season|summer|winter|spring|autumn|fall|semester|term)\b", "one_quarter"),
    (r"\b(?:this|next) year\b|\bthese days\b|\bfor now\b|\bcurrently\b", "one_year"),
)


def ttl_of(text: str, default: str = "infinity") -> str:
    """Time to live from cues such as "this week" or "today"; ``default`` otherwise."""
    low = text.lower()
    for pattern, ttl in _TTL_CUES:
        if re.search(pattern, low):
            return ttl
    return default


_UP_TO = re.compile(
    r"^I\s+(?:can|could)\s+(?:now\s+)?(?:go|spend|pay|afford)\s+(?:up\s+to\s+|as much as\s+)?"
    r"(?P<amount>(?:[$£€]\s?\d[\d,.]*|\d[\d,.]*\s?(?:dollars|euros|pounds))\b.*)$",
    re.I,
)


def _budget(text: str) -> Fact | None:
    """ "I can go up to $250 a night now" → "Their budget is up to $250 a night now"."""
    m = _UP_TO.match(text)
    return (
        Fact(text=f"Their budget is up to {trim(m['amount'])}", ttl=ttl_of(text, "one_year")) if m else None
    )


def self_statements(segment: str, *, persistent: bool = False) -> list[Fact]:
    """Facts the user states about themselves in one clause (empty for anything else).

    Args:
        segment: The clause.
        persistent: The clause is marked as lasting ("from now on"), so a wish such as
            "I'd like invoices by email" is a preference, not a request for this task.
    """
    text = segment.strip()
    fact = _budget(text) or _be(text) or _possessive(text) or _i_verb(text, persistent)
    return [fact] if fact is not None else []


_NEGATED = frozenset({"don't", "dont", "do", "not", "never", "no", "longer"})


def _wish(verb: str, adverbs: list[str], persistent: bool) -> str | None:
    """ "I no longer want X" is an aversion; "I'd like X from now on" a lasting wish.

    Wants and wishes are otherwise requests ("I want a refund", "I'd like a table for two"),
    which ``_verb_kind`` leaves alone.
    """
    if verb in _DESIRE and set(adverbs) & _NEGATED:
        return "dislike"
    if persistent and verb in {"like", "love"} and adverbs[-1:] in (["'d"], ["would"]):
        return "like"
    return None


def _be(text: str) -> Fact | None:
    """ "I'm vegetarian", "I am based in Lisbon", "we're a team of four"."""
    m = _BE.match(text)
    if not m:
        return None
    rest = m["rest"].strip()
    tokens = words(rest)
    negative = bool(tokens) and tokens[0] == "not"
    head = [
        t for t in tokens if t not in {"not", "a", "an", "the", "very", "really", "quite", "so", "pretty"}
    ]
    if not head or (head[0] in NOT_SELF_ADJECTIVES and not _place(rest)) or head[0] in {"bit", "little"}:
        return None
    if not informative(rest):
        return None
    if head[0].endswith("ing") and head[0] not in SELF_PROGRESSIVE:
        return None
    if head[0] == "working" and len(head) > 1 and head[1] in {"on", "through"}:
        return None
    verb = "Is" if m["subj"].lower() == "i" else "They are"
    fact = f"{verb} {swap_to_third(trim(rest))}"
    return Fact(text=capitalize(fact), negative=negative, ttl=ttl_of(rest))


def _place(rest: str) -> bool:
    return bool(re.match(r"^(?:in|from|at|based in)\s+[A-Z]", rest))


def _possessive(text: str) -> Fact | None:
    """ "My budget is $800", "our stack is Django", "my daughter is allergic to nuts"."""
    m = _MY.match(text)
    if not m or not (set(words(m["noun"])) & _ATTRIBUTES):
        return None
    rest = trim(m["rest"])
    if words(rest)[:1] in (["broken"], ["down"], ["late"], ["missing"], ["wrong"], ["stuck"], ["not"]):
        return None
    owner = "Their"
    fact = f"{owner} {m['noun'].lower()} {m['verb'].lower()} {swap_to_third(rest)}"
    return Fact(text=fact, negative=bool(re.search(r"n't|\bnot\b", m["verb"])), ttl=ttl_of(text))


def _i_verb(text: str, persistent: bool = False) -> Fact | None:
    """ "I only ever use Linux", "I can't stand layovers", "we deploy with Terraform"."""
    m = _I_VERB.match(text)
    if not m or _BE.match(text):
        return None
    adverbs = [a for a in re.split(r"\s+", m["adv"].strip().lower()) if a]
    verb = m["verb"].lower()
    rest = m["rest"]
    if _NARRATION.search(rest):
        return None
    kind = _wish(verb, adverbs, persistent) or _verb_kind(verb, adverbs, rest)
    if kind is None:
        return None
    negative = kind == "dislike" or any(
        a in {"don't", "do", "not", "can't", "cannot", "never", "dont"} for a in adverbs
    )
    if not informative(rest) and verb not in _PREFERENCE:
        return None
    phrase = _moved(verb, rest) or _switched(m["subj"], verb, rest) or _third(m["subj"], adverbs, verb, rest)
    phrase = re.sub(
        r"^(?:Quits|They quit)\b", lambda q: "Has quit" if q[0] == "Quits" else "They have quit", phrase
    )
    if kind == "indifferent":
        phrase = (
            capitalize(f"is fine with {swap_to_third(trim(rest))}") if m["subj"].lower() == "i" else phrase
        )
    ttl = ttl_of(text, "one_year" if kind in {"like", "dislike"} else "infinity")
    if kind == "indifferent":
        return Fact(text=phrase, negative=False, ttl=ttl, kind="indifferent")
    return Fact(text=phrase, negative=negative, ttl=ttl)


def _verb_kind(verb: str, adverbs: list[str], rest: str) -> str | None:
    """ "like"/"dislike"/"indifferent"/"fact", or None when the clause is not about the user.

    Read in this order: a verb of feeling decides alone; then a modal ("I'd buy" is a wish,
    "I'll be in Paris" a fact, "I can eat nuts" a fact, "I can check" not); then the verbs that
    never describe the speaker; last the tense (past narration is no fact, a life change is).
    """
    objects = words(rest)
    said = set(adverbs)
    if _feels(verb, adverbs):
        return _feeling(verb, adverbs, objects)
    if said & {"'d", "would", "'ll", "will"} and not said & {"never", "rather"}:
        return "fact" if verb == "be" and said & {"'ll", "will"} else None
    if said & {"can't", "cannot", "can"}:
        return "fact" if verb in _CAN_FACT else None
    if _not_about_self(verb, said, objects):
        return None
    if verb in _LIFE_CHANGE:
        return "fact"
    if is_past(verb) or verb.endswith("ed"):
        return None
    return "fact" if verb.isalpha() and not verb.endswith("ing") else None


def _prefers(verb: str, adverbs: list[str]) -> bool:
    """A verb of preference, or "would rather"."""
    return verb in _PREFERENCE or (verb == "rather" and adverbs[-1:] in (["'d"], ["would"]))


def _feels(verb: str, adverbs: list[str]) -> bool:
    """A verb saying how the user feels: preference, indifference, "can't stand", desire."""
    return _prefers(verb, adverbs) or verb in INDIFFERENCE or verb == "stand" or verb in _DESIRE


def _feeling(verb: str, adverbs: list[str], objects: list[str]) -> str | None:
    """The kind of a clause whose verb ``_feels``: None when it is about a thing at hand or a wish."""
    said = set(adverbs)
    if _prefers(verb, adverbs):
        if objects[:1] and objects[0] in _PRONOUN_OBJECT and "prefer" not in verb:
            return None  # "I like it": about the answer, not the user
        if adverbs[-1:] in (["'d"], ["would"]) and verb in {"like", "love"}:
            return None  # "I'd like a refund": a request
        return "dislike" if verb in {"hate", "dislike", "detest", "loathe", "avoid"} else "like"
    if verb in INDIFFERENCE:
        return "indifferent" if said & {"don't", "do", "dont", "not", "never"} else None
    if verb == "stand":
        return "dislike" if said & {"can't", "cannot"} else None
    return "fact" if said & _HABIT else None  # a desire: "I always need a window seat"


def _not_about_self(verb: str, said: set[str], objects: list[str]) -> bool:
    """ "I think so", "I have to go", "I have a question": the verb says nothing lasting."""
    if verb in NOT_SELF_VERBS and not (said & _HABIT and verb not in {"think", "guess", "mean"}):
        return True
    if verb in {"have", "got", "gotta"} and objects[:1] == ["to"]:
        return True
    return verb == "have" and (
        not objects
        or objects[0] in _TRANSIENT_OBJECTS
        or objects[:2][-1:] == ["question"]
        or (
            len(objects) > 1
            and objects[0] in {"a", "an", "some", "one", "two"}
            and objects[1] in _TRANSIENT_OBJECTS
        )
    )


_MOVED = re.compile(
    r"^\s*to\s+(?P<place>.+?)(?P<when>\s+(?:last|this|in|a|recently|yesterday|over|back|earlier|two|three|few)\b.*)?$",
    re.I,
)


def _moved(verb: str, rest: str) -> str | None:
    """ "I moved to Denver last week" → "Lives in Denver (moved last week)": where one lives is one fact."""
    m = _MOVED.match(trim(rest)) if verb in {"moved", "relocated"} else None
    if m is None or not m["place"][:1].isupper() or re.search(r"\bfor (?:all )?(?:my|our)\b", m["place"]):
        return None  # "moved to spaces", "moved to Go for all my tooling": a switch, not a home
    when = f" (moved{m['when'].rstrip()})" if m["when"] else ""
    return f"Lives in {swap_to_third(m['place'])}{when}"


def _switched(subj: str, verb: str, rest: str) -> str | None:
    """ "I switched to a Mac last month" → "Uses a Mac (switched last month)": what they use now."""
    m = _MOVED.match(re.sub(r"^\s*over\b", "", trim(rest))) if verb in _SWITCH_VERBS else None
    if m is None:
        return None
    when = f" (switched{m['when'].rstrip()})" if m["when"] else " (switched)"
    uses = "Uses" if subj.lower() == "i" else "They use"
    return f"{uses} {swap_to_third(m['place'])}{when}"


_SWITCH_VERBS = frozenset({"switched", "moved", "changed", "migrated"})


def _third(subj: str, adverbs: list[str], verb: str, rest: str) -> str:
    """Re-voice "I only ever use X" as "Only ever uses X" (and "we" as "They")."""
    plural = subj.lower() != "i"
    out: list[str] = [] if not plural else ["They"]
    conjugated = False
    for adv in adverbs:
        if adv in {"don't", "dont", "do"}:
            out.append("do not" if plural else "does not")
            conjugated = True
        elif adv == "not":
            continue
        elif adv in {"'ve", "have"}:
            out.append("have" if plural else "has")
            conjugated = True
        elif adv in {"'d", "would"}:
            out.append("would")
            conjugated = True
        elif adv in {"can't", "cannot"}:
            out.append("cannot")
            conjugated = True
        elif adv in {"'ll", "will"}:
            out.append("will")
            conjugated = True
        elif adv in {"'m", "am"}:
            out.append("are" if plural else "is")
            conjugated = True
        else:
            out.append(adv)
    if verb == "rather":
        out.append("rather")
    elif conjugated or plural or is_past(verb):
        out.append(verb)
    else:
        out.append(third_person(verb))
    tail = swap_to_third(trim(rest)) if rest.strip() else ""
    phrase = " ".join([*out, tail])
    phrase = re.sub(r"\s+", " ", phrase).strip()
    return capitalize(phrase)


def object_of(fact: str) -> str:
    """What a short fact is about: "Hates cilantro" → "cilantro" (empty when unclear)."""
    m = re.match(
        r"^(?:\w+\s+){0,2}?(?:hates|likes|loves|dislikes|avoids|prefers|eats|uses|drinks)\s+(?P<obj>[^,;]+)$",
        fact,
        re.I,
    )
    if not m or len(m["obj"].split()) > 4:
        return ""
    return m["obj"].strip()
