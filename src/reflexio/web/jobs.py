"""Jobs: the background work of the org (queued, running, dead with its last error) and retry.

Retrying sends dead jobs back to the queue with fresh attempts (``service.jobs.retry_jobs``):
all of them, or the ones ticked.
"""

from __future__ import annotations

from starlette.responses import Response
from starlette.routing import Route

from reflexio.errors import BadRequestError
from reflexio.records import JobStatus
from reflexio.service import jobs
from reflexio.service.overview import JOB_COUNT_CAP
from reflexio.web.routing import Ask, action, page, redirect

__all__ = ["ROUTES"]

_TABS = (JobStatus.DEAD, JobStatus.QUEUED, JobStatus.RUNNING, JobStatus.DONE)
_SHOWN = 100


def _list(ask: Ask) -> Response:
    raw = ask.query.get("status", JobStatus.DEAD.value)
    try:
        status = JobStatus(raw)
    except ValueError as exc:
        raise BadRequestError(f"status must be one of {', '.join(s.value for s in _TABS)}") from exc
    counts = {
        s.value: len(jobs.list_jobs(ask.core, ask.org_id, status=s, limit=JOB_COUNT_CAP).jobs)
        for s in _TABS
        if s is not JobStatus.DONE
    }
    shown = jobs.list_jobs(ask.core, ask.org_id, status=status, limit=_SHOWN).jobs
    return ask.render(
        "jobs.html",
        status=status.value,
        tabs=[s.value for s in _TABS],
        counts=counts,
        jobs=shown,
        cap=JOB_COUNT_CAP,
        retried=ask.query.get("retried"),
    )


def _retry(ask: Ask) -> Response:
    raw = ask.form.getlist("ids")
    if not all(str(i).isdigit() for i in raw) or len(raw) > 10_000:
        raise BadRequestError("ids must be job numbers")
    ids = [int(str(i)) for i in raw] if raw else None
    if ids is None and ask.form.get("all") != "1":
        raise BadRequestError("tick the jobs to retry, or retry all")
    done = jobs.retry_jobs(ask.core, ask.org_id, jobs.RetryJobsRequest(job_ids=ids))
    return redirect(f"/ui/jobs?status=queued&retried={done.retried_count}")


ROUTES = [
    Route("/jobs", page(_list), name="jobs"),
    Route("/jobs/retry", action(_retry), methods=["POST"]),
]
