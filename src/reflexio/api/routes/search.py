"""``POST /api/search``: the few learnings that matter for a query, across kinds, with scores."""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool

from reflexio.api.auth import CallerDep, CoreDep
from reflexio.api.routes import api_router
from reflexio.models import UnifiedSearchRequest, UnifiedSearchViewResponse
from reflexio.service import search as retrieval

__all__ = ["router"]

router = api_router("search")


@router.post("/search")
async def search(body: UnifiedSearchRequest, core: CoreDep, caller: CallerDep) -> UnifiedSearchViewResponse:
    """Profiles, user playbooks and agent playbooks ranked for a query (``degraded`` always set).

    ``async`` with one explicit thread hop: a sync route also validates and serialises in the
    threadpool, several hops per request on the hottest route.
    """
    return await run_in_threadpool(retrieval.search, core, caller.org_id, body)
