"""Storage contract: durable jobs (dedupe, debounce, leases, retries, dead letters)."""

from __future__ import annotations

import time

from reflexio.records import Job, JobStatus
from reflexio.storage import Storage
from reflexio.storage.job_queue import LEASE_EXPIRED


def job(task: str = "extract", key: str | None = "u1", **kw: object) -> Job:
    kw.setdefault("payload", {"user_id": "u1"})
    kw.setdefault("org_id", "o1")
    return Job(task=task, key=key, **kw)  # type: ignore[arg-type]


def test_a_queued_key_is_never_duplicated(storage: Storage) -> None:
    first = storage.enqueue_jobs([job()])[0]
    again = storage.enqueue_jobs([job(payload={"user_id": "other"})])[0]
    assert again.id == first.id and again.payload == {"user_id": "u1"}
    other_task = storage.enqueue_jobs([job(task="evaluate")])[0]
    unkeyed = storage.enqueue_jobs([job(key=None), job(key=None)])
    assert len({first.id, other_task.id, *(j.id for j in unkeyed)}) == 4
    assert len(storage.list_jobs("o1")) == 4


def test_debounce_moves_the_run_time_forward_only(storage: Storage) -> None:
    t = time.time()
    first = storage.enqueue_jobs([job(task="idle", run_at=t + 600)], debounce=True)[0]
    later = storage.enqueue_jobs([job(task="idle", run_at=t + 900, payload={"n": 2})], debounce=True)[0]
    assert later.id == first.id and abs(later.run_at - (t + 900)) < 1e-3 and later.payload == {"n": 2}
    earlier = storage.enqueue_jobs([job(task="idle", run_at=t + 100)], debounce=True)[0]
    assert abs(earlier.run_at - (t + 900)) < 1e-3
    assert storage.claim_jobs("w1", limit=10, lease_seconds=30) == []


def test_sooner_brings_a_queued_job_forward_only(storage: Storage) -> None:
    t = time.time()
    debounced = storage.enqueue_jobs([job(task="agg", run_at=t + 600)], debounce=True)[0]
    now_please = storage.enqueue_jobs([job(task="agg", run_at=t, payload={"full": True})], sooner=True)[0]
    assert now_please.id == debounced.id and abs(now_please.run_at - t) < 1e-3
    assert now_please.payload == {"full": True}
    later = storage.enqueue_jobs([job(task="agg", run_at=t + 900)], sooner=True)[0]
    assert abs(later.run_at - t) < 1e-3
    (claimed,) = storage.claim_jobs("w1", limit=10, lease_seconds=30)
    assert claimed.id == debounced.id


def test_claim_leases_due_jobs_once(storage: Storage) -> None:
    storage.enqueue_jobs([job(key="a"), job(key="b"), job(key="c", run_at=time.time() + 3600)])
    first = storage.claim_jobs("w1", limit=1, lease_seconds=30)
    second = storage.claim_jobs("w2", limit=10, lease_seconds=30)
    assert len(first) == 1 and len(second) == 1 and first[0].id != second[0].id
    assert first[0].status is JobStatus.RUNNING and first[0].lease_owner == "w1" and first[0].attempts == 1
    assert storage.claim_jobs("w3", limit=10, lease_seconds=30) == []
    assert storage.claim_jobs("w3", limit=10, lease_seconds=30, tasks=["other"]) == []


def test_a_claim_scoped_to_an_org_leaves_other_orgs_jobs(storage: Storage) -> None:
    storage.enqueue_jobs([job(key="a"), job(key="b", org_id="o2")])
    assert storage.claim_jobs("w1", limit=10, lease_seconds=30, org_id="o3") == []
    mine = storage.claim_jobs("w1", limit=10, lease_seconds=30, org_id="o2")
    assert [(j.org_id, j.key) for j in mine] == [("o2", "b")]
    rest = storage.claim_jobs("w2", limit=10, lease_seconds=30)
    assert [(j.org_id, j.key) for j in rest] == [("o1", "a")]


