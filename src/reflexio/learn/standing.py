"""Standing learnings: preferences that apply to every answer for a user, whatever the query.

"Please always answer in Spanish", "give me times in JST", "metric units", "keep it short", "a
formal tone", "bullet points", "I use a screen reader": such a learning shapes *how* every
answer is given, so search serves it for any query of its user (``service.search``), not only
for queries that share its words. A learning is marked standing by carrying the reserved tag
``STANDING_TAG``; extractors set it when they learn one (the rule extractor through
``standing_facets``, the LLM extractor through its ``standing`` field), and a person can set it
on a learning they add through the API.

This module also reads what a standing preference is *about* — its facets, each with a value
("language" = "spanish", "units:temperature" = "celsius", "timezone" = "jst", "length" =
"short") — because most facets hold one value at a time: "Fahrenheit instead" retires "prefers
Celsius" even when the two share no word, and must, since a stale standing preference would be
served for every query. Facets are read from closed word lists, and only where the text frames
them as how to answer: "Denver is on Mountain Time" (a fact), "I run 40 km a week" (a
measurement) and "keep dish names in Italian" (a scoped rule) are not standing preferences.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass

from reflexio.models.prompt import STANDING_TAG

__all__ = ["STANDING_TAG", "Facet", "conflicting", "facets", "is_standing_text"]


@dataclass(frozen=True, slots=True)
class Facet:
    """One thing a standing preference fixes, with its value (``value`` "" when multi-valued)."""

    name: str
    value: str = ""


#: Facets that hold one value at a time; two values of one of them contradict each other.
ONE_VALUED = frozenset(
    {
        "language",
        "timezone",
        "clock",
        "currency",
        "length",
        "formality",
        "units:system",
        "units:temperature",
        "units:distance",
        "units:weight",
        "units:volume",
        "units:area",
    }
)

_LANGUAGES = {
    "english": "english", "spanish": "spanish", "español": "spanish", "espanol": "spanish",
    "french": "french", "français": "french", "francais": "french", "german": "german",
    "deutsch": "german", "italian": "italian", "italiano": "italian", "portuguese": "portuguese",
    "português": "portuguese", "dutch": "dutch", "japanese": "japanese", "chinese": "chinese",
    "mandarin": "chinese", "cantonese": "cantonese", "korean": "korean", "arabic": "arabic",
    "hindi": "hindi", "russian": "russian", "polish": "polish", "swedish": "swedish",
    "norwegian": "norwegian", "danish": "danish", "finnish": "finnish", "greek": "greek",
    "turkish": "turkish", "hebrew": "hebrew", "ukrainian": "ukrainian", "czech": "czech",
    "hungarian": "hungarian", "romanian": "romanian", "vietnamese": "vietnamese", "thai": "thai",
    "indonesian": "indonesian", "malay": "malay", "tagalog": "tagalog", "catalan": "catalan",
    "welsh": "welsh", "irish": "irish", "bengali": "bengali", "urdu": "urdu", "tamil": "tamil",
    "persian": "persian", "farsi": "persian", "swahili": "swahili", "afrikaans": "afrikaans",
}  # fmt: skip
#: Verbs and nouns that make "in <language>" about how the agent communicates.
_SPEAKING = re.compile(
    r"\b(?:answer|answers|answering|reply|replies|replying|respond|responds|response|responses|"
    r"write|writes|writing|speak|speaks|talk|talks|talking|communicate|chat|converse|text|"
    r"everything|all|always|language)\b"
)
_TIMEZONES = {
    "jst": "jst", "japan time": "jst", "tokyo time": "jst", "japanese time": "jst", "kst": "kst",
    "korea time": "kst", "seoul time": "kst", "cst": "cst", "central time": "cst", "est": "est",
    "edt": "est", "eastern time": "est", "eastern": "est", "new york time": "est", "pst": "pst",
    "pdt": "pst", "pacific time": "pst", "pacific": "pst", "mst": "mst", "mountain time": "mst",
    "cet": "cet", "cest": "cet", "central european time": "cet", "central european": "cet",
    "berlin time": "cet", "paris time": "cet", "gmt": "gmt", "bst": "gmt", "uk time": "gmt",
    "london time": "gmt", "british time": "gmt", "utc": "utc", "ist": "ist", "india time": "ist",
    "indian time": "ist", "mumbai time": "ist", "aest": "aest", "sydney time": "aest",
    "sgt": "sgt", "singapore time": "sgt", "hkt": "hkt", "hong kong time": "hkt", "nzst": "nzst",
    "eet": "eet", "wet": "wet", "hst": "hst", "local time": "local", "my time": "local",
    "my timezone": "local", "my time zone": "local",
}  # fmt: skip
_CLOCK = {
    "24-hour": "24", "24 hour": "24", "24h": "24", "military time": "24", "12-hour": "12",
    "12 hour": "12", "am/pm": "12", "am and pm": "12",
}  # fmt: skip
_CURRENCIES = {
    "euro": "eur", "euros": "eur", "eur": "eur", "usd": "usd", "us dollars": "usd",
    "dollars": "usd", "dollar": "usd", "gbp": "gbp", "british pounds": "gbp", "sterling": "gbp",
    "pounds sterling": "gbp", "yen": "jpy", "jpy": "jpy", "chf": "chf", "swiss francs": "chf",
    "francs": "chf", "rupees": "inr", "inr": "inr", "cad": "cad", "canadian dollars": "cad",
    "aud": "aud", "australian dollars": "aud", "yuan": "cny", "rmb": "cny", "won": "krw",
    "krona": "sek", "kronor": "sek", "kroner": "nok", "zloty": "pln", "pesos": "mxn",
    "reais": "brl", "real": "brl", "local currency": "local",
}  # fmt: skip
# unit word -> (dimension, system)
_UNITS = {
    "celsius": ("temperature", "metric"), "centigrade": ("temperature", "metric"),
    "fahrenheit": ("temperature", "imperial"), "kilometres": ("distance", "metric"),
    "kilometers": ("distance", "metric"), "kilometre": ("distance", "metric"),
    "kilometer": ("distance", "metric"), "km": ("distance", "metric"), "km/h": ("distance", "metric"),
    "metres": ("distance", "metric"), "meters": ("distance", "metric"),
    "centimetres": ("distance", "metric"), "centimeters": ("distance", "metric"),
    "miles": ("distance", "imperial"), "mile": ("distance", "imperial"), "mph": ("distance", "imperial"),
    "miles per hour": ("distance", "imperial"), "feet": ("distance", "imperial"),
    "inches": ("distance", "imperial"), "yards": ("distance", "imperial"),
    "kilograms": ("weight", "metric"), "kilogram": ("weight", "metric"), "kilos": ("weight", "metric"),
    "kg": ("weight", "metric"), "grams": ("weight", "metric"), "gram": ("weight", "metric"),
    "pounds": ("weight", "imperial"), "lbs": ("weight", "imperial"), "ounces": ("weight", "imperial"),
    "stone": ("weight", "imperial"), "litres": ("volume", "metric"), "liters": ("volume", "metric"),
    "millilitres": ("volume", "metric"), "milliliters": ("volume", "metric"), "ml": ("volume", "metric"),
    "gallons": ("volume", "imperial"), "cups": ("volume", "imperial"),
    "fluid ounces": ("volume", "imperial"), "square metres": ("area", "metric"),
    "square meters": ("area", "metric"), "square feet": ("area", "imperial"),
    "metric": ("system", "metric"), "imperial": ("system", "imperial"), "si units": ("system", "metric"),
}  # fmt: skip
_LENGTH = (
    (r"\b(?:short|shorter|brief|briefer|concise|succinct|terse|compact|to the point|tl;?dr|"
     r"one-liners?|straight answers?|straight to the (?:answer|point)|no fluff|without fluff|"
     r"(?:skip|no|without|cut) (?:the )?(?:chit-?chat|small talk|pleasantries|fluff|waffle)|"
     r"(?:under|at most|no more than|max(?:imum)?|up to) \d+ (?:words|sentences|lines|paragraphs?)|"
     r"\d+ (?:words|sentences|lines|paragraphs?) (?:max|maximum|at most|or less|or fewer)|"
     r"(?:one|a single|1) paragraph)\b", "short"),
    (r"\b(?:long|longer|detailed|more detail|in-depth|in depth|thorough|full explanations?|"
     r"step[- ]by[- ]step explanations?|elaborate)\b", "long"),
)  # fmt: skip
_LENGTH_NOUN = re.compile(
    r"\b(?:answers?|repl(?:y|ies)|responses?|explanations?|summar(?:y|ies)|messages?|sentences|"
    r"paragraphs?|versions?|texts?|emails?|it|them|things|everything|detail|max|words|lines)\b"
)
_FORMALITY = re.compile(
    r"\b(?P<value>formal|informal|casual|professional|relaxed|laid-back)\b"
    r"(?=\s+(?:tone|register|style|voice|language|wording|answers?|repl(?:y|ies)|with me|please|is fine)|"
    r"\s*(?:[,.;!]|$))|"
    r"\b(?:be|sound|stay|keep it|more|less)\s+(?P<value2>formal|informal|casual|professional)\b"
)
_TONE = re.compile(
    r"\bemojis?\b|\bemoticons?\b|\bjargon\b|\b(?:plain|simple|simpler|everyday|clear)\s+"
    r"(?:language|english|words|terms|sentences)\b|\bno jokes\b|\bhumou?r\b|\bsarcasm\b|"
    r"\bexclamation marks?\b"
)
_FORMAT = re.compile(
    r"\bbullet(?:s|ed| points?| lists?)?\b|\bnumbered (?:lists?|steps|points)\b|\bheadings?\b|"
    r"\bmarkdown\b|\bplain text\b|\b(?:plain |short )?paragraphs\b|\bprose\b|\bjson\b|\bcode blocks?\b|"
    r"\b(?:as|in|into|use|using|no|avoid|with|prefers|wants)\s+(?:a\s+)?tables?\b|\btables? would\b|"
    r"\biso (?:dates?|format|8601)\b|"
    r"\bdate format\b|\byyyy-mm-dd\b|\bdd/mm(?:/yyyy)?\b|\bmm/dd(?:/yyyy)?\b|"
    r"\b(?:british|american|us|uk|canadian|australian) (?:spelling|english)\b|\bascii art\b|\bsections\b"
)
_ACCESS = re.compile(
    r"\bscreen ?readers?\b|\bblind\b|\blow vision\b|\bvisually impaired\b|\bpartially sighted\b|"
    r"\bdyslexi[ac]\b|\bcolou?r[- ]?blind\b|\bdeaf\b|\bhard of hearing\b|\bhearing (?:impaired|loss)\b|"
    r"\blarge (?:font|text|print)\b|\bhigh contrast\b|\bbraille\b|\balt text\b|\bcaptions\b|\badhd\b|"
    r"\bautis(?:m|tic)\b|\bwheelchair\b|\bstep-free\b|\bmobility\b"
)
_MEASURE = re.compile(r"(?:[\d.,]+\s*|\$|£|€)$")
_TIME_BEFORE = re.compile(r"(?:\d{1,2}(?::\d{2})?\s*(?:am|pm)?|noon|midnight)\s*$")
_SCOPE = re.compile(
    r"^(?:for|when|whenever|if|in|on|during|before|after)\b[^,]{1,60},|"
    r"\b(?:when|whenever) (?:you |the user )?(?:answer|reply|write|respond|ask)\w* (?:to |about )?\w+ "
    r"(?:questions?|emails?|tickets?|requests?)\b|\bfor (?:legal|medical|tax|billing|leave|\w+) questions\b",
    re.I,
)
_IMPERATIVE_LEAD = re.compile(r"^(?:always|never|please|just|only|do not|don't|also)\s+", re.I)
_PREFERENCE_LEAD = re.compile(
    r"^(?:prefers|wants|likes|loves|would rather|would like|does not want|doesn't want|dislikes|"
    r"hates|thinks in|reads|needs|is fine with|always wants|only wants|uses|is|their (?:time ?zone|"
    r"language|units|currency|preferred \w+))\b",
    re.I,
)
_NOT_SELF = re.compile(r"^their (?!time ?zone|language|units|currency|preferred)", re.I)


@functools.cache
def _pattern(table: tuple[str, ...]) -> re.Pattern[str]:
    """One alternation of a table's phrases, longest first, on word boundaries."""
    phrases = sorted(table, key=len, reverse=True)
    return re.compile(r"(?<![\w/-])(" + "|".join(re.escape(p) for p in phrases) + r")(?![\w/-])")


