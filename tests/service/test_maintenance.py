"""Expired profiles are hidden at once and archived by a recurring durable job."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from reflexio.config import Settings
from reflexio.filters import LearningFilter
from reflexio.jobs import Worker
from reflexio.models import UnifiedSearchRequest
from reflexio.records import Audit, JobStatus, Learning, LearningKind, LearningStatus
from reflexio.service import maintenance, search
from reflexio.service.core import Core, open_core
from reflexio.service.workers import handlers
from tests.conftest import BACKENDS, storage_url


@pytest.fixture(params=BACKENDS)
def core(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    url = storage_url(request.param, tmp_path)
    c = open_core(Settings.from_env({"REFLEXIO_STORAGE_URL": url, "HOME": str(tmp_path)}))
    yield c
    c.close()


def test_expired_profiles_are_hidden_then_archived_with_history(core: Core) -> None:
    past = int(time.time()) - 10
    old, fresh = core.storage.save_learnings(
        [
            Learning(
                org_id="o",
                kind=LearningKind.PROFILE,
                user_id="u",
                content="Is in Paris this week",
                expires_at=past,
            ),
            Learning(org_id="o", kind=LearningKind.PROFILE, user_id="u", content="Lives in Paris"),
        ],
        Audit(),
    )
    found = search.search(core, "o", UnifiedSearchRequest(query="Paris", user_id="u", threshold=0.0))
    assert [p.content for p in found.profiles] == ["Lives in Paris"]  # hidden at once

    assert core.storage.list_orgs() == ["o"]
    maintenance.schedule_expiry(core)
    maintenance.schedule_expiry(core)  # idempotent: one timer per org
    worker = Worker(core.storage, handlers(core))
    assert worker.run_once()
    (row,) = core.storage.get_learnings("o", LearningFilter(ids=(old.id,)))
    assert row.status is LearningStatus.EXPIRED
    assert (
        core.storage.get_learnings("o", LearningFilter(ids=(fresh.id,)))[0].status is LearningStatus.CURRENT
    )
    assert core.storage.list_events("o", learning_ids=[old.id])[0].event == "expired"
    timers = core.storage.list_jobs("o", task=maintenance.EXPIRE)
    assert [j.status for j in timers] == [JobStatus.QUEUED, JobStatus.DONE]  # the next run is queued
    assert timers[0].run_at > time.time() + 3000


def _retired(core: Core, status: LearningStatus, content: str) -> Learning:
    """A user playbook moved to ``status`` now."""
    (row,) = core.storage.save_learnings(
        [Learning(org_id="o", kind=LearningKind.USER_PLAYBOOK, user_id="u", content=content)], Audit()
    )
    core.storage.update_learnings("o", LearningFilter(ids=(row.id,)), {"status": status}, Audit())
    return row


def _run_gc(core: Core, monkeypatch: pytest.MonkeyPatch, *, days_later: int) -> None:
    """Run the org's lineage GC as if ``days_later`` days had passed."""
    later = time.time() + days_later * 86_400
    monkeypatch.setattr(maintenance, "now", lambda: later)
    maintenance.schedule_lineage_gc(core)
    core.storage.expedite_job("o", maintenance.LINEAGE_GC, "tombstones")  # the next timer, due now
    worker = Worker(core.storage, {maintenance.LINEAGE_GC: maintenance.lineage_gc_handler(core)})
    assert worker.run_once()


def _ids(core: Core) -> set[int]:
    return {row.id for row in core.storage.get_learnings("o", LearningFilter())}


def _configure(core: Core, **changes: Any) -> None:
    config = core.org_config("o").model_dump(mode="json") | changes
    core.storage.put_org_config("o", config)
    core.forget_config("o")


def test_lineage_gc_deletes_tombstones_after_the_grace_window_and_keeps_history(
    core: Core, monkeypatch: pytest.MonkeyPatch
) -> None:
    tombstones = [_retired(core, status, f"rule {status}") for status in maintenance.TOMBSTONES]
    archived = _retired(core, LearningStatus.ARCHIVED, "an older version")  # restorable: kept
    live = _retired(core, LearningStatus.CURRENT, "answer in Spanish")
    _run_gc(core, monkeypatch, days_later=89)  # inside the default 90 days
    assert _ids(core) == {row.id for row in [*tombstones, archived, live]}
    _run_gc(core, monkeypatch, days_later=91)
    assert _ids(core) == {archived.id, live.id}
    assert core.storage.list_events("o", learning_ids=[tombstones[0].id])[0].actor == "lineage_gc"
    timers = core.storage.list_jobs("o", task=maintenance.LINEAGE_GC)
    assert timers[0].status is JobStatus.QUEUED
    assert timers[0].run_at - time.time() > 91 * 86_400 + 80_000  # poll_interval_seconds later


def test_lineage_gc_follows_the_org_config(core: Core, monkeypatch: pytest.MonkeyPatch) -> None:
    row = _retired(core, LearningStatus.SUPERSEDED, "answer in French")
    _configure(core, lineage_gc={"enabled": False})
    _run_gc(core, monkeypatch, days_later=400)
    assert row.id in _ids(core)
    _configure(core, lineage_gc={"tombstone_grace_window_days": 7})
    _run_gc(core, monkeypatch, days_later=8)
    assert row.id not in _ids(core)


def test_expiry_reclamation_deletes_expired_profiles_instead_of_archiving(core: Core) -> None:
    _configure(core, expiry_reclamation={"enabled": True})
    (old,) = core.storage.save_learnings(
        [
            Learning(
                org_id="o", kind=LearningKind.PROFILE, user_id="u", content="In Paris this week",
                expires_at=int(time.time()) - 10,
            )
        ],
        Audit(),
    )  # fmt: skip
    maintenance.schedule_expiry(core)
    assert Worker(core.storage, handlers(core)).run_once()
    assert old.id not in _ids(core)
    assert core.storage.list_events("o", learning_ids=[old.id])[0].event == "deleted"
