"""The reads and writes every learning use case shares (profiles and playbooks alike).

Text edits are saved with ``save_learnings`` (so the row is re-embedded and its full-text entry
refreshed), review decisions with ``update_learnings`` (so the history names the decision), and
every write carries an ``Audit`` naming who did it. Deletes report the real number of rows
removed, and deleting one id that does not exist in the caller's org is a 404.
"""

from __future__ import annotations

from typing import Any

from reflexio.errors import NotFoundError
from reflexio.filters import LearningFilter
from reflexio.models import BulkDeleteResponse, Status
from reflexio.records import Audit, Learning, LearningKind, LearningStatus
from reflexio.service import search, views
from reflexio.service.core import Core
from reflexio.storage import Storage

__all__ = [
    "audit",
    "bulk_delete",
    "delete_one",
    "find_one",
    "learned_from",
    "listed",
    "statuses_or",
    "text_changes",
]


def audit(actor: str, reason: str) -> Audit:
    """The history entry's who and why for a change made through the API."""
    return Audit(actor=actor, reason=reason)


def listed(
    core: Core, org_id: str, where: LearningFilter, query: str | None, limit: int, *, collapse: bool = True
) -> list[tuple[Learning, float | None]]:
    """Rows matching ``where``: the newest first, or ranked by relevance when a query is given.

    A query goes through the same ranking as search (threshold included), so a "get" with a
    query never returns rows that search would call irrelevant; ``collapse=False`` keeps
    near-duplicates (``search.Plan.collapse``).
    """
    if not query or not query.strip():
        return [(row, None) for row in core.storage.list_learnings(org_id, where, limit=limit)]
    configured = core.org_config(org_id).search_threshold
    plan = search.Plan(
        text=query,
        filters=(where,),
        top_k=limit,
        threshold=search.DEFAULT_THRESHOLD if configured is None else configured,
        collapse=collapse,
    )
    return [(row, score) for row, score in search.rank(core, org_id, plan).hits[0]]


def learned_from(core: Core, org_id: str, request_id: str) -> tuple[int, int]:
    """(profiles, user playbooks) first learned from a request's turns and still current.

    A learning records the newest request of the window it came from, so after a flush (the
    caller waited) these are exactly what publishing this request taught.
    """
    counts = [
        core.storage.count_learnings(
            org_id, LearningFilter(kinds=(kind,), request_id=request_id, statuses=(LearningStatus.CURRENT,))
        )
        for kind in (LearningKind.PROFILE, LearningKind.USER_PLAYBOOK)
    ]
    return counts[0], counts[1]


def find_one(storage: Storage, org_id: str, where: LearningFilter, what: str) -> Learning:
    """The single row ``where`` names in the caller's org.

    Raises:
        NotFoundError: It does not exist (or belongs to another org).
    """
    rows = storage.get_learnings(org_id, where)
    if not rows:
        raise NotFoundError(f"{what} not found")
    return rows[0]


def delete_one(core: Core, org_id: str, where: LearningFilter, what: str, actor: str) -> int:
    """Delete the row(s) ``where`` names; a missing target is a 404, not a silent success."""
    deleted = core.storage.delete_learnings(org_id, where, audit(actor, f"deleted {what} through the API"))
    if not deleted:
        raise NotFoundError(f"{what} not found")
    return deleted


def bulk_delete(core: Core, org_id: str, where: LearningFilter, what: str, actor: str) -> BulkDeleteResponse:
    """Delete every row matching ``where`` and report how many really went."""
    deleted = core.storage.delete_learnings(org_id, where, audit(actor, f"bulk delete of {what}"))
    return BulkDeleteResponse(success=True, deleted_count=deleted, message=f"Deleted {deleted} {what}")


def text_changes(**fields: str | None) -> dict[str, Any]:
    """The edits a partial update asks for: every field the caller did not leave null."""
    return {name: value for name, value in fields.items() if value is not None}


def statuses_or(
    requested: list[Status | None] | None, default: tuple[LearningStatus, ...]
) -> tuple[LearningStatus, ...]:
    """A wire status filter as storage statuses; null or empty means ``default``."""
    return views.learning_statuses(requested) or default
