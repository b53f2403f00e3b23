"""Rules every backend applies the same way when writing learnings and jobs.

Backends differ in how they store rows, not in what a save means: timestamps, default ids,
when a vector must be recomputed, which audit events a change produces, and how a failed job
is rescheduled are decided here once.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from reflexio.embed import Embedder
from reflexio.errors import ValidationError
from reflexio.records import (
    Approval,
    Audit,
    Job,
    JobStatus,
    Learning,
    LearningEvent,
    LearningKind,
    LearningStatus,
    now,
)

__all__ = [
    "MUTABLE_FIELDS",
    "change_events",
    "delete_events",
    "prepare_learnings",
    "save_events",
    "with_current_vectors",
]

#: Fields ``update_learnings`` may set in bulk; text fields go through ``save_learnings``
#: so their vectors are recomputed.
MUTABLE_FIELDS = frozenset(
    {"status", "approval", "superseded_by", "tags", "expires_at", "ttl", "metadata", "source"}
)


def prepare_learnings(rows: Sequence[Learning], embedder: Embedder) -> list[Learning]:
    """Stamp times and ids, and attach a vector that matches each row's current text.

    A row keeps its vector only when it was made by this embedder from this exact text;
    otherwise all rows needing one are embedded in a single batch.
    """
    t = int(now())
    return with_current_vectors([_stamped(row, t) for row in rows], embedder)


def with_current_vectors(rows: Sequence[Learning], embedder: Embedder) -> list[Learning]:
    """The rows, those whose vector does not match their text re-embedded in one batch.

    Callers that write inside a longer transaction (job effects) call it before opening
    that transaction, so that no lock is held while a model runs; saving then finds the
    vectors current and embeds nothing.
    """
    out = list(rows)
    stale = [i for i, row in enumerate(out) if not _vector_is_current(row, embedder)]
    if stale:
        vectors = embedder.embed([out[i].search_text for i in stale], kind="document")
        for i, vector in zip(stale, vectors, strict=True):
            row = out[i]
            out[i] = row.copy(
                embedding=vector.astype("float32", copy=False),
                embed_model=embedder.name,
                text_hash=row.computed_text_hash(),
            )
    return out


def _stamped(row: Learning, t: int) -> Learning:
    if not row.content.strip() and not (row.trigger or "").strip():
        raise ValidationError("a learning needs content or a trigger")
    changes: dict[str, Any] = {}
    if row.id == 0:
        changes["created_at"] = row.created_at or t
        changes["updated_at"] = row.updated_at or changes["created_at"]
    else:
        changes["updated_at"] = t
    if row.kind is LearningKind.PROFILE and not row.profile_id:
        changes["profile_id"] = str(uuid.uuid4())
    if row.kind is LearningKind.AGENT_PLAYBOOK and row.approval is None:
        changes["approval"] = Approval.PENDING
    return row.copy(**changes)


def vector_is_stale(row: Learning, embedder: Embedder) -> bool:
    """The row's vector is missing or was made by another model (its text is unchanged)."""
    return row.embedding is None or row.embed_model != embedder.name or row.embedding.shape != (embedder.dim,)


def reembedded(rows: Sequence[Learning], embedder: Embedder) -> list[Learning]:
    """The rows with fresh vectors from ``embedder`` (one batch), nothing else changed."""
    if not rows:
        return []
    vectors = embedder.embed([r.search_text for r in rows], kind="document")
    return [
        r.copy(
            embedding=v.astype("float32", copy=False),
            embed_model=embedder.name,
            text_hash=r.computed_text_hash(),
        )
        for r, v in zip(rows, vectors, strict=True)
    ]


def _vector_is_current(row: Learning, embedder: Embedder) -> bool:
    return (
        row.embedding is not None
        and row.embed_model == embedder.name
        and row.embedding.shape == (embedder.dim,)
        and row.text_hash == row.computed_text_hash()
    )


def save_events(saved: Sequence[Learning], before: dict[int, Learning], audit: Audit) -> list[LearningEvent]:
    """Audit events for rows just saved: "created" or "updated" with before/after."""
    events = []
    for row in saved:
        old = before.get(row.id)
        events.append(
            _event(
                row,
                "updated" if old else "created",
                audit,
                old.snapshot() if old else None,
                row.snapshot(),
            )
        )
    return events


def change_events(before: Sequence[Learning], changes: dict[str, Any], audit: Audit) -> list[LearningEvent]:
    """Audit events for a bulk field update, naming status and approval changes."""
    name = "updated"
    if "status" in changes:
        name = _status_event(LearningStatus(changes["status"]))
    elif "approval" in changes:
        name = Approval(changes["approval"]).value
    events = []
    for row in before:
        old = {k: _plain(getattr(row, k)) for k in changes}
        new = {k: _plain(v) for k, v in changes.items()}
        events.append(_event(row, name, audit, old, new))
    return events


def delete_events(rows: Sequence[Learning], audit: Audit) -> list[LearningEvent]:
    """Audit events for hard deletes, keeping a snapshot of what was removed."""
    return [_event(row, "deleted", audit, row.snapshot(), None) for row in rows]


