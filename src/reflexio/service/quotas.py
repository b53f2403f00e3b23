"""Plans and monthly quotas: what an org may use, what it used, and a 429 once it is used up.

An org's plan is the one the operator assigned (``reflexio plan set``) or the server's default
(``REFLEXIO_DEFAULT_PLAN``, unlimited unless set). Usage is counted per calendar month (UTC,
``Core.clock``): searches and generated learnings in ``usage_counters``, input tokens summed
from the LLM accounting that every call already writes. A search beyond its quota is refused
with :class:`QuotaExceededError` (429, ``Retry-After`` until the month resets, the message
naming the quota); the count and the check are one statement, so concurrent searches never
pass the limit. Learning is not refused but paused (:func:`learning_pause`): every job that
would call the LLM waits for the next month instead of being dropped (:func:`wait_while_paused`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

from reflexio.errors import QuotaExceededError, ValidationError
from reflexio.jobs import JobDeferred
from reflexio.models.plans import BUILTIN_PLANS, METERS, Meter, Plan, QuotaUsage, UsageResponse, month_window
from reflexio.service.core import HOT_PATH_CONFIG_AGE, Core

__all__ = [
    "PAUSE_RECHECK_SECONDS",
    "charge",
    "learning_pause",
    "plan_of",
    "record_learnings",
    "set_plan",
    "usage",
    "wait_while_paused",
]

#: What each meter is called in messages.
_LABELS: Final[dict[Meter, str]] = {
    "input_tokens": "input tokens",
    "learnings_generated": "generated learnings",
    "searches": "searches",
}


def plan_of(core: Core, org_id: str, *, max_age: float = 0.0) -> Plan:
    """The org's plan: its own if the operator assigned one, else the server's default (read
    up to ``max_age`` seconds ago: ``Core.org_plan``)."""
    stored = core.org_plan(org_id, max_age=max_age)
    if stored is None:
        return BUILTIN_PLANS[core.settings.default_plan]
    return Plan.model_validate(stored)


def set_plan(core: Core, org_id: str, plan: Plan | None) -> Plan:
    """Assign the org a plan (``None``: back to the server's default); returns the plan in force.

    Raises:
        ValidationError: A named plan is not a built-in one and has no limits of its own.
    """
    if plan is not None and plan.name in BUILTIN_PLANS and plan != BUILTIN_PLANS[plan.name]:
        raise ValidationError(
            f"plan {plan.name!r} is built in and its limits are fixed; name custom limits 'custom'",
            details={"fields": ["name"]},
        )
    core.storage.put_org_plan(org_id, None if plan is None else plan.model_dump(mode="json"))
    return plan_of(core, org_id)


def _period(core: Core) -> tuple[str, datetime, datetime]:
    start, resets = month_window(core.clock())
    return start.strftime("%Y-%m"), start, resets


def charge(core: Core, org_id: str, meter: Meter, amount: int = 1) -> None:
    """Count ``amount`` of ``meter`` for the org this month, or refuse it past the quota.

    Raises:
        QuotaExceededError: The plan's quota for ``meter`` would be exceeded (nothing counted).
    """
    limit = plan_of(core, org_id, max_age=HOT_PATH_CONFIG_AGE).limits.limit(meter)
    period, _, resets = _period(core)
    if core.storage.count_usage(org_id, period, meter, amount, limit=limit) is None:
        raise _exceeded(core, org_id, meter, limit or 0, resets)


def record_learnings(core: Core, org_id: str, count: int) -> None:
    """Count learnings a job generated (never refused: what was learned is kept)."""
    if count > 0:
        period, _, _ = _period(core)
        core.storage.count_usage(org_id, period, "learnings_generated", count, limit=None)


def learning_pause(core: Core, org_id: str) -> QuotaExceededError | None:
    """Why the org's learning must wait for the next month, or None when it may run.

    Learning pauses once the month's input tokens or generated learnings reach the plan's
    quota; the error says which and carries the seconds until the reset.
    """
    limits = plan_of(core, org_id).limits
    if limits.input_tokens is None and limits.learnings_generated is None:
        return None
    used = _used(core, org_id)
    for meter in ("input_tokens", "learnings_generated"):
        limit = limits.limit(meter)
        if limit is not None and used[meter] >= limit:
            return _exceeded(core, org_id, meter, limit, _period(core)[2])
    return None


#: While an org's learning is paused by its quota, how often its jobs look again (at the
#: latest: a paused job also wakes when its month resets).
PAUSE_RECHECK_SECONDS = 300.0


def wait_while_paused(core: Core, org_id: str) -> None:
    """Requeue the job, nothing done and no attempt spent, while the org's quota pauses learning.

    Every task that calls the org's LLM (extraction, session evaluation, reruns, aggregation,
    revisions) starts with this, so none spends tokens past the quota; the job keeps its place
    and its error says why it waits, and it runs once the quota allows.

    Raises:
        JobDeferred: Learning is paused (until the month resets, rechecked meanwhile).
    """
    paused = learning_pause(core, org_id)
    if paused is not None:
        wait = min(PAUSE_RECHECK_SECONDS, paused.retry_after or PAUSE_RECHECK_SECONDS)
        raise JobDeferred(f"learning is paused: {paused.message}", seconds=wait)


def usage(core: Core, org_id: str) -> UsageResponse:
    """This month's use of each quota against the org's plan, and whether learning is paused."""
    plan = plan_of(core, org_id)
    _, start, resets = _period(core)
    used = _used(core, org_id)
    report = {
        meter: QuotaUsage(
            used=used[meter],
            limit=plan.limits.limit(meter),
            remaining=None if (limit := plan.limits.limit(meter)) is None else max(0, limit - used[meter]),
        )
        for meter in METERS
    }
    paused = learning_pause(core, org_id)
    return UsageResponse(
        org_id=org_id,
        plan=plan.name,
        period_start=start,
        resets_at=resets,
        usage=report,
        learning_status="paused" if paused else "active",
        learning_reason=paused.message if paused else None,
    )


def _used(core: Core, org_id: str) -> dict[Meter, int]:
    period, start, _ = _period(core)
    counted = core.storage.usage_of_period(org_id, period)
    tokens = core.storage.llm_usage(org_id, since=start.timestamp()).prompt_tokens
    return {
        "input_tokens": tokens,
        "learnings_generated": counted.get("learnings_generated", 0),
        "searches": counted.get("searches", 0),
    }


def _exceeded(core: Core, org_id: str, meter: Meter, limit: int, resets: datetime) -> QuotaExceededError:
    plan = plan_of(core, org_id).name
    when = resets.strftime("%Y-%m-%dT%H:%M:%SZ")
    return QuotaExceededError(
        f"the monthly quota of {limit:,} {_LABELS[meter]} of plan {plan!r} is used up; it resets at {when}",
        details={"quota": meter, "limit": limit, "plan": plan, "resets_at": when},
        retry_after=max(1.0, resets.timestamp() - core.clock()),
    )
