"""Filters: what a storage query selects, expressed as data.

One ``LearningFilter`` covers every way learnings are selected (by kind, scope, status,
approval, tags, time); backends compile it to SQL or to a numpy mask, and ``matches`` is the
reference semantics every backend must agree with (the contract suite checks that).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from reflexio.ranking import FusionWeights
from reflexio.records import (
    Approval,
    InteractionRecord,
    Learning,
    LearningKind,
    LearningStatus,
    RequestRecord,
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

    def matches(self, row: Learning) -> bool:
        """Reference semantics of the filter, evaluated on one row."""
        return all(check(self, row) for check in _CHECKS)


def _kind(f: LearningFilter, r: Learning) -> bool:
    return not f.kinds or r.kind in f.kinds


def _ids(f: LearningFilter, r: Learning) -> bool:
    return f.ids is None or r.id in f.ids


def _profile_ids(f: LearningFilter, r: Learning) -> bool:
    return f.profile_ids is None or r.profile_id in f.profile_ids


def _scope(f: LearningFilter, r: Learning) -> bool:
    return (
        (f.user_id is None or r.user_id == f.user_id)
        and (f.agent_version is None or r.agent_version == f.agent_version)
        and (f.playbook_name is None or r.playbook_name == f.playbook_name)
        and (f.request_id is None or r.request_id == f.request_id)
    )


def _status(f: LearningFilter, r: Learning) -> bool:
    if f.statuses is not None and r.status not in f.statuses:
        return False
    if f.approvals is not None and r.kind is LearningKind.AGENT_PLAYBOOK:
        return r.approval in f.approvals
    return True


def _source(f: LearningFilter, r: Learning) -> bool:
    return f.source is None or (r.source or "").lower() == f.source.lower()


def _tags(f: LearningFilter, r: Learning) -> bool:
    return f.tags is None or bool(set(f.tags) & set(r.tags))


def _times(f: LearningFilter, r: Learning) -> bool:
    return (
        (f.created_after is None or r.created_at >= f.created_after)
        and (f.created_before is None or r.created_at <= f.created_before)
        and (f.updated_after is None or r.updated_at >= f.updated_after)
        and (f.updated_before is None or r.updated_at <= f.updated_before)
        and (f.active_at is None or r.expires_at > f.active_at)
        and (f.expired_at is None or r.expires_at <= f.expired_at)
    )


_CHECKS = (_kind, _ids, _profile_ids, _scope, _status, _source, _tags, _times)


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

    def matches(self, row: InteractionRecord) -> bool:
        """Reference semantics of the filter, evaluated on one row."""
        return (
            (self.ids is None or row.id in self.ids)
            and (self.user_id is None or row.user_id == self.user_id)
            and (self.request_ids is None or row.request_id in self.request_ids)
            and (self.session_id is None or row.session_id == self.session_id)
            and (self.after_id is None or row.id > self.after_id)
            and (self.up_to_id is None or row.id <= self.up_to_id)
            and (self.created_after is None or row.created_at >= self.created_after)
            and (self.created_before is None or row.created_at <= self.created_before)
        )


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

    def matches(self, row: RequestRecord) -> bool:
        """Reference semantics of the filter, evaluated on one row."""
        return (
            (self.request_ids is None or row.request_id in self.request_ids)
            and (self.user_id is None or row.user_id == self.user_id)
            and (self.session_id is None or row.session_id == self.session_id)
            and (self.source is None or row.source.lower() == self.source.lower())
            and (self.agent_version is None or row.agent_version == self.agent_version)
            and (self.created_after is None or row.created_at >= self.created_after)
            and (self.created_before is None or row.created_at <= self.created_before)
        )


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
            ``pool``-th best fused score of their filter (ties are kept).
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
