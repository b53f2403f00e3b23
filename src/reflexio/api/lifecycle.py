"""The app's side of its own shutdown, and long requests that stop when nobody waits for them.

:class:`Draining` is told the moment the server is asked to stop (``api.server`` hooks
uvicorn's signal handling), before uvicorn waits for requests in flight: every cancellable
request in flight is cancelled at once, and whatever else registered (the job workers) is told
to stop claiming work, so the whole shutdown fits in its grace period. :func:`cancellable`
runs a service call in a thread with a ``Cancellation`` that is set when the client
disconnects, when the request task is cancelled, or when the server starts draining.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Final, TypeVar

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from reflexio.service.cancellation import Cancellation

__all__ = ["Draining", "cancellable"]

T = TypeVar("T")

#: How often a cancellable request looks whether its client is still there.
_DISCONNECT_POLL_SECONDS: Final = 0.2


class Draining:
    """Shutdown as the app sees it: when it began, and who to tell."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._active: set[Cancellation] = set()
        self._on_begin: list[Callable[[], None]] = []
        self.began_at: float | None = None

    def on_begin(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` when draining begins (at once if it already has)."""
        with self._lock:
            self._on_begin.append(callback)
            began = self.began_at is not None
        if began:
            callback()

    def begin(self) -> None:
        """Cancel every cancellable request in flight and tell every registered party."""
        with self._lock:
            if self.began_at is not None:
                return
            self.began_at = time.monotonic()
            active, callbacks = list(self._active), list(self._on_begin)
        for cancel in active:
            cancel.cancel("the server is shutting down; retry the request")
        for callback in callbacks:
            callback()

    def remaining(self, grace_seconds: float) -> float:
        """Seconds left of a grace period counted from the start of draining (all of it before)."""
        if self.began_at is None:
            return grace_seconds
        return max(0.0, grace_seconds - (time.monotonic() - self.began_at))

    @contextmanager
    def track(self) -> Iterator[Cancellation]:
        """A cancellation that draining will set, for the duration of the block."""
        cancel = Cancellation()
        with self._lock:
            self._active.add(cancel)
            began = self.began_at is not None
        if began:
            cancel.cancel("the server is shutting down; retry the request")
        try:
            yield cancel
        finally:
            with self._lock:
                self._active.discard(cancel)


async def cancellable(request: Request, call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``call(*args, cancel=..., **kwargs)`` in a thread, cancelled when nobody waits any more."""
    draining: Draining = request.app.state.draining
    with draining.track() as cancel:
        watcher = asyncio.create_task(_watch_client(request, cancel))
        try:
            return await run_in_threadpool(call, *args, cancel=cancel, **kwargs)
        except asyncio.CancelledError:
            cancel.cancel("the request was abandoned")
            raise
        finally:
            watcher.cancel()


async def _watch_client(request: Request, cancel: Cancellation) -> None:
    while not cancel.cancelled:
        if await request.is_disconnected():
            cancel.cancel("the client disconnected")
            return
        await asyncio.sleep(_DISCONNECT_POLL_SECONDS)
