"""A learning's impact in production, from the store: exposures, outcomes, verdicts.

Three kinds of rows meet here: the serve-or-withhold decisions search recorded for the
learning (``session_exposures``), the verdicts on the sessions involved (whose success already
gives a reported outcome precedence over the judge), and the learning's own impact verdicts
in the sessions it was injected into. ``learn.reflect.summarize`` turns them into counts and
intervals; this module only gathers them, in a handful of queries whatever the number of
learnings, and shapes the result for the wire.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import TypeVar

from reflexio.learn.reflect import ExposureRow, Impact, summarize
from reflexio.learn.stats import Estimate
from reflexio.models import (
    AgentPlaybookView,
    EffectInterval,
    LearningImpactView,
    ProfileView,
    UserPlaybookView,
)
from reflexio.records import Learning
from reflexio.storage import Storage

__all__ = ["Ref", "impact_rows", "impacts", "ref_of", "view", "with_impacts"]

V = TypeVar("V", ProfileView, UserPlaybookView, AgentPlaybookView)

#: A learning as the wire names it: (kind, wire id).
Ref = tuple[str, str]

_WORST = {"negative": 3, "positive": 2, "neutral": 1}


def impact_rows(
    storage: Storage, org_id: str, refs: Iterable[Ref], *, since: Mapping[Ref, float] | None = None
) -> dict[Ref, tuple[list[ExposureRow], float | None]]:
    """Per learning: one row per session it was eligible for, and when it was last served.

    Args:
        since: Per learning, ignore sessions decided before this time (evidence a reviewer
            already overruled by reverting an action).
    """
    by_kind: dict[str, list[str]] = defaultdict(list)
    for kind, learning_id in dict.fromkeys(refs):
        by_kind[kind].append(learning_id)
    decided: dict[Ref, dict[tuple[str, str], tuple[bool, float]]] = defaultdict(dict)
    impacts_in: dict[Ref, dict[tuple[str, str], str | None]] = defaultdict(dict)
    sessions: set[str] = set()
    for kind, ids in by_kind.items():
        for e in storage.learning_exposures(org_id, kind, ids):
            decided[(kind, e.learning_id)][(e.user_id or "", e.session_id)] = (not e.withheld, e.served_at)
            sessions.add(e.session_id)
        for v in storage.find_evaluations(org_id, kind="learning", learning_kind=kind, learning_ids=ids):
            key = (v.user_id or "", v.session_id or "")
            ref = (kind, v.learning_id or "")
            new = v.result.get("impact")
            old = impacts_in[ref].get(key)
            if old is None or _WORST.get(str(new), 0) > _WORST.get(str(old), 0):
                impacts_in[ref][key] = new
            decided[ref].setdefault(key, (True, v.created_at))
            sessions.add(key[1])
    success = _session_success(storage, org_id, sessions)
    out: dict[Ref, tuple[list[ExposureRow], float | None]] = {}
    for kind, ids in by_kind.items():
        for learning_id in ids:
            ref = (kind, learning_id)
            cutoff = (since or {}).get(ref, 0.0)
            rows = [
                ExposureRow(
                    session, user, served, success.get((user, session)), impacts_in[ref].get((user, session))
                )
                for (user, session), (served, at) in decided.get(ref, {}).items()
                if at >= cutoff
            ]
            served_at = [at for served, at in decided.get(ref, {}).values() if served]
            out[ref] = (rows, max(served_at) if served_at else None)
    return out


def _session_success(storage: Storage, org_id: str, sessions: set[str]) -> dict[tuple[str, str], bool]:
    """Each judged session's success (the verdict already ranks a reported outcome first)."""
    if not sessions:
        return {}
    found = storage.find_evaluations(org_id, kind="session", session_ids=sorted(sessions))
    out: dict[tuple[str, str], bool] = {}
    for row in sorted(found, key=lambda r: r.created_at):
        out[(row.user_id or "", row.session_id or "")] = bool(row.result.get("is_success"))
    return out


def impacts(storage: Storage, org_id: str, refs: Sequence[Ref]) -> dict[Ref, LearningImpactView]:
    """The wire impact of each learning."""
    return {
        ref: view(ref, summarize(rows), last)
        for ref, (rows, last) in impact_rows(storage, org_id, refs).items()
    }


def _interval(
    value: float | None, low: float | None, high: float | None, n: int, users: int
) -> EffectInterval | None:
    if value is None:
        return None
    return EffectInterval(value=round(value, 6), low=_round(low), high=_round(high), sessions=n, users=users)


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 6)


def view(ref: Ref, impact: Impact, last_served_at: float | None = None) -> LearningImpactView:
    """A summary as the wire shows it."""
    judged = impact.helped + impact.hurt
    help_rate = None
    if impact.help_rate is not None and judged:
        help_rate = _interval(impact.helped / judged, *impact.help_rate, judged, impact.users_served)
    lift: EffectInterval | None = None
    if isinstance(impact.lift, Estimate):
        lift = _interval(
            impact.lift.value, impact.lift.low, impact.lift.high, impact.lift.n, impact.lift.clusters
        )
    return LearningImpactView(
        kind=ref[0],
        learning_id=ref[1],
        sessions_served=impact.served_sessions,
        sessions_withheld=impact.withheld_sessions,
        helped=impact.helped,
        hurt=impact.hurt,
        neutral=impact.neutral,
        unjudged=impact.unjudged,
        users_served=impact.users_served,
        success_rate_served=impact.success_rate_served,
        success_rate_withheld=impact.success_rate_withheld,
        help_rate=help_rate,
        lift=lift,
        last_served_at=int(last_served_at) if last_served_at else None,
    )


def ref_of(row: Learning) -> Ref:
    """The wire ref of a stored learning."""
    return (row.kind.value, row.wire_id)


def with_impacts(storage: Storage, org_id: str, items: list[V]) -> list[V]:
    """Learning views with their ``impact`` filled in (one batch of queries for the list)."""
    refs = [_view_ref(item) for item in items]
    if not refs:
        return items
    scores = impacts(storage, org_id, refs)
    return [
        item.model_copy(update={"impact": scores.get(ref)}) for item, ref in zip(items, refs, strict=True)
    ]


def _view_ref(item: ProfileView | UserPlaybookView | AgentPlaybookView) -> Ref:
    if isinstance(item, ProfileView):
        return ("profile", item.profile_id)
    if isinstance(item, UserPlaybookView):
        return ("user_playbook", str(item.user_playbook_id))
    return ("agent_playbook", str(item.agent_playbook_id))
