"""Client methods for the server and the org: health, identity, config, user data, jobs.

Each function is the body of the client method of the same name (see ``_transport``); the
docstrings are the public methods' docstrings.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from reflexio.client._transport import Call, Plan, dump, parse_as, single
from reflexio.models import (
    ClearUserDataRequest,
    ClearUserDataResponse,
    Config,
    ExportUserDataResponse,
    ReadinessResponse,
    SetConfigRequest,
    SetConfigResponse,
    UsageResponse,
    VersionResponse,
    WhoamiResponse,
    WireModel,
)

__all__ = [
    "JobView",
    "ListJobsResponse",
    "RetryJobsResponse",
    "clear_user_data",
    "export_user_data",
    "get_config",
    "get_usage",
    "health",
    "list_jobs",
    "retry_jobs",
    "set_config",
    "update_config",
    "version",
    "whoami",
]


def health() -> Plan[ReadinessResponse]:
    """Whether the server and its dependencies can serve requests, for probes and scripts.

    An unhealthy server answers 503 with the same report, which is returned rather than
    raised so the caller can read which check failed.

    Returns:
        ``status`` (``healthy``/``unhealthy``) and one entry per dependency check.
    """
    return single(Call("GET", "/health", parse_as(ReadinessResponse), answers=(503,)))


def version() -> Plan[VersionResponse]:
    """The server's version and the oldest client it supports.

    Returns:
        ``server_version``, ``api_version`` and ``min_client_version``.
    """
    return single(Call("GET", "/meta/version", parse_as(VersionResponse)))


def whoami() -> Plan[WhoamiResponse]:
    """Which org the API key acts as and where its data lives (never any credential).

    Returns:
        The org id and a masked description of its storage.
    """
    return single(Call("GET", "/api/whoami", parse_as(WhoamiResponse)))


def get_usage() -> Plan[UsageResponse]:
    """The org's plan and this month's use of each quota (input tokens, learnings, searches).

    Returns:
        Per quota what was used, the limit (``None``: unlimited) and what remains; when the
        month resets; whether learning is paused by a quota, and why.
    """
    return single(Call("GET", "/api/usage", parse_as(UsageResponse)))


def get_config() -> Plan[Config]:
    """The org's configuration: extractors, windows, models, storage.

    Secrets (API keys, passwords in URLs) come back masked as ``****`` plus their last four
    characters; sending a masked value back with :meth:`set_config` keeps the stored secret.

    Returns:
        The config; keys this client version does not know are ignored.
    """
    return single(Call("GET", "/api/get_config", Config.from_stored))


def set_config(config: Config | SetConfigRequest | Mapping[str, Any]) -> Plan[SetConfigResponse]:
    """Replace the org's whole configuration.

    Typical use is read-modify-write: ``cfg = client.get_config()``, change a field,
    ``client.set_config(cfg)``. A dict is sent as is and validated by the server, which
    rejects unknown keys at every level.

    Args:
        config: The complete config (or a ``SetConfigRequest`` holding it, as Reflexio
            0.2.7 wrote it).

    Returns:
        Whether it was stored.

    Raises:
        ValidationError: The config is invalid, or a masked secret matches nothing stored.
        ConflictError: The write tried to change the retrieval experiment, which has its own
            lifecycle, or raced another write.
    """
    if isinstance(config, SetConfigRequest):
        config = config.config
    body = dump(config) if isinstance(config, BaseModel) else dict(config)
    return single(Call("POST", "/api/set_config", parse_as(SetConfigResponse), json=body))


def update_config(partial: Mapping[str, Any]) -> Plan[SetConfigResponse]:
    """Change some top-level fields of the org's config and keep the rest.

    The server merges atomically, so two processes updating different fields do not undo
    each other. Nested objects (``llm_config``, ...) are replaced whole, not merged.

    Args:
        partial: Top-level fields to set, e.g. ``{"window_size": 20}``.

    Returns:
        Whether it was stored (``msg`` says when nothing changed).

    Raises:
        TypeError: ``partial`` is not a mapping (nothing was sent).
        ValidationError: The merged config is invalid or names an unknown key.
    """
    if not isinstance(partial, Mapping):
        raise TypeError(f"update_config requires a dict, got {type(partial).__name__}")
    return single(Call("POST", "/api/update_config", parse_as(SetConfigResponse), json=dict(partial)))


def clear_user_data(user_id: str) -> Plan[ClearUserDataResponse]:
    """Delete everything stored about one user: turns, requests, profiles, user playbooks.

    Agent playbooks are shared across users and stay. Pair with :meth:`export_user_data` to
    honour access and erasure requests.

    Args:
        user_id: The user to erase.

    Returns:
        How many rows of each kind were deleted.
    """
    req = ClearUserDataRequest(user_id=user_id)
    return single(Call("POST", "/api/clear_user_data", parse_as(ClearUserDataResponse), json=dump(req)))


def export_user_data(user_id: str) -> Plan[ExportUserDataResponse]:
    """Everything stored about one user, as one document the user can take away.

    Args:
        user_id: The user to export.

    Returns:
        Requests, turns, profiles and user playbooks in every lifecycle state, and the
        evaluations of the user's sessions (no embeddings, no agent playbooks).
    """
    return single(
        Call("GET", "/api/export_user_data", parse_as(ExportUserDataResponse), params={"user_id": user_id})
    )


# The server defines these in reflexio.service.jobs, which the client may not import; these
# mirror them leniently (unknown fields kept) until they move to reflexio.models.


class JobView(WireModel):
    """One background job as ``GET /api/jobs`` lists it (times are epoch seconds)."""

    model_config = ConfigDict(extra="allow")

    id: int
    task: str
    status: str
    key: str | None = None
    request_id: str | None = None
    attempts: int = 0
    max_attempts: int = 0
    last_error: str | None = None
    payload: dict[str, Any] = Field(default_factory=dict)
    run_at: float | None = None
    created_at: float | None = None
    updated_at: float | None = None
    finished_at: float | None = None


class ListJobsResponse(WireModel):
    """Jobs of the org, newest first."""

    model_config = ConfigDict(extra="allow")

    success: bool = True
    jobs: list[JobView] = Field(default_factory=list)
    msg: str | None = None


class RetryJobsResponse(WireModel):
    """How many dead jobs went back to the queue."""

    model_config = ConfigDict(extra="allow")

    success: bool = True
    retried_count: int = 0
    msg: str | None = None


def list_jobs(
    *,
    status: str | None = None,
    task: str | None = None,
    limit: int = 100,
) -> Plan[ListJobsResponse]:
    """The org's background jobs, to see why learning is late or what failed.

    Args:
        status: Only jobs in this state: ``queued``, ``running``, ``done`` or ``dead``.
        task: Only jobs of this task.
        limit: At most this many.

    Returns:
        The jobs, newest first, with attempts and the last error.
    """
    params = {"status": status, "task": task, "limit": limit}
    return single(Call("GET", "/api/jobs", parse_as(ListJobsResponse), params=params))


def retry_jobs(job_ids: list[int] | None = None) -> Plan[RetryJobsResponse]:
    """Put dead-lettered jobs back in the queue, e.g. after fixing an LLM key.

    Args:
        job_ids: The dead jobs to retry; ``None`` retries all of the org's dead jobs.

    Returns:
        How many jobs were queued again.
    """
    return single(Call("POST", "/api/jobs/retry", parse_as(RetryJobsResponse), json={"job_ids": job_ids}))
