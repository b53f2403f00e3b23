"""Job-state transitions that both SQL backends make, each with its own dialect's queries.

The SQL differs between SQLite and PostgreSQL (placeholders, locking), but the decisions do
not, and they are the subtle part of the queue: a failed job is done, dead or queued for a
retry, unless another job with the same key was queued while it ran. In that case the retry
is handed to that twin (the partial unique index allows one queued job per key), and this
one is closed with a note saying where the work went. Written once here, as a base of both
job queues (``sqlite_jobs``, ``postgres_jobs``), so the two backends cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from reflexio.records import now
from reflexio.storage import common, rows
from reflexio.storage.sql import Queries

__all__ = ["Connection", "SqlJobTransitions"]


class _Cursor(Protocol):
    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...


class Connection(Protocol):
    """What both ``sqlite3.Connection`` and psycopg's ``Connection`` offer."""

    def execute(self, query: str, params: Mapping[str, Any], /) -> _Cursor: ...


class SqlJobTransitions:
    """The job methods both SQL backends share; a backend sets ``_queries`` and ``_write``."""

    _queries: Queries

    def _write(self) -> AbstractContextManager[Connection]:
        raise NotImplementedError

    def set_job_progress(self, job_id: int, worker: str, progress: dict[str, Any]) -> bool:
        params = {"id": job_id, "worker": worker, "progress": rows.dumps(progress), "now": now()}
        with self._write() as conn:
            return conn.execute(self._queries["set_job_progress"], params).rowcount > 0

    def finish_job(
        self,
        job_id: int,
        worker: str,
        *,
        error: str | None = None,
        retry_at: float | None = None,
    ) -> bool:
        """Close or requeue a leased job; False when ``worker`` no longer holds its lease."""
        q, at = self._queries, now()
        params: dict[str, Any] = {
            "id": job_id,
            "worker": worker,
            "error": error,
            "now": at,
            "retry_at": retry_at,
        }
        with self._write() as conn:
            if error is None:
                return conn.execute(q["finish_job_done"], params).rowcount > 0
            if retry_at is None:
                return conn.execute(q["finish_job_dead"], params).rowcount > 0
            twin = _queued_twin(conn, q, job_id)
            if twin is None:
                return conn.execute(q["finish_job_retry"], params).rowcount > 0
            params["error"] = common.merged_note(error, twin)
            if conn.execute(q["finish_job_done"], params).rowcount == 0:
                return False
            conn.execute(q["absorb_retry"], {"id": twin, "retry_at": retry_at, "now": at})
            return True

    def release_jobs(self, worker: str, job_ids: Sequence[int]) -> int:
        """Hand leased jobs back to the queue at shutdown; how many were ``worker``'s."""
        q, at, released = self._queries, now(), 0
        with self._write() as conn:
            for job_id in job_ids:
                twin = _queued_twin(conn, q, job_id)
                params: dict[str, Any] = {
                    "id": job_id,
                    "worker": worker,
                    "now": at,
                    "error": None,
                    "retry_at": at,
                }
                if twin is None:
                    released += conn.execute(q["release_job"], params).rowcount
                else:
                    params["error"] = f"released at shutdown; continues as job {twin}"
                    released += conn.execute(q["finish_job_done"], params).rowcount
        return released


def _queued_twin(conn: Connection, queries: Queries, job_id: int) -> int | None:
    """The queued job with the same key as ``job_id``, if one was queued while it ran."""
    r = conn.execute(queries["queued_twin"], {"id": job_id}).fetchone()
    return None if r is None else int(r["id"])
