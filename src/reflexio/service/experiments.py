"""Retrieval experiments (Reflexio's user-level holdout): start, stop, list, and results.

While an experiment runs, the users its hash puts in the holdout arm get no learnings from
search (``service.exposure``). Its results compare the arms over the sessions published while
it ran: success rates, corrections, turns and escalations per arm, and the lift (treatment
minus holdout success rate, in percentage points) with a 95 % interval clustered by user. A
session counts as evaluated when it has a verdict (whose success already ranks a reported
outcome above the judge). Experiments live in the org config, changed only through these
routes; ids are never reused.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from reflexio.errors import ConflictError, NotFoundError
from reflexio.filters import RequestFilter
from reflexio.learn.holdout import experiment_arm
from reflexio.learn.stats import clustered_difference
from reflexio.models import (
    RetrievalExperimentArmMetrics,
    RetrievalExperimentListResponse,
    RetrievalExperimentResultsResponse,
    StartRetrievalExperimentRequest,
    StopRetrievalExperimentRequest,
)
from reflexio.models.org_config import Config, RetrievalExperimentConfig, RetrievalExperimentRecord
from reflexio.records import EvaluationRecord, now
from reflexio.service.core import Core

__all__ = ["experiment_results", "list_experiments", "start_experiment", "stop_experiment"]

_SCAN_LIMIT = 100_000


def _listing(config: Config) -> RetrievalExperimentListResponse:
    active = config.retrieval_experiment_config
    history = sorted(config.retrieval_experiment_history, key=lambda e: e.started_at, reverse=True)
    current = next((e for e in history if active and e.experiment_id == active.experiment_id), None)
    return RetrievalExperimentListResponse(active_experiment=current, experiments=history)


def _save(core: Core, org_id: str, config: Config) -> None:
    core.storage.put_org_config(org_id, config.model_dump(mode="json"))
    core.forget_config(org_id)


def list_experiments(core: Core, org_id: str) -> RetrievalExperimentListResponse:
    """The active experiment and every experiment ever run, newest first."""
    return _listing(core.org_config(org_id))


def start_experiment(
    core: Core, org_id: str, req: StartRetrievalExperimentRequest
) -> RetrievalExperimentListResponse:
    """Start an experiment (409 while another runs, or for a reused id)."""
    config = core.org_config(org_id)
    if config.retrieval_experiment_config is not None:
        raise ConflictError("Stop the active retrieval experiment before starting another")
    if any(e.experiment_id == req.experiment_id for e in config.retrieval_experiment_history):
        raise ConflictError(
            "Retrieval experiment IDs cannot be reused", details={"experiment_id": req.experiment_id}
        )
    record = RetrievalExperimentRecord(
        experiment_id=req.experiment_id, holdout_percentage=req.holdout_percentage, started_at=int(now())
    )
    updated = config.model_copy(
        update={
            "retrieval_experiment_config": RetrievalExperimentConfig(
                experiment_id=req.experiment_id, holdout_percentage=req.holdout_percentage
            ),
            "retrieval_experiment_history": [*config.retrieval_experiment_history, record],
        }
    )
    _save(core, org_id, updated)
    return _listing(updated)


def stop_experiment(
    core: Core, org_id: str, req: StopRetrievalExperimentRequest
) -> RetrievalExperimentListResponse:
    """Stop the active experiment (409 when it is not the one running)."""
    config = core.org_config(org_id)
    active = config.retrieval_experiment_config
    if active is None or active.experiment_id != req.experiment_id:
        raise ConflictError("The requested retrieval experiment is not active")
    stopped = int(now())
    history = [
        e.model_copy(update={"ended_at": max(stopped, e.started_at)})
        if e.experiment_id == req.experiment_id
        else e
        for e in config.retrieval_experiment_history
    ]
    updated = config.model_copy(
        update={"retrieval_experiment_config": None, "retrieval_experiment_history": history}
    )
    _save(core, org_id, updated)
    return _listing(updated)


def _arm_metrics(
    arm: str, users: set[str], sessions: set[tuple[str, str]], verdicts: Sequence[EvaluationRecord]
) -> RetrievalExperimentArmMetrics:
    def mean(values: list[float]) -> float | None:
        return round(sum(values) / len(values), 4) if values else None

    return RetrievalExperimentArmMetrics(
        arm=arm,
        assigned_user_count=len(users),
        published_session_count=len(sessions),
        evaluated_user_count=len({v.user_id for v in verdicts}),
        evaluated_session_count=len(verdicts),
        success_rate=mean([float(bool(v.result.get("is_success"))) for v in verdicts]),
        average_corrections=mean(
            [float(v.result.get("number_of_correction_per_session") or 0) for v in verdicts]
        ),
        average_turns_to_resolution=mean(
            [float(v.result["user_turns"]) for v in verdicts if v.result.get("user_turns")]
        ),
        escalation_rate=mean([float(bool(v.result.get("is_escalated"))) for v in verdicts]),
    )


def experiment_results(core: Core, org_id: str, experiment_id: str) -> RetrievalExperimentResultsResponse:
    """Per-arm metrics and the success-rate lift with a 95 % interval clustered by user.

    Raises:
        NotFoundError: No experiment with this id was ever run.
    """
    config = core.org_config(org_id)
    record = next((e for e in config.retrieval_experiment_history if e.experiment_id == experiment_id), None)
    if record is None:
        raise NotFoundError("Retrieval experiment not found", details={"experiment_id": experiment_id})
    end = record.ended_at or int(now())
    requests = core.storage.list_requests(
        org_id, RequestFilter(created_after=record.started_at, created_before=end), limit=_SCAN_LIMIT
    )
    published: dict[str, set[tuple[str, str]]] = defaultdict(set)
    users: dict[str, set[str]] = defaultdict(set)
    arm_of: dict[str, str] = {}
    for r in requests:
        arm = arm_of.setdefault(
            r.user_id, experiment_arm(experiment_id, r.user_id, record.holdout_percentage)
        )
        published[arm].add((r.user_id, r.session_id))
        users[arm].add(r.user_id)
    verdicts: dict[str, list[EvaluationRecord]] = defaultdict(list)
    unattributed = 0
    for v in core.storage.list_evaluations(
        org_id, kind="session", created_after=record.started_at, limit=_SCAN_LIMIT
    ):
        key = (v.user_id or "", v.session_id or "")
        assigned = arm_of.get(key[0])
        if assigned is None or key not in published[assigned]:
            unattributed += 1
            continue
        verdicts[assigned].append(v)
    treatment = _arm_metrics("treatment", users["treatment"], published["treatment"], verdicts["treatment"])
    holdout = _arm_metrics("holdout", users["holdout"], published["holdout"], verdicts["holdout"])
    out = RetrievalExperimentResultsResponse(
        experiment=record,
        treatment=treatment,
        holdout=holdout,
        unattributed_evaluated_session_count=unattributed,
    )
    total_published = len(published["treatment"]) + len(published["holdout"])
    evaluated = len(verdicts["treatment"]) + len(verdicts["holdout"])
    out.evaluated_session_coverage = round(evaluated / total_published, 4) if total_published else None
    if treatment.success_rate is not None and holdout.success_rate is not None:
        rows = verdicts["treatment"] + verdicts["holdout"]
        lift = clustered_difference(
            [float(bool(v.result.get("is_success"))) for v in rows],
            [arm_of[v.user_id or ""] == "treatment" for v in rows],
            [v.user_id or "" for v in rows],
        )
        out.success_rate_lift_percentage_points = round(100 * lift.value, 4)
        out.relative_success_lift = (
            round(lift.value / holdout.success_rate, 4) if holdout.success_rate else None
        )
        if lift.low is not None and lift.high is not None:
            out.confidence_interval_95_percentage_points = (
                round(100 * lift.low, 4),
                round(100 * lift.high, 4),
            )
    return out