def _found(table: dict[str, str], low: str) -> list[tuple[str, int]]:
    """(value, position) of every table phrase occurring in ``low`` on word boundaries."""
    return [(table[m[1]], m.start()) for m in _pattern(tuple(table)).finditer(low)]


@functools.lru_cache(maxsize=4096)
def facets(text: str) -> frozenset[Facet]:
    """The presentation facets a text names, with values (no check that it is a preference).

    Values come from what the text asks for, not from what it rejects: "euros, not dollars"
    is the currency "eur"; a one-valued facet named only in a rejection ("no Fahrenheit")
    has no value.
    """
    low = " ".join(text.lower().replace("\u2019", "'").split())
    valued = _valued(_REJECTED.sub(" ", low))
    named = {f.name for f in valued}
    out = set(valued) | {Facet(f.name) for f in _valued(low) if f.name not in named}
    if _TONE.search(low):
        out.add(Facet("tone"))
    if _FORMAT.search(low):
        out.add(Facet("format"))
    if _ACCESS.search(low):
        out.add(Facet("accessibility"))
    return frozenset(out)


#: What a text rejects or ranks below the choice: "..., not X", "instead of X", "over X".
_REJECTED = re.compile(
    r"\b(?:not|instead of|rather than|over|no more|never|no longer|stop using|than)\s+"
    r"(?:the\s+|in\s+)?[\w/ $£€-]{1,30}?(?=[,;.!]|$|\s+(?:and|but|please|from|for)\b)"
)


