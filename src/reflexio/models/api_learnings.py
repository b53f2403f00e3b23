"""Requests and responses that add, read, update and delete learnings.

Learnings are user profiles, user playbooks and agent playbooks. Searching them lives in
``api_search``; generating them in ``api_generation``. Shapes follow Reflexio 0.2.32; the
``status_filter`` lists use ``null`` for the current version (see ``Status``).
"""

from typing import Any, Self

from pydantic import Field, model_validator

from reflexio.models.entities import (
    AgentPlaybook,
    AgentPlaybookView,
    PlaybookStatus,
    ProfileChangeLogView,
    ProfileView,
    Status,
    UserPlaybook,
    UserPlaybookView,
    UserProfile,
)
from reflexio.models.fields import NonEmptyStr, SessionOutcomeSource, TimeWindow, WireModel

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


class AddUserProfileRequest(WireModel):
    """Store profiles directly, bypassing extraction; each needs content to be embedded."""

    user_profiles: list[UserProfile] = Field(min_length=1)

    @model_validator(mode="after")
    def _every_profile_has_content(self) -> Self:
        for index, profile in enumerate(self.user_profiles):
            if not profile.content:
                raise ValueError(f"user_profiles[{index}].content is required for embedding")
        return self


class AddUserProfileResponse(WireModel):
    """How many profiles were stored, and their ids (ours: Reflexio answered the count only)."""

    success: bool
    message: str | None = None
    added_count: int = 0
    profile_ids: list[str] = Field(default_factory=list)


class GetUserProfilesRequest(TimeWindow):
    """One user's profiles, filtered; ``status_filter=[null]`` means current only."""

    user_id: NonEmptyStr
    profile_id: str | None = None
    query: str | None = None
    top_k: int | None = Field(default=30, gt=0)
    source: SessionOutcomeSource | None = None
    profile_time_to_live: str | None = None
    status_filter: list[Status | None] | None = None
    tags: list[str] | None = None


class GetProfilesViewResponse(WireModel):
    """Profiles returned by ``get_profiles`` and ``get_all_profiles``."""

    success: bool
    user_profiles: list[ProfileView]
    msg: str | None = None


class UpdateUserProfileRequest(WireModel):
    """Change a profile's content and/or custom features; ``None`` leaves a field alone."""

    user_id: str
    profile_id: str
    content: str | None = None
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


class DeleteUserProfileRequest(WireModel):
    """Delete one profile by id, or the user's profiles matching ``search_query``."""

    user_id: NonEmptyStr
    profile_id: str = ""
    search_query: str = ""


class DeleteUserProfileResponse(WireModel):
    """Outcome of a profile delete."""

    success: bool
    message: str = ""


class DeleteProfilesByIdsRequest(WireModel):
    """Delete several profiles at once."""

    profile_ids: list[str] = Field(min_length=1, max_length=10_000)


# ---------------------------------------------------------------------------------------------
# Playbooks
# ---------------------------------------------------------------------------------------------


class AddUserPlaybookRequest(WireModel):
    """Store user playbooks directly; each needs a content or a trigger to be embedded."""

    user_playbooks: list[UserPlaybook] = Field(min_length=1, max_length=1_000)

    @model_validator(mode="after")
    def _every_playbook_has_text(self) -> Self:
        for index, playbook in enumerate(self.user_playbooks):
            if not (playbook.trigger or playbook.content):
                raise ValueError(
                    f"user_playbooks[{index}]: at least one of content or trigger must be provided"
                )
        return self


class AddUserPlaybookResponse(WireModel):
    """How many user playbooks were stored, and their ids (ours: Reflexio answered the count only)."""

    success: bool
    message: str | None = None
    added_count: int = 0
    user_playbook_ids: list[int] = Field(default_factory=list)


class AddAgentPlaybookRequest(WireModel):
    """Store agent playbooks directly (for example, hand-written rules)."""

    agent_playbooks: list[AgentPlaybook] = Field(min_length=1)


class AddAgentPlaybookResponse(WireModel):
    """How many agent playbooks were stored, and their ids (ours: Reflexio answered the count only)."""

    success: bool
    message: str | None = None
    added_count: int = 0
    agent_playbook_ids: list[int] = Field(default_factory=list)


