"""The review queue: agent playbooks waiting for a reviewer, with the evidence to decide on.

A dashboard lists what is pending — new agent playbooks and pending revisions of approved ones
— each with the user playbooks it generalises, how many distinct users taught it, the approved
version a revision would replace and the rejection a re-proposal follows, and counts per
review state. Oldest first: what has waited longest is reviewed first.
"""

from __future__ import annotations

from reflexio.filters import LearningFilter
from reflexio.learn.review import ReviewState
from reflexio.models.api_aggregation import PendingReviewItem, PendingReviewResponse
from reflexio.records import Approval, Learning, LearningKind, LearningStatus
from reflexio.service import views
from reflexio.service.core import Core

__all__ = ["review_queue"]

AGENT = LearningKind.AGENT_PLAYBOOK
USER = LearningKind.USER_PLAYBOOK


def review_queue(
    core: Core, org_id: str, *, agent_version: str | None = None, limit: int = 100
) -> PendingReviewResponse:
    """Pending agent playbooks (oldest first, at most ``limit``) and counts per review state."""
    storage = core.storage

    def where(approval: Approval | None, status: LearningStatus) -> LearningFilter:
        return LearningFilter(
            kinds=(AGENT,),
            agent_version=agent_version,
            statuses=(status,),
            approvals=None if approval is None else (approval,),
        )

    pending = storage.list_learnings(
        org_id, where(Approval.PENDING, LearningStatus.CURRENT), limit=limit, newest_first=False
    )
    proposals = {p.agent_playbook_id: p for p in storage.get_proposals(org_id, [r.id for r in pending])}
    members = sorted({i for p in proposals.values() for i in p.member_ids})
    revised = sorted({p.revises_id for p in proposals.values() if p.revises_id is not None})
    rules = (
        _by_id(storage.get_learnings(org_id, LearningFilter(kinds=(USER,), ids=tuple(members))))
        if members
        else {}
    )
    approved = (
        _by_id(storage.get_learnings(org_id, LearningFilter(kinds=(AGENT,), ids=tuple(revised))))
        if revised
        else {}
    )
    items = []
    for row in pending:
        proposal = proposals.get(row.id)
        evidence = [rules[i] for i in (proposal.member_ids if proposal else ()) if i in rules]
        revises = approved.get(proposal.revises_id) if proposal and proposal.revises_id else None
        items.append(
            PendingReviewItem(
                agent_playbook=views.agent_playbook_view(row),
                distinct_users=len(set(proposal.user_ids)) if proposal else 0,
                source_user_playbooks=[views.user_playbook_view(r) for r in evidence],
                revises=views.agent_playbook_view(revises) if revises else None,
                follows_rejected_agent_playbook_id=proposal.follows_rejection_id if proposal else None,
            )
        )
    counts = {
        state.value: storage.count_learnings(org_id, where(Approval(state.value), LearningStatus.CURRENT))
        for state in (ReviewState.PENDING, ReviewState.APPROVED, ReviewState.REJECTED)
    }
    counts[ReviewState.ARCHIVED.value] = sum(
        storage.count_learnings(org_id, where(None, status))
        for status in (LearningStatus.ARCHIVED, LearningStatus.SUPERSEDED)
    )
    return PendingReviewResponse(pending=items, counts=counts)


def _by_id(rows: list[Learning]) -> dict[int, Learning]:
    return {r.id: r for r in rows}
