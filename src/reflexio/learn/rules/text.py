"""Small text operations the rule extractor is built from: split, strip, inflect, re-voice.

The rule extractor rewrites what users say into learnings ("I only ever use Linux" → "Only ever
uses Linux"; "you should have asked me first" → "Ask the user first"). Those rewrites need a
handful of operations that no tagger is needed for when the vocabulary is closed: sentence and
clause splitting that leaves file names and versions alone, verb forms from the verb list,
pronoun swaps, and stemmed word sets for comparing two texts. Each is a pure function.
"""

from __future__ import annotations

import re
from functools import lru_cache

from reflexio import ranking
from reflexio.learn.rules.lexicon import IRREGULAR_PAST, LIGHT_WORDS, THIRD_PERSON_IRREGULAR, VERBS

__all__ = [
    "base_form",
    "capitalize",
    "clauses",
    "clean",
    "finish",
    "gerund_to_base",
    "has_phrase",
    "informative",
    "is_past",
    "overlap",
    "participle",
    "same_stem",
    "sentences",
    "shorten",
    "swap_to_third",
    "swap_to_user",
    "third_person",
    "trim",
    "words",
]

_QUOTES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"', "\u2014": " - "})
_SPACES = re.compile(r"\s+")
# A sentence ends at . ! ? or a line break, when followed by space and not inside "e.g.".
_SENTENCE_END = re.compile(r"(?<!\be\.g\.)(?<!\bi\.e\.)(?<!\bvs\.)(?<=[.!?])\s+|\n+")
_CLAUSE_SPLIT = re.compile(r"\s*[;:]\s+|\s+-\s+|,\s+(?=(?:but|and|so|because|since|as|though|although)\b)")
_WORD = re.compile(r"[a-z0-9_]+(?:'[a-z]+)?")


_LOWER_I = re.compile(r"(?<![\w.'])i(?=(?:'[a-z]+)?\b)(?![.\w])")


def clean(text: str) -> str:
    """Typographic quotes and dashes made plain, a lone "i" as "I", runs of spaces collapsed."""
    lines = (_SPACES.sub(" ", line).strip() for line in text.translate(_QUOTES).splitlines())
    return _LOWER_I.sub("I", "\n".join(line for line in lines if line))


def sentences(text: str) -> list[str]:
    """The sentences of a message, ending punctuation kept (file names stay whole)."""
    return [s.strip() for s in _SENTENCE_END.split(clean(text)) if s and s.strip()]


def clauses(sentence: str) -> list[str]:
    """A sentence cut at semicolons, colons, dashes and ", but/and/so/because ..." joints."""
    return [c.strip(" ,") for c in _CLAUSE_SPLIT.split(sentence) if c and c.strip(" ,")]


def words(text: str) -> list[str]:
    """Lower-cased words, apostrophes kept inside ("don't")."""
    return _WORD.findall(text.lower().translate(_QUOTES))


def has_phrase(text: str, phrases: tuple[str, ...] | frozenset[str]) -> bool:
    """Whether any phrase occurs in ``text`` on word boundaries (case-insensitive).

    A phrase ending in a comma ("no,") only matches with its comma, so "No," counts and
    "no Macs" does not.
    """
    plain, comma = _phrase_patterns(phrases if isinstance(phrases, tuple) else tuple(sorted(phrases)))
    if plain is not None and plain.search(" " + " ".join(words(text)) + " "):
        return True
    return comma is not None and comma.search(" " + text.lower() + " ") is not None


@lru_cache(maxsize=256)
def _phrase_patterns(phrases: tuple[str, ...]) -> tuple[re.Pattern[str] | None, re.Pattern[str] | None]:
    """One pattern for a list's plain phrases (matched on words) and one for its "x," phrases."""
    plain = [re.escape(p.strip()) for p in phrases if not p.endswith(",")]
    comma = [re.escape(p[:-1]) for p in phrases if p.endswith(",")]
    return (
        re.compile(r" (?:" + "|".join(plain) + r") ") if plain else None,
        re.compile(r" (?:" + "|".join(comma) + r"),") if comma else None,
    )


@lru_cache(maxsize=1)
def _light_stems() -> frozenset[str]:
    return frozenset(ranking.tokenize(" ".join(LIGHT_WORDS)))


def informative(text: str) -> frozenset[str]:
    """Stemmed words of ``text`` that can carry a topic (stop words and light words removed)."""
    return frozenset(ranking.word_set(text) - _light_stems())


def same_stem(a: str, b: str) -> bool:
    """Two stems of one word: equal, or one a prefix (4 letters or more) of the other.

    The stemmer leaves "waived" as "waiv" and "waiver" as "waiver"; a reader of topics wants
    them to meet.
    """
    short, long = sorted((a, b), key=len)
    return short == long or (len(short) >= 4 and long.startswith(short))


def overlap(stems: frozenset[str], others: frozenset[str]) -> frozenset[str]:
    """The stems of ``stems`` that meet one of ``others`` (``same_stem``)."""
    return frozenset(a for a in stems if a in others or any(same_stem(a, b) for b in others))


def capitalize(text: str) -> str:
    """First letter upper-cased, the rest untouched ("iPhone" stays as typed past the start)."""
    return text[:1].upper() + text[1:] if text else text


def trim(text: str) -> str:
    """Trimmed of trailing punctuation and filler ("please", "thanks"), case untouched."""
    out = text.strip()
    for _ in range(3):
        out = re.sub(r"[\s,;:.!?]+$", "", out)
        out = re.sub(r"(?:,\s*|\s+)(?:please|pls|thanks|thank you|ok|okay)$", "", out, flags=re.I)
    return out.strip()


