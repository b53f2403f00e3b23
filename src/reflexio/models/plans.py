"""Plans and their monthly quotas, and the usage report (``GET /api/usage``).

Reflexio is sold in plans (the pricing page): **Free** (100K input tokens, 100 generated
learnings and 1,000 searches a month), **Pro** (10M tokens, 10K learnings, 100K searches),
and self-hosted, configurable and unlimited by default. An org has one plan: a built-in one
by name, or custom limits; ``None`` means unlimited. Usage is counted per calendar month
(UTC); a quota resets at the start of the next month.
"""

from datetime import UTC, datetime
from typing import Final, Literal

from pydantic import Field

from reflexio.models.fields import WireModel

__all__ = [
    "BUILTIN_PLANS",
    "METERS",
    "Meter",
    "Plan",
    "PlanLimits",
    "QuotaUsage",
    "UsageResponse",
    "month_window",
]

Meter = Literal["input_tokens", "learnings_generated", "searches"]
#: What is metered, in the order reports list it.
METERS: Final[tuple[Meter, ...]] = ("input_tokens", "learnings_generated", "searches")

_LIMIT = Field(default=None, ge=0, le=10**15)


class PlanLimits(WireModel):
    """Monthly quotas; ``None`` is unlimited."""

    input_tokens: int | None = _LIMIT
    learnings_generated: int | None = _LIMIT
    searches: int | None = _LIMIT

    def limit(self, meter: Meter) -> int | None:
        """The quota of one meter."""
        value: int | None = getattr(self, meter)
        return value


class Plan(WireModel):
    """An org's plan: a name and its limits (custom plans name themselves ``custom``)."""

    name: str = Field(min_length=1, max_length=64)
    limits: PlanLimits = Field(default_factory=PlanLimits)


BUILTIN_PLANS: Final[dict[str, Plan]] = {
    "free": Plan(
        name="free", limits=PlanLimits(input_tokens=100_000, learnings_generated=100, searches=1_000)
    ),
    "pro": Plan(
        name="pro",
        limits=PlanLimits(input_tokens=10_000_000, learnings_generated=10_000, searches=100_000),
    ),
    "unlimited": Plan(name="unlimited"),
}


def month_window(at: float) -> tuple[datetime, datetime]:
    """The calendar month (UTC) holding epoch second ``at``: its start and the next one's."""
    moment = datetime.fromtimestamp(at, UTC)
    start = moment.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    following = (
        start.replace(year=start.year + 1, month=1)
        if start.month == 12
        else start.replace(month=start.month + 1)
    )
    return start, following


class QuotaUsage(WireModel):
    """One meter this month: how much was used, of how much (``None``: unlimited)."""

    used: int
    limit: int | None = None
    remaining: int | None = None


class UsageResponse(WireModel):
    """``GET /api/usage``: the org's plan, this month's use of each quota, and what it pauses."""

    success: bool = True
    org_id: str
    plan: str
    period_start: datetime
    resets_at: datetime
    usage: dict[Meter, QuotaUsage]
    learning_status: Literal["active", "paused"] = "active"
    learning_reason: str | None = None
