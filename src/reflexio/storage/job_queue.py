"""The job queue, written once over a ``Connector``: dedupe and debounce, leases, retries, dead letters.

Jobs share the storage's connections and transactions, so a publish and the jobs it enqueues
commit together (``storage.transaction()``). A claim is one ``UPDATE ... RETURNING`` (under
``BEGIN IMMEDIATE`` on SQLite, with ``FOR UPDATE SKIP LOCKED`` on PostgreSQL), so two workers
never lease the same job; a job whose key is already running waits, so one user's extraction
never runs twice at once. The partial unique index on queued keys decides dedupe inside the
insert: a job whose (org, task, key) is already queued returns the queued row (moved later and
carrying the newer payload when debounced).

The subtle decision is what happens to a failed job: it is done, dead or queued for a retry,
unless another job with the same key was queued while it ran. Then the retry is handed to that
twin (one queued job per key), and this one is closed with a note saying where the work went.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from reflexio import telemetry
from reflexio.errors import ConflictError
from reflexio.records import Job, JobStats, JobStatus, now
from reflexio.storage import rows, stream
from reflexio.storage.connector import Connector, Row
from reflexio.storage.queries import where_jobs

__all__ = ["LEASE_EXPIRED", "SqlJobQueue"]

#: last_error of a job whose worker kept dying until its attempts ran out.
LEASE_EXPIRED = "lease expired: the worker holding this job stopped before finishing it"


class SqlJobQueue:
    """The ``JobQueue`` protocol and the rest of ``Storage``'s job methods, over one connector."""

    def __init__(self, db: Connector) -> None:
        self.db = db

    def enqueue_jobs(self, jobs: Sequence[Job], *, debounce: bool = False, sooner: bool = False) -> list[Job]:
        query = "enqueue_job_sooner" if sooner else "enqueue_job_debounced" if debounce else "enqueue_job"
        trace = telemetry.carrier()  # the enqueuer's trace (a publish's): the worker continues it
        with self.db.transaction(savepoint=False) as db:  # on the publish path; it never fails by design
            t = now()
            return [
                rows.job_from(
                    _the(
                        db.one(
                            query, rows.job_params(replace(job, trace_context=job.trace_context or trace), t)
                        )
                    )
                )
                for job in jobs
            ]

    def claim_jobs(
        self,
        worker: str,
        *,
        limit: int,
        lease_seconds: float,
        tasks: Sequence[str] | None = None,
        org_id: str | None = None,
    ) -> list[Job]:
        chosen = None if tasks is None else self.db.dialect.bind_list(list(tasks))
        try:
            with self.db.transaction() as db:
                t = now()  # once the write lock is held: what is due, and when leases end
                buried = db.all("bury_exhausted_jobs", {"error": LEASE_EXPIRED, "now": t})
                stream.emit(db, [stream.job_dead(r) for r in buried])
                params = {
                    "worker": worker,
                    "until": t + lease_seconds,
                    "now": t,
                    "tasks": chosen,
                    "org_id": org_id,
                }
                found = db.all("claim_jobs", {**params, "limit": max(0, limit)})
        except ConflictError:
            # PostgreSQL: a concurrent claim started a job of the same key between this
            # statement's snapshot and its row locks; jobs_running_key refused the second.
            return []
        return sorted((rows.job_from(r) for r in found), key=lambda j: (j.run_at, j.id))

    def heartbeat_jobs(self, worker: str, job_ids: Sequence[int], lease_seconds: float) -> list[int]:
        t = now()
        ids = self.db.dialect.bind_list(list(job_ids))
        params = {"ids": ids, "worker": worker, "until": t + lease_seconds, "now": t}
        with self.db.transaction() as db:
            held = {int(r["id"]) for r in db.all("heartbeat_jobs", params)}
        return [i for i in job_ids if i in held]

    def set_job_progress(self, job_id: int, worker: str, progress: dict[str, Any]) -> bool:
        params = {"id": job_id, "worker": worker, "progress": rows.dumps(progress), "now": now()}
        with self.db.transaction() as db:
            return db.execute("set_job_progress", params) > 0

    def finish_job(
        self,
        job_id: int,
        worker: str,
        *,
        error: str | None = None,
        retry_at: float | None = None,
        spend_attempt: bool = True,
    ) -> bool:
        """Close or requeue a leased job; False when ``worker`` no longer holds its lease."""
        at = now()
        params = {"id": job_id, "worker": worker, "error": error, "now": at, "retry_at": retry_at}
        with self.db.transaction() as db:
            if error is None:
                return db.execute("finish_job_done", params) > 0
            if retry_at is None:
                dead = db.all("finish_job_dead", params)
                stream.emit(db, [stream.job_dead(r) for r in dead])
                return bool(dead)
            twin = _queued_twin(db, job_id)
            if twin is None:
                return db.execute("finish_job_retry" if spend_attempt else "finish_job_defer", params) > 0
            params["error"] = f"{error} (retry continues as job {twin})"
            if db.execute("finish_job_done", params) == 0:
                return False
            db.execute("absorb_retry", {"id": twin, "retry_at": retry_at, "now": at})
            return True

    def release_jobs(self, worker: str, job_ids: Sequence[int]) -> int:
        """Hand leased jobs back to the queue at shutdown; how many were ``worker``'s."""
        at, released = now(), 0
        with self.db.transaction() as db:
            for job_id in job_ids:
                twin = _queued_twin(db, job_id)
                params = {"id": job_id, "worker": worker, "now": at, "error": None, "retry_at": at}
                if twin is None:
                    released += db.execute("release_job", params)
                else:
                    params["error"] = f"released at shutdown; continues as job {twin}"
                    released += db.execute("finish_job_done", params)
        return released

    def get_job(self, job_id: int) -> Job | None:
        r = self.db.one("get_job", {"id": job_id})
        return rows.job_from(r) if r else None

    def list_jobs(
        self,
        org_id: str,
        *,
        statuses: Sequence[JobStatus] | None = None,
        request_id: str | None = None,
        task: str | None = None,
        key: str | None = None,
        limit: int = 100,
    ) -> list[Job]:
        where, params = where_jobs(
            self.db.dialect, statuses=statuses, request_id=request_id, task=task, key=key
        )
        found = self.db.all("list_jobs", {"org_id": org_id, **params, "limit": limit}, where=where)
        return [rows.job_from(r) for r in found]

    def expedite_job(self, org_id: str, task: str, key: str) -> bool:
        params = {"org_id": org_id, "task": task, "key": key, "now": now()}
        with self.db.transaction(savepoint=False) as db:
            return db.execute("expedite_job", params) > 0

    def retry_jobs(self, org_id: str, job_ids: Sequence[int] | None = None) -> int:
        ids = None if job_ids is None else self.db.dialect.bind_list(list(job_ids))
        with self.db.transaction() as db:
            return db.execute("retry_jobs", {"org_id": org_id, "ids": ids, "now": now()})

    def job_stats(self) -> list[JobStats]:
        found = self.db.all("job_stats", {"now": now()})
        return [
            JobStats(
                org_id=r["org_id"],
                task=r["task"],
                status=JobStatus(r["status"]),
                count=int(r["n"]),
                oldest_due=None if r["oldest_due"] is None else float(r["oldest_due"]),
            )
            for r in found
        ]

    def list_orgs(self) -> list[str]:
        return [str(r["org_id"]) for r in self.db.all("list_orgs")]


def _queued_twin(db: Connector, job_id: int) -> int | None:
    """The queued job with the same key as ``job_id``, if one was queued while it ran."""
    r = db.one("queued_twin", {"id": job_id})
    return None if r is None else int(r["id"])


def _the(row: Row | None) -> Row:
    """The row a statement must return (``RETURNING`` after an insert or an upsert)."""
    assert row is not None
    return row
