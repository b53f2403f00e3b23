"""Requests and responses that add, read, update and delete learnings.

Learnings are user profiles, user playbooks and agent playbooks. Searching them lives in
``api_search``; generating them in ``api_generation``. Shapes follow Reflexio 0.2.32; the
``status_filter`` lists use ``null`` for the current version (see ``Status``).
"""

from typing import Annotated, Any, Self, TypeAlias

from pydantic import ConfigDict, Field, StringConstraints, model_validator

from reflexio.models.entities import (
    AgentPlaybook,
    AgentPlaybookView,
    PlaybookStatus,
    ProfileChangeLogView,
    ProfileTimeToLive,
    ProfileView,
    Status,
    UserPlaybook,
    UserPlaybookView,
    UserProfile,
)
from reflexio.models.fields import (
    MAX_BULK_ITEMS,
    MAX_BULK_TEXT,
    NON_BLANK_PATTERN,
    Id,
    LearningText,
    Name,
    PageSize,
    QueryText,
    RequestModel,
    RowId,
    SessionOutcomeSource,
    TimeWindow,
    WireModel,
    is_blank,
)

__all__ = [
    "AddAgentPlaybookRequest",
    "AddAgentPlaybookResponse",
    "AddUserPlaybookRequest",
    "AddUserPlaybookResponse",
    "AddUserProfileRequest",
    "AddUserProfileResponse",
    "DeleteAgentPlaybookRequest",
    "DeleteAgentPlaybookResponse",
    "DeleteAgentPlaybooksByIdsRequest",
    "DeleteProfilesByIdsRequest",
    "DeleteUserPlaybookRequest",
    "DeleteUserPlaybookResponse",
    "DeleteUserPlaybooksByIdsRequest",
    "DeleteUserProfileRequest",
    "DeleteUserProfileResponse",
    "GetAgentPlaybooksRequest",
    "GetAgentPlaybooksViewResponse",
    "GetProfileStatisticsResponse",
    "GetProfilesViewResponse",
    "GetUserPlaybooksRequest",
    "GetUserPlaybooksViewResponse",
    "GetUserProfilesRequest",
    "ProfileChangeLogViewResponse",
    "UpdateAgentPlaybookRequest",
    "UpdateAgentPlaybookResponse",
    "UpdatePlaybookStatusRequest",
    "UpdatePlaybookStatusResponse",
    "UpdateUserPlaybookRequest",
    "UpdateUserPlaybookResponse",
    "UpdateUserProfileRequest",
    "UpdateUserProfileResponse",
]

# ---------------------------------------------------------------------------------------------
# Profiles
# ---------------------------------------------------------------------------------------------


#: An edited text of a learning: when it is sent at all it must say something (a blank content
#: or trigger could leave a playbook with nothing to embed).
NonBlankText: TypeAlias = Annotated[LearningText, StringConstraints(pattern=NON_BLANK_PATTERN)]


def _check_bulk_text(name: str, texts: list[int]) -> None:
    """Refuse a bulk write whose learnings hold more text, in all, than :data:`MAX_BULK_TEXT`.

    Raises:
        ValueError: Naming the list and the total.
    """
    total = sum(texts)
    if total > MAX_BULK_TEXT:
        raise ValueError(
            f"{name} carries {total:,} characters of text in all; one request may carry at most"
            f" {MAX_BULK_TEXT:,} (send the rest in further requests)"
        )


def _text_size(*values: str | None) -> int:
    return sum(len(value) for value in values if value)


class AddUserProfileRequest(RequestModel):
    """Store profiles directly, bypassing extraction; each needs content to be embedded.

    At most 1,000 profiles and 1,000,000 characters of content per request: embedding is the
    expensive part of a write, and these bounds keep one request to seconds of work.
    """

    user_profiles: list[UserProfile] = Field(min_length=1, max_length=MAX_BULK_ITEMS)

    @model_validator(mode="after")
    def _bounded_text(self) -> Self:
        _check_bulk_text("user_profiles", [_text_size(p.content) for p in self.user_profiles])
        return self


class AddUserProfileResponse(WireModel):
    """How many profiles were stored, and their ids (ours: Reflexio answered the count only)."""

    success: bool
    message: str | None = None
    added_count: int = 0
    profile_ids: list[str] = Field(default_factory=list)


