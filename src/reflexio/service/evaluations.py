"""Reading judgements in Reflexio's shapes, grading a session on demand, and impact reads.

Sessions are judged by the idle-timer job (``service.judgement`` via ``service.workers``);
their verdicts are ``session``, ``learning`` and ``shadow`` evaluations, served here.
"""

from __future__ import annotations

import logging

from pydantic import ValidationError as PydanticError

from reflexio.errors import ValidationError
from reflexio.filters import InteractionFilter, RequestFilter
from reflexio.models import (
    EvaluationResultView,
    GetAgentSuccessEvaluationResultsRequest,
    GetEvaluationResultsViewResponse,
    GetLearningImpactRequest,
    GetLearningImpactResponse,
    GetPlaybookApplicationStatsRequest,
    GetPlaybookApplicationStatsResponse,
    GetRecentShadowComparisonsResponse,
    GetRetrievedLearningEvaluationResultsRequest,
    GetRetrievedLearningEvaluationResultsResponse,
    GradeOnDemandRequest,
    GradeOnDemandResponse,
    PlaybookApplicationStat,
    ShadowComparisonOutput,
    ShadowComparisonVerdict,
)
from reflexio.records import EvaluationRecord, Learning, now
from reflexio.service import impact, judgement, reflection, views
from reflexio.service.core import Core

__all__ = [
    "agent_success_results",
    "application_stats",
    "grade_on_demand",
    "learning_impact",
    "recent_shadow_comparisons",
    "retrieved_learning_results",
]

log = logging.getLogger(__name__)


def agent_success_results(
    core: Core, org_id: str, req: GetAgentSuccessEvaluationResultsRequest
) -> GetEvaluationResultsViewResponse:
    """Session-success verdicts, newest first, optionally for one agent version and time window."""
    rows = core.storage.list_evaluations(
        org_id,
        kind="session",
        agent_version=req.agent_version or None,
        created_after=views.epoch(req.start_time),
        created_before=views.epoch(req.end_time),
        limit=req.limit or 100,
    )
    results: list[EvaluationResultView] = []
    for row in rows:
        try:
            results.append(views.session_evaluation(row))
        except PydanticError as exc:  # a verdict stored by an older judge: skip, don't fail the read
            log.warning("skipping unreadable session evaluation %s: %s", row.id, exc)
    return GetEvaluationResultsViewResponse(success=True, agent_success_evaluation_results=results)


def retrieved_learning_results(
    core: Core, org_id: str, req: GetRetrievedLearningEvaluationResultsRequest
) -> GetRetrievedLearningEvaluationResultsResponse:
    """Verdicts on learnings that were injected into sessions, newest first."""
    rows = core.storage.list_evaluations(
        org_id,
        kind="learning",
        user_id=req.user_id or None,
        session_id=req.session_id or None,
        created_after=views.epoch(req.start_time),
        created_before=views.epoch(req.end_time),
        limit=req.limit,
    )
    return GetRetrievedLearningEvaluationResultsResponse(
        success=True, results=[views.learning_evaluation(row) for row in rows]
    )


# -- shadow comparisons, grading on demand, application stats, impact ------------------------------


def recent_shadow_comparisons(core: Core, org_id: str, limit: int) -> GetRecentShadowComparisonsResponse:
    """Per-turn shadow verdicts under the org's pinned judge prompt version, newest first."""
    version = core.org_config(org_id).shadow_comparison_judge_prompt_version
    rows = core.storage.list_evaluations(org_id, kind="shadow", limit=max(limit * 5, 100))
    out = []
    for row in rows:
        result = row.result
        if result.get("judge_prompt_version") != version:
            continue
        out.append(
            ShadowComparisonVerdict(
                verdict_id=row.id,
                interaction_id=str(row.interaction_id),
                session_id=row.session_id or "",
                agent_version=row.agent_version or "",
                reflexio_is_request_1=bool(result.get("reflexio_is_request_1")),
                output=ShadowComparisonOutput.model_validate(
                    result.get("output") or {"better_request": "tie", "is_significantly_better": False}
                ),
                judge_prompt_version=version,
                created_at=int(row.created_at),
                winner=result.get("winner", "tie"),
            )
        )
        if len(out) >= limit:
            break
    return GetRecentShadowComparisonsResponse(verdicts=out)


#: A session graded less than this long ago, with no turn since, is answered from the cache.
GRADE_CACHE_SECONDS = 24 * 3600


