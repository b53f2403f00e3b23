"""Ranking math for retrieval: tokens, fusion, thresholds, near-duplicates, token budgets.

Pure functions with no I/O, shared by every storage backend and by the service, so ranking
behaves the same whichever backend produced the candidates and is tested once.

Scores. Every candidate carries both arms' raw scores (backends compute the cosine of every
full-text hit and the BM25 of every vector hit), so fusion never guesses a missing rank:

* ``fused_score`` (the default, "calibrated" fusion) mixes the cosine similarity with the BM25
  score divided by the best BM25 the query could reach, giving a relevance in [0, 1] that a
  threshold can be applied to;
* ``rrf_scores`` is reciprocal-rank fusion (k=60), kept for comparison in the benchmarks:
  on LoCoMo it retrieves less than the calibrated fusion with either embedder
  (bench/results/locomo-*-rrf.json against locomo-*.json), which sees how far apart two
  candidates' scores are rather than only their order.

After fusion, ``cohesion_boost`` lifts the siblings of the best hits: learnings extracted from
the same request as a strong match (see its docstring for why and what it measured).
"""

from __future__ import annotations

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
    "FusionWeights",
    "bm25_idf",
    "cohesion_boost",
    "collapse_near_duplicates",
    "estimate_tokens",
    "fused_score",
    "pack_to_budget",
    "query_terms",
    "rrf_scores",
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


def bm25_idf(doc_freq: int | np.ndarray, n_docs: int) -> np.ndarray:
    """Okapi BM25 inverse document frequency (the "+1" variant, never negative)."""
    df = np.asarray(doc_freq, dtype=np.float64)
    return np.log1p((n_docs - df + 0.5) / (df + 0.5))


def bm25_ceiling(idfs: Iterable[float]) -> float:
    """The BM25 a document would reach matching every query term at saturation."""
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


def fused_score(
    vector_score: float | None, fts_norm: float | None, weights: FusionWeights = FusionWeights()
) -> float:
    """Calibrated fusion of a cosine similarity and a normalised BM25, in [0, 1].

    Args:
        vector_score: Cosine similarity of query and document (None when the arm is off).
        fts_norm: BM25 divided by the query's BM25 ceiling, in [0, 1] (None when off).
        weights: Relative weight of the two arms.

    Returns:
        The weighted mean of the arms that ran; a missing arm does not dilute the other.
    """
    wv, wf = weights.normalised()
    parts: list[tuple[float, float]] = []
    if vector_score is not None:
        parts.append((wv, min(1.0, max(0.0, vector_score))))
    if fts_norm is not None:
        parts.append((wf, min(1.0, max(0.0, fts_norm))))
    if not parts:
        return 0.0
    total_weight = sum(w for w, _ in parts)
    return sum(w * s for w, s in parts) / total_weight


def fused_scores(
    vector_scores: np.ndarray | None, fts_norms: np.ndarray | None, weights: FusionWeights = FusionWeights()
) -> np.ndarray:
    """`fused_score` of many candidates at once; NaN in an array marks an arm missing there.

    Backends with an in-process index use it to drop candidates under the search threshold
    before they load the rows, which is most of a search's cost.
    """
    wv, wf = weights.normalised()
    total: np.ndarray | float = 0.0
    weight: np.ndarray | float = 0.0
    for w, values in ((wv, vector_scores), (wf, fts_norms)):
        if values is None:
            continue
        present = values == values  # NaN is not equal to itself
        total = total + w * np.clip(np.where(present, values, 0.0), 0.0, 1.0)
        weight = weight + w * present
    if isinstance(total, float) or isinstance(weight, float):
        return np.zeros(0, dtype=np.float64)
    out: np.ndarray = np.where(weight > 0, total / np.maximum(weight, 1e-12), 0.0)
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
