"""Plans and monthly quotas: metered per org per month, a 429 past a quota, learning paused
and resumed without loss when the month rolls over (issue 16, plans and quotas).

The month is ``Core.clock``'s: the tests put it at the end of December 2026, then move it on.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from reflexio.config import Settings
from reflexio.errors import QuotaExceededError, ValidationError
from reflexio.filters import LearningFilter
from reflexio.models import (
    PlaybookAggregationOperationRequest,
    SearchUserPlaybookRequest,
    UnifiedSearchRequest,
)
from reflexio.models.plans import BUILTIN_PLANS, Plan, PlanLimits
from reflexio.records import Job, JobStatus, LLMUsageRecord
from reflexio.service import aggregation, quotas, reflection, search
from reflexio.service import publish as pub
from reflexio.service.core import Core, open_core
from reflexio.service.warmup import Warmup
from tests.conftest import BACKENDS, storage_url
from tests.service.test_workers import LAPTOP, converse, drain
from tests.support.clock import Clock

ORG = "o"
RESET = datetime(2027, 1, 1, tzinfo=UTC).timestamp()


@pytest.fixture(params=BACKENDS)
def core(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    url = storage_url(request.param, tmp_path)
    c = open_core(Settings.from_env({"REFLEXIO_STORAGE_URL": url, "HOME": str(tmp_path)}))
    c.clock = Clock(RESET - 3_600)  # 2026-12-31T23:00:00Z
    yield c
    c.close()


def _limits(core: Core, **limits: int) -> None:
    quotas.set_plan(core, ORG, Plan(name="custom", limits=PlanLimits(**limits)))


def _search(core: Core) -> None:
    search.search(core, ORG, UnifiedSearchRequest(query="laptop", user_id="u1"))


def test_the_default_plan_is_unlimited_and_still_metered(core: Core) -> None:
    for _ in range(3):
        _search(core)
    search.search_user_playbooks(core, ORG, SearchUserPlaybookRequest(query="laptop"))
    report = quotas.usage(core, ORG)
    assert report.plan == "unlimited"
    assert report.usage["searches"].used == 4 and report.usage["searches"].limit is None
    assert report.resets_at == datetime(2027, 1, 1, tzinfo=UTC)


def test_a_search_past_its_quota_is_a_429_saying_which_quota_and_when_it_resets(core: Core) -> None:
    _limits(core, searches=2)
    _search(core)
    search.search_user_playbooks(core, ORG, SearchUserPlaybookRequest(query="laptop"))
    with pytest.raises(QuotaExceededError) as caught:
        _search(core)
    error = caught.value
    assert error.status_code == 429
    assert error.retry_after == pytest.approx(3_600)
    assert error.details == {
        "quota": "searches",
        "limit": 2,
        "plan": "custom",
        "resets_at": "2027-01-01T00:00:00Z",
    }
    assert "searches" in error.message and "2027-01-01T00:00:00Z" in error.message
    assert quotas.usage(core, ORG).usage["searches"].used == 2  # the refused one is not counted
    assert quotas.usage(core, "other-org").usage["searches"].used == 0


def test_the_quota_resets_when_the_month_rolls_over(core: Core) -> None:
    _limits(core, searches=1)
    _search(core)
    with pytest.raises(QuotaExceededError):
        _search(core)
    core.clock = Clock(RESET + 1)
    _search(core)
    report = quotas.usage(core, ORG)
    assert report.usage["searches"].used == 1 and report.period_start == datetime(2027, 1, 1, tzinfo=UTC)


def test_usage_reports_input_tokens_from_the_llm_accounting_against_the_plan(core: Core) -> None:
    quotas.set_plan(core, ORG, BUILTIN_PLANS["free"])
    core.storage.add_llm_usage(
        [LLMUsageRecord(org_id=ORG, role="extraction", model="m", prompt="p", prompt_tokens=1_200)] * 2
    )
    tokens = quotas.usage(core, ORG).usage["input_tokens"]
    assert (tokens.used, tokens.limit, tokens.remaining) == (2_400, 100_000, 97_600)
    assert quotas.usage(core, ORG).learning_status == "active"


def test_a_built_in_plan_keeps_its_limits(core: Core) -> None:
    with pytest.raises(ValidationError, match="built in"):
        quotas.set_plan(core, ORG, Plan(name="free", limits=PlanLimits(searches=10**9)))
    assert quotas.set_plan(core, ORG, None).name == "unlimited"


def test_learning_past_the_token_quota_pauses_and_resumes_next_month_without_loss(core: Core) -> None:
    _limits(core, input_tokens=1_000)
    core.storage.add_llm_usage(
        [LLMUsageRecord(org_id=ORG, role="extraction", model="m", prompt="p", prompt_tokens=1_000)]
    )
    core.clock = Clock(RESET - 1)  # a paused job looks again when the month resets: in 1 s
    request_id = converse(core, "u1", "s1", LAPTOP)
    drain(core)
    status = pub.learning_status(core, ORG, request_id)
    assert status.status == "pending" and status.reason and "paused" in status.reason
    assert "input tokens" in status.reason
    assert quotas.usage(core, ORG).learning_status == "paused"
    assert core.storage.get_learnings(ORG, LearningFilter(user_id="u1")) == []
    waiting = core.storage.list_jobs(ORG, limit=20)
    assert waiting and all(j.status is JobStatus.QUEUED and j.attempts == 0 for j in waiting)

    core.clock = Clock(RESET + 1)  # January: the LLM accounting of December no longer counts
    time.sleep(1.2)
    drain(core)
    assert pub.learning_status(core, ORG, request_id).status == "done"
    assert core.storage.get_learnings(ORG, LearningFilter(user_id="u1"))
    assert quotas.usage(core, ORG).usage["learnings_generated"].used > 0


def test_aggregation_waits_while_learning_is_paused_and_runs_next_month(core: Core) -> None:
    """Aggregation calls the org's LLM too: past the token quota it waits, queued, saying why."""
    _limits(core, input_tokens=1_000)
    core.storage.add_llm_usage(
        [LLMUsageRecord(org_id=ORG, role="extraction", model="m", prompt="p", prompt_tokens=1_000)]
    )
    core.clock = Clock(RESET - 1)
    op = aggregation.submit(core, ORG, PlaybookAggregationOperationRequest())
    drain(core)
    waiting = aggregation.get_operation(core, ORG, op.operation_id)
    assert waiting.status == "queued" and waiting.attempts == 0
    assert waiting.error and "learning is paused" in waiting.error and "input tokens" in waiting.error

    core.clock = Clock(RESET + 1)
    time.sleep(1.2)  # the paused job looks again when the month resets
    drain(core)
    assert aggregation.get_operation(core, ORG, op.operation_id).status == "succeeded"


