"""Publishing: store what happened and schedule learning, atomically and idempotently.

A publish writes the request, its interactions and the follow-up jobs in one transaction, and
returns as soon as that commits; learning runs later in job workers. The caller's
``request_id`` is the idempotency key: the same payload again returns the first result and
stores nothing new, a different payload under the same id is a conflict whose 409 names the
differing fields (``service.idempotency`` says what "the same" means).

Learning status is derived from durable state, not from in-process bookkeeping: a request is
"done" when every extractor's bookmark has passed its last interaction.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from reflexio import telemetry
from reflexio.errors import ConflictError, NotFoundError, ValidationError
from reflexio.filters import InteractionFilter
from reflexio.models import (
    DEFAULT_AGENT_VERSION,
    FinalizeSessionRequest,
    FinalizeSessionResponse,
    LearningStatusResponse,
    PublishUserInteractionRequest,
    PublishUserInteractionResponse,
)
from reflexio.models.org_config import Config
from reflexio.records import Job, JobStatus, RequestRecord, now
from reflexio.service import idempotency, quotas, references, views
from reflexio.service.core import HOT_PATH_CONFIG_AGE, Core
from reflexio.storage import Storage

__all__ = [
    "EVALUATE_SESSION",
    "EXTRACT",
    "enqueue_extraction",
    "extractors_of",
    "finalize_session",
    "idle_job",
    "learning_status",
    "publish",
    "wait_for_learning",
]

#: How long a user's new turns wait for more before extraction runs. Learning works on
#: windows of several turns anyway, and one job per user per batch instead of one per publish
#: spares the workers (and the store's write lock) most of their claims and no-op runs.
#: A flush (``wait_for_response``, a finished session) runs at once; a batch whose tail holds a
#: turn that teaches something (a correction, a preference...) is flushed by the job itself
#: (``learn.windows.run_extraction``), so it is learned within seconds without a full stride.
EXTRACTION_BATCH_SECONDS = 2.0

#: Job task names (the handlers live in reflexio.learn / reflexio.jobs).
EXTRACT = "extract"
EVALUATE_SESSION = "evaluate_session"


@dataclass(frozen=True, slots=True)
class Extractor:
    """One learning extractor enabled for an org ("profile" or "playbook")."""

    name: str
    sources: tuple[str, ...] | None


def extractors_of(config: Config) -> list[Extractor]:
    """The extractors that learn from every publish, with their source allow-lists.

    A profile extractor with ``manual_trigger`` is not one of them: it runs on request only.
    """
    out = []
    profile = config.profile_extractor_config
    if profile is not None and not profile.manual_trigger:
        sources = profile.request_sources_enabled
        out.append(Extractor("profile", tuple(sources) if sources else None))
    if config.user_playbook_extractor_config is not None:
        sources = config.user_playbook_extractor_config.request_sources_enabled
        out.append(Extractor("playbook", tuple(sources) if sources else None))
    return out


def extraction_key(user_id: str) -> str:
    """Dedupe key: at most one queued extraction job per (org, user), covering its extractors."""
    return user_id


def publish(
    core: Core, org_id: str, req: PublishUserInteractionRequest, *, flush: bool = False
) -> PublishUserInteractionResponse:
    """Store a request and enqueue its learning jobs in one transaction.

    Args:
        core: The process core.
        org_id: The caller's org.
        req: The publish request.
        flush: Learn from every turn now, even a tail shorter than a stride (the caller
            waits for learning, or says the session is finished).

    Raises:
        ConflictError: ``request_id`` was already used with a different payload.
        ValidationError: A flag this server cannot act on is set.
    """
    if req.override_learning_stall:
        raise ValidationError(
            "override_learning_stall is not supported by this server: learning never stalls after "
            "provider errors here (failed jobs are retried, then listed by `reflexio jobs dead` and "
            "requeued by `reflexio jobs retry`); publish without it",
            details={"fields": ["override_learning_stall"]},
        )
    started = time.perf_counter()
    attributes = {"reflexio.org": org_id, "reflexio.request_id": req.request_id}
    with telemetry.operation(
        "reflexio.publish", **attributes, **{"reflexio.turns": len(req.interaction_data_list)}
    ):
        out = _store(core, org_id, req, flush=flush)
    telemetry.PUBLISH_MS.record((time.perf_counter() - started) * 1000, {"org": org_id})
    return out


def _store(
    core: Core, org_id: str, req: PublishUserInteractionRequest, *, flush: bool = False
) -> PublishUserInteractionResponse:
    request_id = req.request_id or uuid.uuid4().hex
    digest = idempotency.payload_hash(req)
    warnings = [*req.payload_warnings(), *references.reference_warnings(core.storage, org_id, req)]
    existing = core.storage.get_request(org_id, request_id) if req.request_id else None
    if existing is not None:
        return _replayed(core, org_id, existing, digest, req, warnings)
    config = core.org_config(org_id, max_age=HOT_PATH_CONFIG_AGE)
    record = RequestRecord(
        org_id=org_id,
        request_id=request_id,
        user_id=req.user_id,
        session_id=req.session_id,
        source=req.source or "",
        agent_version=req.agent_version or DEFAULT_AGENT_VERSION,
        created_at=min((i.created_at for i in req.interaction_data_list), default=int(now())),
        payload_hash=digest,
        skip_aggregation=req.skip_aggregation,
    )
    turns = [
        views.interaction_record(org_id, request_id, req.user_id, req.session_id, item)
        for item in req.interaction_data_list
    ]
    try:
        flush = flush or req.session_finished or req.force_extraction
        with core.storage.transaction() as tx:
            tx.insert_request(record, turns)
            enqueue_extraction(tx, _extraction_jobs(config, record, req, flush))
            idle = _idle_job(config, record)
            if req.session_finished:
                idle.run_at = now()
            tx.enqueue_jobs([idle], debounce=True)
            if req.session_finished:
                tx.expedite_job(org_id, EVALUATE_SESSION, idle.key or "")
    except ConflictError:  # a concurrent retry won the race: answer as a replay
        stored = core.storage.get_request(org_id, request_id)
        if stored is None:
            raise
        return _replayed(core, org_id, stored, digest, req, warnings)
    return _response(core, record, warnings, "Interaction stored; learning is scheduled")


def _extraction_jobs(
    config: Config, record: RequestRecord, req: PublishUserInteractionRequest, flush: bool
) -> list[Job]:
    wanted = [e for e in extractors_of(config) if e.sources is None or record.source in e.sources]
    if req.evaluation_only or not wanted:
        return []
    return [extraction_job(record.org_id, record.user_id, flush=flush, request_id=record.request_id)]


def enqueue_extraction(tx: Storage, jobs: Sequence[Job]) -> None:
    """Queue extraction jobs: one batches with the user's queued job, a flush makes it due now.

    A waiting job joins the queued one (dedupe keeps the earlier due time); a flushing one
    updates it (payload ``flush``) and is expedited, since a debounce alone never moves a due
    time earlier.
    """
    waiting = [job for job in jobs if not job.payload.get("flush")]
    flushing = [job for job in jobs if job.payload.get("flush")]
    if waiting:
        tx.enqueue_jobs(waiting)
    if flushing:
        tx.enqueue_jobs(flushing, debounce=True)
        for job in flushing:
            tx.expedite_job(job.org_id, EXTRACT, job.key or "")


def extraction_job(
    org_id: str, user_id: str, *, flush: bool, request_id: str | None = None, manual: bool = False
) -> Job:
    """The (deduplicated) job that learns from a user's new turns with every extractor.

    Unless flushed, it is due `EXTRACTION_BATCH_SECONDS` from now, and publishes for the same
    user until then join it (at most one extraction job per user is queued). A ``manual`` job
    also runs the extractors that only learn when asked (``manual_trigger``).
    """
    return Job(
        org_id=org_id,
        task=EXTRACT,
        key=extraction_key(user_id),
        payload={"user_id": user_id, "flush": flush, **({"manual": True} if manual else {})},
        request_id=request_id,
        run_at=now() if flush else now() + EXTRACTION_BATCH_SECONDS,
    )


def idle_job(
    org_id: str,
    user_id: str,
    session_id: str,
    agent_version: str,
    *,
    run_at: float,
    request_id: str | None = None,
) -> Job:
    """The session's evaluation job (one queued per session: enqueue it with ``debounce``)."""
    return Job(
        org_id=org_id,
        task=EVALUATE_SESSION,
        key=f"{user_id}:{session_id}",
        payload={"user_id": user_id, "session_id": session_id, "agent_version": agent_version},
        run_at=run_at,
        request_id=request_id,
    )


