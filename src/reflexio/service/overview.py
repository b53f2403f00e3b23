"""An org at a glance: what it learned, how sessions went, what the machinery is doing, what it cost.

Each series is one value per day over the last ``days`` days (UTC), oldest first, read with
bounded queries: counts per day through indexed filters, session verdicts tallied per day by
the store (every verdict of the window, none decoded here), review decisions of the window
read once (at most ``_EVENTS`` rows, the newest), job counts
capped at ``JOB_COUNT_CAP`` (shown as "1000+"). Nothing here loads a whole table.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from reflexio.filters import ACTIVE_STATUSES, LearningFilter
from reflexio.learn.reflect import summarize
from reflexio.models import LearningImpactView
from reflexio.records import Approval, JobStatus, LearningKind, LearningStatus
from reflexio.service import impact
from reflexio.service.core import Core

__all__ = [
    "DAY",
    "JOB_COUNT_CAP",
    "Overview",
    "Series",
    "SessionTrend",
    "learning_impacts",
    "overview",
    "session_trend",
]

DAY = 86_400
#: Jobs counted per status at most (the count of a huge backlog is shown as "at least").
JOB_COUNT_CAP = 1_000
#: Verdicts on injected learnings read at most (the newest).
_VERDICTS = 5_000
#: Agent-playbook history events read for the window at most (the newest).
_EVENTS = 5_000
_PLURALS = {
    LearningKind.PROFILE: "profiles",
    LearningKind.USER_PLAYBOOK: "user playbooks",
    LearningKind.AGENT_PLAYBOOK: "agent playbooks",
}
#: Review events counted as a decision of each kind (``learning_events.event``).
_DECISIONS = {"approved": "approved", "rejected": "rejected", "archived": "retired", "deleted": "retired"}


@dataclass(slots=True)
class Series:
    """One named line of a chart: a value per day."""

    name: str
    values: list[float]


@dataclass(slots=True)
class Overview:
    """What the Overview screen shows.

    Attributes:
        days: The first second (UTC) of each day of the window, oldest first.
        totals: Active learnings per kind (``profile``, ``user_playbook``, ``agent_playbook``)
            and ``pending_review`` (agent playbooks waiting for a reviewer).
        learnings: Learnings created per day, one series per kind.
        decisions: Agent playbooks approved, rejected and retired per day.
        success: Share of judged sessions that succeeded per day, regular and shadow
            (None on a day without a verdict).
        friction: Corrections per judged session and escalated share per day.
        jobs: Jobs per status (queued, running, dead), capped at ``JOB_COUNT_CAP``.
        tokens: LLM tokens per day; ``cost``: LLM cost (USD) per day.
    """

    days: list[int]
    totals: dict[str, int]
    learnings: list[Series]
    decisions: list[Series]
    success: list[Series]
    friction: list[Series]
    jobs: dict[str, int]
    tokens: Series
    cost: Series
    verdicts: int = 0


@dataclass(slots=True)
class SessionTrend:
    """Session verdicts per day: the part of the overview the Evaluation screen shows."""

    days: list[int]
    success: list[Series]
    friction: list[Series]
    verdicts: int


def _window(days: int) -> list[int]:
    today = int(time.time()) // DAY * DAY
    return [today - DAY * i for i in range(days - 1, -1, -1)]


def session_trend(
    core: Core, org_id: str, *, days: int = 30, agent_version: str | None = None
) -> SessionTrend:
    """Success and friction per day over the last ``days`` days (optionally one agent version's)."""
    starts = _window(days)
    success, friction, verdicts = _sessions(core, org_id, starts, agent_version)
    return SessionTrend(starts, success, friction, verdicts)


def overview(core: Core, org_id: str, *, days: int = 14, agent_version: str | None = None) -> Overview:
    """The org's overview over the last ``days`` days (optionally one agent version's)."""
    starts = _window(days)
    success, friction, verdicts = _sessions(core, org_id, starts, agent_version)
    tokens, cost = _usage(core, org_id, starts)
    return Overview(
        days=starts,
        totals=_totals(core, org_id, agent_version),
        learnings=_created(core, org_id, starts, agent_version),
        decisions=_decisions(core, org_id, starts),
        success=success,
        friction=friction,
        jobs=_jobs(core, org_id),
        tokens=tokens,
        cost=cost,
        verdicts=verdicts,
    )


def _totals(core: Core, org_id: str, agent_version: str | None) -> dict[str, int]:
    count = core.storage.count_learnings
    out = {
        kind.value: count(
            org_id, LearningFilter(kinds=(kind,), statuses=ACTIVE_STATUSES, agent_version=agent_version)
        )
        for kind in LearningKind
    }
    out["pending_review"] = count(
        org_id,
        LearningFilter(
            kinds=(LearningKind.AGENT_PLAYBOOK,),
            statuses=(LearningStatus.CURRENT, LearningStatus.PENDING),
            approvals=(Approval.PENDING,),
            agent_version=agent_version,
        ),
    )
    return out


def _created(core: Core, org_id: str, starts: list[int], agent_version: str | None) -> list[Series]:
    return [
        Series(
            _PLURALS[kind],
            [
                float(
                    core.storage.count_learnings(
                        org_id,
                        LearningFilter(
                            kinds=(kind,),
                            agent_version=agent_version,
                            created_after=start,
                            created_before=start + DAY - 1,
                        ),
                    )
                )
                for start in starts
            ],
        )
        for kind in LearningKind
    ]


def _day_index(starts: list[int], t: float) -> int | None:
    i = int((t - starts[0]) // DAY)
    return i if 0 <= i < len(starts) else None


def _decisions(core: Core, org_id: str, starts: list[int]) -> list[Series]:
    counts = {name: [0.0] * len(starts) for name in ("approved", "rejected", "retired")}
    events = core.storage.list_events(
        org_id, kinds=[LearningKind.AGENT_PLAYBOOK.value], events=list(_DECISIONS), limit=_EVENTS
    )
    for event in events:
        name = _DECISIONS.get(event.event)
        i = _day_index(starts, event.created_at)
        if name is not None and i is not None:
            counts[name][i] += 1
    return [Series(name, values) for name, values in counts.items()]


def _sessions(
    core: Core, org_id: str, starts: list[int], agent_version: str | None
) -> tuple[list[Series], list[Series], int]:
    """Success (regular, shadow better) and friction (corrections, escalations) per day."""
    n = len(starts)
    judged, succeeded = [0] * n, [0] * n
    shadow_judged, shadow_won = [0] * n, [0] * n
    corrections, escalated = [0] * n, [0] * n
    for tally in core.storage.session_verdict_days(
        org_id, since=starts[0], day_seconds=DAY, agent_version=agent_version
    ):
        i = tally.day
        if not 0 <= i < n:
            continue
        judged[i], succeeded[i] = tally.judged, tally.succeeded
        corrections[i], escalated[i] = tally.corrections, tally.escalated
        shadow_judged[i], shadow_won[i] = tally.shadow_judged, tally.shadow_won

    def rate(part: list[int], whole: list[int]) -> list[float]:
        return [p / w if w else float("nan") for p, w in zip(part, whole, strict=True)]

    success = [
        Series("regular", rate(succeeded, judged)),
        Series("shadow better", rate(shadow_won, shadow_judged)),
    ]
    friction = [
        Series("corrections per session", rate(corrections, judged)),
        Series("escalated", rate(escalated, judged)),
    ]
    return success, friction, sum(judged)


def _jobs(core: Core, org_id: str) -> dict[str, int]:
    return {
        status.value: len(core.storage.list_jobs(org_id, statuses=[status], limit=JOB_COUNT_CAP))
        for status in (JobStatus.QUEUED, JobStatus.RUNNING, JobStatus.DEAD)
    }


def _usage(core: Core, org_id: str, starts: list[int]) -> tuple[Series, Series]:
    since = [core.storage.llm_usage(org_id, since=start) for start in [*starts, starts[-1] + DAY]]
    tokens = [float(since[i].tokens - since[i + 1].tokens) for i in range(len(starts))]
    cost = [since[i].cost_usd - since[i + 1].cost_usd for i in range(len(starts))]
    return Series("tokens", tokens), Series("cost (USD)", cost)


def learning_impacts(
    core: Core, org_id: str, *, since: int | None = None, limit: int = _VERDICTS
) -> tuple[list[LearningImpactView], int]:
    """The impact of every learning judged among the newest ``limit`` verdicts (since ``since``).

    The learnings are picked from the verdicts; their numbers are ``service.impact``'s (the
    same as the API's ``get_learning_impact``), counting only sessions since ``since``.

    Returns:
        The learnings, most judged first, and how many verdicts were read.
    """
    rows = core.storage.list_evaluations(org_id, kind="learning", created_after=since, limit=limit)
    refs = list(dict.fromkeys((row.learning_kind or "", row.learning_id or "") for row in rows))
    cutoff = dict.fromkeys(refs, float(since)) if since is not None else None
    found = impact.impact_rows(core.storage, org_id, refs, since=cutoff)
    views = [impact.view(ref, summarize(exposures), last) for ref, (exposures, last) in found.items()]
    views.sort(key=lambda v: (-(v.helped + v.hurt + v.neutral), v.kind, v.learning_id))
    return views, len(rows)
