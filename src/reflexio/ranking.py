"""Ranking math for retrieval: tokens, fusion, thresholds, near-duplicates, token budgets.

Pure functions with no I/O, shared by every storage backend and by the service, so ranking
behaves the same whichever backend produced the candidates and is tested once.

Scores. Every candidate carries both arms' raw scores (backends compute the cosine of every
full-text hit and the BM25 of every vector hit), so fusion never guesses a missing rank:

* ``fused_score`` (the default, "calibrated" fusion) mixes the cosine similarity with the
  full-text *share* (BM25 over the best BM25 the query could reach, absent terms included),
  giving a relevance in [0, 1] that a threshold can be applied to. The share counts only as
  far as it rises above the share of the scope's ``FTS_FLOOR_RANK``-th full-text hit, and the
  full-text arm weighs only as much as the scope's best hit rises above that floor, so that
  words many rows of a scope share cannot outvote a strong semantic match (see
  ``fused_score`` for the measurements);
* ``rrf_scores`` is reciprocal-rank fusion (k=60), kept for comparison in the benchmarks:
  on LoCoMo it retrieves less than the calibrated fusion with either embedder
  (bench/results/locomo-*-rrf.json against locomo-*.json), which sees how far apart two
  candidates' scores are rather than only their order.

After fusion, ``cohesion_boost`` lifts the siblings of the best hits: learnings extracted from
the same request as a strong match (see its docstring for why and what it measured), and
``seat_leaders`` keeps the vector arm's first hit among the first results of a hybrid search.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TypeVar

import numpy as np
import Stemmer

from reflexio.models.prompt import estimate_tokens

__all__ = [
    "BM25_B",
    "BM25_K1",
    "COHESION_LEADERS",
    "COHESION_WEIGHT",
    "DEFAULT_VECTOR_WEIGHT",
    "FTS_FLOOR_RANK",
    "LEADER_SLOTS",
    "FusionWeights",
    "bm25_idf",
    "cohesion_boost",
    "collapse_near_duplicates",
    "estimate_tokens",
    "fts_spread",
    "fused_score",
    "fused_scores",
    "lexical_evidence",
    "pack_to_budget",
    "query_terms",
    "rrf_scores",
    "seat_leaders",
    "tokenize",
]

# Learnings are one or two sentences, where a repeated word or a few extra words say little:
# saturate term frequency early (k1) and normalise length gently (b). Tuned on LoCoMo
# (bench/locomo.py, conversations 0-2, checked on 3-4) against the textbook k1=1.2, b=0.75;
# the figures are in bench/results/design-figures.md.
BM25_K1 = 0.5
BM25_B = 0.3
RRF_K = 60
# The cosine arm counts a little less than the BM25 arm: with wordllama it is the weaker ranker
# on its own, and MiniLM's hybrid barely moves between 0.5 and 0.4 (bench/results/design-figures.md).
DEFAULT_VECTOR_WEIGHT = 0.4
# Cohesion: how far a strong hit lifts the learnings extracted with it, and how many of the
# best hits lead. Tuned on LoCoMo's first three conversations, checked on the other two
# (bench/locomo.py --cohesion; bench/results/design-figures.md).
COHESION_WEIGHT = 0.3
COHESION_LEADERS = 5
# A full-text score that this many rows of a scope reach says nothing about which of them is
# meant: shares count above the share of the scope's FTS_FLOOR_RANK-th full-text hit. 20 is
# about the size of the groups of rows that genuinely share a query's words (the facts of one
# LoCoMo session share its date): a floor at the 10th hit cost LoCoMo recall, one at the 40th
# let the common words of bench/needle's paraphrases back in (bench/results/needle.md).
FTS_FLOOR_RANK = 20

# The vector arm's first hit is served within the first LEADER_SLOTS results of a hybrid
# search: a paraphrase that the vector arm ranks first by a small margin was otherwise buried
# by rows matching half of the question's words (bench/needle's "noise" and "twins"). The
# full-text arm's first hit is not seated: its lead already weighs in the fused score as far
# as it rises above the scope's floor, and seating it too cost LoCoMo Recall@10 with WordLlama
# (bench/results/needle-fusion-attempts.md).
LEADER_SLOTS = 3

T = TypeVar("T")

_WORD = re.compile(r"\w+", re.UNICODE)

# Function words carry no topic; dropping them keeps BM25 from matching every row on "the".
STOPWORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "s",
        "t",
        "d",
        "ll",
        "m",
        "o",
        "re",
        "ve",
        "y",
        "let",
        "lets",
        "us",
        "also",
        "get",
        "got",
        "ok",
        "okay",
        "hey",
        "hi",
        "hello",
        "please",
        "thanks",
        "thank",
        "yes",
        "yeah",
    ]
)


@lru_cache(maxsize=1)
def _stemmer() -> Stemmer.Stemmer:
    return Stemmer.Stemmer("english")


def tokenize(text: str) -> list[str]:
    """Split text into stemmed, lower-cased content words (stop words removed).

    Unicode-aware, so non-ASCII queries are searchable; every backend that indexes text in
    Python uses exactly this function for documents and queries alike. Numbers are kept:
    years, dates, versions and ports are often the most specific words of a query.
    """
    words = [w for w in _WORD.findall(text.lower()) if w not in STOPWORDS]
    return list(_stemmer().stemWords(words)) if words else []


def query_terms(text: str) -> list[str]:
    """Distinct search terms of a query, in first-seen order."""
    return list(dict.fromkeys(tokenize(text)))


def raw_words(text: str) -> list[str]:
    """Distinct lower-cased content words, unstemmed (for backends that stem themselves)."""
    return list(dict.fromkeys(w for w in _WORD.findall(text.lower()) if w not in STOPWORDS))


def bm25_idf(doc_freq: int, n_docs: int) -> float:
    """Okapi BM25 inverse document frequency (the "+1" variant, never negative)."""
    return math.log1p((n_docs - doc_freq + 0.5) / (doc_freq + 0.5))


def bm25_ceiling(idfs: Iterable[float]) -> float:
    """The BM25 a document would reach matching every query term at saturation.

    Pass the IDF of every query term, absent ones too (at the IDF of a term one row holds):
    a query matched on one common word of three is matched on a third of it, not all of it.
    """
    return float(sum(idfs)) * (BM25_K1 + 1.0)


@dataclass(frozen=True, slots=True)
class FusionWeights:
    """How much each arm counts in the fused score (normalised to sum to one)."""

    vector: float = DEFAULT_VECTOR_WEIGHT
    fts: float = 1.0 - DEFAULT_VECTOR_WEIGHT

    def normalised(self) -> tuple[float, float]:
        """(vector, fts) weights summing to one."""
        total = self.vector + self.fts
        if total <= 0:
            return 0.5, 0.5
        return self.vector / total, self.fts / total


def fts_spread(norms: Sequence[float] | np.ndarray) -> tuple[float, float]:
    """(best, floor) of a scope's full-text shares: the largest, and the ``FTS_FLOOR_RANK``-th
    largest (0 when fewer rows match), for ``fused_score``'s ``fts_best`` and ``fts_floor``."""
    values = np.asarray(norms, dtype=np.float64)
    values = values[values > 0]
    if len(values) == 0:
        return 0.0, 0.0
    best = float(values.max())
    if len(values) < FTS_FLOOR_RANK:
        return best, 0.0
    return best, float(np.partition(values, len(values) - FTS_FLOOR_RANK)[len(values) - FTS_FLOOR_RANK])


