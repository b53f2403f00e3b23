"""Look at an org's background jobs and send dead ones back to the queue.

Jobs are rows (``reflexio.storage``); these use cases only read them and revive dead ones, so
an operator can see why learning stalled and retry it once the cause is fixed. Running jobs
is the worker's business, not this module's.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from reflexio.models.fields import RequestModel, RowId
from reflexio.records import Job, JobStatus
from reflexio.service.core import Core

__all__ = ["JobView", "JobsResponse", "RetryJobsRequest", "RetryJobsResponse", "list_jobs", "retry_jobs"]


class JobView(BaseModel):
    """One job as the API shows it (times are epoch seconds)."""

    id: int
    task: str
    key: str | None = None
    status: str
    attempts: int
    max_attempts: int
    run_at: float
    last_error: str | None = None
    request_id: str | None = None
    payload: dict[str, Any] = Field(default_factory=dict)
    created_at: float
    updated_at: float
    finished_at: float | None = None


class JobsResponse(BaseModel):
    """``GET /api/jobs`` and ``GET /api/jobs/dead``."""

    success: bool = True
    jobs: list[JobView] = Field(default_factory=list)
    msg: str | None = None


class RetryJobsRequest(RequestModel):
    """Which dead jobs to retry; none named means every dead job of the org."""

    job_ids: list[RowId] | None = Field(default=None, max_length=10_000)


class RetryJobsResponse(BaseModel):
    """How many dead jobs went back to the queue."""

    success: bool = True
    retried_count: int = 0
    msg: str | None = None


def _view(job: Job) -> JobView:
    return JobView(
        id=job.id,
        task=job.task,
        key=job.key,
        status=job.status.value,
        attempts=job.attempts,
        max_attempts=job.max_attempts,
        run_at=job.run_at,
        last_error=job.last_error,
        request_id=job.request_id,
        payload=job.payload,
        created_at=job.created_at,
        updated_at=job.updated_at,
        finished_at=job.finished_at,
    )


def list_jobs(
    core: Core,
    org_id: str,
    *,
    status: JobStatus | None = None,
    task: str | None = None,
    request_id: str | None = None,
    limit: int = 100,
) -> JobsResponse:
    """The org's jobs, newest first, optionally of one status, task and/or published request."""
    rows = core.storage.list_jobs(
        org_id,
        statuses=None if status is None else [status],
        task=task or None,
        request_id=request_id or None,
        limit=limit,
    )
    return JobsResponse(jobs=[_view(j) for j in rows])


def retry_jobs(core: Core, org_id: str, req: RetryJobsRequest) -> RetryJobsResponse:
    """Queue the org's dead jobs (all, or the listed ones) again with fresh attempts."""
    retried = core.storage.retry_jobs(org_id, req.job_ids)
    return RetryJobsResponse(retried_count=retried, msg=f"Queued {retried} dead job(s) again")
