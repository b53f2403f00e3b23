"""Following ``GET /api/events`` (Server-Sent Events), resuming after the last event seen.

The stream is read line by line (the SSE format is four field names and a blank line per
event). When the connection drops, the reader reconnects with ``Last-Event-ID`` set to the last
id it delivered, so it neither misses nor repeats an event: the server keeps events as rows.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncGenerator, AsyncIterator, Generator, Iterable
from dataclasses import dataclass, field
from typing import Any

import httpx

from reflexio.client._transport import _error
from reflexio.errors import ServiceUnavailableError
from reflexio.models.api_events import StreamEvent

__all__ = ["EventQuery", "aiter_events", "iter_events"]

#: Seconds between reconnection attempts while the server is away.
RECONNECT_SECONDS = 1.0


@dataclass
class EventQuery:
    """What to follow, and where the reader stands.

    Attributes:
        types: Event types to receive (``None``: all).
        kinds: Learning kinds / job tasks to receive (``None``: all).
        user_id: Only events about this user.
        after: Resume after this event id (``None``: from now on; ``0``: from the beginning).
        follow: Keep the stream open for new events; ``False`` ends after the backlog.
        reconnect: Reconnect after a dropped connection (``follow`` only).
        give_up_after: Stop reconnecting after this many seconds without a connection.
    """

    types: Iterable[str] | None = None
    kinds: Iterable[str] | None = None
    user_id: str | None = None
    after: int | None = None
    follow: bool = True
    reconnect: bool = True
    give_up_after: float | None = None
    _seen: int | None = field(default=None, repr=False)

    def params(self) -> dict[str, Any]:
        params: dict[str, Any] = {"follow": "true" if self.follow else "false"}
        if self.types:
            params["types"] = ",".join(self.types)
        if self.kinds:
            params["kinds"] = ",".join(self.kinds)
        if self.user_id:
            params["user_id"] = self.user_id
        if self._seen is None and self.after is not None:
            params["after"] = str(self.after)
        return params

    def headers(self) -> dict[str, str]:
        headers = {"Accept": "text/event-stream"}
        if self._seen is not None:
            headers["Last-Event-ID"] = str(self._seen)
        return headers

    def delivered(self, event: StreamEvent) -> StreamEvent:
        self._seen = event.id
        return event


def _events(lines: Iterable[str]) -> Generator[StreamEvent, None, None]:
    data: list[str] = []
    for line in lines:
        if line == "":
            if data:
                yield StreamEvent.model_validate(json.loads("\n".join(data)))
            data = []
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
        # "id:", "event:", "retry:" and ":" comments: the data carries the id and type too


def iter_events(http: httpx.Client, query: EventQuery) -> Generator[StreamEvent, None, None]:
    """Events as they come; reconnects (``Last-Event-ID``) when the connection drops.

    A generator, so a caller that stops early can ``close()`` it and drop the connection now.
    """
    lost_since: float | None = None
    while True:
        try:
            with http.stream(
                "GET", "/api/events", params=query.params(), headers=query.headers(), timeout=None
            ) as r:
                if not r.is_success:
                    r.read()
                    raise _error(r)
                lost_since = None
                for event in _events(r.iter_lines()):
                    yield query.delivered(event)
            if not query.follow:
                return
        except httpx.HTTPError as exc:
            lost_since = _lost(query, lost_since, exc)
        time.sleep(RECONNECT_SECONDS)


async def aiter_events(http: httpx.AsyncClient, query: EventQuery) -> AsyncGenerator[StreamEvent, None]:
    """The same as :func:`iter_events`, for ``AsyncReflexioClient``."""
    lost_since: float | None = None
    while True:
        try:
            async with http.stream(
                "GET", "/api/events", params=query.params(), headers=query.headers(), timeout=None
            ) as r:
                if not r.is_success:
                    await r.aread()
                    raise _error(r)
                lost_since = None
                async for chunk in _chunks(r.aiter_lines()):
                    for event in _events(chunk):
                        yield query.delivered(event)
            if not query.follow:
                return
        except httpx.HTTPError as exc:
            lost_since = _lost(query, lost_since, exc)
        await asyncio.sleep(RECONNECT_SECONDS)


async def _chunks(lines: AsyncIterator[str]) -> AsyncIterator[list[str]]:
    """The lines of one event at a time (each chunk ends with its blank line)."""
    chunk: list[str] = []
    async for line in lines:
        chunk.append(line)
        if line == "":
            yield chunk
            chunk = []


def _lost(query: EventQuery, since: float | None, exc: httpx.HTTPError) -> float:
    """Decide whether to reconnect after a dropped connection; returns when it was first lost."""
    now = time.monotonic()
    first = now if since is None else since
    gone_too_long = query.give_up_after is not None and now - first > query.give_up_after
    if not (query.follow and query.reconnect) or gone_too_long:
        raise ServiceUnavailableError(f"the event stream is unreachable: {exc}") from exc
    return first
