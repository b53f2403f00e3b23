"""What an extraction step decided, as data, and how it is applied in one transaction.

Extractors (rule-based or LLM) never write: they return ``Changes``. The job driver applies
them with ``apply_changes`` inside the transaction that also moves the bookmark (and completes
the job), which is what makes learning effects exactly-once; the same transaction queues the
aggregation of every scope whose user playbooks changed (``learn.aggregation_trigger``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from reflexio import telemetry
from reflexio.embed import Embedder
from reflexio.filters import LearningFilter
from reflexio.learn.aggregation_trigger import DEBOUNCE_SECONDS, enqueue_aggregations
from reflexio.records import Audit, Learning, LearningStatus
from reflexio.storage import Storage
from reflexio.storage.learning_writes import with_current_vectors

__all__ = ["Changes", "Supersede", "apply_changes"]


@dataclass(frozen=True, slots=True)
class Supersede:
    """An existing learning replaced by the new learning at ``added[index]``."""

    old_id: int
    index: int
    reason: str = ""


@dataclass(slots=True)
class Changes:
    """Learnings to add, to rewrite in place, and to retire.

    Attributes:
        added: New rows (id 0).
        updated: Existing rows with changed text or fields (kept ids, history recorded).
        superseded: Existing rows replaced by one of ``added``; they become ``superseded``
            tombstones linked to their successor, never deleted.
        archived: Existing rows retired without a successor.
        reason: Why, recorded on every history event.
    """

    added: list[Learning] = field(default_factory=list)
    updated: list[Learning] = field(default_factory=list)
    superseded: list[Supersede] = field(default_factory=list)
    archived: list[int] = field(default_factory=list)
    reason: str = ""

    def __bool__(self) -> bool:
        return bool(self.added or self.updated or self.superseded or self.archived)

    def with_vectors(self, embedder: Embedder) -> Changes:
        """These changes with the new and rewritten learnings embedded (apply them after,
        so the effects transaction does not hold the store's write lock while a model runs)."""
        return replace(
            self,
            added=with_current_vectors(self.added, embedder),
            updated=with_current_vectors(self.updated, embedder),
        )

    def extend(self, other: Changes) -> None:
        """Fold another step's changes into these (indices of ``other`` shift)."""
        offset = len(self.added)
        self.added.extend(other.added)
        self.updated.extend(other.updated)
        self.superseded.extend(Supersede(s.old_id, s.index + offset, s.reason) for s in other.superseded)
        self.archived.extend(other.archived)


def apply_changes(
    tx: Storage, org_id: str, changes: Changes, audit: Audit, *, aggregation_delay: float = DEBOUNCE_SECONDS
) -> list[Learning]:
    """Write ``changes`` through ``tx`` (call inside the job's effects transaction); the
    aggregation of the scopes they touch is queued ``aggregation_delay`` seconds later."""
    with telemetry.span(
        "reflexio.learnings.save",
        **{"reflexio.org": org_id, "reflexio.learnings.added": len(changes.added)},
        **{"reflexio.learnings.updated": len(changes.updated), "reflexio.job.id": audit.job_id},
    ):
        return _apply(tx, org_id, changes, audit, aggregation_delay)


def _apply(
    tx: Storage, org_id: str, changes: Changes, audit: Audit, aggregation_delay: float
) -> list[Learning]:
    added = tx.save_learnings(changes.added, audit) if changes.added else []
    if changes.updated:
        tx.save_learnings(changes.updated, audit)
    for link in changes.superseded:
        successor = added[link.index]
        tx.update_learnings(
            org_id,
            LearningFilter(ids=(link.old_id,)),
            {"status": LearningStatus.SUPERSEDED, "superseded_by": successor.id},
            Audit(
                actor=audit.actor,
                reason=link.reason or audit.reason,
                request_id=audit.request_id,
                job_id=audit.job_id,
            ),
        )
    retired = []
    if changes.archived:
        retired = tx.get_learnings(org_id, LearningFilter(ids=tuple(changes.archived)))
        tx.update_learnings(
            org_id, LearningFilter(ids=tuple(changes.archived)), {"status": LearningStatus.ARCHIVED}, audit
        )
    enqueue_aggregations(tx, org_id, [*added, *changes.updated, *retired], delay=aggregation_delay)
    return added
