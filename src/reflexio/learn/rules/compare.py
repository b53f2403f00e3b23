"""Comparing two learnings: the same lesson again, a contradiction, or unrelated.

A rule judge cannot ask a model whether "stop asking me for confirmation on routine staging
tasks" contradicts "ask me before any action on servers". It can read polarity, though: each
learning is reduced to a ``Gist`` of what it says to do, what it says to avoid (words after a
negation, "without", "hates", and the pitfall), its topic words, and for profiles the slot it
fills (where the user lives, their diet, their budget...). Two learnings contradict when one
says to do what the other says to avoid on a shared topic, or when they fill a one-valued slot
with different values; they are the same lesson when their content words mostly coincide and
their polarities agree.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache
from typing import Any, Protocol

from reflexio import ranking
from reflexio.learn.rules.lexicon import word_list
from reflexio.learn.rules.text import informative, words

__all__ = ["ANSWER_PREFIX", "Gist", "Relation", "gist", "gist_of", "is_tool", "novelty", "relate"]

#: How a pitfall that quotes the agent's answer starts; such a pitfall is context, not a "don't".
ANSWER_PREFIX = "The agent answered:"

# Words that flip what follows them in a clause from "do" to "avoid".
_NEGATORS = word_list(
    """
    not no never without stop avoid don't doesn't didn't cannot can't won't nor hates hate dislikes
    dislike detests loathes instead skip isn't aren't shouldn't mustn't refrain neither except quit
    stopped dropped ditched
    """
)
# "Prefers email over phone calls": what comes after "over" is ranked below, as if avoided.
_RANKED = re.compile(
    r"\b(prefers?|likes?|wants?|would rather)\s+(.+?)\s+(?:over|to|rather than|than)\s+", re.I
)
#: Values one user usually has one of at a time; a reversal that names another retires the old.
_ONE_OF = {
    "os": "windows mac macos macbook linux ubuntu fedora debian chromebook chromeos",
    "phone": "android iphone pixel samsung galaxy oneplus",
    "language": "python go golang rust java javascript typescript ruby php kotlin swift scala elixir",
    "transport": "train trains rail fly flying flights flight plane planes car drive driving bus coach ferry",
    "drink": "coffee tea espresso",
    "daytime": "morning mornings afternoon afternoons evening evenings night nights",
    "seat": "window aisle",
    "theme": "dark light",
    "chat": "slack teams discord whatsapp telegram signal",
    "document": "word docx pdf pdfs paper google docs",
    "channel": "email emails phone call calls text texts sms push notification notifications post letter",
}
_PREFERENCE_STEMS = frozenset(
    ranking.tokenize("prefer prefers like likes love loves want wants enjoy enjoys would rather now switched")
)
_CLAUSE = re.compile(r"[;.,]\s+|\s+(?:but|and then|then)\s+")
# Light verbs too common for a conflict on them alone to mean anything.
_CONFLICT_LIGHT = frozenset(
    ranking.tokenize(
        "do make get use take have go put keep give include want need like user just thing things "
        "always first again also fine really"
    )
)
_CONTRACTIONS = frozenset(ranking.tokenize("doesn don didn isn aren wasn shouldn won wouldn couldn can"))
_DIET_MEAT = "meat steak beef pork chicken bacon ham lamb burger burgers sausage sausages veal turkey"
_IMPLIES_AVOID = {
    "vegetarian": _DIET_MEAT,
    "veggie": _DIET_MEAT,
    "vegan": _DIET_MEAT + " dairy cheese milk egg eggs butter honey fish",
    "pescatarian": _DIET_MEAT,
    "teetotal": "alcohol wine beer drink drinks",
    "sober": "alcohol wine beer",
}
_SLOTS = (
    ("location", r"^(?:lives|is living|is based|is located|resides|moved|relocated|is from|lived)\b"),
    ("job", r"^(?:works as|is working as|works at|works for|is employed)\b"),
    ("diet", r"\b(?:vegetarian|vegan|pescatarian|omnivore|keto|paleo|eats meat|carnivore)\b"),
    ("budget", r"\bbudget\b"),
    ("name", r"\bname is\b"),
    ("timezone", r"\btime ?zone\b"),
)


class Relation(StrEnum):
    """How a new learning relates to an existing one."""

    SAME = "same"  # the same lesson (a restatement)
    CONTRADICTS = "contradicts"  # the new one reverses the old one
    UNRELATED = "unrelated"


@dataclass(frozen=True, slots=True)
class Gist:
    """What a learning says, reduced to word sets.

    Attributes:
        core: Content words of the content (what the lesson is).
        topic: Content words of trigger, content and pitfall (what it is about).
        do: Content words in positive position.
        avoid: Content words in negative position (and the pitfall's).
        slot: For one-valued profile facts: which fact ("location", "diet", ...).
        value: The slot's value words.
        named: (kind, value) of the one-of-a-kind things it says to do or use ("os", "mac").
    """

    core: frozenset[str]
    topic: frozenset[str]
    do: frozenset[str]
    avoid: frozenset[str]
    slot: str | None = None
    value: frozenset[str] = frozenset()
    named: frozenset[tuple[str, str]] = frozenset()


@lru_cache(maxsize=4096)
def gist(
    content: str, trigger: str | None = None, pitfall: str | None = None, *, avoids: bool = True
) -> Gist:
    """The gist of a learning from its fields.

    Args:
        content: The fact or instruction.
        trigger: The situation (topic only).
        pitfall: What to avoid; quoted agent answers and (``avoids=False``) failed tool
            calls describe what happened rather than what to avoid, so they add no "avoid".
    """
    do: set[str] = set()
    avoid: set[str] = set()
    content = _RANKED.sub(lambda m: f"{m[1]} {m[2]}; not ", content)
    for clause in _CLAUSE.split(content):
        positive, negative = _polar(clause)
        do |= positive
        avoid |= negative
    avoid |= _implied(content)
    core = informative(content)
    avoided = _stems(pitfall) if avoids and pitfall and not pitfall.startswith(ANSWER_PREFIX) else frozenset()
    avoid |= avoided - do
    slot, value = _slot(content)
    named = frozenset(
        (_ONE_OF_WORDS[w], w)
        for clause in _CLAUSE.split(content)
        for w in _positive_words(clause)
        if w in _ONE_OF_WORDS
    )
    return Gist(
        core=core,
        topic=core | informative(trigger or "") | (avoided & informative(pitfall or "")),
        do=frozenset(do),
        avoid=frozenset(avoid),
        slot=slot,
        value=value,
        named=named,
    )


def _polar(clause: str) -> tuple[frozenset[str], frozenset[str]]:
    """(do, avoid) words of a clause; a "Mention: ..." clause reports facts and has no "avoid".

    Polarity keeps verbs such as "ask" that carry no topic but do carry the rule ("ask first"
    against "without asking"); only the lightest words are dropped.
    """
    if clause.strip().lower().startswith("mention:"):
        return _stems(clause), frozenset()
    tokens = words(clause)
    cut = next((i for i, t in enumerate(tokens) if t in _NEGATORS), len(tokens))
    return _stems(" ".join(tokens[:cut])), _stems(" ".join(tokens[cut:]))


def _stems(text: str) -> frozenset[str]:
    return frozenset(ranking.word_set(text) - _CONFLICT_LIGHT - _CONTRACTIONS)


@lru_cache(maxsize=1)
def _implications() -> dict[str, frozenset[str]]:
    return {ranking.tokenize(k)[0]: frozenset(ranking.tokenize(v)) for k, v in _IMPLIES_AVOID.items()}


def _implied(content: str) -> set[str]:
    """ "Is vegetarian" implies avoiding meat, unless the sentence negates it."""
    out: set[str] = set()
    for clause in _CLAUSE.split(content):
        positive, _ = _polar(clause)
        for stem, avoided in _implications().items():
            if stem in positive:
                out |= avoided
    return out


def _slot(content: str) -> tuple[str | None, frozenset[str]]:
    low = content.lower().strip()
    for name, pattern in _SLOTS:
        m = re.search(pattern, low)
        if m:
            return name, informative(low[m.end() :] if name in {"location", "job", "budget", "name"} else low)
    owned = re.match(r"^their ([\w' -]+?) (?:is|are)\b(?P<value>.*)$", low)
    if owned:
        return f"attr:{owned.group(1)}", informative(owned["value"])
    return None, frozenset()


def relate(
    new: Gist, old: Gist, *, restated: bool = False, reversal: bool = False, profile: bool = False
) -> Relation:
    """How ``new`` relates to ``old`` (both of the same kind and user).

    Args:
        new: The proposal's gist.
        old: A known learning's gist.
        restated: The user says they repeat themselves ("again", "I told you").
        reversal: The user says something changed ("actually", "now", "any more", "switched").
        profile: Both are profiles: a reversal that speaks of what the old fact speaks of, and
            leaves part of it out ("window seats from now on" after "prefers aisle seats"),
            overturns it; rules change only by polarity.
    """
    if _slot_conflict(new, old):
        return Relation.CONTRADICTS
    if reversal and not restated and (_other_value(new, old) or (profile and _overturns(new, old))):
        return Relation.CONTRADICTS
    conflict = ((new.do & old.avoid) | (new.avoid & old.do)) - _CONFLICT_LIGHT
    shared = new.topic & old.topic
    # A restatement ("again: ...") repeats a lesson; only an explicit reversal overturns one.
    polar = not restated or reversal
    if polar and conflict and (len(conflict) >= 2 or len(shared - conflict) >= 1 or reversal):
        return Relation.CONTRADICTS
    if (not conflict or not polar) and _same(new, old, restated):
        return Relation.SAME
    return Relation.UNRELATED


_ONE_OF_WORDS = {word: name for name, values in _ONE_OF.items() for word in values.split()}


def _positive_words(clause: str) -> list[str]:
    """The clause's words before its first negator (what it says to do or use)."""
    tokens = words(clause)
    cut = next((i for i, t in enumerate(tokens) if t in _NEGATORS), len(tokens))
    return tokens[:cut]


def _other_value(new: Gist, old: Gist) -> bool:
    """Both name a value of one kind of thing (an OS, a drink, a seat...) and not the same one."""
    gained = {kind for kind, _ in new.named - old.named}
    return any(kind in gained for kind, _ in old.named - new.named)


def _overturns(new: Gist, old: Gist) -> bool:
    """A new fact on the old one's topic that drops part of it (not a restatement with more)."""
    shared = (new.topic & old.topic) - _PREFERENCE_STEMS
    dropped = old.core - new.topic - _PREFERENCE_STEMS
    return bool(shared) and bool(dropped)


def _slot_conflict(new: Gist, old: Gist) -> bool:
    if new.slot is None or new.slot != old.slot or not new.value or not old.value:
        return False
    return ranking.jaccard(new.value, old.value) < 0.5


def _same(new: Gist, old: Gist, restated: bool) -> bool:
    if not new.core:
        return False
    if old.core and len(old.core & new.core) / len(old.core) >= 0.8:
        return True  # the new one says all the old one says (and maybe more)
    contained = len(new.core & old.topic) / len(new.core)
    if contained >= 0.6 or ranking.jaccard(new.topic, old.topic) >= 0.5:
        return True
    agree = (new.do & old.do) | (new.avoid & old.avoid)
    return restated and len(new.topic & old.topic) >= 2 and bool(agree)


def novelty(new: Gist, old: Gist) -> frozenset[str]:
    """Content words the new learning adds to the old one."""
    return new.core - old.topic


class _Readable(Protocol):
    content: str
    trigger: str | None
    pitfall: str | None
    blocking_issue: dict[str, Any] | None


def is_tool(blocking_issue: dict[str, Any] | None) -> bool:
    """A tool lesson names its tool (older rows also used the kind ``tool_failure``)."""
    return bool((blocking_issue or {}).get("tool"))


def gist_of(item: _Readable) -> Gist:
    """The gist of a proposal or a stored learning."""
    return gist(item.content, item.trigger, item.pitfall, avoids=not is_tool(item.blocking_issue))