def lexical_evidence(share: float, floor: float) -> float:
    """How far a full-text share rises above the scope's floor, rescaled to [0, 1]."""
    if floor >= 1.0:
        return 0.0
    return max(0.0, min(1.0, share) - floor) / (1.0 - floor)


def fused_score(
    vector_score: float | None,
    fts_norm: float | None,
    weights: FusionWeights = FusionWeights(),
    *,
    fts_best: float | None = None,
    fts_floor: float = 0.0,
) -> float:
    """Calibrated fusion of a cosine similarity and a full-text share, in [0, 1].

    With both arms, the full-text arm counts what a row's share has above ``fts_floor`` (the
    share of the scope's ``FTS_FLOOR_RANK``-th full-text hit), relative to what the scope's
    best hit has (``fts_best``), and weighs in proportion to that best: a scope whose best
    lexical match is one common word gives the full-text arm next to no say, and a row that
    only shares the words of many others gets none. The form is the weighted mean

        (w_v * cosine + w_f * e) / (w_v + w_f * q),  e = evidence(share), q = evidence(best)

    which is the plain mean when the best match is full (q = 1) and the cosine when nothing
    stands out lexically (q = 0). Without the floor and the proportional weight, matches on
    words like "family", "new" or "person" outranked paraphrases that the vector arm ranked
    first, and hybrid lost a third of bench/needle's planted facts that one arm found alone;
    the results files (bench/results/needle.md, locomo-*.json) hold the before and after.

    Args:
        vector_score: Cosine similarity of query and document (None when the arm is off).
        fts_norm: BM25 divided by the query's BM25 ceiling, in [0, 1] (None when off).
        weights: Relative weight of the two arms.
        fts_best: The best ``fts_norm`` in the row's scope; None counts the share in full,
            as if the best were a full match.
        fts_floor: The ``fts_norm`` of the scope's ``FTS_FLOOR_RANK``-th full-text hit (0
            when fewer rows match).

    Returns:
        The fused score; with one arm, that arm's score (a missing arm does not dilute the
        other).
    """
    if vector_score is None and fts_norm is None:
        return 0.0
    if fts_norm is None:
        return _unit(vector_score)
    if vector_score is None:
        return _unit(fts_norm)
    wv, wf = weights.normalised()
    best = 1.0 if fts_best is None else lexical_evidence(fts_best, fts_floor)
    evidence = min(lexical_evidence(fts_norm, fts_floor), best)
    total = wv + wf * best
    return (wv * _unit(vector_score) + wf * evidence) / total if total > 0 else 0.0


