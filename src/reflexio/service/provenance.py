"""Where a learning came from: ``POST /api/get_learning_provenance`` (Reflexio 0.2.32's shape).

A profile or user playbook records the request it was learned from and the interactions it
cites. The answer is ``exact`` when every cited interaction still exists, ``best_effort`` when
some is gone (deleted, or cleared with a user's data), and ``unavailable`` when the learning
cites none (added by hand). An aggregated agent playbook leads to the user playbooks its
proposal cites (how many distinct users taught it, the approved playbook it revises, the
rejection it follows) and through them to their interactions; ``exact`` then needs every
user playbook and every interaction they cite to still exist.
"""

from __future__ import annotations

from typing import Literal

from reflexio.errors import NotFoundError
from reflexio.filters import InteractionFilter, LearningFilter
from reflexio.models import GetLearningProvenanceRequest, GetLearningProvenanceResponse
from reflexio.records import Learning, LearningKind
from reflexio.service import views
from reflexio.service.core import Core

__all__ = ["get_learning_provenance"]


def get_learning_provenance(
    core: Core, org_id: str, req: GetLearningProvenanceRequest
) -> GetLearningProvenanceResponse:
    """The chain from a learning down to its interactions.

    Raises:
        NotFoundError: No learning of that kind and id in the caller's org.
    """
    row = _find(core, org_id, LearningKind(req.kind), req.id)
    if row.kind is LearningKind.AGENT_PLAYBOOK:
        return _agent_playbook_provenance(core, org_id, req, row)
    cited = sorted(set(row.source_interaction_ids))
    found = core.storage.list_interactions(org_id, InteractionFilter(ids=tuple(cited))) if cited else []
    if not cited:
        status: Literal["exact", "best_effort", "unavailable"] = "unavailable"
    else:
        status = "exact" if len(found) == len(cited) else "best_effort"
    return GetLearningProvenanceResponse(
        kind=req.kind,
        id=req.id,
        provenance_status=status,
        trigger_request_id=row.request_id or None,
        source_interactions=[views.interaction_view(t) for t in found],
        distinct_users=len({t.user_id for t in found}),
    )


def _agent_playbook_provenance(
    core: Core, org_id: str, req: GetLearningProvenanceRequest, row: Learning
) -> GetLearningProvenanceResponse:
    proposals = core.storage.get_proposals(org_id, [row.id])
    if not proposals:  # written by hand, not aggregated
        return GetLearningProvenanceResponse(kind=req.kind, id=req.id, provenance_status="unavailable")
    proposal = proposals[0]
    members = sorted(set(proposal.member_ids))
    rules = core.storage.get_learnings(
        org_id, LearningFilter(kinds=(LearningKind.USER_PLAYBOOK,), ids=tuple(members))
    )
    cited = sorted({i for r in rules for i in r.source_interaction_ids})
    found = core.storage.list_interactions(org_id, InteractionFilter(ids=tuple(cited))) if cited else []
    # Exact: every user playbook is still stored and leads to interactions that still exist.
    complete = (
        len(rules) == len(members)
        and all(r.source_interaction_ids for r in rules)
        and len(found) == len(cited)
    )
    return GetLearningProvenanceResponse(
        kind=req.kind,
        id=req.id,
        provenance_status="exact" if complete else "best_effort",
        source_interactions=[views.interaction_view(t) for t in found],
        source_user_playbooks=[views.user_playbook_view(r) for r in rules],
        distinct_users=len(set(proposal.user_ids)),
        revises_agent_playbook_id=proposal.revises_id,
        follows_rejected_agent_playbook_id=proposal.follows_rejection_id,
    )


def _find(core: Core, org_id: str, kind: LearningKind, wire_id: str) -> Learning:
    if kind is LearningKind.PROFILE:
        where = LearningFilter(kinds=(kind,), profile_ids=(wire_id,))
    elif wire_id.isdigit():
        where = LearningFilter(kinds=(kind,), ids=(int(wire_id),))
    else:
        raise NotFoundError(f"{kind.value} {wire_id!r} not found")
    rows = core.storage.get_learnings(org_id, where)
    if not rows:
        raise NotFoundError(f"{kind.value} {wire_id!r} not found")
    return rows[0]
