"""Regenerate learnings by hand and move them between versions; poll a rerun's progress.

Reruns answer at once (the work is a durable job); ``get_operation_status`` reports on it.
Upgrade and downgrade are single transactions. Refusals are real status codes (409 when a
rerun already runs or nothing is pending/archived to move), never a 200 with ``success: false``.
"""

from __future__ import annotations

from typing import Literal

from reflexio.api.auth import CallerDep, CoreDep
from reflexio.api.routes import api_router, documented
from reflexio.models import (
    DowngradeProfilesRequest,
    DowngradeProfilesResponse,
    DowngradeUserPlaybooksRequest,
    DowngradeUserPlaybooksResponse,
    GetAgentSuccessEvaluationResultsRequest,
    GetEvaluationResultsViewResponse,
    GetOperationStatusResponse,
    GetRetrievedLearningEvaluationResultsRequest,
    GetRetrievedLearningEvaluationResultsResponse,
    ManualPlaybookGenerationRequest,
    ManualPlaybookGenerationResponse,
    ManualProfileGenerationRequest,
    ManualProfileGenerationResponse,
    RerunPlaybookGenerationRequest,
    RerunPlaybookGenerationResponse,
    RerunProfileGenerationRequest,
    RerunProfileGenerationResponse,
    UpgradeProfilesRequest,
    UpgradeProfilesResponse,
    UpgradeUserPlaybooksRequest,
    UpgradeUserPlaybooksResponse,
)
from reflexio.service import evaluations, generation, versions

__all__ = ["router"]

router = api_router("generation")


@router.post("/rerun_profile_generation", responses=documented(409))
def rerun_profile_generation(
    body: RerunProfileGenerationRequest, core: CoreDep, caller: CallerDep
) -> RerunProfileGenerationResponse:
    """Re-learn profiles from all matching interactions as pending (409 while one runs)."""
    return generation.rerun_profile_generation(core, caller.org_id, body)


@router.post("/manual_profile_generation", responses=documented(409))
def manual_profile_generation(
    body: ManualProfileGenerationRequest, core: CoreDep, caller: CallerDep
) -> ManualProfileGenerationResponse:
    """Schedule extraction now for the matching users (current output)."""
    return generation.manual_profile_generation(core, caller.org_id, body)


@router.post("/upgrade_all_profiles", responses=documented(409))
def upgrade_all_profiles(
    body: UpgradeProfilesRequest, core: CoreDep, caller: CallerDep
) -> UpgradeProfilesResponse:
    """Promote pending profiles to current (409 when none is pending)."""
    return versions.upgrade_profiles(core, caller.org_id, body, actor=caller.actor)


@router.post("/downgrade_all_profiles", responses=documented(409))
def downgrade_all_profiles(
    body: DowngradeProfilesRequest, core: CoreDep, caller: CallerDep
) -> DowngradeProfilesResponse:
    """Swap current and archived profiles (409 when none is archived)."""
    return versions.downgrade_profiles(core, caller.org_id, body, actor=caller.actor)


@router.post("/rerun_playbook_generation", responses=documented(409))
def rerun_playbook_generation(
    body: RerunPlaybookGenerationRequest, core: CoreDep, caller: CallerDep
) -> RerunPlaybookGenerationResponse:
    """Re-learn user playbooks of an agent version as pending (409 while one runs)."""
    return generation.rerun_playbook_generation(core, caller.org_id, body)


@router.post("/manual_playbook_generation", responses=documented(409))
def manual_playbook_generation(
    body: ManualPlaybookGenerationRequest, core: CoreDep, caller: CallerDep
) -> ManualPlaybookGenerationResponse:
    """Schedule extraction now for the users of an agent version (current output)."""
    return generation.manual_playbook_generation(core, caller.org_id, body)


@router.post("/upgrade_all_user_playbooks", responses=documented(409))
def upgrade_all_user_playbooks(
    body: UpgradeUserPlaybooksRequest, core: CoreDep, caller: CallerDep
) -> UpgradeUserPlaybooksResponse:
    """Promote pending user playbooks to current (409 when none is pending)."""
    return versions.upgrade_user_playbooks(core, caller.org_id, body, actor=caller.actor)


@router.post("/downgrade_all_user_playbooks", responses=documented(409))
def downgrade_all_user_playbooks(
    body: DowngradeUserPlaybooksRequest, core: CoreDep, caller: CallerDep
) -> DowngradeUserPlaybooksResponse:
    """Swap current and archived user playbooks (409 when none is archived)."""
    return versions.downgrade_user_playbooks(core, caller.org_id, body, actor=caller.actor)


@router.get("/get_operation_status")
def get_operation_status(
    core: CoreDep,
    caller: CallerDep,
    service_name: Literal["profile_generation", "playbook_generation"] = "profile_generation",
) -> GetOperationStatusResponse:
    """The latest rerun of ``profile_generation`` or ``playbook_generation``, with its progress."""
    return generation.get_operation_status(core, caller.org_id, service_name)


@router.post("/get_agent_success_evaluation_results")
def get_agent_success_evaluation_results(
    body: GetAgentSuccessEvaluationResultsRequest, core: CoreDep, caller: CallerDep
) -> GetEvaluationResultsViewResponse:
    """Session-success verdicts of the caller's org (judged when a session goes idle)."""
    return evaluations.agent_success_results(core, caller.org_id, body)


@router.post("/get_retrieved_learning_evaluation_results")
def get_retrieved_learning_evaluation_results(
    body: GetRetrievedLearningEvaluationResultsRequest, core: CoreDep, caller: CallerDep
) -> GetRetrievedLearningEvaluationResultsResponse:
    """Verdicts on the learnings injected into the caller's sessions."""
    return evaluations.retrieved_learning_results(core, caller.org_id, body)