def _unit(x: float | None) -> float:
    return 0.0 if x is None else min(1.0, max(0.0, x))


def fused_scores(
    vector_scores: np.ndarray | None,
    fts_norms: np.ndarray | None,
    weights: FusionWeights = FusionWeights(),
    *,
    fts_best: float | None = None,
    fts_floor: float = 0.0,
) -> np.ndarray:
    """`fused_score` of many candidates of one scope at once; NaN marks a missing vector score.

    Backends with an in-process index use it to drop candidates under the search threshold
    before they load the rows, which is most of a search's cost.
    """
    if fts_norms is None:
        if vector_scores is None:
            return np.zeros(0, dtype=np.float64)
        cosines: np.ndarray = np.clip(np.nan_to_num(vector_scores, nan=0.0), 0.0, 1.0)
        return cosines
    share: np.ndarray = np.clip(fts_norms, 0.0, 1.0)
    if vector_scores is None:
        return share
    wv, wf = weights.normalised()
    best = 1.0 if fts_best is None else lexical_evidence(fts_best, fts_floor)
    total = wv + wf * best
    if total <= 0 or fts_floor >= 1.0:
        evidence = np.zeros_like(share)
    else:
        evidence = np.minimum(np.maximum(share - fts_floor, 0.0) / (1.0 - fts_floor), best)
    missing = np.isnan(vector_scores)
    cosine = np.clip(np.where(missing, 0.0, vector_scores), 0.0, 1.0)
    mixed = (wv * cosine + wf * evidence) / total if total > 0 else np.zeros_like(share)
    out: np.ndarray = np.where(missing, share, mixed)
    return out


def rrf_scores(
    ranks: Sequence[tuple[int | None, int | None]],
    k: int = RRF_K,
    weights: FusionWeights = FusionWeights(),
) -> list[float]:
    """Reciprocal-rank fusion of (vector rank, fts rank) pairs, scaled to [0, 1].

    A missing rank contributes nothing. The best possible score (rank 1 in both arms) maps
    to 1.0 so the numbers read like the calibrated scores.
    """
    wv, wf = weights.normalised()
    best = (wv + wf) / (k + 1)
    out = []
    for vector_rank, fts_rank in ranks:
        s = 0.0
        if vector_rank is not None:
            s += wv / (k + vector_rank)
        if fts_rank is not None:
            s += wf / (k + fts_rank)
        out.append(s / best)
    return out


def cohesion_boost(
    scores: Sequence[float],
    groups: Sequence[str],
    *,
    weight: float = COHESION_WEIGHT,
    leaders: int = COHESION_LEADERS,
) -> list[float]:
    """Lift each candidate toward 1 by the best leading score of its group.

    The cluster hypothesis, applied to where learnings come from: learnings extracted from
    one request (``groups``, empty for none) were learned from one stretch of conversation,
    so when one of them answers a query well its siblings are likelier to matter than their
    own words show. Evidence for a question usually sits in one conversation: on LoCoMo the
    lift raises hybrid recall on tuning and held-out conversations alike without lowering
    MRR, while spreading results across sessions instead lowered recall (bench/results/design-figures.md).

    The ``leaders`` best-scored candidates (ties keep input order) each give their group a
    lift of ``weight`` times their score; a candidate takes its group's largest lift ``b``
    as ``s + (1 - s) * b``, which stays in [0, 1] and never lowers a score. A candidate
    with no group is never lifted, nor lifts others.
    """
    if weight <= 0 or leaders <= 0:
        return list(scores)
    order = sorted(range(len(scores)), key=lambda i: -scores[i])[:leaders]
    lift: dict[str, float] = {}
    for i in order:
        if groups[i]:
            lift[groups[i]] = max(lift.get(groups[i], 0.0), weight * scores[i])
    return [s + (1.0 - s) * lift.get(g, 0.0) if g else s for s, g in zip(scores, groups, strict=True)]


