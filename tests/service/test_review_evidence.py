"""The review queue's evidence is what was recorded, on every backend: the proposal's user
playbooks and their conversations, the text a revision replaces, and reflection's actions."""

from __future__ import annotations

from reflexio.filters import InteractionFilter
from reflexio.models import InteractionData, PublishUserInteractionRequest
from reflexio.records import (
    Approval,
    Audit,
    Learning,
    LearningKind,
    LearningStatus,
    ProposalRecord,
    ReflectionActionRecord,
)
from reflexio.service import publish
from reflexio.service.core import Core
from reflexio.service.review_evidence import INTERACTIONS_SHOWN, evidence_for

ORG = "self-host-org"
AUDIT = Audit(actor="test", reason="setup")
USERS = ("ana", "ben", "chloe")


def _user_playbooks(core: Core, turns: int = 2) -> list[Learning]:
    """One user playbook per user, citing that user's published turns."""
    rows = []
    for user in USERS:
        items = [
            InteractionData(role="User", content=f"{user} says refund to PayPal, turn {n}")
            for n in range(turns)
        ]
        req = PublishUserInteractionRequest(
            user_id=user, session_id=f"{user}-1", agent_version="v1", interaction_data_list=items
        )
        publish.publish(core, ORG, req, flush=True)
        cited = [t.id for t in core.storage.list_interactions(ORG, InteractionFilter(user_id=user))]
        rows.append(
            Learning(
                org_id=ORG,
                kind=LearningKind.USER_PLAYBOOK,
                user_id=user,
                agent_version="v1",
                content=f"{user}: check the payment method before a refund",
                source_interaction_ids=cited,
            )
        )
    return core.storage.save_learnings(rows, AUDIT)


def _agent(core: Core, content: str, **fields: object) -> Learning:
    row = Learning(org_id=ORG, kind=LearningKind.AGENT_PLAYBOOK, agent_version="v1", content=content)
    (saved,) = core.storage.save_learnings([row.copy(**fields)], AUDIT)
    return saved


def _propose(core: Core, **fields: object) -> None:
    """Record a proposal as an aggregation run records one."""
    core.storage.add_proposals([ProposalRecord(org_id=ORG, cluster_id=1, **fields)])  # type: ignore[arg-type]


def test_a_proposal_leads_to_its_user_playbooks_users_and_conversations(core: Core) -> None:
    members = _user_playbooks(core)
    pending = _agent(core, "Check the payment method before any refund.", approval=Approval.PENDING)
    by_hand = _agent(core, "Sign emails as the team.", approval=Approval.PENDING)
    deleted = 999_999  # a member removed since
    _propose(
        core,
        agent_playbook_id=pending.id,
        member_ids=(*(m.id for m in members), deleted),
        user_ids=USERS,
        follows_rejection_id=7,
    )
    found = evidence_for(core, ORG, [pending, by_hand])
    ev = found[pending.id]
    assert ev.recorded and ev.users == sorted(USERS) and ev.missing == 1
    assert [r.id for r in ev.user_playbooks] == [m.id for m in members]
    assert ev.cited == 6 and {t.user_id for t in ev.interactions} == set(USERS)
    assert ev.proposal is not None and ev.proposal.follows_rejection_id == 7
    assert ev.impact is not None and ev.impact.sessions_served == 0
    assert not found[by_hand.id].recorded and found[by_hand.id].user_playbooks == []


def test_the_conversations_shown_take_every_user_before_a_second_turn_of_anyone(core: Core) -> None:
    members = _user_playbooks(core, turns=6)
    pending = _agent(core, "Check the payment method.", approval=Approval.PENDING)
    _propose(core, agent_playbook_id=pending.id, member_ids=tuple(m.id for m in members), user_ids=USERS)
    ev = evidence_for(core, ORG, [pending])[pending.id]
    assert ev.cited == 18 and len(ev.interactions) == INTERACTIONS_SHOWN
    first = ev.interactions[: len(USERS)]
    assert {t.user_id for t in ev.interactions} == set(USERS) and len({t.id for t in first}) == len(USERS)


def test_a_revision_names_the_approved_text_it_replaces(core: Core) -> None:
    approved = _agent(core, "Check the payment method.", approval=Approval.APPROVED)
    revision = _agent(core, "Check the original payment method.", approval=Approval.PENDING)
    _propose(core, agent_playbook_id=revision.id, member_ids=(), user_ids=(), revises_id=approved.id)
    ev = evidence_for(core, ORG, [revision])[revision.id]
    assert ev.revises is not None and ev.revises.id == approved.id
    assert ev.revised_impact is not None and ev.revised_impact.learning_id == str(approved.id)


def _action_id(action: ReflectionActionRecord | None) -> int | None:
    return action.id if action else None


def test_reflection_actions_are_found_for_suspensions_retirements_and_their_rewrites(core: Core) -> None:
    hurting = _agent(
        core, "Offer free express shipping.", approval=Approval.APPROVED, status=LearningStatus.RETIRED
    )
    rewrite = _agent(
        core, "Say the express offer has ended.", approval=Approval.PENDING, status=LearningStatus.SUSPENDED
    )
    (profile_like,) = core.storage.save_learnings(
        [
            Learning(
                org_id=ORG,
                kind=LearningKind.USER_PLAYBOOK,
                user_id="ana",
                content="promise express",
                status=LearningStatus.SUSPENDED,
            )
        ],
        AUDIT,
    )
    retire, _, suspend = core.storage.add_reflection_actions(
        [
            ReflectionActionRecord(
                org_id=ORG,
                learning_id=hurting.id,
                kind="agent_playbook",
                action="retire",
                reason="retired: it hurt 3 of 3",
                status_before="current",
                status_after="retired",
            ),
            ReflectionActionRecord(
                org_id=ORG,
                learning_id=hurting.id,
                kind="agent_playbook",
                action="propose_revision",
                reason="revision proposed",
                related_learning_id=rewrite.id,
            ),
            ReflectionActionRecord(
                org_id=ORG,
                learning_id=profile_like.id,
                kind="user_playbook",
                action="suspend",
                reason="suspended for review: it hurt",
                status_before="current",
                status_after="suspended",
            ),
        ]
    )
    found = evidence_for(core, ORG, [hurting, rewrite, profile_like])
    assert _action_id(found[hurting.id].reflection) == retire.id
    rewritten = found[rewrite.id]
    assert rewritten.reflection is not None and rewritten.reflection.action == "propose_revision"
    assert rewritten.revises is not None and rewritten.revises.id == hurting.id
    assert _action_id(found[profile_like.id].reflection) == suspend.id
    assert core.storage.revert_reflection_action(ORG, retire.id, by="test", note=None)
    assert evidence_for(core, ORG, [hurting])[hurting.id].reflection is None  # reverted: nothing to restore
