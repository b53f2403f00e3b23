"""Pending revisions of approved agent playbooks stay out of search until they are approved.

When an approved agent playbook's cluster changes, aggregation proposes a pending revision
linked to it (``ProposalRecord.revises_id``) and never touches the approved text. Serving the
revision as well would put two versions of one rule in the agent's context, and serving it
instead would apply an unreviewed change to a reviewed rule; so while the version it revises
is approved and current, the approved one alone serves the lesson. A revision whose original
is gone (rejected, deleted) is an ordinary pending playbook and is served as one.
"""

from __future__ import annotations

from collections.abc import Iterable

from reflexio.filters import LearningFilter
from reflexio.records import Approval, Learning, LearningKind, LearningStatus
from reflexio.storage import Storage

__all__ = ["pending_revisions"]


def pending_revisions(storage: Storage, org_id: str, rows: Iterable[Learning]) -> set[int]:
    """Ids among ``rows`` of pending revisions whose original is approved and current.

    Search drops them from its candidates before ranking, so near-duplicate collapse keeps the
    approved version rather than folding it into its revision. Costs nothing unless a pending
    agent playbook is among the rows; then one read of their proposals and, if any is a
    revision, one of the playbooks they revise.
    """
    pending = sorted(
        {
            row.id
            for row in rows
            if row.kind is LearningKind.AGENT_PLAYBOOK and row.approval is Approval.PENDING
        }
    )
    if not pending:
        return set()
    revises = {
        p.agent_playbook_id: p.revises_id for p in storage.get_proposals(org_id, pending) if p.revises_id
    }
    if not revises:
        return set()
    originals = LearningFilter(kinds=(LearningKind.AGENT_PLAYBOOK,), ids=tuple(sorted(set(revises.values()))))
    live = {
        r.id
        for r in storage.get_learnings(org_id, originals)
        if r.approval is Approval.APPROVED and r.status is LearningStatus.CURRENT
    }
    return {pid for pid, original in revises.items() if original in live}
