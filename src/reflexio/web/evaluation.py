"""Evaluation: does the loop make the agent better? Session success over time, and per learning.

Shown is what this server measures: session verdicts (success, corrections, escalations,
regular against shadow answers) and the verdicts on each injected learning (relevant, helped,
hurt). Where a measurement is not made — no verdicts yet, no shadow answers, no experiment
running — the screen says so and how to start it, rather than drawing an empty chart.
"""

from __future__ import annotations

from starlette.responses import Response
from starlette.routing import Route

from reflexio.models import GetAgentSuccessEvaluationResultsRequest
from reflexio.service import evaluations
from reflexio.service.overview import learning_impacts, session_trend
from reflexio.web.filters import Filters
from reflexio.web.routing import Ask, page

__all__ = ["ROUTES"]

DAYS = 30


def _evaluation(ask: Ask) -> Response:
    filters = Filters.parse(ask.query)
    data = session_trend(ask.core, ask.org_id, days=DAYS, agent_version=filters.agent_version or None)
    impacts, judged = learning_impacts(ask.core, ask.org_id, since=filters.created_after)
    recent = evaluations.agent_success_results(
        ask.core,
        ask.org_id,
        GetAgentSuccessEvaluationResultsRequest(agent_version=filters.agent_version or None, limit=20),
    ).agent_success_evaluation_results
    config = ask.core.org_config(ask.org_id)
    return ask.render(
        "evaluation.html",
        filters=filters,
        data=data,
        impacts=impacts[:100],
        judged=judged,
        recent=recent,
        shadow_on=config.shadow_mode_enabled,
        experiment=config.retrieval_experiment_config,
        history=config.retrieval_experiment_history,
        days=DAYS,
    )


ROUTES = [Route("/evaluation", page(_evaluation), name="evaluation")]