def test_expired_leases_are_claimable_and_heartbeats_keep_them(storage: Storage) -> None:
    storage.enqueue_jobs([job(key="a"), job(key="b")])
    held = storage.claim_jobs("w1", limit=2, lease_seconds=0.2)
    assert storage.heartbeat_jobs("w1", [held[0].id], lease_seconds=30) == [held[0].id]
    assert storage.heartbeat_jobs("intruder", [held[1].id], lease_seconds=30) == []
    time.sleep(0.3)
    stolen = storage.claim_jobs("w2", limit=10, lease_seconds=30)
    assert [j.id for j in stolen] == [held[1].id] and stolen[0].attempts == 2
    assert not storage.finish_job(held[1].id, "w1")  # the old owner lost its lease
    assert storage.finish_job(held[1].id, "w2")
    assert storage.get_job(held[1].id).status is JobStatus.DONE  # type: ignore[union-attr]


def test_finish_done_retry_and_dead(storage: Storage) -> None:
    storage.enqueue_jobs([job(key="a"), job(key="b"), job(key="c")])
    a, b, c = storage.claim_jobs("w", limit=3, lease_seconds=30)
    assert storage.finish_job(a.id, "w")
    retry_at = time.time() + 60
    assert storage.finish_job(b.id, "w", error="timeout", retry_at=retry_at)
    assert storage.finish_job(c.id, "w", error="bad payload")
    got = {j.id: j for j in storage.list_jobs("o1")}
    assert got[a.id].status is JobStatus.DONE and got[a.id].finished_at
    assert got[b.id].status is JobStatus.QUEUED and got[b.id].last_error == "timeout"
    assert abs(got[b.id].run_at - retry_at) < 1e-3 and got[b.id].lease_owner is None
    assert got[c.id].status is JobStatus.DEAD and got[c.id].last_error == "bad payload"
    assert [j.id for j in storage.list_jobs("o1", statuses=[JobStatus.DEAD])] == [c.id]
    assert not storage.finish_job(c.id, "w")


def test_a_retry_merges_into_a_queued_twin(storage: Storage) -> None:
    running = storage.enqueue_jobs([job()])[0]
    storage.claim_jobs("w", limit=1, lease_seconds=30)
    twin = storage.enqueue_jobs([job(run_at=time.time() + 3600)])[0]
    assert twin.id != running.id
    assert storage.finish_job(running.id, "w", error="flaky", retry_at=time.time() + 5)
    got = {j.id: j for j in storage.list_jobs("o1")}
    assert got[running.id].status is JobStatus.DONE and "flaky" in (got[running.id].last_error or "")
    assert got[twin.id].status is JobStatus.QUEUED and got[twin.id].run_at < time.time() + 60


def test_a_job_whose_workers_keep_dying_goes_dead(storage: Storage) -> None:
    storage.enqueue_jobs([job(max_attempts=2)])
    for worker in ("w1", "w2"):
        assert len(storage.claim_jobs(worker, limit=1, lease_seconds=0.05)) == 1
        time.sleep(0.1)
    assert storage.claim_jobs("w3", limit=1, lease_seconds=30) == []
    (dead,) = storage.list_jobs("o1", statuses=[JobStatus.DEAD])
    assert dead.last_error == LEASE_EXPIRED and dead.attempts == 2


def test_release_returns_jobs_without_spending_attempts(storage: Storage) -> None:
    storage.enqueue_jobs([job()])
    (held,) = storage.claim_jobs("w", limit=1, lease_seconds=30)
    assert storage.release_jobs("w", [held.id]) == 1
    (again,) = storage.claim_jobs("w2", limit=1, lease_seconds=30)
    assert again.id == held.id and again.attempts == 1


