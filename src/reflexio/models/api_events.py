"""The live event stream (``GET /api/events``): what happened to an org's learnings and work.

Each event is a row, numbered in the order it was committed, so a reader that reconnects with
the last ``id`` it saw (SSE ``Last-Event-ID``) gets every later event once, in order, even
across a server restart.
"""

from __future__ import annotations

from typing import Any, Final

from pydantic import BaseModel, Field

__all__ = ["EVENT_TYPES", "StreamEvent"]

#: Every event type the stream carries.
EVENT_TYPES: Final = (
    "learning.created",
    "learning.superseded",
    "learning.retired",
    "learning.approved",
    "learning.rejected",
    "job.dead",
    "evaluation.finished",
)


class StreamEvent(BaseModel):
    """One event of the stream.

    Attributes:
        id: Position in the org's stream (strictly increasing; resume after it).
        type: One of ``EVENT_TYPES``.
        created_at: When it happened (epoch seconds).
        kind: The learning's kind (``profile``, ``user_playbook``, ``agent_playbook``), the
            job's task, or the evaluation's kind.
        subject_id: The learning's id as the API shows it, the job's id, or the evaluation's.
        user_id: The user it concerns, when it concerns one.
        data: Details (the learning's content and status, the job's last error, the verdict).
    """

    id: int
    type: str
    created_at: float
    kind: str | None = None
    subject_id: str | None = None
    user_id: str | None = None
    data: dict[str, Any] = Field(default_factory=dict)
