"""Job-state transitions that both SQL backends make, each with its own dialect's queries.

The SQL differs between SQLite and PostgreSQL (placeholders, locking), but the decisions do
not, and they are the subtle part of the queue: a failed job is done, dead or queued for a
retry, unless another job with the same key was queued while it ran. In that case the retry
is handed to that twin (the partial unique index allows one queued job per key), and this
one is closed with a note saying where the work went. Written once here, so the two backends
cannot drift apart. The callers hold the write transaction.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from reflexio.storage import common
from reflexio.storage.sql import Queries

__all__ = ["finish_job", "release_job"]


class _Cursor(Protocol):
    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...


class Connection(Protocol):
    """What both ``sqlite3.Connection`` and psycopg's ``Connection`` offer."""

    def execute(self, query: str, params: Mapping[str, Any], /) -> _Cursor: ...


def finish_job(
    conn: Connection,
    queries: Queries,
    job_id: int,
    worker: str,
    *,
    error: str | None,
    retry_at: float | None,
    at: float,
) -> bool:
    """Close or requeue a leased job; False when ``worker`` no longer holds its lease."""
    params: dict[str, Any] = {"id": job_id, "worker": worker, "error": error, "now": at, "retry_at": retry_at}
    if error is None:
        return conn.execute(queries["finish_job_done"], params).rowcount > 0
    if retry_at is None:
        return conn.execute(queries["finish_job_dead"], params).rowcount > 0
    twin = _queued_twin(conn, queries, job_id)
    if twin is None:
        return conn.execute(queries["finish_job_retry"], params).rowcount > 0
    params["error"] = common.merged_note(error, twin)
    if conn.execute(queries["finish_job_done"], params).rowcount == 0:
        return False
    conn.execute(queries["absorb_retry"], {"id": twin, "retry_at": retry_at, "now": at})
    return True


def release_job(conn: Connection, queries: Queries, job_id: int, worker: str, *, at: float) -> int:
    """Hand a leased job back to the queue at shutdown (1 if it was ``worker``'s, else 0)."""
    twin = _queued_twin(conn, queries, job_id)
    params: dict[str, Any] = {"id": job_id, "worker": worker, "now": at, "error": None, "retry_at": at}
    if twin is None:
        return conn.execute(queries["release_job"], params).rowcount
    params["error"] = f"released at shutdown; continues as job {twin}"
    return conn.execute(queries["finish_job_done"], params).rowcount


def _queued_twin(conn: Connection, queries: Queries, job_id: int) -> int | None:
    """The queued job with the same key as ``job_id``, if one was queued while it ran."""
    r = conn.execute(queries["queued_twin"], {"id": job_id}).fetchone()
    return None if r is None else int(r["id"])