def test_dead_jobs_can_be_retried(storage: Storage) -> None:
    storage.enqueue_jobs([job(key="a"), job(key="b")])
    a, b = storage.claim_jobs("w", limit=2, lease_seconds=30)
    storage.finish_job(a.id, "w", error="boom")
    storage.finish_job(b.id, "w", error="boom")
    assert storage.retry_jobs("o2") == 0
    assert storage.retry_jobs("o1", [a.id]) == 1
    revived = storage.get_job(a.id)
    assert revived.status is JobStatus.QUEUED and revived.attempts == 0  # type: ignore[union-attr]
    assert storage.retry_jobs("o1") == 1
    assert {j.id for j in storage.claim_jobs("w", limit=5, lease_seconds=30)} == {a.id, b.id}


def test_jobs_are_listed_per_org_and_request(storage: Storage) -> None:
    storage.enqueue_jobs([job(key="a", request_id="r1"), job(key="b", request_id="r2")])
    storage.enqueue_jobs([Job(org_id="o2", task="extract", key="a", request_id="r1")])
    assert [j.key for j in storage.list_jobs("o1", request_id="r1")] == ["a"]
    assert len(storage.list_jobs("o2")) == 1


def test_expedite_makes_a_queued_timer_due_now(storage: Storage) -> None:
    storage.enqueue_jobs([job(task="idle", key="s1", run_at=time.time() + 600)], debounce=True)
    assert not storage.expedite_job("o1", "idle", "nope")
    assert not storage.expedite_job("o2", "idle", "s1")
    assert storage.expedite_job("o1", "idle", "s1")
    (due,) = storage.claim_jobs("w", limit=5, lease_seconds=30)
    assert due.key == "s1"
    assert [j.key for j in storage.list_jobs("o1", key="s1")] == ["s1"]


def test_jobs_sharing_a_key_never_run_at_the_same_time(storage: Storage) -> None:
    first = storage.enqueue_jobs([job()])[0]
    (running,) = storage.claim_jobs("w1", limit=5, lease_seconds=0.2)
    second = storage.enqueue_jobs([job()])[0]
    assert second.id != first.id
    assert storage.claim_jobs("w2", limit=5, lease_seconds=30) == []
    time.sleep(0.3)  # the first worker died: its job is reclaimed, the twin still waits
    (reclaimed,) = storage.claim_jobs("w2", limit=5, lease_seconds=30)
    assert reclaimed.id == running.id
    assert storage.finish_job(reclaimed.id, "w2")
    (next_up,) = storage.claim_jobs("w3", limit=5, lease_seconds=30)
    assert next_up.id == second.id


def test_of_several_dead_jobs_sharing_a_key_the_newest_is_revived(storage: Storage) -> None:
    for _ in range(2):
        storage.enqueue_jobs([job()])
        (held,) = storage.claim_jobs("w", limit=1, lease_seconds=30)
        storage.finish_job(held.id, "w", error="boom")
    dead = storage.list_jobs("o1", statuses=[JobStatus.DEAD])
    assert len(dead) == 2
    assert storage.retry_jobs("o1") == 1
    (queued,) = storage.list_jobs("o1", statuses=[JobStatus.QUEUED])
    assert queued.id == max(j.id for j in dead)


def test_claiming_no_tasks_claims_nothing(storage: Storage) -> None:
    storage.enqueue_jobs([job()])
    assert storage.claim_jobs("w", limit=5, lease_seconds=30, tasks=[]) == []
    assert len(storage.claim_jobs("w", limit=5, lease_seconds=30, tasks=None)) == 1


def test_release_hands_work_to_a_queued_twin(storage: Storage) -> None:
    storage.enqueue_jobs([job()])
    (held,) = storage.claim_jobs("w", limit=1, lease_seconds=30)
    twin = storage.enqueue_jobs([job()])[0]
    assert storage.release_jobs("w", [held.id]) == 1
    statuses = {j.id: j.status for j in storage.list_jobs("o1")}
    assert statuses == {held.id: JobStatus.DONE, twin.id: JobStatus.QUEUED}
