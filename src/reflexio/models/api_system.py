"""Responses of the system routes, the config write routes, and one user's data as a whole.

Health and version bodies follow Reflexio 0.2.32 exactly, because load balancers and scripts
probe them. ``export_user_data`` is ours: everything stored about one user, as one JSON
document, so a user can take their data away (and ``clear_user_data`` can remove it).
"""

from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from reflexio.models.entities import (
    AgentSuccessEvaluationResult,
    Interaction,
    Request,
    RetrievedLearningEvaluationResult,
    UserPlaybook,
    UserProfile,
)
from reflexio.models.fields import Id, RequestModel, WireModel, now_epoch
from reflexio.models.org_config import Config

__all__ = [
    "ClearUserDataRequest",
    "ClearUserDataResponse",
    "ErrorResponse",
    "ExportUserDataResponse",
    "LivenessResponse",
    "ReadinessCheck",
    "ReadinessResponse",
    "RootResponse",
    "SetConfigRequest",
    "SetConfigResponse",
    "VersionResponse",
    "WhoamiResponse",
]


class ErrorResponse(WireModel):
    """The body of every error the API answers with (4xx and 5xx alike).

    ``error`` is a stable machine-readable code (``validation_error``, ``not_found``,
    ``quota_exceeded``...), ``detail`` and ``message`` the same human-readable sentence (both,
    because Reflexio's clients read one or the other), ``details`` structured context: for a
    422 the list of problems, each naming its field in ``loc``.
    """

    success: Literal[False] = False
    error: str
    detail: str
    message: str
    details: dict[str, Any] | None = None


class RootResponse(WireModel):
    """Banner at ``GET /``: where the docs and the health check are."""

    service: str = "Reflexio API"
    docs: str = "/docs"
    health: str = "/health"


class ReadinessCheck(WireModel):
    """One dependency's readiness, as reported under ``checks``."""

    status: Literal["passed", "failed", "pending", "not_checked"]
    required: bool = True
    reason: str | None = None
    checked_at: datetime | None = None


class ReadinessResponse(WireModel):
    """``GET /health`` and ``/health/ready``: 200 when healthy, 503 otherwise."""

    status: Literal["healthy", "unhealthy"] = "healthy"
    checks: dict[str, ReadinessCheck] = Field(default_factory=dict)


class LivenessResponse(WireModel):
    """``GET /health/live``: the process is up, whatever its dependencies say."""

    status: Literal["alive"] = "alive"


class VersionResponse(WireModel):
    """``GET /meta/version``."""

    server_version: str
    api_version: str = "v1"
    min_client_version: str = "0.1.0"


class WhoamiResponse(WireModel):
    """The caller's organisation and where its data lives; never contains credentials."""

    success: bool
    org_id: str
    storage_type: str | None = None
    storage_label: str | None = None
    storage_configured: bool = False
    message: str = ""


class SetConfigRequest(WireModel):
    """A whole config to store: Reflexio 0.2.7's wrapper for ``set_config`` (the body is the config)."""

    config: Config


class SetConfigResponse(WireModel):
    """Outcome of ``set_config`` and ``update_config``."""

    success: bool
    msg: str | None = None


class ClearUserDataRequest(RequestModel):
    """Delete everything scoped to one user (agent playbooks are shared and stay)."""

    user_id: Id


class ClearUserDataResponse(WireModel):
    """How many rows of each kind were deleted (keys such as ``interactions``, ``profiles``)."""

    success: bool
    deleted_counts: dict[str, int] = Field(default_factory=dict)
    message: str | None = None


class ExportUserDataResponse(WireModel):
    """Everything stored about one user (``GET /api/export_user_data?user_id=``).

    Every lifecycle state is included (archived, pending, tombstones) so the export is
    complete; embeddings are not, since they are derived and can be recomputed. Agent
    playbooks are not the user's data and are left out. ``format_version`` changes only
    when a field is removed or changes meaning.
    """

    success: bool = True
    msg: str | None = None
    format_version: int = 1
    user_id: str
    exported_at: int = Field(default_factory=now_epoch)
    requests: list[Request] = Field(default_factory=list)
    interactions: list[Interaction] = Field(default_factory=list)
    profiles: list[UserProfile] = Field(default_factory=list)
    user_playbooks: list[UserPlaybook] = Field(default_factory=list)
    agent_success_evaluation_results: list[AgentSuccessEvaluationResult] = Field(default_factory=list)
    retrieved_learning_evaluation_results: list[RetrievedLearningEvaluationResult] = Field(
        default_factory=list
    )