def _idle_job(config: Config, record: RequestRecord) -> Job:
    """The session-idle evaluation: a debounced timer that each publish pushes back."""
    return idle_job(
        record.org_id,
        record.user_id,
        record.session_id,
        record.agent_version,
        run_at=now() + config.session_idle_seconds,
        request_id=record.request_id,
    )


def _replayed(
    core: Core,
    org_id: str,
    existing: RequestRecord,
    digest: str,
    req: PublishUserInteractionRequest,
    warnings: list[str],
) -> PublishUserInteractionResponse:
    if existing.payload_hash != digest:
        differ = idempotency.differences(core.storage, org_id, existing, req)
        if differ:
            raise ConflictError(
                f"request_id {existing.request_id!r} was already published with a different payload: "
                f"{idempotency.describe(differ)} differ(s) from what is stored",
                details={"request_id": existing.request_id, "fields": differ},
            )
    return _response(core, existing, warnings, "Request already stored; nothing new was written")


def _response(
    core: Core, record: RequestRecord, warnings: list[str], message: str
) -> PublishUserInteractionResponse:
    """The acknowledgement: learning is deferred to the jobs (``wait_for_learning`` reports on it)."""
    return PublishUserInteractionResponse(
        success=True,
        message=message,
        warnings=warnings,
        request_id=record.request_id,
        storage_type=core.storage.backend,
        learning_status="deferred",
    )


