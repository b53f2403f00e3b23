"""Durable jobs: the worker loop over job rows (claim under a lease, heartbeat, retry, dead-letter).

Jobs are rows in storage, enqueued in the caller's transaction (see ``service.publish``) and
claimed atomically by any number of workers in any number of processes. A worker holds a lease
that a heartbeat thread extends; when a worker dies its lease expires and another worker takes
the job over. Failures are retried with exponential backoff and jitter until ``max_attempts``,
then the job is dead-lettered with its last error.

Exactly-once effects: a handler writes its rows inside ``ctx.effects()``, a transaction that
also completes the job (or, for intermediate steps, re-checks the lease). If the lease was lost
meanwhile the transaction rolls back, so a crash or a slow worker can repeat an LLM call but
never duplicate or lose a row.
"""

from __future__ import annotations

import logging
import random
import socket
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field

from reflexio import telemetry
from reflexio.errors import ReflexioError, StorageError
from reflexio.records import Job
from reflexio.storage import Storage

__all__ = [
    "Backoff",
    "Handler",
    "JobContext",
    "JobDeferred",
    "LeaseLost",
    "PermanentJobError",
    "Worker",
    "WorkerPool",
]

log = logging.getLogger(__name__)


class LeaseLost(ReflexioError):
    """This worker no longer holds the job's lease; its effects were rolled back."""


class PermanentJobError(ReflexioError):
    """A failure that retrying cannot fix (bad payload): the job goes straight to dead."""


class JobDeferred(Exception):
    """The job may not run yet (its org's learning is paused): requeue it, attempt not spent.

    Raised by a handler before it does any work; the job runs again ``seconds`` from now.
    """

    def __init__(self, reason: str, *, seconds: float) -> None:
        super().__init__(reason)
        self.seconds = seconds


@dataclass(frozen=True, slots=True)
class Backoff:
    """Exponential backoff with jitter: base * 2^(attempt-1) * uniform[0.5, 1.5), capped."""

    base_seconds: float = 2.0
    max_seconds: float = 600.0

    def delay(self, attempt: int, rng: random.Random) -> float:
        """Seconds to wait before retrying after ``attempt`` failed attempts."""
        raw = min(self.max_seconds, self.base_seconds * 2.0 ** max(0, attempt - 1))
        return float(raw * (0.5 + rng.random()))


@dataclass
class JobContext:
    """What a handler gets: the job, storage, and the transaction that commits its effects."""

    job: Job
    storage: Storage
    worker: str
    lease_seconds: float
    completed: bool = False

    @contextmanager
    def effects(self, *, final: bool = True) -> Iterator[Storage]:
        """A transaction for the handler's writes, committed only while the lease is held.

        With ``final`` the job is completed in the same transaction; otherwise the lease is
        re-checked and extended (for handlers that commit progress in steps, e.g. windows).

        Raises:
            LeaseLost: Another worker owns the job now; nothing written here is kept.
        """
        with self.storage.transaction() as tx:
            yield tx
            if final:
                if not tx.finish_job(self.job.id, self.worker):
                    raise LeaseLost(f"lost the lease of job {self.job.id}")
            elif not tx.heartbeat_jobs(self.worker, [self.job.id], self.lease_seconds):
                raise LeaseLost(f"lost the lease of job {self.job.id}")
        self.completed = self.completed or final


Handler = Callable[[JobContext], None]


