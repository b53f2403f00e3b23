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
