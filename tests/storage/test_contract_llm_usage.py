"""Storage contract: LLM usage accounting, per org, per job, per role and over time."""

from __future__ import annotations

import pytest

from reflexio.records import LLMUsageRecord
from reflexio.storage import Storage


def usage(org: str = "o1", role: str = "extraction", **fields: object) -> LLMUsageRecord:
    values: dict[str, object] = {
        "model": "openai/gpt-4o-mini",
        "prompt": "extract",
        "prompt_version": "1.0.0",
        "prompt_tokens": 100,
        "completion_tokens": 20,
        "cost_usd": 0.001,
        "latency_ms": 250.0,
    }
    values.update(fields)
    return LLMUsageRecord(org_id=org, role=role, **values)  # type: ignore[arg-type]


def test_totals_per_role_and_overall(storage: Storage) -> None:
    storage.add_llm_usage(
        [
            usage(job_id=1),
            usage(job_id=1, role="gate", prompt="gate", prompt_tokens=40, completion_tokens=2, cost_usd=0.0),
            usage(job_id=2, ok=False, error="RateLimitError: slow down", completion_tokens=0),
        ]
    )
    summary = storage.llm_usage("o1")
    assert (summary.calls, summary.failed) == (3, 1)
    assert (summary.prompt_tokens, summary.completion_tokens) == (240, 22)
    assert summary.tokens == 262
    assert summary.cost_usd == pytest.approx(0.002)
    assert summary.latency_ms == pytest.approx(750.0)
    assert set(summary.by_role) == {"extraction", "gate"}
    assert summary.by_role["extraction"].calls == 2 and summary.by_role["extraction"].failed == 1
    assert summary.by_role["gate"].prompt_tokens == 40


def test_totals_of_one_job(storage: Storage) -> None:
    storage.add_llm_usage([usage(job_id=7), usage(job_id=7), usage(job_id=8), usage(job_id=None)])
    assert storage.llm_usage("o1", job_id=7).calls == 2
    assert storage.llm_usage("o1", job_id=8).calls == 1
    assert storage.llm_usage("o1", job_id=9).calls == 0
    assert storage.llm_usage("o1").calls == 4


def test_totals_since_a_time(storage: Storage) -> None:
    storage.add_llm_usage([usage(created_at=1_000.0), usage(created_at=2_000.0), usage(created_at=3_000.0)])
    assert storage.llm_usage("o1", since=2_000.0).calls == 2
    assert storage.llm_usage("o1", since=3_000.5).calls == 0


def test_created_at_defaults_to_now(storage: Storage) -> None:
    import time

    before = time.time() - 1
    storage.add_llm_usage([usage()])
    assert storage.llm_usage("o1", since=before).calls == 1


def test_usage_never_crosses_orgs(storage: Storage) -> None:
    storage.add_llm_usage([usage(org="o1", job_id=1), usage(org="o2", job_id=1, cost_usd=5.0)])
    assert storage.llm_usage("o1").cost_usd == pytest.approx(0.001)
    assert storage.llm_usage("o1", job_id=1).calls == 1
    assert storage.llm_usage("o3").calls == 0
    assert storage.llm_usage("o3").by_role == {}


def test_an_empty_batch_writes_nothing(storage: Storage) -> None:
    storage.add_llm_usage([])
    assert storage.llm_usage("o1").calls == 0


def test_usage_rolls_back_with_its_transaction(storage: Storage) -> None:
    with pytest.raises(RuntimeError), storage.transaction() as tx:
        tx.add_llm_usage([usage()])
        raise RuntimeError("boom")
    storage.add_llm_usage([usage()])
    assert storage.llm_usage("o1").calls == 1