def grade_on_demand(core: Core, org_id: str, req: GradeOnDemandRequest) -> GradeOnDemandResponse:
    """Judge a session now, with the org's LLM when it has one; its verdicts replace earlier ones.

    A session judged in the last 24 hours that received no turn since is answered with that
    verdict (``cached``); a session nothing was published in is skipped (``NO_REQUESTS``).
    """
    found = core.storage.list_requests(
        org_id, RequestFilter(session_id=req.session_id, agent_version=req.agent_version), limit=1
    )
    if not found:
        return GradeOnDemandResponse(session_id=req.session_id, skipped_reason="NO_REQUESTS")
    user_id = found[0].user_id
    cached = _cached_grade(core, org_id, user_id, req.session_id)
    if cached is not None:
        return GradeOnDemandResponse(session_id=req.session_id, result_id=cached.id, cached=True)
    judged = judgement.judge(core, org_id, user_id, req.session_id, force_llm=True)
    if judged.session is None:
        return GradeOnDemandResponse(session_id=req.session_id, skipped_reason="EVALUATION_DISABLED")
    with core.storage.transaction() as tx:
        stored = judgement.write(tx, judged)
        reflection.reflect(tx, core, judged, core.org_config(org_id))
    return GradeOnDemandResponse(
        session_id=req.session_id,
        result_id=stored[0].id,
        retrieved_learning_status=judged.retrieved_learning_status,
    )


def _cached_grade(core: Core, org_id: str, user_id: str, session_id: str) -> EvaluationRecord | None:
    rows = core.storage.list_evaluations(
        org_id, kind="session", user_id=user_id, session_id=session_id, limit=1
    )
    if not rows or now() - rows[0].created_at > GRADE_CACHE_SECONDS:
        return None
    newest = core.storage.list_interactions(
        org_id, InteractionFilter(user_id=user_id, session_id=session_id), limit=1, newest_first=True
    )
    # By id, not time: turns keep whole seconds, so one published in the verdict's own second
    # would look older than it. A verdict from before the judge recorded its last turn is
    # judged again.
    judged_up_to = rows[0].result.get("last_interaction_id")
    if not isinstance(judged_up_to, int) or (newest and newest[0].id > judged_up_to):
        return None
    return rows[0]


def _title(row: Learning) -> str:
    text = f"{row.trigger}: {row.content}" if row.trigger else row.content
    return text if len(text) <= 120 else text[:117] + "..."


def application_stats(
    core: Core, org_id: str, req: GetPlaybookApplicationStatsRequest
) -> GetPlaybookApplicationStatsResponse:
    """Per learning cited (Reflexio's count) or injected in the window, with its impact."""
    since = int(now()) - req.days_back * 86_400
    turns = core.storage.list_interactions(org_id, InteractionFilter(created_after=since), limit=50_000)
    cited: dict[tuple[str, str], list[tuple[int, int]]] = {}
    injected: set[tuple[str, str]] = set()
    for turn in turns:
        for c in turn.citations:
            kind = "user_playbook" if c.get("kind") == "playbook" else str(c.get("kind", ""))
            cited.setdefault((kind, str(c.get("real_id", ""))), []).append((turn.created_at, turn.id))
        for r in turn.retrieved_learnings:
            injected.add((str(r.get("kind", "")), str(r.get("learning_id", ""))))
    refs = sorted(set(cited) | injected)
    rows = judgement.learnings_of(core.storage, org_id, refs)
    scores = impact.impacts(core.storage, org_id, refs)
    stats = []
    for ref in refs:
        uses = cited.get(ref, [])
        last = max(uses) if uses else None
        stats.append(
            PlaybookApplicationStat(
                real_id=ref[1],
                kind=ref[0],
                title=_title(rows[ref]) if ref in rows else "",
                applied_count=len(uses),
                last_applied_at=last[0] if last else None,
                last_interaction_id=last[1] if last else None,
                impact=scores.get(ref),
            )
        )
    stats.sort(key=lambda s: (-s.applied_count, -(s.impact.sessions_served if s.impact else 0)))
    return GetPlaybookApplicationStatsResponse(success=True, stats=stats)


def learning_impact(core: Core, org_id: str, req: GetLearningImpactRequest) -> GetLearningImpactResponse:
    """Impact of the given learnings, or of the org's most exposed ones."""
    if req.learning_ids:
        if req.kind is None:
            raise ValidationError("kind is required with learning_ids", details={"fields": ["kind"]})
        refs: list[tuple[str, str]] = [(req.kind, i) for i in req.learning_ids]
    else:
        refs = [(k, i) for k, i, _ in core.storage.most_exposed(org_id, kind=req.kind, limit=req.limit)]
    scores = impact.impacts(core.storage, org_id, refs)
    return GetLearningImpactResponse(success=True, impacts=[scores[r] for r in refs if r in scores])
