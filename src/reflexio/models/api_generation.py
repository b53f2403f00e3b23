"""Requests and responses that (re)generate learnings and read evaluation results.

Reruns and manual runs are long operations: the route answers at once and the client polls
``GET /api/get_operation_status`` (``OperationStatusInfo``). Upgrade and downgrade swap the
pending and current versions of learnings. Evaluation results are the session-success and
retrieved-learning verdicts the reflect step produces.
"""

from typing import Annotated, Any, TypeAlias

from pydantic import AfterValidator, Field

from reflexio.models.entities import (
    EvaluationResultView,
    OperationStatus,
    RetrievedLearningEvaluationResult,
)
from reflexio.models.fields import (
    DEFAULT_AGENT_VERSION,
    Flag,
    Id,
    Name,
    NonEmptyStr,
    PageSize,
    RequestModel,
    SessionOutcomeSource,
    TimeWindow,
    WireModel,
)

__all__ = [
    "DowngradeProfilesRequest",
    "DowngradeProfilesResponse",
    "DowngradeUserPlaybooksRequest",
    "DowngradeUserPlaybooksResponse",
    "GetAgentSuccessEvaluationResultsRequest",
    "GetEvaluationResultsViewResponse",
    "GetOperationStatusRequest",
    "GetOperationStatusResponse",
    "GetRetrievedLearningEvaluationResultsRequest",
    "GetRetrievedLearningEvaluationResultsResponse",
    "ManualPlaybookGenerationRequest",
    "ManualPlaybookGenerationResponse",
    "ManualProfileGenerationRequest",
    "ManualProfileGenerationResponse",
    "OperationStatusInfo",
    "RerunPlaybookGenerationRequest",
    "RerunPlaybookGenerationResponse",
    "RerunProfileGenerationRequest",
    "RerunProfileGenerationResponse",
    "RunPlaybookAggregationRequest",
    "RunPlaybookAggregationResponse",
    "UpgradeProfilesRequest",
    "UpgradeProfilesResponse",
    "UpgradeUserPlaybooksRequest",
    "UpgradeUserPlaybooksResponse",
]


def _agent_version_or_default(value: str) -> str:
    return value or DEFAULT_AGENT_VERSION


AgentVersion: TypeAlias = Annotated[Name, AfterValidator(_agent_version_or_default)]
Names: TypeAlias = Annotated[list[Name], Field(max_length=100)]
"""An agent version where an empty string means the default, ``agent-v0``."""


# ---------------------------------------------------------------------------------------------
# Profiles
# ---------------------------------------------------------------------------------------------


class RerunProfileGenerationRequest(TimeWindow):
    """Re-extract profiles from all matching interactions; results arrive as pending."""

    user_id: Id | None = None
    source: SessionOutcomeSource | None = None
    extractor_names: Names | None = None  # accepted and ignored: one extractor per org


class RerunProfileGenerationResponse(WireModel):
    """The rerun was started (or refused); poll the operation for its result."""

    success: bool
    msg: str | None = None
    profiles_generated: int | None = None
    operation_id: str = "rerun_profile_generation"


class ManualProfileGenerationRequest(RequestModel):
    """Extract profiles now from the latest window of interactions; results are current."""

    user_id: Id | None = None
    source: SessionOutcomeSource | None = None
    extractor_names: Names | None = None  # accepted and ignored


class ManualProfileGenerationResponse(WireModel):
    """Outcome of a manual profile run."""

    success: bool
    msg: str | None = None
    profiles_generated: int | None = None


class UpgradeProfilesRequest(RequestModel):
    """Promote pending profiles to current, archiving the current ones (``None`` = all users)."""

    user_id: Id | None = None
    profile_ids: list[Id] | None = Field(default=None, max_length=10_000)
    only_affected_users: Flag = False


class UpgradeProfilesResponse(WireModel):
    """Counts of what an upgrade changed."""

    success: bool
    profiles_archived: int = 0
    profiles_promoted: int = 0
    profiles_deleted: int = 0
    message: str = ""


class DowngradeProfilesRequest(RequestModel):
    """Undo an upgrade: current back to pending, archived back to current."""

    user_id: Id | None = None
    profile_ids: list[Id] | None = Field(default=None, max_length=10_000)
    only_affected_users: Flag = False


class DowngradeProfilesResponse(WireModel):
    """Counts of what a downgrade changed."""

    success: bool
    profiles_demoted: int = 0
    profiles_restored: int = 0
    message: str = ""


# ---------------------------------------------------------------------------------------------
# Playbooks
# ---------------------------------------------------------------------------------------------