def _valued(low: str) -> set[Facet]:
    """The one-valued facets of a text, with the value each is given."""
    out: set[Facet] = set()
    terse = len(low.split()) <= 4
    for value, _ in _found(_LANGUAGES, low):
        if _SPEAKING.search(low) or terse:
            out.add(Facet("language", value))
    for value, at in _found(_TIMEZONES, low):
        if not _TIME_BEFORE.search(low[:at]):
            out.add(Facet("timezone", value))
    out |= {Facet("clock", value) for value, _ in _found(_CLOCK, low)}
    for value, at in _found(_CURRENCIES, low):
        if not _MEASURE.search(low[:at]):
            out.add(Facet("currency", value))
    for (dimension, system), at in _unit_hits(low):
        if not _MEASURE.search(low[:at]):
            out.add(Facet(f"units:{dimension}", system))
    out |= _length(low)
    formal = _FORMALITY.search(low)
    if formal:
        value = formal["value"] or formal["value2"] or ""
        out.add(Facet("formality", "formal" if value in {"formal", "professional"} else "casual"))
    return out


def _unit_hits(low: str) -> list[tuple[tuple[str, str], int]]:
    money = re.search(r"\b(?:british|sterling|gbp)\b|£", low) is not None
    return [
        (_UNITS[m[1]], m.start())
        for m in _pattern(tuple(_UNITS)).finditer(low)
        if not (m[1] == "pounds" and money)  # British pounds are money, not weight
    ]


