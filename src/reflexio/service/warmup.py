"""Warm what the first searches need, so a server says it is ready only when it is.

A fresh process loads the embedding model lazily and builds each org's in-memory search index
(SQLite) on its first search: the first searches after a start took seconds, while readiness
already said "ready" and a load balancer sent traffic. :class:`Warmup` runs one real search
per org with learnings (the query embedding included) before readiness reports ready; its
state is what ``/health/ready`` shows under ``checks.warmup``.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Literal

from reflexio.service import search
from reflexio.service.core import Core

__all__ = ["Warmup"]

log = logging.getLogger(__name__)

WarmupState = Literal["pending", "passed", "failed"]


class Warmup:
    """The warm-up of one process: pending until :meth:`run` has searched every org once."""

    def __init__(self, *, needed: bool = True) -> None:
        self._done = threading.Event()
        self.state: WarmupState = "pending" if needed else "passed"
        self.reason: str | None = None
        if not needed:
            self._done.set()

    def start(self, core: Core) -> threading.Thread:
        """Warm up in a background thread (the server accepts connections meanwhile)."""
        thread = threading.Thread(target=self.run, args=(core,), name="warmup", daemon=True)
        thread.start()
        return thread

    def run(self, core: Core) -> None:
        """Load the storage's search indexes, then embed a query and search each org once;
        never raises.

        This runs while the server already answers (``/health/live``; readiness says
        "pending"): on PostgreSQL the indexes are built from the rows, which takes long enough
        at scale for a liveness probe to give up on a server that accepted no connection.
        A failure does not keep the server out of rotation (it is reported, not required):
        the searches would still work, only slower.
        """
        started = time.monotonic()
        try:
            core.storage.warm_search()  # SQLite: the snapshots; PostgreSQL: built from rows
            orgs = sorted({core.settings.default_org_id, *core.storage.list_orgs()})
            for org_id in orgs:
                search.warm_up(core, org_id)
        except Exception as exc:  # reported by readiness; serving goes on
            log.exception("warm-up failed")
            self.state, self.reason = "failed", f"{type(exc).__name__}: {exc}"
        else:
            self.state = "passed"
            log.info("warmed up %s org(s) in %.1fs", len(orgs), time.monotonic() - started)
        finally:
            self._done.set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the warm-up is over (for tests and scripts); whether it is."""
        return self._done.wait(timeout)