def test_a_revision_waits_while_learning_is_paused(core: Core) -> None:
    _limits(core, learnings_generated=1)
    quotas.record_learnings(core, ORG, 1)
    core.storage.enqueue_jobs([Job(org_id=ORG, task=reflection.REVISE, key="1", payload={"learning_id": 1})])
    drain(core)
    (job,) = core.storage.list_jobs(ORG, task=reflection.REVISE, limit=5)
    assert job.status is JobStatus.QUEUED and job.attempts == 0
    assert job.last_error and "generated learnings" in job.last_error


def test_the_warm_up_search_counts_against_no_quota(core: Core) -> None:
    _limits(core, searches=1)
    converse(core, "u1", "s1", LAPTOP)
    drain(core)
    assert ORG in core.storage.list_orgs()  # so the warm-up searches it
    warmup = Warmup()
    warmup.run(core)
    assert warmup.state == "passed"
    assert quotas.usage(core, ORG).usage["searches"].used == 0
    _search(core)  # the one search the plan allows is still the caller's


def test_searches_read_the_plan_once_a_second_and_this_process_sees_its_change_at_once(
    core: Core, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads: list[str] = []
    read = core.storage.get_org_plan

    def counted(org_id: str) -> dict[str, Any] | None:
        reads.append(org_id)
        return read(org_id)

    monkeypatch.setattr(core.storage, "get_org_plan", counted)
    for _ in range(3):
        _search(core)
    assert reads == [ORG]  # each search is charged against the plan: not one read each
    _limits(core, searches=4)  # 3 used
    _search(core)
    with pytest.raises(QuotaExceededError):
        _search(core)
