"""The job queue on SQLite: enqueue with dedupe and debounce, leased claims, retries, dead letters.

A mixin of ``SqliteStorage``: jobs share its per-thread connections and write transactions, so
a publish and the jobs it enqueues commit together (``storage.transaction()``). A claim is one
``UPDATE ... RETURNING`` inside ``BEGIN IMMEDIATE``, so two workers (threads or processes)
never lease the same job; a job whose key is already running waits, so one user's extraction
never runs twice at once.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from contextlib import AbstractContextManager

from reflexio.records import Job, JobStatus, now
from reflexio.storage import common, rows, sql_jobs
from reflexio.storage.sql import SQLITE, queries, where_jobs

__all__ = ["SqliteJobQueue"]

_Q = queries("sqlite")


class SqliteJobQueue(sql_jobs.SqlJobTransitions):
    """The ``Storage`` protocol's job methods; ``SqliteStorage`` provides the connections."""

    _queries = _Q

    def _conn(self) -> sqlite3.Connection:
        raise NotImplementedError

    def _write(self) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError

    def enqueue_jobs(self, jobs: Sequence[Job], *, debounce: bool = False) -> list[Job]:
        # One statement per job on the hot publish path: the partial unique index on queued
        # keys resolves the dedupe (DO NOTHING) or the debounce (DO UPDATE) in the insert.
        out = []
        query = _Q["enqueue_job_debounced" if debounce else "enqueue_job"]
        with self._write() as conn:
            t = now()
            for job in jobs:
                row = conn.execute(query, rows.job_params(job, t)).fetchone()
                if row is None:  # deduplicated: the queued job with this key stands
                    row = conn.execute(_Q["queued_job_by_key"], (job.org_id, job.task, job.key)).fetchone()
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
        with self._write() as conn:
            t = now()
            conn.execute(_Q["bury_exhausted_jobs"], {"error": common.LEASE_EXPIRED, "now": t})
            if tasks is not None and not tasks:
                return []
            task_sql = f"AND j.task IN ({SQLITE.params(len(tasks))})" if tasks else ""
            found = conn.execute(
                "UPDATE jobs SET status = 'running', lease_owner = ?, lease_expires_at = ?, "
                "attempts = attempts + 1, updated_at = ? WHERE id IN ("
                "SELECT id FROM jobs j WHERE ((j.status = 'queued' AND j.run_at <= ? AND NOT EXISTS ("
                "SELECT 1 FROM jobs r WHERE r.org_id = j.org_id AND r.task = j.task AND r.key = j.key "
                "AND r.status = 'running')) OR (j.status = 'running' AND j.lease_expires_at < ?)) "
                f"{task_sql} ORDER BY j.run_at, j.id LIMIT ?) RETURNING *",
                [worker, t + lease_seconds, t, t, t, *(tasks or []), limit],
            )
            return sorted((rows.job_from(r) for r in found), key=lambda j: (j.run_at, j.id))

    def heartbeat_jobs(self, worker: str, job_ids: Sequence[int], lease_seconds: float) -> list[int]:
        held = []
        with self._write() as conn:
            t = now()
            for job_id in job_ids:
                params = {"id": job_id, "worker": worker, "until": t + lease_seconds, "now": t}
                if conn.execute(_Q["heartbeat_job"], params).fetchone():
                    held.append(job_id)
        return held

    def get_job(self, job_id: int) -> Job | None:
        r = self._conn().execute(_Q["get_job"], (job_id,)).fetchone()
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
        where, params = where_jobs(SQLITE, statuses=statuses, request_id=request_id, task=task, key=key)
        found = self._conn().execute(
            f"SELECT * FROM jobs WHERE org_id = ? AND {where} ORDER BY id DESC LIMIT ?",
            [org_id, *params, limit],
        )
        return [rows.job_from(r) for r in found]

    def expedite_job(self, org_id: str, task: str, key: str) -> bool:
        with self._write() as conn:
            t = now()
            return (
                conn.execute(
                    _Q["expedite_job"], {"org_id": org_id, "task": task, "key": key, "now": t}
                ).rowcount
                > 0
            )

    def retry_jobs(self, org_id: str, job_ids: Sequence[int] | None = None) -> int:
        with self._write() as conn:
            t = now()
            ids: list[int] = list(job_ids or [])
            id_sql = d_sql = ""
            if job_ids is not None:
                marks = SQLITE.params(len(ids))
                id_sql, d_sql = (
                    (f"AND id IN ({marks})", f"AND d.id IN ({marks})") if ids else ("AND FALSE", "")
                )
            # One queued job per key: of several dead jobs sharing a key, the newest is revived.
            return conn.execute(
                "UPDATE jobs SET status = 'queued', attempts = 0, run_at = ?, updated_at = ?, "
                f"finished_at = NULL WHERE org_id = ? AND status = 'dead' {id_sql} "
                "AND NOT EXISTS (SELECT 1 FROM jobs q WHERE q.org_id = jobs.org_id "
                "AND q.task = jobs.task AND q.key = jobs.key AND q.status = 'queued') "
                "AND (jobs.key IS NULL OR jobs.id = (SELECT max(d.id) FROM jobs d "
                "WHERE d.org_id = jobs.org_id AND d.task = jobs.task AND d.key = jobs.key "
                f"AND d.status = 'dead' {d_sql}))",
                [t, t, org_id, *ids, *ids],
            ).rowcount

    def list_orgs(self) -> list[str]:
        return [str(r[0]) for r in self._conn().execute("SELECT org_id FROM org_state ORDER BY org_id")]
