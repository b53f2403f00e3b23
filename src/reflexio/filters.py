"""Filters: what a storage query selects, expressed as data.

One ``LearningFilter`` covers every way learnings are selected (by kind, scope, status,
approval, tags, time); storage compiles it to SQL (``storage.queries``) and the in-process
search index to a numpy mask. Its reference semantics, on one row, is the contract suite's
oracle (``tests/storage/filter_oracle.py``): every engine must agree with it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from reflexio.ranking import FusionWeights
from reflexio.records import (
    Approval,
    Learning,
    LearningKind,
    LearningStatus,
    Vector,
)

__all__ = [
    "ACTIVE_STATUSES",
    "Candidate",
    "CandidateQuery",
    "InteractionFilter",
    "LearningFilter",
    "RequestFilter",
    "SearchMode",
]

#: Statuses that are not tombstones: what "all" means when a caller gives no status filter.
ACTIVE_STATUSES: tuple[LearningStatus, ...] = (
    LearningStatus.CURRENT,
    LearningStatus.PENDING,
    LearningStatus.ARCHIVED,
    LearningStatus.ARCHIVE_IN_PROGRESS,
)


class SearchMode(StrEnum):
    """Which retrieval arms a search uses."""

    FTS = "fts"
    VECTOR = "vector"
    HYBRID = "hybrid"


@dataclass(frozen=True, slots=True, kw_only=True)
class LearningFilter:
    """Selects learnings. Every field left at its default means "any".

    Attributes:
        kinds: Learning kinds to include.
        ids: Storage ids.
        profile_ids: Profile wire ids.
        user_id: Owner; agent playbooks have none, so a user filter excludes them.
        agent_version: Exact agent version.
        playbook_name: Exact playbook (extractor) name.
        statuses: Lifecycle statuses to include.
        approvals: Approval states; only constrains agent playbooks.
        source: Source label, compared case-insensitively.
        tags: Include rows carrying at least one of these tags.
        request_id: The request a learning was generated from.
        created_after: Inclusive lower bound on ``created_at``.
        created_before: Inclusive upper bound on ``created_at``.
        updated_after: Inclusive lower bound on ``updated_at``.
        updated_before: Inclusive upper bound on ``updated_at``.
        active_at: Only rows not expired at this time (``expires_at > active_at``).
        expired_at: Only rows expired by this time (``expires_at <= expired_at``).
    """

    kinds: tuple[LearningKind, ...] = ()
    ids: tuple[int, ...] | None = None
    profile_ids: tuple[str, ...] | None = None
    user_id: str | None = None
    agent_version: str | None = None
    playbook_name: str | None = None
    statuses: tuple[LearningStatus, ...] | None = None
    approvals: tuple[Approval, ...] | None = None
    source: str | None = None
    tags: tuple[str, ...] | None = None
    request_id: str | None = None
    created_after: int | None = None
    created_before: int | None = None
    updated_after: int | None = None
    updated_before: int | None = None
    active_at: int | None = None
    expired_at: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class InteractionFilter:
    """Selects interactions; defaults mean "any"."""

    ids: tuple[int, ...] | None = None
    user_id: str | None = None
    request_ids: tuple[str, ...] | None = None
    session_id: str | None = None
    after_id: int | None = None
    up_to_id: int | None = None
    created_after: int | None = None
    created_before: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestFilter:
    """Selects requests (publish calls); defaults mean "any"."""

    request_ids: tuple[str, ...] | None = None
    user_id: str | None = None
    session_id: str | None = None
    source: str | None = None
    agent_version: str | None = None
    created_after: int | None = None
    created_before: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CandidateQuery:
    """One retrieval: each filter is searched on its own and yields its own candidates.

    Attributes:
        filters: Scopes to search (usually one per learning kind); filtering happens before
            ranking, so an old row that matches is found among any number of newer ones.
        text: The query as typed; backends tokenise it with ``reflexio.ranking``.
        vector: The query embedding, or None for full-text only.
        embed_model: Only vectors made by this model are compared with ``vector``.
        limit: Candidates per filter and per arm.
        mode: Which arms run.
        floor: A calibrated fused score (``reflexio.ranking.fused_score`` with ``weights``)
            under which a candidate may be left out: the caller drops those anyway, and a
            backend that scores before it loads rows saves loading them. None keeps all.
        weights: The fusion weights ``floor`` is measured with.
        pool: With ``floor``: a backend may also leave out candidates scoring below the
            ``pool``-th best fused score of their filter (ties are kept), but never the
            vector arm's first hit (``vector_rank`` 1), which the ranking may serve whatever
            its score (``reflexio.ranking.seat_leaders``).
    """

    filters: tuple[LearningFilter, ...]
    text: str
    vector: Vector | None = None
    embed_model: str = ""
    limit: int = 50
    mode: SearchMode = SearchMode.HYBRID
    floor: float | None = None
    weights: FusionWeights = field(default_factory=FusionWeights)
    pool: int | None = None


@dataclass(slots=True, kw_only=True)
class Candidate:
    """A learning found by at least one arm, with each arm's raw score and rank (1-based)."""

    learning: Learning
    filter_index: int
    fts_score: float | None = None
    fts_norm: float | None = None
    fts_rank: int | None = None
    vector_score: float | None = None
    vector_rank: int | None = None
    #: The best ``fts_norm`` of the filter's scope and its floor (``reflexio.ranking.fts_spread``),
    #: which ``reflexio.ranking.fused_score`` weighs the full-text arm by; None: not measured.
    fts_best: float | None = None
    fts_floor: float = 0.0
    extra: dict[str, float] = field(default_factory=dict)
