"""What a reviewer decides on: each agent playbook's recorded evidence and what reflection did to it.

The evidence is what was *recorded* when the playbook was proposed, not what a search finds
now: the aggregation run's proposal names the user playbooks it generalised and the users
who taught them, the approved playbook a revision would replace and the rejection a
re-proposal follows. Through those user playbooks come the interactions they were learned
from, and beside them the playbook's impact in production so far (sessions served, helped,
hurt, lift). Reflection's side is the unreverted action that suspended or retired a learning,
or that proposed it as a revision of a hurting playbook: what a reviewer restores or decides.

A page of a queue is read in one batch: a handful of queries whatever the page's length.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from reflexio.filters import InteractionFilter, LearningFilter
from reflexio.learn.reflect import Action
from reflexio.models import LearningImpactView
from reflexio.records import (
    InteractionRecord,
    Learning,
    LearningKind,
    ProposalRecord,
    ReflectionActionRecord,
)
from reflexio.service.core import Core
from reflexio.service.impact import impacts, ref_of
from reflexio.storage import Storage

__all__ = ["Evidence", "evidence_for", "reflection_actions"]

#: Cited interactions shown per playbook (the count says how many there are in all).
INTERACTIONS_SHOWN = 12
#: Recent reflection actions read to find the ones that proposed a page's revisions.
_PROPOSALS_READ = 500


@dataclass(frozen=True, slots=True)
class Evidence:
    """The recorded evidence behind one learning in the review queue.

    Attributes:
        proposal: What aggregation recorded when it proposed the playbook (None: written by
            hand, or proposed by reflection).
        user_playbooks: The proposal's user playbooks that are still stored.
        missing: How many of the proposal's user playbooks are gone since (deleted, cleared).
        users: The distinct users the proposal names.
        interactions: Up to ``INTERACTIONS_SHOWN`` of the interactions those user playbooks cite.
        cited: How many interactions they cite in all.
        revises: The text a decision replaces: the approved playbook a revision would archive,
            or the hurting playbook a reflection revision rewrites.
        impact: The learning's own record in production so far.
        revised_impact: The record of ``revises``, when there is one (a new text has none yet).
        reflection: The unreverted reflection action behind its state: the suspension or
            retirement of the learning, or the proposal of it as a revision.
    """

    proposal: ProposalRecord | None = None
    user_playbooks: list[Learning] = field(default_factory=list)
    missing: int = 0
    users: list[str] = field(default_factory=list)
    interactions: list[InteractionRecord] = field(default_factory=list)
    cited: int = 0
    revises: Learning | None = None
    impact: LearningImpactView | None = None
    revised_impact: LearningImpactView | None = None
    reflection: ReflectionActionRecord | None = None

    @property
    def recorded(self) -> bool:
        """Whether aggregation recorded where the playbook came from."""
        return self.proposal is not None


def reflection_actions(
    core: Core, org_id: str, rows: Sequence[Learning]
) -> dict[int, ReflectionActionRecord]:
    """Per learning, the newest unreverted reflection action that put it where it is.

    That is the action on the learning itself (suspend, retire, supersede) or, for a revision
    reflection proposed, the ``propose_revision`` action on the playbook it rewrites.
    """
    if not rows:
        return {}
    ids = [row.id for row in rows]
    storage = core.storage
    found: dict[int, ReflectionActionRecord] = {}
    for action in storage.list_reflection_actions(
        org_id, learning_ids=ids, include_reverted=False, limit=len(ids) * 4
    ):
        if action.action != Action.PROPOSE_REVISION.value:
            found.setdefault(action.learning_id, action)
    wanted = set(ids) - set(found)
    if any(row.kind is LearningKind.AGENT_PLAYBOOK and row.id in wanted for row in rows):
        for action in storage.list_reflection_actions(
            org_id, kind=LearningKind.AGENT_PLAYBOOK.value, include_reverted=False, limit=_PROPOSALS_READ
        ):
            related = action.related_learning_id
            if action.action == Action.PROPOSE_REVISION.value and related in wanted:
                found.setdefault(related, action)
    return found


def evidence_for(core: Core, org_id: str, rows: Sequence[Learning]) -> dict[int, Evidence]:
    """The evidence of each learning of a page (agent playbooks get their proposals' chain)."""
    storage = core.storage
    agent_ids = [row.id for row in rows if row.kind is LearningKind.AGENT_PLAYBOOK]
    proposals = (
        {p.agent_playbook_id: p for p in storage.get_proposals(org_id, agent_ids)} if agent_ids else {}
    )
    actions = reflection_actions(core, org_id, rows)
    members = _by_id(
        storage,
        org_id,
        LearningKind.USER_PLAYBOOK,
        {i for p in proposals.values() for i in p.member_ids},
    )
    revised_ids = {p.revises_id for p in proposals.values() if p.revises_id is not None}
    revised_ids |= {a.learning_id for a in actions.values() if a.action == Action.PROPOSE_REVISION.value}
    revised = _by_id(storage, org_id, LearningKind.AGENT_PLAYBOOK, revised_ids)
    cited = sorted({i for r in members.values() for i in r.source_interaction_ids})
    turns = (
        {t.id: t for t in storage.list_interactions(org_id, InteractionFilter(ids=tuple(cited)))}
        if cited
        else {}
    )
    scores = impacts(storage, org_id, [ref_of(r) for r in [*rows, *revised.values()]])
    out: dict[int, Evidence] = {}
    for row in rows:
        proposal = proposals.get(row.id)
        action = actions.get(row.id)
        playbooks = [members[i] for i in (proposal.member_ids if proposal else ()) if i in members]
        ids = sorted({i for r in playbooks for i in r.source_interaction_ids})
        revises_id = proposal.revises_id if proposal else None
        if action is not None and action.action == Action.PROPOSE_REVISION.value:
            revises_id = action.learning_id
        before = revised.get(revises_id) if revises_id is not None else None
        out[row.id] = Evidence(
            proposal=proposal,
            user_playbooks=playbooks,
            missing=len(set(proposal.member_ids)) - len(playbooks) if proposal else 0,
            users=sorted(set(proposal.user_ids)) if proposal else [],
            interactions=_spread(playbooks, turns),
            cited=len(ids),
            revises=before,
            impact=scores.get(ref_of(row)),
            revised_impact=scores.get(ref_of(before)) if before else None,
            reflection=action,
        )
    return out


def _spread(playbooks: Sequence[Learning], turns: dict[int, InteractionRecord]) -> list[InteractionRecord]:
    """Up to ``INTERACTIONS_SHOWN`` cited interactions, taken from each user playbook in turn,
    so a reviewer sees every user's conversation before a second turn of anyone's."""
    queues = [[turns[i] for i in sorted(set(r.source_interaction_ids)) if i in turns] for r in playbooks]
    shown: list[InteractionRecord] = []
    seen: set[int] = set()
    depth = 0
    while len(shown) < INTERACTIONS_SHOWN and any(depth < len(q) for q in queues):
        for queue in queues:
            if depth < len(queue) and queue[depth].id not in seen and len(shown) < INTERACTIONS_SHOWN:
                shown.append(queue[depth])
                seen.add(queue[depth].id)
        depth += 1
    return sorted(shown, key=lambda t: (t.created_at, t.id))


def _by_id(storage: Storage, org_id: str, kind: LearningKind, ids: set[int]) -> dict[int, Learning]:
    if not ids:
        return {}
    rows = storage.get_learnings(org_id, LearningFilter(kinds=(kind,), ids=tuple(sorted(ids))))
    return {row.id: row for row in rows}
