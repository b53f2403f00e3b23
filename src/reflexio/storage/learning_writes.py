"""What writing a learning means, apart from how it is stored.

Timestamps, default ids, when a vector must be recomputed, which history events a change
produces and which fields a bulk update may touch are decided here once, as plain functions
of the rows (``learn.changes`` embeds ahead of a transaction with ``with_current_vectors``).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from reflexio.embed import Embedder
from reflexio.errors import ValidationError
from reflexio.records import (
    Approval,
    Audit,
    Learning,
    LearningEvent,
    LearningKind,
    LearningStatus,
    now,
)

__all__ = [
    "MUTABLE_FIELDS",
    "change_events",
    "check_changes",
    "count_kinds",
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
