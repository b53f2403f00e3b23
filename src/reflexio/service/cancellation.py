"""A flag that long work checks between bounded steps, so it can stop when nobody waits for it.

Bulk writes embed their learnings in batches (``service.bulk``); between two batches they ask
their ``Cancellation`` whether to go on. The API sets it when the client disconnects or the
server starts shutting down (``api.lifecycle``), so a request nobody will read stops within
one batch instead of holding a CPU (and the shutdown) for minutes.
"""

from __future__ import annotations

import threading

from reflexio.errors import RequestCancelledError

__all__ = ["Cancellation"]


class Cancellation:
    """Set once, from any thread; checked by the work it was handed to."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._reason = ""

    def cancel(self, reason: str) -> None:
        """Ask the work to stop at its next check (the first reason given is kept)."""
        if not self._event.is_set():
            self._reason = reason
            self._event.set()

    @property
    def cancelled(self) -> bool:
        """Whether :meth:`cancel` was called."""
        return self._event.is_set()

    def check(self) -> None:
        """Return if the work may go on.

        Raises:
            RequestCancelledError: It was cancelled; the message says why.
        """
        if self._event.is_set():
            raise RequestCancelledError(f"stopped before anything was written: {self._reason}")


#: For callers that never cancel (the CLI in local mode, scripts).
NEVER = Cancellation()
