"""``POST /api/get_learning_provenance``: where a learning came from, down to its interactions."""

from __future__ import annotations

from reflexio.api.auth import CallerDep, CoreDep
from reflexio.api.routes import api_router, documented
from reflexio.models import GetLearningProvenanceRequest, GetLearningProvenanceResponse
from reflexio.service import provenance

__all__ = ["router"]

router = api_router("provenance")


@router.post("/get_learning_provenance", responses=documented(404))
def get_learning_provenance(
    body: GetLearningProvenanceRequest, core: CoreDep, caller: CallerDep
) -> GetLearningProvenanceResponse:
    """The request and interactions a learning was learned from (404 for an unknown id)."""
    return provenance.get_learning_provenance(core, caller.org_id, body)
