"""Background jobs of the caller's org: list them, list the dead ones, retry dead ones."""

from __future__ import annotations

from reflexio.api.auth import CallerDep, CoreDep
from reflexio.api.routes import IdParam, PageParam, api_router
from reflexio.records import JobStatus
from reflexio.service import jobs
from reflexio.service.jobs import JobsResponse, RetryJobsRequest, RetryJobsResponse

__all__ = ["router"]

router = api_router("jobs")


@router.get("/jobs")
def list_jobs(
    core: CoreDep,
    caller: CallerDep,
    status: JobStatus | None = None,
    task: IdParam | None = None,
    request_id: IdParam | None = None,
    limit: PageParam = 100,
) -> JobsResponse:
    """The org's jobs, newest first."""
    return jobs.list_jobs(core, caller.org_id, status=status, task=task, request_id=request_id, limit=limit)


@router.get("/jobs/dead")
def list_dead_jobs(
    core: CoreDep, caller: CallerDep, task: IdParam | None = None, limit: PageParam = 100
) -> JobsResponse:
    """Jobs that ran out of attempts, newest first, with their last error."""
    return jobs.list_jobs(core, caller.org_id, status=JobStatus.DEAD, task=task, limit=limit)


@router.post("/jobs/retry")
def retry_jobs(body: RetryJobsRequest, core: CoreDep, caller: CallerDep) -> RetryJobsResponse:
    """Queue dead jobs (all of the org's, or the listed ones) again."""
    return jobs.retry_jobs(core, caller.org_id, body)