class GetUserPlaybooksRequest(TimeWindow):
    """User playbooks, filtered; ``status_filter=[null]`` means current only."""

    limit: int | None = Field(default=100, gt=0)
    user_playbook_id: int | None = Field(default=None, gt=0)
    user_id: str | None = None
    request_id: str | None = None
    query: str | None = None
    playbook_name: str | None = None
    agent_version: str | None = None
    status_filter: list[Status | None] | None = None
    tags: list[str] | None = None


class GetUserPlaybooksViewResponse(WireModel):
    """User playbooks returned by ``get_user_playbooks``."""

    success: bool
    user_playbooks: list[UserPlaybookView]
    msg: str | None = None


class GetAgentPlaybooksRequest(TimeWindow):
    """Agent playbooks, filtered by lifecycle and by review state."""

    limit: int | None = Field(default=100, gt=0)
    agent_playbook_id: int | None = Field(default=None, gt=0)
    query: str | None = None
    playbook_name: str | None = None
    agent_version: str | None = None
    status_filter: list[Status | None] | None = None
    playbook_status_filter: PlaybookStatus | None = None
    tags: list[str] | None = None
    request_id: str | None = None
    session_id: str | None = None


class GetAgentPlaybooksViewResponse(WireModel):
    """Agent playbooks returned by ``get_agent_playbooks``."""

    success: bool
    agent_playbooks: list[AgentPlaybookView]
    msg: str | None = None


class UpdatePlaybookStatusRequest(WireModel):
    """Approve, reject or re-open an agent playbook.

    Additions: ``expected_status`` is the state the reviewer acted on (a different current
    state is a 409, so of two concurrent decisions one wins); ``note`` is kept in the audit
    history with who decided.
    """

    agent_playbook_id: int = Field(gt=0)
    playbook_status: PlaybookStatus
    expected_status: PlaybookStatus | None = None
    note: str | None = Field(default=None, max_length=4_000)


class UpdatePlaybookStatusResponse(WireModel):
    """Outcome of a review decision."""

    success: bool
    msg: str | None = None


class UpdateAgentPlaybookRequest(WireModel):
    """Edit an agent playbook; ``None`` leaves a field alone."""

    agent_playbook_id: int = Field(gt=0)
    playbook_name: str | None = None
    content: str | None = None
    trigger: str | None = None
    rationale: str | None = None
    playbook_status: PlaybookStatus | None = None
    expected_status: PlaybookStatus | None = None  # addition: see UpdatePlaybookStatusRequest
    note: str | None = Field(default=None, max_length=4_000)  # addition: kept in the history


class UpdateAgentPlaybookResponse(WireModel):
    """Outcome of an agent playbook edit."""

    success: bool
    msg: str | None = None


class UpdateUserPlaybookRequest(WireModel):
    """Edit a user playbook; ``None`` leaves a field alone."""

    user_playbook_id: int = Field(gt=0)
    playbook_name: str | None = None
    content: str | None = None
    trigger: str | None = None
    rationale: str | None = None


class UpdateUserPlaybookResponse(WireModel):
    """Outcome of a user playbook edit."""

    success: bool
    msg: str | None = None


class DeleteAgentPlaybookRequest(WireModel):
    """Delete one agent playbook."""

    agent_playbook_id: int = Field(gt=0)


class DeleteAgentPlaybookResponse(WireModel):
    """Outcome of an agent playbook delete."""

    success: bool
    message: str = ""


class DeleteUserPlaybookRequest(WireModel):
    """Delete one user playbook."""

    user_playbook_id: int = Field(gt=0)


class DeleteUserPlaybookResponse(WireModel):
    """Outcome of a user playbook delete."""

    success: bool
    message: str = ""


class DeleteAgentPlaybooksByIdsRequest(WireModel):
    """Delete several agent playbooks at once."""

    agent_playbook_ids: list[int] = Field(min_length=1, max_length=10_000)


class DeleteUserPlaybooksByIdsRequest(WireModel):
    """Delete several user playbooks at once."""

    user_playbook_ids: list[int] = Field(min_length=1, max_length=10_000)
