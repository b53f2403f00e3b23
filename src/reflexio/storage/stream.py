"""The live event stream's rows: what storage writes when learnings, jobs and evaluations change.

Events are written in the transaction that makes the change, numbered per org by
``bump_event_seq`` under the org's write lock, so the numbers follow commit order: a reader that
resumes after the last number it saw gets every later event once, in order, whatever restarted
in between. Learning events come from the history events storage already records (a learning
created, superseded, retired, approved, rejected); job and evaluation events from the job queue
and ``add_evaluations``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import groupby
from typing import Any, Final

from reflexio.records import EvaluationRecord, LearningEvent, StreamEventRecord, now
from reflexio.storage import rows
from reflexio.storage.connector import Connector, Row

__all__ = ["emit", "from_evaluations", "from_learning_events", "job_dead", "stream_event_from"]

#: History event -> stream event type (other history events are not streamed).
_LEARNING_TYPES: Final = {
    "created": "learning.created",
    "superseded": "learning.superseded",
    "archived": "learning.retired",
    "expired": "learning.retired",
    "merged": "learning.retired",
    "deleted": "learning.retired",
    "approved": "learning.approved",
    "rejected": "learning.rejected",
}


def from_learning_events(events: Sequence[LearningEvent]) -> list[StreamEventRecord]:
    """The stream events of a learning write's history events."""
    out = []
    for e in events:
        kind = _LEARNING_TYPES.get(e.event)
        if kind is None:
            continue
        state = e.after or e.before or {}
        wire_id = state.get("profile_id") if e.kind.value == "profile" else None
        data = {k: state.get(k) for k in ("content", "trigger", "status", "approval", "agent_version")}
        data = {k: v for k, v in data.items() if v is not None}
        if e.event == "deleted":
            data["how"] = "deleted"
        if e.reason:
            data["reason"] = e.reason
        out.append(
            StreamEventRecord(
                org_id=e.org_id,
                type=kind,
                kind=e.kind.value,
                subject_id=str(wire_id or e.learning_id),
                user_id=e.user_id,
                data=data,
                created_at=e.created_at or now(),
            )
        )
    return out


def job_dead(r: Row) -> StreamEventRecord:
    """The event of a job that ran out of attempts (a ``RETURNING id, org_id, task, last_error`` row)."""
    return StreamEventRecord(
        org_id=r["org_id"],
        type="job.dead",
        kind=r["task"],
        subject_id=str(r["id"]),
        data={"error": r["last_error"] or ""},
        created_at=now(),
    )


def from_evaluations(evaluations: Sequence[EvaluationRecord]) -> list[StreamEventRecord]:
    """The events of judgements just stored (a session's, or one injected learning's)."""
    return [
        StreamEventRecord(
            org_id=e.org_id,
            type="evaluation.finished",
            kind=e.kind,
            subject_id=str(e.id),
            user_id=e.user_id,
            data={
                k: v
                for k, v in {
                    "session_id": e.session_id,
                    "learning_kind": e.learning_kind,
                    "learning_id": e.learning_id,
                    "result": e.result,
                }.items()
                if v is not None
            },
            created_at=e.created_at or now(),
        )
        for e in evaluations
    ]


def emit(db: Connector, events: Sequence[StreamEventRecord]) -> None:
    """Number and write ``events`` in ``db``'s transaction (orgs locked in a fixed order)."""
    ordered = sorted(events, key=lambda e: e.org_id)
    for org_id, group in groupby(ordered, key=lambda e: e.org_id):
        batch = list(group)
        row = db.one("bump_event_seq", {"org_id": org_id, "n": len(batch)})
        assert row is not None
        first = int(row["event_seq"]) - len(batch) + 1
        db.many("insert_stream_event", [_params(e, first + i) for i, e in enumerate(batch)])


def _params(e: StreamEventRecord, seq: int) -> dict[str, Any]:
    return {
        "org_id": e.org_id,
        "seq": seq,
        "type": e.type,
        "kind": e.kind,
        "subject_id": e.subject_id,
        "user_id": e.user_id,
        "data": rows.dumps(e.data),
        "created_at": e.created_at,
    }


def stream_event_from(r: Mapping[str, Any]) -> StreamEventRecord:
    """A stream event from a row."""
    return StreamEventRecord(
        org_id=r["org_id"],
        seq=int(r["seq"]),
        type=r["type"],
        kind=r["kind"],
        subject_id=r["subject_id"],
        user_id=r["user_id"],
        data=rows.loads(r["data"]) or {},
        created_at=float(r["created_at"]),
    )