@dataclass
class Worker:
    """Claims and runs jobs one at a time until stopped (one thread).

    Attributes:
        storage: Where jobs live.
        handlers: Task name → handler; jobs of other tasks are left for other workers.
        name: Lease owner id; unique per worker thread.
        lease_seconds: Lease length; the heartbeat extends it every third of that.
        poll_seconds: Sleep between claim attempts when the queue is empty.
        backoff: Retry schedule.
        outage_seconds: First sleep after the queue itself failed (storage down or
            restarting); it doubles while the outage lasts, up to ``max_outage_seconds``, so
            workers outlive an outage without hammering the database that is coming back.
        max_outage_seconds: Longest sleep between two attempts to reach the queue.
        org_id: Claim only this org's jobs (a request that helps the queue while it waits).
    """

    storage: Storage
    handlers: Mapping[str, Handler]
    name: str = field(default_factory=lambda: f"{socket.gethostname()}:{uuid.uuid4().hex[:8]}")
    lease_seconds: float = 60.0
    poll_seconds: float = 0.5
    backoff: Backoff = field(default_factory=Backoff)
    outage_seconds: float = 1.0
    max_outage_seconds: float = 30.0
    org_id: str | None = None
    _rng: random.Random = field(default_factory=random.Random, repr=False)
    _current: Job | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def run(self, stop: threading.Event) -> None:
        """Process jobs until ``stop`` is set; the job in hand is finished first."""
        beat = threading.Thread(
            target=self._heartbeat, args=(stop,), name=f"{self.name}-heartbeat", daemon=True
        )
        beat.start()
        pause = self.outage_seconds
        while not stop.is_set():
            try:
                busy = self.run_once()
            except Exception as exc:
                if stop.is_set():  # shutting down: the storage may already be closed
                    break
                log.warning(
                    "worker %s cannot reach the job queue (%s); retrying in %.0fs", self.name, exc, pause
                )
                stop.wait(pause * (0.5 + self._rng.random()))
                pause = min(self.max_outage_seconds, pause * 2)
                continue
            pause = self.outage_seconds
            if not busy:
                stop.wait(self.poll_seconds)

    def run_once(self) -> bool:
        """Claim and run at most one job; False when nothing was due."""
        jobs = self.storage.claim_jobs(
            self.name,
            limit=1,
            lease_seconds=self.lease_seconds,
            tasks=list(self.handlers),
            org_id=self.org_id,
        )
        if not jobs:
            return False
        with self._lock:
            self._current = jobs[0]
        try:
            self._run(jobs[0])
        finally:
            with self._lock:
                self._current = None
        return True

    def _run(self, job: Job) -> None:
        """Run one job in a span of its own (continuing the trace that enqueued it, if any)."""
        attributes = {
            "reflexio.org": job.org_id,
            "reflexio.job.id": job.id,
            "reflexio.job.attempt": job.attempts,
        }
        with telemetry.continued(job.trace_context), telemetry.span(f"reflexio.job {job.task}", **attributes):
            self._run_handler(job)

    def _run_handler(self, job: Job) -> None:
        ctx = JobContext(job=job, storage=self.storage, worker=self.name, lease_seconds=self.lease_seconds)
        try:
            self.handlers[job.task](ctx)
            if not ctx.completed and not self.storage.finish_job(job.id, self.name):
                raise LeaseLost(f"lost the lease of job {job.id}")
        except LeaseLost as exc:
            log.warning("job %s (%s): %s; another worker continues it", job.id, job.task, exc)
        except JobDeferred as exc:
            log.info("job %s (%s) waits %.0fs: %s", job.id, job.task, exc.seconds, exc)
            retry_at = time.time() + exc.seconds
            self.storage.finish_job(job.id, self.name, error=str(exc), retry_at=retry_at, spend_attempt=False)
        except Exception as exc:  # any handler failure is retried or dead-lettered, never lost
            self._failed(job, exc)

    def _failed(self, job: Job, exc: Exception) -> None:
        error = f"{type(exc).__name__}: {exc}"
        if isinstance(exc, StorageError):
            # The store failed, not the job: give it back without spending an attempt, so an
            # outage can never dead-letter work. (If the store cannot even take it back, the
            # lease runs out and another worker takes it over.)
            log.warning("job %s (%s) interrupted by a storage failure; released: %s", job.id, job.task, error)
            self.storage.release_jobs(self.name, [job.id])
            return
        permanent = isinstance(exc, PermanentJobError)
        dead = permanent or job.attempts >= job.max_attempts
        telemetry.JOB_FAILURES.add(
            1, {"org": job.org_id, "task": job.task, "outcome": "dead" if dead else "retry"}
        )
        if dead:
            log.error("job %s (%s) is dead after %s attempt(s): %s", job.id, job.task, job.attempts, error)
            log.debug("%s", traceback.format_exc())
            self.storage.finish_job(job.id, self.name, error=error)
            return
        retry_at = time.time() + self.backoff.delay(job.attempts, self._rng)
        log.warning("job %s (%s) failed (attempt %s), retrying: %s", job.id, job.task, job.attempts, error)
        self.storage.finish_job(job.id, self.name, error=error, retry_at=retry_at)

    def _heartbeat(self, stop: threading.Event) -> None:
        while not stop.wait(self.lease_seconds / 3):
            with self._lock:
                current = self._current
            if current is not None:
                try:
                    self.storage.heartbeat_jobs(self.name, [current.id], self.lease_seconds)
                except Exception:  # a missed beat only shortens the lease
                    log.exception("heartbeat for job %s failed", current.id)

    def release(self) -> int:
        """Hand the job in hand back to the queue (used when shutdown runs out of time)."""
        with self._lock:
            current = self._current
        if current is None:
            return 0
        return self.storage.release_jobs(self.name, [current.id])


@dataclass
class WorkerPool:
    """Several workers in threads of one process, with graceful shutdown.

    Used in-process by ``reflexio services start`` and on its own by ``reflexio worker``.
    """

    storage: Storage
    handlers: Mapping[str, Handler]
    size: int = 2
    lease_seconds: float = 60.0
    poll_seconds: float = 0.5
    workers: list[Worker] = field(default_factory=list)
    _threads: list[threading.Thread] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)

    def start(self) -> None:
        """Start ``size`` worker threads."""
        prefix = f"{socket.gethostname()}:{uuid.uuid4().hex[:6]}"
        for i in range(self.size):
            worker = Worker(
                self.storage,
                self.handlers,
                name=f"{prefix}:{i}",
                lease_seconds=self.lease_seconds,
                poll_seconds=self.poll_seconds,
            )
            thread = threading.Thread(target=worker.run, args=(self._stop,), name=worker.name, daemon=True)
            self.workers.append(worker)
            self._threads.append(thread)
            thread.start()

    def begin_stop(self) -> None:
        """Stop claiming new jobs (the jobs in hand go on); :meth:`stop` then waits for them."""
        self._stop.set()

    def stop(self, grace_seconds: float = 30.0) -> None:
        """Stop claiming, let jobs in hand finish for ``grace_seconds``, release the rest."""
        self._stop.set()
        deadline = time.monotonic() + grace_seconds
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        released = sum(w.release() for w, t in zip(self.workers, self._threads, strict=True) if t.is_alive())
        if released:
            log.warning("released %s unfinished job(s) at shutdown", released)

    def wait(self) -> None:
        """Block until ``stop`` is called from another thread (or a signal handler)."""
        self._stop.wait()
