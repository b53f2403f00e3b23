"""Storage contract: per-org plans and monthly usage counters that never pass their limit."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from reflexio.storage import Storage


def test_a_plan_is_assigned_replaced_and_removed_per_org(storage: Storage) -> None:
    assert storage.get_org_plan("o1") is None
    storage.put_org_plan("o1", {"name": "free"})
    storage.put_org_plan("o1", {"name": "custom", "limits": {"searches": 5}})
    storage.put_org_plan("o2", {"name": "pro"})
    assert storage.get_org_plan("o1") == {"name": "custom", "limits": {"searches": 5}}
    storage.put_org_plan("o1", None)
    assert storage.get_org_plan("o1") is None
    assert storage.get_org_plan("o2") == {"name": "pro"}


def test_usage_is_counted_per_org_period_and_meter(storage: Storage) -> None:
    assert storage.count_usage("o1", "2026-12", "searches", 1, limit=None) == 1
    assert storage.count_usage("o1", "2026-12", "searches", 2, limit=None) == 3
    assert storage.count_usage("o1", "2026-12", "learnings_generated", 4, limit=None) == 4
    assert storage.count_usage("o1", "2027-01", "searches", 1, limit=None) == 1
    assert storage.count_usage("o2", "2026-12", "searches", 7, limit=None) == 7
    assert storage.usage_of_period("o1", "2026-12") == {"searches": 3, "learnings_generated": 4}
    assert storage.usage_of_period("o1", "2027-01") == {"searches": 1}
    assert storage.usage_of_period("o3", "2026-12") == {}


def test_an_amount_that_would_pass_the_limit_is_not_counted(storage: Storage) -> None:
    assert storage.count_usage("o1", "2026-12", "searches", 3, limit=4) == 3
    assert storage.count_usage("o1", "2026-12", "searches", 2, limit=4) is None
    assert storage.count_usage("o1", "2026-12", "searches", 1, limit=4) == 4
    assert storage.count_usage("o1", "2026-12", "searches", 1, limit=4) is None
    assert storage.count_usage("o2", "2026-12", "searches", 5, limit=4) is None  # even the first
    assert storage.count_usage("o2", "2026-12", "searches", 1, limit=0) is None
    assert storage.usage_of_period("o1", "2026-12") == {"searches": 4}
    assert storage.usage_of_period("o2", "2026-12") == {}


def test_concurrent_callers_never_take_the_total_past_the_limit(storage: Storage) -> None:
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(
            pool.map(lambda _: storage.count_usage("o1", "2026-12", "searches", 1, limit=25), range(60))
        )
    assert sum(result is not None for result in results) == 25
    assert storage.usage_of_period("o1", "2026-12") == {"searches": 25}