def _length(low: str) -> set[Facet]:
    for pattern, value in _LENGTH:
        for m in re.finditer(pattern, low):
            near = low[max(0, m.start() - 30) : m.end() + 30]
            bare = m.group(0) in {"short", "shorter", "brief", "briefer", "compact"}
            if value == "short" and bare and not _LENGTH_NOUN.search(near) and len(low.split()) > 4:
                continue  # "short flights", "a brief stop": not about the answers
            if value == "long" and not _LENGTH_NOUN.search(near):
                continue
            return {Facet("length", value)}
    return set()


def is_standing_text(kind: str, content: str, *, track: str = "", tool: bool = False) -> frozenset[Facet]:
    """The facets of a learning if it reads as a standing preference, else an empty set.

    Args:
        kind: "profile" or "user_playbook" (agent playbooks are never one user's standing).
        content: The fact or instruction.
        track: The extractor's track; tool lessons, recipes and expert lessons are about a
            task, not about how to answer.
        tool: The learning is a tool lesson (its blocking issue names a tool).
    """
    if kind not in {"profile", "user_playbook"} or tool or track in {"tool_failure", "recipe", "expert"}:
        return frozenset()
    text = content.strip()
    found = facets(text)
    if not found or _NOT_SELF.match(text):
        return frozenset()
    if any(f.name == "accessibility" for f in found):
        return found
    if _SCOPE.search(text) or not _framed(kind, text):
        return frozenset()
    return found


def _framed(kind: str, text: str) -> bool:
    """Whether the text states how to answer (an instruction, or a preference of the user)."""
    if kind == "profile":
        return _PREFERENCE_LEAD.match(text) is not None
    from reflexio.learn.rules.text import base_form, words  # here: learn.rules imports this module

    body = _IMPERATIVE_LEAD.sub("", text)
    first = words(body)[:1]
    return bool(first) and base_form(first[0]) == first[0]


def conflicting(new: Iterable[Facet], old: Iterable[Facet]) -> frozenset[str]:
    """One-valued facets the two sets give different values (a unit system counts against any
    unit of another system)."""
    out: set[str] = set()
    old_list = list(old)
    for a in new:
        for b in old_list:
            if (
                (a.name == b.name and a.name in ONE_VALUED and a.value and b.value and a.value != b.value)
                or _system_clash(a, b)
                or _system_clash(b, a)
            ):
                out.add(a.name)
    return frozenset(out)


def _system_clash(a: Facet, b: Facet) -> bool:
    return a.name == "units:system" and b.name.startswith("units:") and bool(b.value) and a.value != b.value