class GetUserProfilesRequest(TimeWindow):
    """One user's profiles, filtered; ``status_filter=[null]`` means current only."""

    user_id: Id
    profile_id: Id | None = None
    query: QueryText | None = None
    top_k: PageSize | None = 30
    source: SessionOutcomeSource | None = None
    profile_time_to_live: ProfileTimeToLive | None = None
    status_filter: list[Status | None] | None = Field(default=None, max_length=10)
    tags: list[Name] | None = Field(default=None, max_length=100)


class GetProfilesViewResponse(WireModel):
    """Profiles returned by ``get_profiles`` and ``get_all_profiles``."""

    success: bool
    user_profiles: list[ProfileView]
    msg: str | None = None


class UpdateUserProfileRequest(RequestModel):
    """Change a profile's content and/or custom features; ``None`` leaves a field alone."""

    user_id: Id
    profile_id: Id
    content: LearningText | None = None
    custom_features: dict[str, Any] | None = None


class UpdateUserProfileResponse(WireModel):
    """Outcome of a profile update."""

    success: bool
    msg: str | None = None


class ProfileChangeLogViewResponse(WireModel):
    """Every recorded profile change of the organisation."""

    success: bool
    profile_change_logs: list[ProfileChangeLogView]


class GetProfileStatisticsResponse(WireModel):
    """Profile counts by lifecycle state."""

    success: bool
    current_count: int = 0
    pending_count: int = 0
    archived_count: int = 0
    expiring_soon_count: int = 0
    msg: str | None = None


