"""The job queue on PostgreSQL: enqueue with dedupe and debounce, leased claims, retries, dead letters.

A mixin of ``PostgresStorage``: jobs share its pooled connections and transactions, so a
publish and the jobs it enqueues commit together (``storage.transaction()``). Claims use
``FOR UPDATE SKIP LOCKED``, so any number of workers on any machine can share one queue
without waiting on each other; a job whose key is already running waits, so one user's
extraction never runs twice at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager

import psycopg

from reflexio.records import Job, JobStatus, now
from reflexio.storage import common, rows, sql_jobs
from reflexio.storage.postgres_search import Conn
from reflexio.storage.sql import POSTGRES, queries, where_jobs

__all__ = ["PostgresJobQueue"]

_Q = queries("postgres")


class PostgresJobQueue(sql_jobs.SqlJobTransitions):
    """The ``Storage`` protocol's job methods; ``PostgresStorage`` provides the connections."""

    _queries = _Q

    def _read(self) -> AbstractContextManager[Conn]:
        raise NotImplementedError

    def _write(self, *, savepoint: bool = True) -> AbstractContextManager[Conn]:
        raise NotImplementedError

    def enqueue_jobs(self, jobs: Sequence[Job], *, debounce: bool = False) -> list[Job]:
        query = _Q["enqueue_job_debounced" if debounce else "enqueue_job"]
        out = []
        with self._write(savepoint=False) as conn:  # on the publish path; it never fails by design
            t = now()
            for job in jobs:
                row = conn.execute(query, rows.job_params(job, t)).fetchone()
                assert row is not None  # RETURNING *, after the insert or the dedupe's no-op update
                out.append(rows.job_from(row))
        return out

    def claim_jobs(
        self,
        worker: str,
        *,
        limit: int,
        lease_seconds: float,
        tasks: Sequence[str] | None = None,
    ) -> list[Job]:
        try:
            with self._write() as conn:
                t = now()
                conn.execute(_Q["bury_exhausted_jobs"], {"error": common.LEASE_EXPIRED, "now": t})
                params = {
                    "worker": worker,
                    "until": t + lease_seconds,
                    "now": t,
                    "tasks": None if tasks is None else list(tasks),
                    "limit": max(0, limit),
                }
                found = conn.execute(_Q["claim_jobs"], params).fetchall()
        except psycopg.errors.UniqueViolation:
            # A concurrent claim started a job of the same key between this statement's
            # snapshot and its row locks; jobs_running_key refused the second. Claim again later.
            return []
        return sorted((rows.job_from(r) for r in found), key=lambda j: (j.run_at, j.id))

    def heartbeat_jobs(self, worker: str, job_ids: Sequence[int], lease_seconds: float) -> list[int]:
        t = now()
        params = {"ids": list(job_ids), "worker": worker, "until": t + lease_seconds, "now": t}
        with self._write() as conn:
            held = {int(r["id"]) for r in conn.execute(_Q["heartbeat_jobs"], params)}
        return [i for i in job_ids if i in held]

    def get_job(self, job_id: int) -> Job | None:
        with self._read() as conn:
            r = conn.execute(_Q["get_job"], {"id": job_id}).fetchone()
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
        where, params = where_jobs(POSTGRES, statuses=statuses, request_id=request_id, task=task, key=key)
        with self._read() as conn:
            found = conn.execute(
                f"SELECT * FROM jobs WHERE org_id = %s AND {where} ORDER BY id DESC LIMIT %s",
                [org_id, *params, limit],
            ).fetchall()
        return [rows.job_from(r) for r in found]

    def expedite_job(self, org_id: str, task: str, key: str) -> bool:
        params = {"org_id": org_id, "task": task, "key": key, "now": now()}
        with self._write(savepoint=False) as conn:
            return conn.execute(_Q["expedite_job"], params).rowcount > 0

    def retry_jobs(self, org_id: str, job_ids: Sequence[int] | None = None) -> int:
        params = {
            "org_id": org_id,
            "ids": None if job_ids is None else list(job_ids),
            "now": now(),
        }
        with self._write() as conn:
            return conn.execute(_Q["retry_jobs"], params).rowcount

    def list_orgs(self) -> list[str]:
        with self._read() as conn:
            found = conn.execute("SELECT org_id FROM org_state ORDER BY org_id").fetchall()
        return [str(r["org_id"]) for r in found]
