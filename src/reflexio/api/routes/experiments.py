"""Retrieval experiments (Reflexio 0.2.32): list, start, stop, results."""

from __future__ import annotations

from reflexio.api.auth import CallerDep, CoreDep
from reflexio.api.routes import api_router, documented
from reflexio.models import (
    RetrievalExperimentListResponse,
    RetrievalExperimentResultsResponse,
    StartRetrievalExperimentRequest,
    StopRetrievalExperimentRequest,
)
from reflexio.service import experiments

__all__ = ["router"]

router = api_router("experiments")


@router.get("/retrieval_experiments")
def list_retrieval_experiments(core: CoreDep, caller: CallerDep) -> RetrievalExperimentListResponse:
    """The active experiment and every past one."""
    return experiments.list_experiments(core, caller.org_id)


@router.post("/retrieval_experiments", responses=documented(409))
def start_retrieval_experiment(
    body: StartRetrievalExperimentRequest, core: CoreDep, caller: CallerDep
) -> RetrievalExperimentListResponse:
    """Start a user-level holdout (409 while another runs or for a reused id)."""
    return experiments.start_experiment(core, caller.org_id, body)


@router.post("/retrieval_experiments/stop", responses=documented(409))
def stop_retrieval_experiment(
    body: StopRetrievalExperimentRequest, core: CoreDep, caller: CallerDep
) -> RetrievalExperimentListResponse:
    """Stop the active experiment (409 when it is not the one running)."""
    return experiments.stop_experiment(core, caller.org_id, body)


@router.get("/retrieval_experiments/{experiment_id:path}/results", responses=documented(404))
def retrieval_experiment_results(
    experiment_id: str, core: CoreDep, caller: CallerDep
) -> RetrievalExperimentResultsResponse:
    """Per-arm metrics and the lift with a 95 % interval clustered by user (404 unknown id).

    The id is a path, not a segment: an id with "/" (sent as "%2F", which the server decodes
    before routing) still reaches its results.
    """
    return experiments.experiment_results(core, caller.org_id, experiment_id)
