"""``GET /api/events``: the org's live event stream as Server-Sent Events, resumable.

Each event goes out as ``id: <n>`` / ``event: <type>`` / ``data: <json>``. A client that
reconnects with ``Last-Event-ID`` (browsers' EventSource do it by themselves) gets every later
event once, in order: the events are rows, so a server restart in between loses nothing.
Without it, ``after=`` says where to start (``0``: the first event), and by default the stream
starts now. New rows are polled every ``POLL_SECONDS`` (any process may have written them);
a comment line every ``KEEPALIVE_SECONDS`` keeps proxies from closing an idle stream.
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import AsyncIterator
from typing import Annotated, Final

import anyio
from fastapi import Header, Query
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from reflexio.api.auth import CallerDep, CoreDep
from reflexio.api.routes import api_router
from reflexio.errors import ValidationError
from reflexio.models import EVENT_TYPES, INT64_MAX
from reflexio.service import events
from reflexio.service.core import Core

__all__ = ["router"]

router = api_router("events")

#: Seconds between looks for new rows while the reader is caught up.
POLL_SECONDS = 0.25
#: Seconds of silence after which a comment line is sent.
KEEPALIVE_SECONDS = 15.0


#: ``types`` as the schema states it: known event types, comma-separated (spaces allowed).
_TYPE_CHOICE = "|".join(re.escape(name) for name in EVENT_TYPES)
_TYPES_PATTERN: Final = rf"^\s*({_TYPE_CHOICE})?(\s*,\s*({_TYPE_CHOICE})?)*\s*$"
#: An event id a client may resume after: a number that fits the 64-bit sequence.
_EVENT_ID_PATTERN: Final = r"^\s*[0-9]{1,18}\s*$"


def _listed(value: str | None) -> list[str] | None:
    return [part.strip() for part in value.split(",") if part.strip()] if value else None


def _start(last_event_id: str, after: int | None, core: Core, org_id: str) -> int:
    if last_event_id:
        try:
            return int(last_event_id)
        except ValueError as exc:
            raise ValidationError(
                f"Last-Event-ID must be an event id (a number), got {last_event_id!r}"
            ) from exc
    return after if after is not None else events.latest(core, org_id)


@router.get("/events", response_class=StreamingResponse)
async def stream(
    request: Request,
    core: CoreDep,
    caller: CallerDep,
    types: Annotated[
        str | None,
        # The schema states the rule; `events.check_types` enforces it, naming the unknown type.
        Query(
            description="Comma-separated event types (default: all).",
            json_schema_extra={"pattern": _TYPES_PATTERN},
        ),
    ] = None,
    kinds: Annotated[str | None, Query(description="Comma-separated learning kinds or job tasks.")] = None,
    user_id: Annotated[str | None, Query(description="Only events about this user.")] = None,
    after: Annotated[
        int | None, Query(ge=0, le=INT64_MAX, description="Start after this event id (0: the first).")
    ] = None,
    follow: Annotated[bool, Query(description="Wait for new events (false: stop after the backlog).")] = True,
    # A plain string with an empty default, not ``str | None``: a header has no null, and a
    # nullable schema tells clients they may send the text "null".
    last_event_id: Annotated[str, Header(alias="Last-Event-ID", pattern=_EVENT_ID_PATTERN)] = "",
) -> StreamingResponse:
    """Learnings created, superseded, retired, approved and rejected; jobs dead; evaluations finished."""
    chosen = _listed(types)
    events.check_types(chosen)
    cursor = await run_in_threadpool(_start, last_event_id, after, core, caller.org_id)
    read = functools.partial(
        events.read, core, caller.org_id, types=chosen, kinds=_listed(kinds), user_id=user_id
    )

    async def lines() -> AsyncIterator[str]:
        position, quiet_since = cursor, time.monotonic()
        yield "retry: 1000\n\n"
        while True:
            page = await run_in_threadpool(read, after=position)
            for event in page:
                yield f"id: {event.id}\nevent: {event.type}\ndata: {event.model_dump_json()}\n\n"
                position = event.id
            if page:
                quiet_since = time.monotonic()
                if len(page) == events.PAGE:
                    continue
            if not follow or await request.is_disconnected():
                return
            if time.monotonic() - quiet_since > KEEPALIVE_SECONDS:
                yield ": keep-alive\n\n"
                quiet_since = time.monotonic()
            await anyio.sleep(POLL_SECONDS)

    headers = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
    return StreamingResponse(lines(), media_type="text/event-stream", headers=headers)
