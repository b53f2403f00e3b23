"""Workers over durable jobs: windows, retries, dead letters, leases and exactly-once effects."""

from __future__ import annotations

import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import BACKENDS, storage_url
from tests.support.echo import echo

from reflexio.config import Settings
from reflexio.errors import StorageError
from reflexio.filters import InteractionFilter, LearningFilter
from reflexio.jobs import Backoff, JobContext, LeaseLost, PermanentJobError, Worker, WorkerPool
from reflexio.learn.changes import Changes
from reflexio.learn.windows import Window, plan_windows, run_extraction
from reflexio.models import InteractionData, PublishUserInteractionRequest
from reflexio.models.org_config import Config
from reflexio.records import EvaluationRecord, InteractionRecord, Job, JobStatus, LearningKind
from reflexio.service import publish as pub
from reflexio.service.core import Core, open_core
from reflexio.storage import Storage


@pytest.fixture(params=BACKENDS)
def core(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    settings = Settings.from_env(
        {"REFLEXIO_STORAGE_URL": storage_url(request.param, tmp_path), "HOME": str(tmp_path)}
    )
    c = open_core(settings)
    yield c
    c.close()


def turns(n: int, start: int = 1) -> list[InteractionRecord]:
    return [
        InteractionRecord(org_id="o", request_id="r", user_id="u", session_id="s", id=i)
        for i in range(start, start + n)
    ]


def test_windows_cover_every_new_turn_once_with_context() -> None:
    context, new = turns(5), turns(20, start=6)
    windows = plan_windows("o", "u", ("profile",), context, new, size=10, stride=8, flush=True)
    covered = [t.id for w in windows for t in w.new_turns]
    assert covered == [t.id for t in new]
    assert [len(w.turns) for w in windows] == [10, 10, 10]
    assert windows[0].turns[0].id == 4  # two turns of context before the first new one
    assert windows[-1].last_id == 25


def test_without_flush_a_short_tail_waits() -> None:
    windows = plan_windows("o", "u", ("profile",), [], turns(20), size=10, stride=8, flush=False)
    assert [w.last_id for w in windows] == [8, 16]
    assert plan_windows("o", "u", ("profile",), [], turns(3), size=10, stride=8, flush=False) == []


def publish(
    core: Core,
    n: int,
    *,
    user: str = "u1",
    session: str = "s1",
    request_id: str | None = None,
    flush: bool = True,
) -> str:
    req = PublishUserInteractionRequest(
        user_id=user,
        session_id=session,
        request_id=request_id,
        interaction_data_list=[
            InteractionData(role="User" if i % 2 == 0 else "Assistant", content=f"turn {i}") for i in range(n)
        ],
    )
    return pub.publish(core, "o", req, flush=flush).request_id or ""


def echo_handlers(core: Core, extract: Any = echo) -> dict[str, Any]:
    def handler(ctx: JobContext) -> None:
        run_extraction(ctx, core.storage, Config(), extract)

    return {pub.EXTRACT: handler}


def drain(worker: Worker, limit: int = 100) -> None:
    for _ in range(limit):
        if not worker.run_once():
            return


def echo_counts(storage: Storage) -> Counter[int]:
    rows = storage.get_learnings("o", LearningFilter(kinds=(LearningKind.PROFILE,)))
    return Counter(int(r.custom_features["interaction_id"]) for r in rows if r.custom_features)


def test_a_200_turn_publish_is_learned_completely(core: Core) -> None:
    request_id = publish(core, 200)
    assert pub.learning_status(core, "o", request_id).status == "pending"
    drain(Worker(core.storage, echo_handlers(core)))
    ids = [t.id for t in core.storage.list_interactions("o", InteractionFilter(request_ids=(request_id,)))]
    assert echo_counts(core.storage) == Counter(ids)
    assert core.storage.get_bookmark("o", "u1", "profile").last_interaction_id == max(ids)  # type: ignore[union-attr]
    assert pub.learning_status(core, "o", request_id).status == "done"
    assert all(j.status is JobStatus.DONE for j in core.storage.list_jobs("o", task=pub.EXTRACT))


def test_a_crash_between_windows_repeats_nothing_and_loses_nothing(core: Core) -> None:
    publish(core, 30)
    calls = Counter[int]()

    def flaky(window: Window) -> Changes:
        calls[window.last_id] += 1
        if len(calls) == 2 and calls[window.last_id] == 1:
            raise TimeoutError("the model timed out")
        return echo(window)

    worker = Worker(core.storage, echo_handlers(core, flaky), backoff=Backoff(base_seconds=0.0))
    drain(worker)
    time.sleep(0.01)
    drain(worker)
    all_ids = [t.id for t in core.storage.list_interactions("o", InteractionFilter())]
    assert echo_counts(core.storage) == Counter(all_ids)
    assert sorted(calls.values()) == [1, 1, 1, 2]  # only the failed window ran twice
    assert all(
        b is not None and b.last_interaction_id == max(all_ids)
        for b in (core.storage.get_bookmark("o", "u1", e) for e in ("profile", "playbook"))
    )


def test_failures_retry_with_backoff_then_dead_letter(core: Core) -> None:
    core.storage.enqueue_jobs([Job(org_id="o", task="boom", key="k", max_attempts=3)])
    attempts: list[int] = []

    def boom(ctx: JobContext) -> None:
        attempts.append(ctx.job.attempts)
        raise ConnectionError("provider unreachable")

    worker = Worker(core.storage, {"boom": boom}, backoff=Backoff(base_seconds=0.01, max_seconds=0.02))
    for _ in range(20):
        worker.run_once()
        time.sleep(0.02)
    (job,) = core.storage.list_jobs("o", task="boom")
    assert attempts == [1, 2, 3]
    assert job.status is JobStatus.DEAD and job.last_error == "ConnectionError: provider unreachable"
    assert core.storage.retry_jobs("o") == 1
    assert worker.run_once() and core.storage.get_job(job.id).attempts == 1  # type: ignore[union-attr]


def test_permanent_errors_go_dead_at_once(core: Core) -> None:
    core.storage.enqueue_jobs([Job(org_id="o", task="bad", max_attempts=5)])

    def bad(ctx: JobContext) -> None:
        raise PermanentJobError("payload has no user_id")

    Worker(core.storage, {"bad": bad}).run_once()
    (job,) = core.storage.list_jobs("o", task="bad")
    assert job.status is JobStatus.DEAD and job.attempts == 1


def test_effects_are_rolled_back_when_the_lease_was_lost(core: Core) -> None:
    core.storage.enqueue_jobs([Job(org_id="o", task="slow", key="k")])
    outcome: dict[str, Any] = {}

    def slow(ctx: JobContext) -> None:
        time.sleep(0.3)  # the lease (0.1 s) expires and another worker takes the job over
        outcome["stolen"] = core.storage.claim_jobs("thief", limit=1, lease_seconds=30)
        try:
            with ctx.effects() as tx:
                tx.add_evaluations([EvaluationRecord(org_id="o", kind="session", result={"by": "slow"})])
        except LeaseLost:
            outcome["lost"] = True
            raise

    worker = Worker(core.storage, {"slow": slow}, lease_seconds=0.1)
    worker._rng.seed(1)
    assert worker.run_once()
    assert outcome.get("lost") and outcome["stolen"]
    assert core.storage.list_evaluations("o", kind="session") == []
    assert core.storage.list_jobs("o")[0].lease_owner == "thief"


def test_pool_shutdown_finishes_the_job_in_hand(core: Core) -> None:
    started = threading.Event()
    core.storage.enqueue_jobs([Job(org_id="o", task="long")])

    def long(ctx: JobContext) -> None:
        started.set()
        time.sleep(0.3)

    pool = WorkerPool(core.storage, {"long": long}, size=2, poll_seconds=0.01)
    pool.start()
    assert started.wait(5)
    pool.stop(grace_seconds=5)
    assert core.storage.list_jobs("o")[0].status is JobStatus.DONE


def test_pool_shutdown_releases_a_job_that_outlives_the_grace(core: Core) -> None:
    started, release = threading.Event(), threading.Event()
    core.storage.enqueue_jobs([Job(org_id="o", task="stuck")])

    def stuck(ctx: JobContext) -> None:
        started.set()
        release.wait(5)

    pool = WorkerPool(core.storage, {"stuck": stuck}, size=1, poll_seconds=0.01)
    pool.start()
    assert started.wait(5)
    pool.stop(grace_seconds=0.1)
    job = core.storage.list_jobs("o")[0]
    assert job.status is JobStatus.QUEUED and job.attempts == 0
    release.set()


def test_the_idle_timer_survives_a_restart_and_fires_once(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    for backend in ("sqlite", "postgres"):
        url = storage_url(backend, tmp_path) if backend == "sqlite" or _pg() else None
        if url is None:
            continue
        env = {"REFLEXIO_STORAGE_URL": url, "HOME": str(tmp_path)}
        first = open_core(Settings.from_env(env))
        first.storage.put_org_config("o", {"session_idle_seconds": 1})
        publish(first, 2, session="idle", flush=False)
        publish(first, 2, session="idle", flush=False)  # the second publish pushes the timer back
        first.close()  # the process stops before the timer fires

        second = open_core(Settings.from_env(env))
        fired: list[str] = []

        def evaluate(ctx: JobContext, fired: list[str] = fired) -> None:
            with ctx.effects() as tx:
                fired.append(ctx.job.payload["session_id"])
                tx.add_evaluations(
                    [EvaluationRecord(org_id="o", kind="session", session_id="idle", result={})]
                )

        worker = Worker(second.storage, {pub.EVALUATE_SESSION: evaluate})
        assert not worker.run_once()  # not due yet
        time.sleep(1.2)
        assert worker.run_once() and not worker.run_once()
        assert fired == ["idle"]
        assert len(second.storage.list_evaluations("o", kind="session", session_id="idle")) == 1
        second.close()


def _pg() -> bool:
    from tests.conftest import POSTGRES_URL

    return bool(POSTGRES_URL)


class _Outage:
    """The real storage, whose job claims fail while ``down`` (a database restarting)."""

    def __init__(self, inner: Storage, failures: int) -> None:
        self.inner, self.failures = inner, failures

    def claim_jobs(self, *args: Any, **kwargs: Any) -> Any:
        if self.failures > 0:
            self.failures -= 1
            raise StorageError("PostgreSQL failed: the connection was closed")
        return self.inner.claim_jobs(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_a_worker_outlives_a_storage_outage(core: Core) -> None:
    request_id = publish(core, 4)
    flaky = _Outage(core.storage, failures=3)
    worker = Worker(flaky, echo_handlers(core), poll_seconds=0.01, outage_seconds=0.01)
    stop = threading.Event()
    thread = threading.Thread(target=worker.run, args=(stop,), daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while pub.learning_status(core, "o", request_id).status != "done":
            assert thread.is_alive(), "the worker thread died with the outage"
            assert time.monotonic() < deadline, "the worker never came back after the outage"
            time.sleep(0.02)
    finally:
        stop.set()
        thread.join(10)
    assert flaky.failures == 0


def test_a_job_interrupted_by_storage_failures_is_never_dead_lettered(core: Core) -> None:
    """Issue 16, defect 5: an outage longer than the retries must not lose learning."""
    request_id = publish(core, 4)
    failures = {"left": 8}  # more than a job's five attempts

    def during_an_outage(window: Window) -> Changes:
        if failures["left"] > 0:
            failures["left"] -= 1
            raise StorageError("PostgreSQL failed: terminating connection due to administrator command")
        return echo(window)

    worker = Worker(core.storage, echo_handlers(core, during_an_outage), poll_seconds=0.01)
    drain(worker, limit=50)
    assert failures["left"] == 0
    assert pub.learning_status(core, "o", request_id).status == "done"
    assert core.storage.list_jobs("o", statuses=[JobStatus.DEAD]) == []