def learning_status(core: Core, org_id: str, request_id: str) -> LearningStatusResponse:
    """Where learning from a request stands, from bookmarks and jobs.

    "done" when every enabled extractor's bookmark covers the request's last interaction;
    otherwise the state of that user's extraction job (running → processing, queued →
    pending, only dead ones left → failed).
    """
    record = core.storage.get_request(org_id, request_id)
    if record is None:
        raise NotFoundError(f"request {request_id!r} not found")
    turns = core.storage.list_interactions(org_id, InteractionFilter(request_ids=(request_id,)))
    last_id = max((t.id for t in turns), default=0)
    pending = [
        e.name
        for e in extractors_of(core.org_config(org_id))
        if (bm := core.storage.get_bookmark(org_id, record.user_id, e.name)) is None
        or bm.last_interaction_id < last_id
    ]
    if not pending:
        return LearningStatusResponse(status="done")
    paused = quotas.learning_pause(core, org_id)
    if paused is not None:
        return LearningStatusResponse(status="pending", reason=f"learning is paused: {paused.message}")
    jobs = core.storage.list_jobs(org_id, task=EXTRACT, key=extraction_key(record.user_id), limit=20)
    return _status_from_jobs(jobs)


def _status_from_jobs(jobs: list[Job]) -> LearningStatusResponse:
    states = {j.status for j in jobs}
    if JobStatus.RUNNING in states:
        return LearningStatusResponse(status="processing")
    if JobStatus.QUEUED in states:
        return LearningStatusResponse(status="pending")
    dead = [j for j in jobs if j.status is JobStatus.DEAD]
    if dead:
        return LearningStatusResponse(status="failed", reason=dead[0].last_error)
    return LearningStatusResponse(
        status="pending", reason="waiting for more turns (a full stride) or for the session to end"
    )


def wait_for_learning(
    core: Core, org_id: str, request_id: str, deadline_seconds: float
) -> LearningStatusResponse:
    """Poll a request's learning status until it settles or the deadline passes."""
    until = time.monotonic() + deadline_seconds
    while True:
        status = learning_status(core, org_id, request_id)
        if status.status in {"done", "failed"} or time.monotonic() >= until:
            return status
        time.sleep(0.05)


def finalize_session(core: Core, org_id: str, req: FinalizeSessionRequest) -> FinalizeSessionResponse:
    """A session ended: learn from its remaining turns now and evaluate it without waiting."""
    config = core.org_config(org_id)
    with core.storage.transaction() as tx:
        if extractors_of(config):
            enqueue_extraction(tx, [extraction_job(org_id, req.user_id, flush=True)])
        moved = tx.expedite_job(org_id, EVALUATE_SESSION, f"{req.user_id}:{req.session_id}")
    message = "learning and evaluation scheduled now" if moved else "learning scheduled now"
    return FinalizeSessionResponse(success=True, accepted=True, message=message)