def _status_event(status: LearningStatus) -> str:
    return {
        LearningStatus.ARCHIVED: "archived",
        LearningStatus.SUPERSEDED: "superseded",
        LearningStatus.MERGED: "merged",
        LearningStatus.EXPIRED: "expired",
        LearningStatus.CURRENT: "activated",
        LearningStatus.PENDING: "pending",
    }.get(status, "status_changed")


def _plain(value: Any) -> Any:
    return value.value if isinstance(value, LearningStatus | Approval) else value


def _event(
    row: Learning,
    name: str,
    audit: Audit,
    before: dict[str, Any] | None,
    after: dict[str, Any] | None,
) -> LearningEvent:
    return LearningEvent(
        org_id=row.org_id,
        learning_id=row.id,
        kind=row.kind,
        event=name,
        user_id=row.user_id,
        actor=audit.actor,
        reason=audit.reason,
        request_id=audit.request_id,
        job_id=audit.job_id,
        before=before,
        after=after,
        created_at=now(),
    )


def check_changes(changes: dict[str, Any]) -> None:
    """Refuse bulk updates of text fields (they would leave vectors stale)."""
    bad = set(changes) - MUTABLE_FIELDS
    if bad:
        raise ValidationError(f"cannot bulk-update fields {sorted(bad)}; save the rows instead")


def count_kinds(rows: Sequence[Learning]) -> dict[str, int]:
    """Deleted-row counts per kind, named as the wire's ``deleted_counts`` keys."""
    counts = {"profiles": 0, "user_playbooks": 0, "agent_playbooks": 0}
    for row in rows:
        counts[row.kind.value + "s"] += 1
    return counts


# -- jobs -------------------------------------------------------------------------------------
#: last_error of a job whose worker kept dying until its attempts ran out.
LEASE_EXPIRED = "lease expired: the worker holding this job stopped before finishing it"


def new_job(job: Job, t: float) -> Job:
    """A fresh queued copy of ``job`` (run now unless it says later)."""
    return replace(
        job,
        id=0,
        status=JobStatus.QUEUED,
        run_at=job.run_at or t,
        attempts=0,
        lease_owner=None,
        lease_expires_at=None,
        created_at=t,
        updated_at=t,
        finished_at=None,
    )


def debounced(existing: Job, newer: Job, t: float) -> Job:
    """The queued job moved to the newer event's run time, carrying the newer payload."""
    return replace(
        existing,
        run_at=max(existing.run_at, newer.run_at or t),
        payload=newer.payload,
        request_id=newer.request_id or existing.request_id,
        updated_at=t,
    )


def claimable(job: Job, t: float, running_keys: set[tuple[str, str, str]]) -> bool:
    """Due and queued with no job of its key running, or running under an expired lease.

    Jobs sharing a key (one user's extraction) never run concurrently, so a queued job waits
    while its key's running job (even one whose lease expired, which is reclaimed) exists.
    """
    if job.status is JobStatus.QUEUED:
        blocked = job.key is not None and (job.org_id, job.task, job.key) in running_keys
        return job.run_at <= t and not blocked
    return job.status is JobStatus.RUNNING and (job.lease_expires_at or 0) < t


def exhausted(job: Job, t: float) -> bool:
    """A job whose lease expired with no attempts left: its worker died every time."""
    return job.status is JobStatus.RUNNING and job.attempts >= job.max_attempts


def leased(job: Job, worker: str, t: float, lease_seconds: float) -> Job:
    """The job leased to ``worker``; each lease counts as an attempt."""
    return replace(
        job,
        status=JobStatus.RUNNING,
        lease_owner=worker,
        lease_expires_at=t + lease_seconds,
        attempts=job.attempts + 1,
        updated_at=t,
    )


def finished(job: Job, t: float, error: str | None, retry_at: float | None, *, done: bool = False) -> Job:
    """Done (no error, or ``done``), queued again at ``retry_at``, or dead."""
    base = replace(job, lease_owner=None, lease_expires_at=None, updated_at=t, last_error=error)
    if error is None or done:
        return replace(base, status=JobStatus.DONE, finished_at=t)
    if retry_at is not None:
        return replace(base, status=JobStatus.QUEUED, run_at=retry_at)
    return replace(base, status=JobStatus.DEAD, finished_at=t)


def absorbed(twin: Job, retry_at: float) -> Job:
    """A queued job taking over the retry of a failed job with the same key."""
    return replace(twin, run_at=min(twin.run_at, retry_at))


def merged_note(error: str | None, twin_id: int) -> str:
    """last_error of a failed job whose retry was handed to an already queued twin."""
    return f"{error} (retry continues as job {twin_id})"


def released(job: Job, t: float) -> Job:
    """Back to the queue without spending an attempt (graceful shutdown)."""
    return replace(
        job,
        status=JobStatus.QUEUED,
        lease_owner=None,
        lease_expires_at=None,
        attempts=max(0, job.attempts - 1),
        run_at=t,
        updated_at=t,
    )


def revived(job: Job, t: float) -> Job:
    """A dead job queued again with a fresh set of attempts."""
    return replace(job, status=JobStatus.QUEUED, attempts=0, run_at=t, updated_at=t, finished_at=None)