def finish(text: str) -> str:
    """Trimmed like ``trim`` and with its first letter capitalised."""
    return capitalize(trim(text))


def shorten(text: str, limit: int = 160) -> str:
    """At most ``limit`` characters, cut at a word boundary with an ellipsis."""
    flat = _SPACES.sub(" ", text).strip()
    if len(flat) <= limit:
        return flat
    return flat[: limit - 1].rsplit(" ", 1)[0] + "…"


def is_past(word: str) -> bool:
    """Whether ``word`` looks like a past tense or participle of a known verb."""
    w = word.lower()
    if w in IRREGULAR_PAST and IRREGULAR_PAST[w] != w:
        return True
    return w.endswith("ed") and base_form(w) is not None


def base_form(word: str) -> str | None:
    """The base form of a known verb from any of its forms ("ran"→"run", "checks"→"check").

    Returns None when ``word`` is not a form of a verb in the list.
    """
    w = word.lower()
    if w in VERBS:
        return w
    if w in IRREGULAR_PAST:
        return IRREGULAR_PAST[w]
    for candidate in _candidates(w):
        if candidate in VERBS:
            return candidate
    return None


def _candidates(w: str) -> list[str]:
    out: list[str] = []
    if w.endswith(("ied", "ies")):
        out.append(w[:-3] + "y")
    if w.endswith("ed"):
        out += [w[:-2], w[:-1], w[:-3]]
    if w.endswith("ing"):
        out += [w[:-3], w[:-3] + "e", w[:-4]]
    if w.endswith("es"):
        out.append(w[:-2])
    if w.endswith("s"):
        out.append(w[:-1])
    return out


def gerund_to_base(phrase: str) -> str:
    """ "asking me for X" → "ask me for X" when the first word is a gerund of a known verb."""
    head, _, rest = phrase.partition(" ")
    base = base_form(head) if head.lower().endswith("ing") else None
    return f"{base} {rest}".strip() if base else phrase


def third_person(verb: str) -> str:
    """Third-person singular of a base-form verb ("use"→"uses", "fly"→"flies")."""
    v = verb.lower()
    if v in THIRD_PERSON_IRREGULAR:
        return THIRD_PERSON_IRREGULAR[v]
    if re.search(r"[^aeiou]y$", v):
        return v[:-1] + "ies"
    if re.search(r"(s|sh|ch|x|z|o)$", v):
        return v + "es"
    return v + "s"


_PARTICIPLES = {
    "choose": "chosen",
    "give": "given",
    "show": "shown",
    "send": "sent",
    "buy": "bought",
    "make": "made",
    "put": "put",
    "sell": "sold",
    "bring": "brought",
    "write": "written",
    "take": "taken",
}


def participle(verb: str) -> str:
    """Past participle of a base-form verb ("suggest"→"suggested", "show"→"shown")."""
    v = verb.lower()
    if v in _PARTICIPLES:
        return _PARTICIPLES[v]
    if v.endswith("e"):
        return v + "d"
    if re.search(r"[^aeiou]y$", v):
        return v[:-1] + "ied"
    if re.search(r"[^aeiou][aeiou][bdgmnpt]$", v) and len(v) <= 4:
        return v + v[-1] + "ed"
    return v + "ed"


# Pronoun swaps: first person of the user becomes "the user" (rules) or "they" (facts).
def _table(pairs: list[tuple[str, str]]) -> list[tuple[re.Pattern[str], str]]:
    case_sensitive = {r"\bI\b", r"\bus\b"}
    return [(re.compile(p, 0 if p in case_sensitive else re.IGNORECASE), r) for p, r in pairs]


_TO_USER = _table(
    [
        (r"\bI'm\b", "the user is"),
        (r"\bI've\b", "the user has"),
        (r"\bI'd\b", "the user would"),
        (r"\bI'll\b", "the user will"),
        (r"\bI am\b", "the user is"),
        (r"\bmyself\b", "the user"),
        (r"\bmine\b", "the user's"),
        (r"\bmy\b", "the user's"),
        (r"\bme\b", "the user"),
        (r"\bI\b", "the user"),
        (r"\bours\b", "the user's"),
        (r"\bour\b", "the user's"),
        (r"\bus\b", "the user"),
    ]
)
_TO_THIRD = _table(
    [
        (r"\bI'm\b", "they're"),
        (r"\bI've\b", "they've"),
        (r"\bI'd\b", "they'd"),
        (r"\bI'll\b", "they'll"),
        (r"\bI am\b", "they are"),
        (r"\bmyself\b", "themselves"),
        (r"\bmine\b", "theirs"),
        (r"\bmy\b", "their"),
        (r"\bme\b", "them"),
        (r"\bI\b", "they"),
        (r"\bours\b", "theirs"),
        (r"\bour\b", "their"),
        (r"\bus\b", "them"),
        (r"\bwe\b", "they"),
    ]
)


def _swap(text: str, table: list[tuple[re.Pattern[str], str]]) -> str:
    out = text
    for pattern, repl in table:
        out = pattern.sub(repl, out)
    return out


def swap_to_user(text: str) -> str:
    """First person of the user's words re-voiced as "the user" (for rules the agent reads)."""
    return _swap(text, _TO_USER)


def swap_to_third(text: str) -> str:
    """First person re-voiced as "they"/"their" (for situations and facts)."""
    return _swap(text, _TO_THIRD)
