"""Regenerating learnings by hand: reruns (pending output), manual runs (current), progress.

Semantics (Reflexio's routes, minus its data-loss bugs; see ``service.rerun`` for the job and
``service.versions`` for moving its output live):

* **rerun** (``rerun_profile_generation``, ``rerun_playbook_generation``) queues one durable
  job (task ``rerun``) that learns again from *all* matching interactions (user, source,
  agent version; the time range applies to each interaction's ``created_at``), ignoring
  bookmarks, and writes the result as **pending** learnings. Per user it first retires that
  user's previous pending output (as ``superseded`` tombstones: nothing is hard-deleted) and
  deduplicates only against the pending output of the same rerun; CURRENT and ARCHIVED rows
  are never candidates and never written (W15). One rerun per (org, extractor) at a time: a
  second one while one is queued or running is a 409, and so is an extractor the org's
  config turns off.
* **manual** (``manual_*_generation``) runs normal extraction now, with CURRENT output: it
  queues a flushing extraction job (debounced with any queued one) for each matching user and
  answers how many users were scheduled. Extraction jobs run every enabled extractor over the
  user's turns since its bookmarks, so the filters choose users, not turns. It is the only way
  (besides a rerun) a profile extractor with ``manual_trigger`` learns: publishes never run it.
* **upgrade / downgrade**: ``service.versions`` (one transaction each, scoped, audited).
* **progress**: ``get_operation_status?service_name=profile_generation|playbook_generation``
  reports the latest rerun job of that extractor (queued or running → ``in_progress``, done →
  ``completed``, dead → ``failed`` with its last error) with the counts its worker stored on
  the job row. One job per operation means concurrent reruns cannot overwrite each other's
  progress, as Reflexio's single status slot per service could.
"""

from __future__ import annotations

import uuid
from typing import Any

from reflexio.errors import ConflictError, ValidationError
from reflexio.learn.windows import enabled_extractors
from reflexio.models import (
    GetOperationStatusResponse,
    ManualPlaybookGenerationRequest,
    ManualPlaybookGenerationResponse,
    ManualProfileGenerationRequest,
    ManualProfileGenerationResponse,
    OperationStatus,
    OperationStatusInfo,
    RerunPlaybookGenerationRequest,
    RerunPlaybookGenerationResponse,
    RerunProfileGenerationRequest,
    RerunProfileGenerationResponse,
)
from reflexio.records import Job, JobStatus
from reflexio.service import publish, views
from reflexio.service.core import Core
from reflexio.service.rerun import RERUN, RerunScope, matching_users

__all__ = [
    "OPERATIONS",
    "get_operation_status",
    "manual_playbook_generation",
    "manual_profile_generation",
    "operation_info",
    "rerun_playbook_generation",
    "rerun_profile_generation",
]

#: ``get_operation_status`` service names → the extractor whose rerun they report.
OPERATIONS = {"profile_generation": "profile", "playbook_generation": "playbook"}
#: Attempts of a rerun job (each starts over; a user's earlier pending output is replaced).
RERUN_ATTEMPTS = 3


# -- rerun ----------------------------------------------------------------------------------------
def rerun_profile_generation(
    core: Core, org_id: str, req: RerunProfileGenerationRequest
) -> RerunProfileGenerationResponse:
    """Queue a profile rerun over all matching interactions (results arrive pending).

    Raises:
        ConflictError: A profile rerun is already queued or running, or profile extraction
            is turned off.
    """
    scope = RerunScope(
        "profile",
        user_id=req.user_id or None,
        source=req.source or None,
        start=views.epoch(req.start_time),
        end=views.epoch(req.end_time),
    )
    job = _submit(core, org_id, scope, req.model_dump(mode="json"))
    return RerunProfileGenerationResponse(success=True, msg=_queued_message(job, "profile_generation"))


def rerun_playbook_generation(
    core: Core, org_id: str, req: RerunPlaybookGenerationRequest
) -> RerunPlaybookGenerationResponse:
    """Queue a user playbook rerun for one agent version (results arrive pending).

    Raises:
        ConflictError: A playbook rerun is already queued or running, or playbook
            extraction is turned off.
    """
    scope = RerunScope(
        "playbook",
        source=req.source or None,
        agent_version=req.agent_version,
        start=views.epoch(req.start_time),
        end=views.epoch(req.end_time),
    )
    job = _submit(core, org_id, scope, req.model_dump(mode="json"))
    return RerunPlaybookGenerationResponse(success=True, msg=_queued_message(job, "playbook_generation"))


def _queued_message(job: Job, service_name: str) -> str:
    return f"Rerun queued as job {job.id}; poll get_operation_status?service_name={service_name}"


def _require_extractor(core: Core, org_id: str, extractor: str) -> None:
    if extractor not in enabled_extractors(core.org_config(org_id)):
        raise ConflictError(f"the {extractor} extractor is turned off in this org's config")


