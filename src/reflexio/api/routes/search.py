"""``POST /api/search``: the few learnings that matter for a query, across kinds, with scores."""

from __future__ import annotations

from reflexio.api.auth import CallerDep, CoreDep
from reflexio.api.routes import api_router
from reflexio.models import UnifiedSearchRequest, UnifiedSearchViewResponse
from reflexio.service import retrieve

__all__ = ["router"]

router = api_router("search")


@router.post("/search")
def search(body: UnifiedSearchRequest, core: CoreDep, caller: CallerDep) -> UnifiedSearchViewResponse:
    """Profiles, user playbooks and agent playbooks ranked for a query (``degraded`` always set)."""
    return retrieve.search(core, caller.org_id, body)