def seat_leaders(
    scores: Sequence[float], leaders: Sequence[bool], slots: int = LEADER_SLOTS
) -> list[tuple[int, float]]:
    """Serve each leader within the first ``slots`` places: ``(index, score)`` in served order.

    ``scores`` come best first; ``leaders`` marks the rows to seat (a hybrid search marks
    the vector arm's first hit; see ``LEADER_SLOTS``). Score fusion weighs
    how far apart two candidates are, so an arm's clear first choice can sink under rows the
    other arm likes a little (a paraphrase the vector arm ranks first, under rows that share
    two of the question's four words and are nearly as close in meaning); rank fusion would
    keep it near the top, and so does this, for the first hits only, leaving the order of
    everything else to the scores. A leader moved up takes the score of the best row it
    moves past, so scores still fall down the list.
    """
    pending = [i for i, leads in enumerate(leaders) if leads][:slots]
    served: list[tuple[int, float]] = []
    placed: set[int] = set()
    nxt = 0  # the best row not yet served
    while len(served) < len(scores):
        while nxt in placed:
            nxt += 1
        if pending and slots - len(served) <= len(pending):  # the last places a leader may take
            i = pending.pop(0)
            served.append((i, scores[nxt] if nxt < i else scores[i]))
        else:
            i = nxt
            served.append((i, scores[i]))
            if pending and pending[0] == i:
                pending.pop(0)
        placed.add(i)
    return served


@lru_cache(maxsize=16_384)
def word_set(text: str) -> frozenset[str]:
    """Stemmed content words of a text, for cheap overlap tests (cached: learnings recur)."""
    return frozenset(tokenize(text))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """Jaccard overlap of two word sets (1.0 for two empty sets)."""
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def collapse_near_duplicates(
    items: Sequence[T],
    texts: Sequence[str],
    vectors: Sequence[np.ndarray | None],
    *,
    cosine_limit: float = 0.95,
    overlap_limit: float = 0.85,
    keep: int | None = None,
) -> list[T]:
    """Keep the first of each group of near-identical items (items come best first).

    Two items are duplicates when their vectors' cosine exceeds ``cosine_limit`` or their
    word sets overlap beyond ``overlap_limit``; either catches restatements of one fact.
    Items are compared only with those already kept, and the scan stops once ``keep`` are
    kept, so the cost follows what is returned, not the size of the pool.
    """
    kept: list[int] = []
    for i in range(len(items)):
        if keep is not None and len(kept) >= keep:
            break
        if not any(_near(i, j, texts, vectors, cosine_limit, overlap_limit) for j in kept):
            kept.append(i)
    return [items[i] for i in kept]


def _near(
    i: int,
    j: int,
    texts: Sequence[str],
    vectors: Sequence[np.ndarray | None],
    cosine_limit: float,
    overlap_limit: float,
) -> bool:
    vi, vj = vectors[i], vectors[j]
    if vi is not None and vj is not None and vi.shape == vj.shape and float(np.dot(vi, vj)) > cosine_limit:
        return True
    return jaccard(word_set(texts[i]), word_set(texts[j])) > overlap_limit


def pack_to_budget(items: Sequence[T], sizes: Sequence[int], max_tokens: int | None) -> list[T]:
    """Take items in order while they fit in ``max_tokens`` (skipping ones that don't).

    A budget of None keeps everything; an item larger than the whole budget is skipped
    rather than truncated, because half a rule can mislead an agent.
    """
    if max_tokens is None:
        return list(items)
    out: list[T] = []
    used = 0
    for item, size in zip(items, sizes, strict=True):
        if used + size <= max_tokens:
            out.append(item)
            used += size
    return out


def normalise_bm25(raw: float, ceiling: float) -> float:
    """BM25 as a share of what the query could reach, in [0, 1]."""
    if ceiling <= 0 or raw <= 0:
        return 0.0
    return min(1.0, raw / ceiling)


def squash(x: float) -> float:
    """Map a non-negative unbounded score (e.g. PostgreSQL ts_rank) into [0, 1)."""
    return 0.0 if x <= 0 else x / (x + 1.0)
