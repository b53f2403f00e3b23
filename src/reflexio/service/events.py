"""The live event stream (``GET /api/events``): an org's stream rows as wire events.

Storage writes the rows in the transactions that make the changes (``storage.stream``); this
reads them after a position, with the caller's filters, and says where "now" is for a reader
that asks only for what happens next.
"""

from __future__ import annotations

from collections.abc import Sequence

from reflexio.errors import ValidationError
from reflexio.models.api_events import EVENT_TYPES, StreamEvent
from reflexio.service.core import Core

__all__ = ["PAGE", "check_types", "latest", "read"]

#: Most events one read returns (a reader far behind catches up page by page).
PAGE = 500


def check_types(types: Sequence[str] | None) -> None:
    """Refuse event types the stream never carries (a typo would otherwise match nothing, forever).

    Raises:
        ValidationError: A type is not one of ``EVENT_TYPES``.
    """
    unknown = sorted(set(types or ()) - set(EVENT_TYPES))
    if unknown:
        raise ValidationError(f"unknown event type(s) {unknown}; the stream carries {list(EVENT_TYPES)}")


def read(
    core: Core,
    org_id: str,
    *,
    after: int,
    types: Sequence[str] | None = None,
    kinds: Sequence[str] | None = None,
    user_id: str | None = None,
    limit: int = PAGE,
) -> list[StreamEvent]:
    """The org's events numbered after ``after``, oldest first."""
    rows = core.storage.list_stream_events(
        org_id, after=after, types=types or None, kinds=kinds or None, user_id=user_id, limit=limit
    )
    return [
        StreamEvent(
            id=r.seq,
            type=r.type,
            created_at=r.created_at,
            kind=r.kind,
            subject_id=r.subject_id,
            user_id=r.user_id,
            data=r.data,
        )
        for r in rows
    ]


def latest(core: Core, org_id: str) -> int:
    """The number of the org's latest event: a reader starting "now" resumes after it."""
    return core.storage.last_stream_event(org_id)
