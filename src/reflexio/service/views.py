"""Conversions between storage records and wire models, in one place.

The wire keeps Reflexio's shapes (three learning types, ``Status.CURRENT`` as null, profile
``last_modified_timestamp``); storage keeps one ``Learning`` row. Every surface sees the same
mapping because only this module performs it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from reflexio.models import (
    AgentPlaybook,
    AgentPlaybookView,
    AgentSuccessEvaluationResult,
    BlockingIssue,
    BlockingIssueKind,
    Interaction,
    InteractionData,
    InteractionView,
    PlaybookStatus,
    ProfileTimeToLive,
    ProfileView,
    Request,
    RetrievedLearningEvaluationResult,
    Status,
    UserPlaybook,
    UserPlaybookView,
    UserProfile,
)
from reflexio.records import (
    NEVER_EXPIRES,
    Approval,
    EvaluationRecord,
    InteractionRecord,
    Learning,
    LearningKind,
    LearningStatus,
    RequestRecord,
)

__all__ = [
    "TTL_SECONDS",
    "agent_playbook_view",
    "epoch",
    "from_agent_playbook",
    "from_user_playbook",
    "from_user_profile",
    "interaction_model",
    "interaction_record",
    "interaction_view",
    "learning_evaluation",
    "learning_from_snapshot",
    "learning_status",
    "learning_statuses",
    "profile_view",
    "request_model",
    "session_evaluation",
    "user_playbook",
    "user_playbook_view",
    "user_profile",
    "view_of",
    "wire_status",
]

#: Profile time-to-live values in seconds (infinity never expires).
TTL_SECONDS: dict[str, int | None] = {
    ProfileTimeToLive.ONE_DAY.value: 86_400,
    ProfileTimeToLive.ONE_WEEK.value: 7 * 86_400,
    ProfileTimeToLive.ONE_MONTH.value: 30 * 86_400,
    ProfileTimeToLive.ONE_QUARTER.value: 90 * 86_400,
    ProfileTimeToLive.ONE_YEAR.value: 365 * 86_400,
    ProfileTimeToLive.INFINITY.value: None,
}


def epoch(value: datetime | None) -> int | None:
    """Epoch seconds of a request time filter (None stays None)."""
    return None if value is None else int(value.timestamp())


def wire_status(status: LearningStatus) -> Status | None:
    """Reflexio spells "current" as null."""
    return None if status is LearningStatus.CURRENT else Status(status.value)


def learning_status(status: Status | None) -> LearningStatus:
    """The storage status a wire status names (null = current)."""
    if status is None or status.value is None:
        return LearningStatus.CURRENT
    return LearningStatus(status.value)


def learning_statuses(statuses: list[Status | None] | None) -> tuple[LearningStatus, ...] | None:
    """A wire status filter as storage statuses (None stays "no filter")."""
    if statuses is None:
        return None
    return tuple(dict.fromkeys(learning_status(s) for s in statuses))


def expires_at(ttl: str, start: int) -> int:
    """When a profile with this time to live, written at ``start``, expires."""
    seconds = TTL_SECONDS.get(ttl)
    return NEVER_EXPIRES if seconds is None else start + seconds


def profile_view(row: Learning, score: float | None = None) -> ProfileView:
    """A profile as the wire shows it."""
    return ProfileView(
        profile_id=row.profile_id or str(row.id),
        user_id=row.user_id or "",
        content=row.content,
        last_modified_timestamp=row.updated_at,
        generated_from_request_id=row.request_id,
        profile_time_to_live=ProfileTimeToLive(row.ttl),
        expiration_timestamp=row.expires_at,
        custom_features=row.custom_features,
        source=row.source,
        status=wire_status(row.status),
        extractor_names=row.extractor_names,
        source_interaction_ids=list(row.source_interaction_ids),
        tags=list(row.tags),
        score=score,
    )


def user_playbook_view(row: Learning, score: float | None = None) -> UserPlaybookView:
    """A user playbook as the wire shows it."""
    return UserPlaybookView(
        user_playbook_id=row.id,
        user_id=row.user_id,
        agent_version=row.agent_version,
        request_id=row.request_id,
        playbook_name=row.playbook_name,
        created_at=row.created_at,
        content=row.content,
        trigger=row.trigger,
        rationale=row.rationale,
        pitfall=row.pitfall,
        status=wire_status(row.status),
        source=row.source,
        source_interaction_ids=list(row.source_interaction_ids),
        tags=list(row.tags),
        score=score,
    )


def agent_playbook_view(row: Learning, score: float | None = None) -> AgentPlaybookView:
    """An agent playbook as the wire shows it."""
    return AgentPlaybookView(
        agent_playbook_id=row.id,
        playbook_name=row.playbook_name,
        agent_version=row.agent_version,
        created_at=row.created_at,
        content=row.content,
        trigger=row.trigger,
        rationale=row.rationale,
        pitfall=row.pitfall,
        playbook_status=PlaybookStatus((row.approval or Approval.PENDING).value),
        playbook_metadata=row.metadata,
        status=wire_status(row.status),
        tags=list(row.tags),
        score=score,
    )


def view_of(row: Learning, score: float | None = None) -> ProfileView | UserPlaybookView | AgentPlaybookView:
    """The wire view of any learning."""
    if row.kind is LearningKind.PROFILE:
        return profile_view(row, score)
    if row.kind is LearningKind.USER_PLAYBOOK:
        return user_playbook_view(row, score)
    return agent_playbook_view(row, score)


def from_user_profile(org_id: str, p: UserProfile) -> Learning:
    """A storage row for a profile a caller adds."""
    ttl = ProfileTimeToLive(p.profile_time_to_live).value
    start = p.last_modified_timestamp or 0
    expiry = p.expiration_timestamp
    if expiry == NEVER_EXPIRES and ttl != ProfileTimeToLive.INFINITY.value and start:
        expiry = expires_at(ttl, start)
    return Learning(
        org_id=org_id,
        kind=LearningKind.PROFILE,
        profile_id=p.profile_id or None,
        user_id=p.user_id,
        content=p.content,
        ttl=ttl,
        expires_at=expiry,
        custom_features=p.custom_features,
        source=p.source,
        status=learning_status(p.status),
        extractor_names=p.extractor_names,
        tags=list(p.tags or []),
        request_id=p.generated_from_request_id,
        source_interaction_ids=list(p.source_interaction_ids),
        created_at=start,
        updated_at=start,
    )


def _blocking(value: Any) -> dict[str, Any] | None:
    return None if value is None else dict(value.model_dump(mode="json"))


def from_user_playbook(org_id: str, p: UserPlaybook) -> Learning:
    """A storage row for a user playbook a caller adds."""
    return Learning(
        org_id=org_id,
        kind=LearningKind.USER_PLAYBOOK,
        user_id=p.user_id,
        agent_version=p.agent_version,
        playbook_name=p.playbook_name,
        content=p.content,
        trigger=p.trigger,
        rationale=p.rationale,
        pitfall=p.pitfall,
        blocking_issue=_blocking(p.blocking_issue),
        status=learning_status(p.status),
        source=p.source,
        tags=list(p.tags or []),
        request_id=p.request_id,
        source_interaction_ids=list(p.source_interaction_ids),
        created_at=p.created_at,
    )


def from_agent_playbook(org_id: str, p: AgentPlaybook) -> Learning:
    """A storage row for an agent playbook a caller adds."""
    return Learning(
        org_id=org_id,
        kind=LearningKind.AGENT_PLAYBOOK,
        agent_version=p.agent_version,
        playbook_name=p.playbook_name,
        content=p.content,
        trigger=p.trigger,
        rationale=p.rationale,
        pitfall=p.pitfall,
        blocking_issue=_blocking(p.blocking_issue),
        status=learning_status(p.status),
        approval=Approval(PlaybookStatus(p.playbook_status).value),
        tags=list(p.tags or []),
        metadata=p.playbook_metadata,
        created_at=p.created_at,
    )


def interaction_view(row: InteractionRecord) -> InteractionView:
    """An interaction as the wire shows it (no image data, no citations)."""
    return InteractionView(
        interaction_id=row.id,
        user_id=row.user_id,
        request_id=row.request_id,
        created_at=row.created_at,
        role=row.role,
        content=row.content,
        user_action=row.user_action,
        user_action_description=row.user_action_description,
        interacted_image_url=row.interacted_image_url,
        shadow_content=row.shadow_content,
        expert_content=row.expert_content,
        tools_used=row.tools_used,
        retrieved_learnings=row.retrieved_learnings,
    )


def interaction_record(
    org_id: str, request_id: str, user_id: str, session_id: str, item: InteractionData
) -> InteractionRecord:
    """A storage row for one published turn (the caller's ``created_at`` is kept)."""
    return InteractionRecord(
        org_id=org_id,
        request_id=request_id,
        user_id=user_id,
        session_id=session_id,
        role=item.role,
        content=item.content,
        shadow_content=item.shadow_content,
        expert_content=item.expert_content,
        user_action=item.user_action.value,
        user_action_description=item.user_action_description,
        interacted_image_url=item.interacted_image_url,
        image_encoding=item.image_encoding,
        tools_used=[t.model_dump(mode="json") for t in item.tools_used],
        citations=[c.model_dump(mode="json") for c in item.citations],
        retrieved_learnings=[r.model_dump(mode="json") for r in item.retrieved_learnings],
        created_at=item.created_at,
    )


# -- stored records for export and history (added with the HTTP API) ---------------------------


def user_profile(row: Learning) -> UserProfile:
    """A profile as its full stored record (every lifecycle state; used by export).

    Built without validation: the limits on ``UserProfile`` are for what callers write, and a
    stored row (an extracted one may be longer) must always be exportable.
    """
    return UserProfile.model_construct(
        profile_id=row.profile_id or str(row.id),
        user_id=row.user_id or "",
        content=row.content,
        last_modified_timestamp=row.updated_at,
        generated_from_request_id=row.request_id,
        profile_time_to_live=ProfileTimeToLive(row.ttl),
        expiration_timestamp=row.expires_at,
        custom_features=row.custom_features,
        source=row.source,
        status=wire_status(row.status),
        extractor_names=row.extractor_names,
        tags=list(row.tags),
        source_interaction_ids=list(row.source_interaction_ids),
        superseded_by=None if row.superseded_by is None else str(row.superseded_by),
    )


def user_playbook(row: Learning) -> UserPlaybook:
    """A user playbook as its full stored record (every lifecycle state; used by export).

    Built without validation, like :func:`user_profile`.
    """
    return UserPlaybook.model_construct(
        user_playbook_id=row.id,
        user_id=row.user_id,
        agent_version=row.agent_version,
        request_id=row.request_id,
        playbook_name=row.playbook_name,
        created_at=row.created_at,
        content=row.content,
        trigger=row.trigger,
        rationale=row.rationale,
        pitfall=row.pitfall,
        blocking_issue=blocking_issue(row.blocking_issue),
        status=wire_status(row.status),
        source=row.source,
        source_interaction_ids=list(row.source_interaction_ids),
        tags=list(row.tags),
        superseded_by=row.superseded_by,
    )


def blocking_issue(stored: dict[str, Any] | None) -> BlockingIssue | None:
    """A stored blocking issue in the wire's shape, whatever version of the extractor wrote it.

    The rule extractor once stored failed tool calls as ``kind="tool_failure"``, which is not a
    ``BlockingIssueKind``; such rows (and any other unknown kind) are shown as the external
    dependency they are, with the tool named in the details, so no stored row can make an
    export fail.
    """
    if not stored:
        return None
    kind = stored.get("kind")
    details = str(stored.get("details") or "")
    if kind not in {k.value for k in BlockingIssueKind}:
        tool = stored.get("tool")
        details = f"{tool} failed: {details}" if tool else details
        kind = BlockingIssueKind.EXTERNAL_DEPENDENCY
    return BlockingIssue(kind=BlockingIssueKind(kind), details=details or "no details recorded")


def request_model(row: RequestRecord) -> Request:
    """A stored publish call as the wire's ``Request``."""
    return Request(
        request_id=row.request_id,
        user_id=row.user_id,
        created_at=row.created_at,
        source=row.source,
        agent_version=row.agent_version,
        session_id=row.session_id,
    )


def interaction_model(row: InteractionRecord) -> Interaction:
    """A stored turn with everything the caller sent (citations, image bytes; used by export)."""
    return Interaction.model_validate(
        {
            **interaction_view(row).model_dump(),
            "image_encoding": row.image_encoding,
            "citations": row.citations,
        }
    )


def _evaluation_fields(row: EvaluationRecord) -> dict[str, Any]:
    """The columns every stored verdict has, named as the wire's result models name them."""
    return {
        "result_id": row.id,
        "user_id": row.user_id or "",
        "session_id": row.session_id or "",
        "agent_version": row.agent_version or "",
        "created_at": int(row.created_at),
    }


def session_evaluation(row: EvaluationRecord) -> AgentSuccessEvaluationResult:
    """A stored session verdict (``kind="session"``) as the wire's result model."""
    return AgentSuccessEvaluationResult.model_validate({**row.result, **_evaluation_fields(row)})


def learning_evaluation(row: EvaluationRecord) -> RetrievedLearningEvaluationResult:
    """A stored verdict on one injected learning (``kind="learning"``) as the wire's model."""
    ids = {"interaction_id": row.interaction_id, "kind": row.learning_kind, "learning_id": row.learning_id}
    return RetrievedLearningEvaluationResult.model_validate({**row.result, **_evaluation_fields(row), **ids})


def learning_from_snapshot(snapshot: dict[str, Any]) -> Learning:
    """Rebuild a row from the snapshot an audit event kept (``Learning.snapshot()``)."""
    known = {k: v for k, v in snapshot.items() if k in Learning.__dataclass_fields__}
    approval = known.get("approval")
    return Learning(
        **{
            **known,
            "kind": LearningKind(known["kind"]),
            "status": LearningStatus(known.get("status") or LearningStatus.CURRENT.value),
            "approval": Approval(approval) if approval else None,
        }
    )