class RerunPlaybookGenerationRequest(TimeWindow):
    """Re-extract user playbooks for an agent version; results arrive as pending."""

    agent_version: AgentVersion = DEFAULT_AGENT_VERSION
    playbook_name: Name | None = None  # accepted and ignored
    source: SessionOutcomeSource | None = None


class RerunPlaybookGenerationResponse(WireModel):
    """The rerun was started (or refused); poll the operation for its result."""

    success: bool
    msg: str | None = None
    playbooks_generated: int | None = None
    operation_id: str = "rerun_playbook_generation"


class ManualPlaybookGenerationRequest(RequestModel):
    """Extract user playbooks now from the latest window; results are current."""

    agent_version: AgentVersion = DEFAULT_AGENT_VERSION
    source: SessionOutcomeSource | None = None
    playbook_name: Name | None = None  # accepted and ignored


class ManualPlaybookGenerationResponse(WireModel):
    """Outcome of a manual playbook run."""

    success: bool
    msg: str | None = None
    playbooks_generated: int | None = None


class UpgradeUserPlaybooksRequest(RequestModel):
    """Promote pending user playbooks to current."""

    agent_version: Name | None = None
    playbook_name: Name | None = None
    archive_current: Flag = True


class UpgradeUserPlaybooksResponse(WireModel):
    """Counts of what an upgrade changed."""

    success: bool
    user_playbooks_deleted: int = 0
    user_playbooks_archived: int = 0
    user_playbooks_promoted: int = 0
    message: str = ""


class DowngradeUserPlaybooksRequest(RequestModel):
    """Undo a user playbook upgrade."""

    agent_version: Name | None = None
    playbook_name: Name | None = None


class DowngradeUserPlaybooksResponse(WireModel):
    """Counts of what a downgrade changed."""

    success: bool
    user_playbooks_demoted: int = 0
    user_playbooks_restored: int = 0
    message: str = ""


class RunPlaybookAggregationRequest(RequestModel):
    """Cluster an agent version's user playbooks into agent playbooks now."""

    agent_version: AgentVersion = DEFAULT_AGENT_VERSION
    playbook_name: Annotated[NonEmptyStr, Field(max_length=255)] = "playbook"


class RunPlaybookAggregationResponse(WireModel):
    """Outcome of an aggregation run."""

    success: bool
    message: str = ""


# ---------------------------------------------------------------------------------------------
# Operations
# ---------------------------------------------------------------------------------------------


class OperationStatusInfo(WireModel):
    """Progress of one long operation, as the client polls it until a terminal status."""

    service_name: str
    status: OperationStatus
    started_at: int
    completed_at: int | None = None
    total_users: int = 0
    processed_users: int = 0
    failed_users: int = 0
    current_user_id: str | None = None
    processed_user_ids: list[str] = Field(default_factory=list)
    failed_user_ids: list[dict[str, Any]] = Field(default_factory=list)
    request_params: dict[str, Any] = Field(default_factory=dict)
    stats: dict[str, Any] = Field(default_factory=dict)
    error_message: str | None = None
    progress_percentage: float = Field(default=0.0, ge=0.0, le=100.0)


class GetOperationStatusRequest(RequestModel):
    """Which operation to report on (``profile_generation`` or ``playbook_generation``)."""

    service_name: Name = "profile_generation"


class GetOperationStatusResponse(WireModel):
    """The latest state of the named operation, if one ever ran."""

    success: bool
    operation_status: OperationStatusInfo | None = None
    msg: str | None = None


# ---------------------------------------------------------------------------------------------
# Evaluation results
# ---------------------------------------------------------------------------------------------


class GetAgentSuccessEvaluationResultsRequest(TimeWindow):
    """Session-success verdicts, newest first."""

    limit: PageSize | None = 100
    agent_version: Name | None = None


class GetEvaluationResultsViewResponse(WireModel):
    """Session-success verdicts."""

    success: bool
    agent_success_evaluation_results: list[EvaluationResultView]
    msg: str | None = None


class GetRetrievedLearningEvaluationResultsRequest(TimeWindow):
    """Per-learning verdicts; the time window applies to the turn that received the learning."""

    user_id: Id | None = None
    session_id: Id | None = None
    limit: PageSize = 100


class GetRetrievedLearningEvaluationResultsResponse(WireModel):
    """Per-learning relevance and impact verdicts."""

    success: bool
    results: list[RetrievedLearningEvaluationResult] = Field(default_factory=list)
    msg: str | None = None
