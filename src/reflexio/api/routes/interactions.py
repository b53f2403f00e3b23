"""Publish, learning status, and reading, searching and deleting the log.

``POST /api/publish_interaction?wait_for_response=true`` stores the request, then waits (up
to the app's deadline) for learning from it to settle and reports how far it got; without the
flag it answers as soon as the request and its jobs are committed.
"""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from reflexio.api.auth import CallerDep, CoreDep
from reflexio.api.routes import IdParam, PageParam, api_router, documented
from reflexio.models import (
    BulkDeleteResponse,
    DeleteRequestRequest,
    DeleteRequestResponse,
    DeleteRequestsByIdsRequest,
    DeleteSessionRequest,
    DeleteSessionResponse,
    DeleteUserInteractionRequest,
    DeleteUserInteractionResponse,
    FinalizeSessionRequest,
    FinalizeSessionResponse,
    GetInteractionsRequest,
    GetInteractionsViewResponse,
    GetRequestsRequest,
    GetRequestsViewResponse,
    LearningStatusResponse,
    PublishUserInteractionRequest,
    PublishUserInteractionResponse,
    SearchInteractionRequest,
    SearchInteractionsViewResponse,
)
from reflexio.service import interactions, learning_access, publish

__all__ = ["router"]

router = api_router("interactions")


@router.post("/publish_interaction", responses=documented(409))
async def publish_interaction(
    body: PublishUserInteractionRequest,
    request: Request,
    core: CoreDep,
    caller: CallerDep,
    wait_for_response: bool = False,
) -> PublishUserInteractionResponse:
    """Store a batch of turns (idempotent on ``request_id``) and schedule learning from it.

    A caller who waits gets every turn learned from now (``flush``), not only full strides.
    ``async`` with explicit thread hops for the blocking work, the hottest write route.
    """
    out = await run_in_threadpool(publish.publish, core, caller.org_id, body, flush=wait_for_response)
    if not wait_for_response or out.request_id is None or out.learning_status == "done":
        return out
    deadline = float(request.app.state.publish_wait_seconds)
    settled = await run_in_threadpool(
        publish.wait_for_learning, core, caller.org_id, out.request_id, deadline
    )
    done = settled.status == "done"
    reason = settled.reason or f"learning is {settled.status} after waiting {deadline:g}s"
    profiles, playbooks = await run_in_threadpool(
        learning_access.learned_from, core, caller.org_id, out.request_id
    )
    return out.model_copy(
        update={
            "learning_status": "done" if done else "deferred",
            "learning_reason": None if done else reason,
            "profiles_added": profiles,
            "playbooks_added": playbooks,
        }
    )


@router.get("/learning_status", responses=documented(404))
def learning_status(request_id: IdParam, core: CoreDep, caller: CallerDep) -> LearningStatusResponse:
    """How far learning from one published request has got (404 for an unknown id)."""
    return publish.learning_status(core, caller.org_id, request_id)


@router.post("/finalize_session")
def finalize_session(
    body: FinalizeSessionRequest, core: CoreDep, caller: CallerDep
) -> FinalizeSessionResponse:
    """Hint that a session ended, so it is judged now rather than after the idle wait."""
    return publish.finalize_session(core, caller.org_id, body)


@router.post("/get_interactions")
def get_interactions(
    body: GetInteractionsRequest, core: CoreDep, caller: CallerDep
) -> GetInteractionsViewResponse:
    """One user's most recent turns."""
    return interactions.get_interactions(core, caller.org_id, body)


@router.get("/get_all_interactions")
def get_all_interactions(
    core: CoreDep, caller: CallerDep, limit: PageParam = 100
) -> GetInteractionsViewResponse:
    """The org's most recent turns across users."""
    return interactions.get_all_interactions(core, caller.org_id, limit)


@router.post("/get_requests")
def get_requests(body: GetRequestsRequest, core: CoreDep, caller: CallerDep) -> GetRequestsViewResponse:
    """A page of sessions with their requests and turns."""
    return interactions.get_requests(core, caller.org_id, body)


@router.post("/search_interactions")
def search_interactions(
    body: SearchInteractionRequest, core: CoreDep, caller: CallerDep
) -> SearchInteractionsViewResponse:
    """One user's turns matching a text query."""
    return interactions.search_interactions(core, caller.org_id, body)


@router.delete("/delete_interaction", responses=documented(404))
def delete_interaction(
    body: DeleteUserInteractionRequest, core: CoreDep, caller: CallerDep
) -> DeleteUserInteractionResponse:
    """Delete one turn (404 when it does not exist)."""
    return interactions.delete_interaction(core, caller.org_id, body)


@router.delete("/delete_request", responses=documented(404))
def delete_request(body: DeleteRequestRequest, core: CoreDep, caller: CallerDep) -> DeleteRequestResponse:
    """Delete a request and its turns (404 when it does not exist)."""
    return interactions.delete_request(core, caller.org_id, body)


@router.delete("/delete_session", responses=documented(404))
def delete_session(body: DeleteSessionRequest, core: CoreDep, caller: CallerDep) -> DeleteSessionResponse:
    """Delete every request of a session (404 when there is none)."""
    return interactions.delete_session(core, caller.org_id, body)


@router.delete("/delete_requests_by_ids")
def delete_requests_by_ids(
    body: DeleteRequestsByIdsRequest, core: CoreDep, caller: CallerDep
) -> BulkDeleteResponse:
    """Delete the listed requests that exist."""
    return interactions.delete_requests_by_ids(core, caller.org_id, body)


@router.delete("/delete_all_interactions")
def delete_all_interactions(core: CoreDep, caller: CallerDep) -> BulkDeleteResponse:
    """Delete the org's whole log."""
    return interactions.delete_all_interactions(core, caller.org_id)
