"""What enters the in-process search index and what comes out of it.

``IndexRow`` is the projection of a learning the index keeps (ids, scope columns, tokens and
vector, no text); ``Hit`` is one candidate it returns, with both arms' scores and ranks, turned
into the storage protocol's ``Candidate`` once its row is read.
"""

from __future__ import annotations

from dataclasses import dataclass

from reflexio import ranking
from reflexio.filters import Candidate
from reflexio.records import Approval, Learning, LearningKind, LearningStatus, Vector

__all__ = ["Hit", "IndexRow"]


@dataclass(frozen=True, slots=True)
class IndexRow:
    """What the index keeps of a learning (no text beyond its tokens)."""

    id: int
    kind: LearningKind
    user_id: str | None
    agent_version: str
    playbook_name: str
    request_id: str
    profile_id: str | None
    status: LearningStatus
    approval: Approval | None
    source: str | None
    tags: tuple[str, ...]
    created_at: int
    updated_at: int
    expires_at: int
    embed_model: str
    tokens: tuple[str, ...]
    vector: Vector | None

    @classmethod
    def of(cls, row: Learning) -> IndexRow:
        """Project a learning onto the indexed fields."""
        return cls(
            id=row.id,
            kind=row.kind,
            user_id=row.user_id,
            agent_version=row.agent_version,
            playbook_name=row.playbook_name,
            request_id=row.request_id,
            profile_id=row.profile_id,
            status=row.status,
            approval=row.approval,
            source=row.source,
            tags=tuple(row.tags),
            created_at=row.created_at,
            updated_at=row.updated_at,
            expires_at=row.expires_at,
            embed_model=row.embed_model,
            tokens=tuple(ranking.tokenize(row.search_text)),
            vector=row.embedding,
        )


@dataclass(slots=True)
class Hit:
    """A candidate from the index: storage id plus both arms' scores and ranks."""

    id: int
    fts_score: float | None
    fts_norm: float | None
    fts_rank: int | None
    vector_score: float | None
    vector_rank: int | None
    fts_best: float | None = None
    fts_floor: float = 0.0

    def candidate(self, learning: Learning, filter_index: int) -> Candidate:
        """This hit as the storage protocol's ``Candidate``, carrying its row."""
        return Candidate(
            learning=learning,
            filter_index=filter_index,
            fts_score=self.fts_score,
            fts_norm=self.fts_norm,
            fts_rank=self.fts_rank,
            vector_score=self.vector_score,
            vector_rank=self.vector_rank,
            fts_best=self.fts_best,
            fts_floor=self.fts_floor,
        )
