"""Storage contract: a running job's progress report (written under the lease, read by anyone)."""

from __future__ import annotations

import time

from reflexio.records import Job, JobStatus
from reflexio.storage import Storage

REPORT = {"total_users": 3, "processed_user_ids": ["u1"], "stats": {"generated": 2}, "ok": True}


def running(storage: Storage, worker: str = "w1", lease_seconds: float = 30) -> Job:
    storage.enqueue_jobs([Job(org_id="o1", task="rerun", key="profile", payload={"kind": "profile"})])
    [job] = storage.claim_jobs(worker, limit=1, lease_seconds=lease_seconds)
    return job


def test_a_new_job_reports_nothing(storage: Storage) -> None:
    [queued] = storage.enqueue_jobs([Job(org_id="o1", task="rerun", key="profile")])
    assert queued.progress == {}
    assert storage.get_job(queued.id).progress == {}  # type: ignore[union-attr]


def test_the_lease_holder_replaces_the_report(storage: Storage) -> None:
    job = running(storage)
    assert storage.set_job_progress(job.id, "w1", REPORT)
    assert storage.get_job(job.id).progress == REPORT  # type: ignore[union-attr]
    assert storage.set_job_progress(job.id, "w1", {"total_users": 4})
    [listed] = storage.list_jobs("o1", task="rerun")
    assert listed.progress == {"total_users": 4}  # replaced, not merged


def test_a_worker_without_the_lease_cannot_report(storage: Storage) -> None:
    job = running(storage, lease_seconds=0.2)
    assert storage.set_job_progress(job.id, "w1", {"step": 1})
    assert not storage.set_job_progress(job.id, "intruder", {"step": 99})
    time.sleep(0.3)
    [taken] = storage.claim_jobs("w2", limit=1, lease_seconds=30)
    assert taken.id == job.id and taken.progress == {"step": 1}  # the report survives a takeover
    assert not storage.set_job_progress(job.id, "w1", {"step": 2})
    assert storage.set_job_progress(job.id, "w2", {"step": 3})
    assert storage.get_job(job.id).progress == {"step": 3}  # type: ignore[union-attr]


def test_the_report_outlives_the_job_and_commits_with_its_completion(storage: Storage) -> None:
    job = running(storage)
    with storage.transaction() as tx:
        assert tx.set_job_progress(job.id, "w1", {"done": True})
        assert tx.finish_job(job.id, "w1")
    done = storage.get_job(job.id)
    assert done is not None and done.status is JobStatus.DONE and done.progress == {"done": True}
    assert not storage.set_job_progress(job.id, "w1", {"done": False})  # finished: no lease


def test_a_rolled_back_report_is_not_kept(storage: Storage) -> None:
    job = running(storage)
    storage.set_job_progress(job.id, "w1", {"step": 1})
    try:
        with storage.transaction() as tx:
            tx.set_job_progress(job.id, "w1", {"step": 2})
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    assert storage.get_job(job.id).progress == {"step": 1}  # type: ignore[union-attr]