def _submit(core: Core, org_id: str, scope: RerunScope, params: dict[str, Any]) -> Job:
    """Queue the rerun job unless one of the same extractor is queued or running."""
    _require_extractor(core, org_id, scope.extractor)
    nonce = uuid.uuid4().hex
    job = Job(
        org_id=org_id,
        task=RERUN,
        key=scope.extractor,
        payload={"scope": scope.payload(), "request_params": params, "nonce": nonce},
        max_attempts=RERUN_ATTEMPTS,
    )
    with core.storage.transaction() as tx:
        active = tx.list_jobs(
            org_id, statuses=[JobStatus.QUEUED, JobStatus.RUNNING], task=RERUN, key=scope.extractor, limit=1
        )
        queued = active or tx.enqueue_jobs([job])
    if queued[0].payload.get("nonce") != nonce:  # one was there already (or a concurrent submit won)
        raise ConflictError(
            f"a {scope.extractor} rerun is already in progress (job {queued[0].id})",
            details={"job_id": queued[0].id},
        )
    return queued[0]


# -- manual ---------------------------------------------------------------------------------------
def manual_profile_generation(
    core: Core, org_id: str, req: ManualProfileGenerationRequest
) -> ManualProfileGenerationResponse:
    """Extract now (current output) for the users matching ``user_id`` and ``source``."""
    scope = RerunScope("profile", user_id=req.user_id or None, source=req.source or None)
    return ManualProfileGenerationResponse(success=True, msg=_schedule(core, org_id, scope))


def manual_playbook_generation(
    core: Core, org_id: str, req: ManualPlaybookGenerationRequest
) -> ManualPlaybookGenerationResponse:
    """Extract now (current output) for the users with requests of ``agent_version``."""
    scope = RerunScope("playbook", source=req.source or None, agent_version=req.agent_version)
    return ManualPlaybookGenerationResponse(success=True, msg=_schedule(core, org_id, scope))


def _schedule(core: Core, org_id: str, scope: RerunScope) -> str:
    """Queue a flushing extraction job per matching user; says how many were scheduled."""
    _require_extractor(core, org_id, scope.extractor)
    users = matching_users(core.storage, core.org_config(org_id), org_id, scope)
    jobs = [publish.extraction_job(org_id, user, flush=True, manual=True) for user in users]
    with core.storage.transaction() as tx:
        publish.enqueue_extraction(tx, jobs)
    return f"Extraction scheduled now for {len(jobs)} user(s)"


# -- progress -------------------------------------------------------------------------------------
def get_operation_status(core: Core, org_id: str, service_name: str) -> GetOperationStatusResponse:
    """The latest rerun of an extractor, as Reflexio's client polls it.

    Raises:
        ValidationError: ``service_name`` names no operation this server runs.
    """
    extractor = OPERATIONS.get(service_name)
    if extractor is None:
        raise ValidationError(
            f"unknown service_name {service_name!r}; expected one of {sorted(OPERATIONS)}",
            details={"service_name": service_name},
        )
    jobs = core.storage.list_jobs(org_id, task=RERUN, key=extractor, limit=1)
    if not jobs:
        return GetOperationStatusResponse(success=True, msg=f"no {service_name} operation has run")
    return GetOperationStatusResponse(success=True, operation_status=operation_info(service_name, jobs[0]))


_STATUS = {
    JobStatus.QUEUED: OperationStatus.IN_PROGRESS,
    JobStatus.RUNNING: OperationStatus.IN_PROGRESS,
    JobStatus.DONE: OperationStatus.COMPLETED,
    JobStatus.DEAD: OperationStatus.FAILED,
}


def operation_info(service_name: str, job: Job) -> OperationStatusInfo:
    """A rerun job as Reflexio's ``OperationStatusInfo``: its state plus its stored progress."""
    p = job.progress
    status = _STATUS[job.status]
    total, processed = int(p.get("total_users", 0)), int(p.get("processed_users", 0))
    failed = int(p.get("failed_users", 0))
    finished = status is not OperationStatus.IN_PROGRESS
    percentage = 100.0 if finished else (100.0 * (processed + failed) / total if total else 0.0)
    return OperationStatusInfo(
        service_name=service_name,
        status=status,
        started_at=int(job.created_at),
        completed_at=int(job.finished_at) if job.finished_at is not None else None,
        total_users=total,
        processed_users=processed,
        failed_users=failed,
        current_user_id=p.get("current_user_id"),
        processed_user_ids=list(p.get("processed_user_ids", [])),
        failed_user_ids=list(p.get("failed_user_ids", [])),
        request_params=dict(job.payload.get("request_params", {})),
        stats=dict(p.get("stats", {})),
        error_message=job.last_error if status is OperationStatus.FAILED else None,
        progress_percentage=min(100.0, percentage),
    )
