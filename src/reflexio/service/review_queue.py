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
from reflexio.records import Approval, LearningKind, LearningStatus
from reflexio.service import views
from reflexio.service.core import Core
from reflexio.service.review_evidence import evidence_for

__all__ = ["review_queue"]

AGENT = LearningKind.AGENT_PLAYBOOK


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
    evidence = evidence_for(core, org_id, pending)
    items = [
        PendingReviewItem(
            agent_playbook=views.agent_playbook_view(row),
            distinct_users=len(found.users),
            source_user_playbooks=[views.user_playbook_view(r) for r in found.user_playbooks],
            revises=views.agent_playbook_view(found.revises) if found.revises else None,
            follows_rejected_agent_playbook_id=found.proposal.follows_rejection_id
            if found.proposal
            else None,
        )
        for row in pending
        for found in (evidence[row.id],)
    ]
    counts = {
        state.value: storage.count_learnings(org_id, where(Approval(state.value), LearningStatus.CURRENT))
        for state in (ReviewState.PENDING, ReviewState.APPROVED, ReviewState.REJECTED)
    }
    counts[ReviewState.ARCHIVED.value] = sum(
        storage.count_learnings(org_id, where(None, status))
        for status in (LearningStatus.ARCHIVED, LearningStatus.SUPERSEDED)
    )
    return PendingReviewResponse(pending=items, counts=counts)
