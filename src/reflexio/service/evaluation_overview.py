"""The evaluation overview (``POST /api/get_evaluation_overview``): one read for the page.

Sessions count in a window by when they were judged. Each session's success is its verdict's
(a reported outcome already outranks the judge there). The *shadow* success of a session with
shadow verdicts estimates what would have happened without Reflexio's learnings: the same as
the real outcome, except that a session that succeeded while its regular answers won is
counted a failure for the shadow, and a session that failed while its shadow answers won a
success — the per-turn verdicts are the only evidence of the counterfactual there is. Deltas
compare the window with the one of the same length just before it.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from reflexio.filters import InteractionFilter
from reflexio.models import (
    ContextTile,
    GetEvaluationOverviewRequest,
    GetEvaluationOverviewResponse,
    HeroBlock,
    HeroBucket,
    NumberWithDelta,
    PercentWithDelta,
    RecentResult,
    RuleAttributionRow,
    ScoreDistribution,
    ShadowWinRateTrend,
    ShadowWinRateTrendPoint,
    ShadowWinRateTrendWindowTotal,
    SourceSetRow,
)
from reflexio.records import EvaluationRecord
from reflexio.service.core import Core

__all__ = ["EARLY_SESSIONS", "evaluation_overview"]

#: Fewer judged sessions than this in the window and the headline is "early".
EARLY_SESSIONS = 20
_BIN_LABELS = ["0", "1", "2", "3", "4", "5+"]
_SCAN_LIMIT = 50_000


@dataclass(frozen=True, slots=True)
class _Session:
    row: EvaluationRecord
    success: bool
    shadow: bool | None  # the shadow's estimated success (None without shadow verdicts)

    @property
    def corrections(self) -> int:
        return int(self.row.result.get("number_of_correction_per_session") or 0)


def _sessions(
    core: Core, org_id: str, start: int, end: int, shadows: Sequence[EvaluationRecord]
) -> list[_Session]:
    rows = core.storage.list_evaluations(
        org_id, kind="session", created_after=start, created_before=end, limit=_SCAN_LIMIT
    )
    wins: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for s in shadows:
        wins[(s.user_id or "", s.session_id or "")][str(s.result.get("winner", "tie"))] += 1
    out = []
    for row in rows:
        success = bool(row.result.get("is_success"))
        tally = wins.get((row.user_id or "", row.session_id or ""))
        shadow = None
        if tally:
            shadow = success
            if success and tally["regular"] > tally["shadow"]:
                shadow = False
            elif not success and tally["shadow"] > tally["regular"]:
                shadow = True
        out.append(_Session(row, success, shadow))
    return out


def _rate(values: Sequence[bool]) -> float:
    return 100.0 * sum(values) / len(values) if values else 0.0


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _tiles(now: Sequence[_Session], before: Sequence[_Session]) -> ContextTile:
    def behaviour(ss: Sequence[_Session]) -> list[bool]:
        return [s.success for s in ss if s.row.result.get("failure_type") != "system_error"]

    def turns(ss: Sequence[_Session]) -> list[float]:
        return [float(s.row.result.get("user_turns") or 0) for s in ss]

    def escalated(ss: Sequence[_Session]) -> list[bool]:
        return [bool(s.row.result.get("is_escalated")) for s in ss]

    def pct(a: list[bool], b: list[bool]) -> PercentWithDelta:
        return PercentWithDelta(current=round(_rate(a), 2), delta_pp=round(_rate(a) - _rate(b), 2))

    def num(a: list[float], b: list[float]) -> NumberWithDelta:
        return NumberWithDelta(current=round(_mean(a), 3), delta=round(_mean(a) - _mean(b), 3))

    return ContextTile(
        success=pct([s.success for s in now], [s.success for s in before]),
        behavior_success=pct(behaviour(now), behaviour(before)),
        corrections=num([float(s.corrections) for s in now], [float(s.corrections) for s in before]),
        turns=num(turns(now), turns(before)),
        escalation=pct(escalated(now), escalated(before)),
    )


def _bucket_start(ts: float, bucket: str) -> int:
    day = datetime.fromtimestamp(ts, UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    start = day.timestamp() - (day.weekday() * 86_400 if bucket == "week" else 0)
    return int(start)


def _hero(sessions: Sequence[_Session], bucket: str, shadow_on: bool) -> HeroBlock:
    groups: dict[int, list[_Session]] = defaultdict(list)
    for s in sessions:
        groups[_bucket_start(s.row.created_at, bucket)].append(s)
    buckets = []
    for ts in sorted(groups):
        ss = groups[ts]
        shadowed = [bool(s.shadow) for s in ss if s.shadow is not None]
        buckets.append(
            HeroBucket(
                ts=ts,
                regular_rate=round(_rate([s.success for s in ss]) / 100, 4),
                shadow_rate=round(_rate(shadowed) / 100, 4) if shadow_on and shadowed else None,
                regular_n=len(ss),
                shadow_n=len(shadowed) if shadow_on else 0,
                avg_corrections=round(_mean([float(s.corrections) for s in ss]), 3),
                escalation_rate=round(_rate([bool(s.row.result.get("is_escalated")) for s in ss]) / 100, 4),
            )
        )
    counterfactual = [bool(s.shadow) for s in sessions if s.shadow is not None]
    regular = _rate([s.success for s in sessions])
    shadow = _rate(counterfactual) if shadow_on and counterfactual else None
    state = (
        "empty"
        if not sessions
        else "shadow_off"
        if shadow is None
        else "early"
        if len(sessions) < EARLY_SESSIONS
        else "full"
    )
    return HeroBlock(
        state=state,
        regular_success_rate_pp=round(regular, 2),
        shadow_success_rate_pp=None if shadow is None else round(shadow, 2),
        delta_pp=None if shadow is None else round(regular - shadow, 2),
        buckets=buckets,
    )


def _bins(sessions: Sequence[_Session]) -> list[int]:
    counts = [0] * len(_BIN_LABELS)
    for s in sessions:
        counts[min(s.corrections, len(_BIN_LABELS) - 1)] += 1
    return counts


def _attribution(
    core: Core, org_id: str, start: int, end: int, sessions: Sequence[_Session]
) -> list[RuleAttributionRow]:
    """Rules the agent cited (``citations``), with the sessions citing them that succeeded or failed."""
    success = {(s.row.user_id or "", s.row.session_id or ""): s.success for s in sessions}
    turns = core.storage.list_interactions(
        org_id, InteractionFilter(created_after=start, created_before=end), limit=_SCAN_LIMIT
    )
    cited: dict[tuple[str, str], set[tuple[str, str]]] = defaultdict(set)
    for turn in turns:
        for c in turn.citations:
            kind = "profile" if c.get("kind") == "profile" else "playbook"
            cited[(kind, str(c.get("real_id", "")))].add((turn.user_id, turn.session_id))
    rows = []
    for (kind, rule_id), where in cited.items():
        judged = [success[w] for w in where if w in success]
        ok = sum(judged)
        rows.append(
            RuleAttributionRow(
                rule_id=rule_id,
                kind=kind,
                successes_with=ok,
                failures_with=len(judged) - ok,
                net_sessions=ok - (len(judged) - ok),
                cited_session_ids=sorted({w[1] for w in where})[:100],
            )
        )
    return sorted(rows, key=lambda r: (-r.net_sessions, r.rule_id))[:50]


def _shadow_trend(shadows: Sequence[EvaluationRecord], version: str) -> ShadowWinRateTrend:
    daily: dict[str, Counter[str]] = defaultdict(Counter)
    for s in shadows:
        daily[datetime.fromtimestamp(s.created_at, UTC).strftime("%Y-%m-%d")][
            str(s.result.get("winner", "tie"))
        ] += 1
    points = [
        ShadowWinRateTrendPoint(
            date=d, n=sum(c.values()), wins=c["regular"], losses=c["shadow"], ties=c["tie"]
        )
        for d, c in sorted(daily.items())
    ]
    n, wins, losses = sum(p.n for p in points), sum(p.wins for p in points), sum(p.losses for p in points)
    total = ShadowWinRateTrendWindowTotal(
        n=n,
        wins=wins,
        losses=losses,
        ties=n - wins - losses,
        win_rate=wins / n if n else 0.0,
        net_win=(wins - losses) / n if n else 0.0,
    )
    return ShadowWinRateTrend(daily=points, window_total=total, judge_prompt_version=version)


def evaluation_overview(
    core: Core, org_id: str, req: GetEvaluationOverviewRequest
) -> GetEvaluationOverviewResponse:
    """Everything the evaluation page shows for [from_ts, to_ts]."""
    config = core.org_config(org_id)
    version = config.shadow_comparison_judge_prompt_version
    length = max(req.to_ts - req.from_ts, 1)
    shadows = (
        [
            s
            for s in core.storage.list_evaluations(
                org_id, kind="shadow", created_after=req.from_ts, created_before=req.to_ts, limit=_SCAN_LIMIT
            )
            if s.result.get("judge_prompt_version") == version
        ]
        if req.include_shadow
        else []
    )
    now_ = _sessions(core, org_id, req.from_ts, req.to_ts, shadows)
    before = _sessions(core, org_id, req.from_ts - length, req.from_ts - 1, [])
    recent = sorted(now_, key=lambda s: -s.row.created_at)[:10]
    sources = [
        SourceSetRow(
            label=group.label,
            sources=list(group.sources),
            sessions=len(picked := [s for s in now_ if s.row.result.get("source") in set(group.sources)]),
            success_rate=round(_rate([s.success for s in picked]), 2) if picked else None,
        )
        for group in req.source_sets
    ]
    return GetEvaluationOverviewResponse(
        hero=_hero(now_, req.bucket, req.include_shadow and config.shadow_mode_enabled),
        context_tiles=_tiles(now_, before),
        rule_attribution=_attribution(core, org_id, req.from_ts, req.to_ts, now_),
        score_distribution=ScoreDistribution(
            current_bins=_bins(now_), baseline_bins=_bins(before), labels=_BIN_LABELS
        ),
        shadow_win_rate_trend=_shadow_trend(shadows, version),
        recent_results=[
            RecentResult(
                session_id=s.row.session_id or "",
                user_id=s.row.user_id or "",
                agent_version=s.row.agent_version or "",
                is_success=s.success,
                failure_type=s.row.result.get("failure_type"),
                evaluation_name=s.row.result.get("evaluation_name"),
                number_of_correction_per_session=s.corrections,
                is_escalated=bool(s.row.result.get("is_escalated")),
                created_at=int(s.row.created_at),
            )
            for s in recent
        ],
        source_set_comparison=sources,
    )