class DeleteUserProfileRequest(RequestModel):
    """Delete one profile by id, or the user's profiles matching ``search_query`` (one is needed)."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "anyOf": [
                {"properties": {"profile_id": {"minLength": 1}}, "required": ["profile_id"]},
                {
                    "properties": {"search_query": {"pattern": NON_BLANK_PATTERN}},
                    "required": ["search_query"],
                },
            ]
        },
    )

    user_id: Id
    profile_id: Name = ""
    search_query: QueryText = ""


class DeleteUserProfileResponse(WireModel):
    """Outcome of a profile delete."""

    success: bool
    message: str = ""


class DeleteProfilesByIdsRequest(RequestModel):
    """Delete several profiles at once."""

    profile_ids: list[Id] = Field(min_length=1, max_length=10_000)


# ---------------------------------------------------------------------------------------------
# Playbooks
# ---------------------------------------------------------------------------------------------


class AddUserPlaybookRequest(RequestModel):
    """Store user playbooks directly; each needs a content or a trigger to be embedded.

    Bounded like :class:`AddUserProfileRequest`.
    """

    user_playbooks: list[UserPlaybook] = Field(min_length=1, max_length=MAX_BULK_ITEMS)

    @model_validator(mode="after")
    def _every_playbook_has_text(self) -> Self:
        for index, playbook in enumerate(self.user_playbooks):
            if is_blank(playbook.trigger) and is_blank(playbook.content):
                raise ValueError(
                    f"user_playbooks[{index}]: at least one of content or trigger must be provided"
                )
        _check_bulk_text(
            "user_playbooks",
            [_text_size(p.content, p.trigger, p.rationale, p.pitfall) for p in self.user_playbooks],
        )
        return self


class AddUserPlaybookResponse(WireModel):
    """How many user playbooks were stored, and their ids (ours: Reflexio answered the count only)."""

    success: bool
    message: str | None = None
    added_count: int = 0
    user_playbook_ids: list[int] = Field(default_factory=list)


class AddAgentPlaybookRequest(RequestModel):
    """Store agent playbooks directly (for example, hand-written rules); bounded like profiles."""

    agent_playbooks: list[AgentPlaybook] = Field(min_length=1, max_length=MAX_BULK_ITEMS)

    @model_validator(mode="after")
    def _bounded_text(self) -> Self:
        _check_bulk_text(
            "agent_playbooks",
            [_text_size(p.content, p.trigger, p.rationale, p.pitfall) for p in self.agent_playbooks],
        )
        return self


class AddAgentPlaybookResponse(WireModel):
    """How many agent playbooks were stored, and their ids (ours: Reflexio answered the count only)."""

    success: bool
    message: str | None = None
    added_count: int = 0
    agent_playbook_ids: list[int] = Field(default_factory=list)


class GetUserPlaybooksRequest(TimeWindow):
    """User playbooks, filtered; ``status_filter=[null]`` means current only."""

    limit: PageSize | None = 100
    user_playbook_id: RowId | None = None
    user_id: Id | None = None
    request_id: Id | None = None
    query: QueryText | None = None
    playbook_name: Name | None = None
    agent_version: Name | None = None
    status_filter: list[Status | None] | None = Field(default=None, max_length=10)
    tags: list[Name] | None = Field(default=None, max_length=100)


class GetUserPlaybooksViewResponse(WireModel):
    """User playbooks returned by ``get_user_playbooks``."""

    success: bool
    user_playbooks: list[UserPlaybookView]
    msg: str | None = None


class GetAgentPlaybooksRequest(TimeWindow):
    """Agent playbooks, filtered by lifecycle and by review state."""

    limit: PageSize | None = 100
    agent_playbook_id: RowId | None = None
    query: QueryText | None = None
    playbook_name: Name | None = None
    agent_version: Name | None = None
    status_filter: list[Status | None] | None = Field(default=None, max_length=10)
    playbook_status_filter: PlaybookStatus | None = None
    tags: list[Name] | None = Field(default=None, max_length=100)
    request_id: Id | None = None
    session_id: Id | None = None


class GetAgentPlaybooksViewResponse(WireModel):
    """Agent playbooks returned by ``get_agent_playbooks``."""

    success: bool
    agent_playbooks: list[AgentPlaybookView]
    msg: str | None = None


class UpdatePlaybookStatusRequest(RequestModel):
    """Approve, reject or re-open an agent playbook.

    Additions: ``expected_status`` is the state the reviewer acted on (a different current
    state is a 409, so of two concurrent decisions one wins); ``note`` is kept in the audit
    history with who decided.
    """

    agent_playbook_id: RowId
    playbook_status: PlaybookStatus
    expected_status: PlaybookStatus | None = None
    note: str | None = Field(default=None, max_length=4_000)


class UpdatePlaybookStatusResponse(WireModel):
    """Outcome of a review decision."""

    success: bool
    msg: str | None = None


class UpdateAgentPlaybookRequest(RequestModel):
    """Edit an agent playbook; ``None`` leaves a field alone."""

    agent_playbook_id: RowId
    playbook_name: Name | None = None
    content: NonBlankText | None = None
    trigger: NonBlankText | None = None
    rationale: LearningText | None = None
    playbook_status: PlaybookStatus | None = None
    expected_status: PlaybookStatus | None = None  # addition: see UpdatePlaybookStatusRequest
    note: str | None = Field(default=None, max_length=4_000)  # addition: kept in the history


class UpdateAgentPlaybookResponse(WireModel):
    """Outcome of an agent playbook edit."""

    success: bool
    msg: str | None = None


class UpdateUserPlaybookRequest(RequestModel):
    """Edit a user playbook; ``None`` leaves a field alone."""

    user_playbook_id: RowId
    playbook_name: Name | None = None
    content: NonBlankText | None = None
    trigger: NonBlankText | None = None
    rationale: LearningText | None = None


class UpdateUserPlaybookResponse(WireModel):
    """Outcome of a user playbook edit."""

    success: bool
    msg: str | None = None


class DeleteAgentPlaybookRequest(RequestModel):
    """Delete one agent playbook."""

    agent_playbook_id: RowId


class DeleteAgentPlaybookResponse(WireModel):
    """Outcome of an agent playbook delete."""

    success: bool
    message: str = ""


class DeleteUserPlaybookRequest(RequestModel):
    """Delete one user playbook."""

    user_playbook_id: RowId


class DeleteUserPlaybookResponse(WireModel):
    """Outcome of a user playbook delete."""

    success: bool
    message: str = ""


class DeleteAgentPlaybooksByIdsRequest(RequestModel):
    """Delete several agent playbooks at once."""

    agent_playbook_ids: list[RowId] = Field(min_length=1, max_length=10_000)


class DeleteUserPlaybooksByIdsRequest(RequestModel):
    """Delete several user playbooks at once."""

    user_playbook_ids: list[RowId] = Field(min_length=1, max_length=10_000)
