"""Read, search and delete the log: requests (publish calls) and their interactions (turns).

Filters go to storage, so a user with a long history costs one indexed query, not a scan in
Python. ``get_requests`` pages by session, as Reflexio's response shape implies; ``has_more``
is exact because one session more than asked for is looked up. Deleting a request removes its
turns with it, and every delete reports what it really removed (an unknown id is a 404).
"""

from __future__ import annotations

from dataclasses import replace

from reflexio.errors import NotFoundError
from reflexio.filters import InteractionFilter, RequestFilter
from reflexio.models import (
    BulkDeleteResponse,
    DeleteRequestRequest,
    DeleteRequestResponse,
    DeleteRequestsByIdsRequest,
    DeleteSessionRequest,
    DeleteSessionResponse,
    DeleteUserInteractionRequest,
    DeleteUserInteractionResponse,
    GetInteractionsRequest,
    GetInteractionsViewResponse,
    GetRequestsRequest,
    GetRequestsViewResponse,
    RequestDataView,
    SearchInteractionRequest,
    SearchInteractionsViewResponse,
    SessionView,
)
from reflexio.records import InteractionRecord, RequestRecord
from reflexio.service import views
from reflexio.service.core import Core

__all__ = [
    "delete_all_interactions",
    "delete_interaction",
    "delete_request",
    "delete_requests_by_ids",
    "delete_session",
    "get_all_interactions",
    "get_interactions",
    "get_requests",
    "search_interactions",
]

#: Requests read per storage call while looking for the sessions of a page.
_SCAN_BATCH = 500
#: Most requests returned for one session of a page.
_SESSION_REQUESTS = 10_000
#: Hits returned by ``search_interactions`` when the caller gives no ``top_k``.
DEFAULT_SEARCH_TOP_K = 10


def get_interactions(core: Core, org_id: str, req: GetInteractionsRequest) -> GetInteractionsViewResponse:
    """One user's most recent turns (newest first), optionally within a time window."""
    where = InteractionFilter(
        user_id=req.user_id,
        created_after=views.epoch(req.start_time),
        created_before=views.epoch(req.end_time),
    )
    rows = core.storage.list_interactions(org_id, where, limit=req.top_k or 30, newest_first=True)
    return GetInteractionsViewResponse(success=True, interactions=[views.interaction_view(r) for r in rows])


def get_all_interactions(core: Core, org_id: str, limit: int = 100) -> GetInteractionsViewResponse:
    """The org's most recent turns across users, newest first."""
    rows = core.storage.list_interactions(org_id, InteractionFilter(), limit=limit, newest_first=True)
    return GetInteractionsViewResponse(success=True, interactions=[views.interaction_view(r) for r in rows])


def search_interactions(
    core: Core, org_id: str, req: SearchInteractionRequest
) -> SearchInteractionsViewResponse:
    """One user's turns matching a full-text query, best first; without a query, the newest.

    ``most_recent_k`` limits the search to the user's newest turns. Interactions are not
    embedded, so ``search_mode`` and ``threshold`` (whose scale is a similarity) do not apply.
    """
    where = InteractionFilter(
        user_id=req.user_id,
        request_ids=(req.request_id,) if req.request_id else None,
        created_after=views.epoch(req.start_time),
        created_before=views.epoch(req.end_time),
    )
    top_k = req.top_k or DEFAULT_SEARCH_TOP_K
    if not req.query or not req.query.strip():
        rows = core.storage.list_interactions(
            org_id, where, limit=req.most_recent_k or top_k, newest_first=True
        )
        return SearchInteractionsViewResponse(
            success=True, interactions=[views.interaction_view(r) for r in rows]
        )
    if req.most_recent_k:
        recent = core.storage.list_interactions(org_id, where, limit=req.most_recent_k, newest_first=True)
        if not recent:
            return SearchInteractionsViewResponse(success=True, interactions=[])
        where = replace(where, after_id=recent[-1].id - 1)
    hits = core.storage.search_interactions(org_id, where, req.query, limit=top_k)
    return SearchInteractionsViewResponse(
        success=True, interactions=[views.interaction_view(row) for row, _ in hits]
    )


def get_requests(core: Core, org_id: str, req: GetRequestsRequest) -> GetRequestsViewResponse:
    """A page of sessions (newest activity first), each with its requests and their turns."""
    where = RequestFilter(
        request_ids=(req.request_id,) if req.request_id else None,
        user_id=req.user_id or None,
        session_id=req.session_id or None,
        source=req.source or None,
        created_after=views.epoch(req.start_time),
        created_before=views.epoch(req.end_time),
    )
    top_k = req.top_k or 30
    page = _session_page(core, org_id, where, req.offset or 0, top_k + 1)
    sessions = [
        _session_view(core, org_id, session_id, _session_requests(core, org_id, where, session_id))
        for session_id in page[:top_k]
    ]
    return GetRequestsViewResponse(success=True, sessions=sessions, has_more=len(page) > top_k)


def _session_page(core: Core, org_id: str, where: RequestFilter, offset: int, limit: int) -> list[str]:
    """Session ids ``offset .. offset+limit`` ordered by their newest matching request."""
    seen: dict[str, None] = {}
    start = 0
    while len(seen) < offset + limit:
        batch = core.storage.list_requests(org_id, where, limit=_SCAN_BATCH, offset=start)
        seen.update(dict.fromkeys(r.session_id for r in batch))
        if len(batch) < _SCAN_BATCH:
            break
        start += _SCAN_BATCH
    return list(seen)[offset : offset + limit]


def _session_requests(core: Core, org_id: str, where: RequestFilter, session_id: str) -> list[RequestRecord]:
    rows = core.storage.list_requests(org_id, replace(where, session_id=session_id), limit=_SESSION_REQUESTS)
    return sorted(rows, key=lambda r: (r.created_at, r.request_id))


def _session_view(core: Core, org_id: str, session_id: str, requests: list[RequestRecord]) -> SessionView:
    ids = tuple(r.request_id for r in requests)
    turns: dict[str, list[InteractionRecord]] = {rid: [] for rid in ids}
    for turn in core.storage.list_interactions(org_id, InteractionFilter(request_ids=ids)):
        turns[turn.request_id].append(turn)
    return SessionView(
        session_id=session_id,
        requests=[
            RequestDataView(
                request=views.request_model(r),
                interactions=[views.interaction_view(t) for t in turns[r.request_id]],
            )
            for r in requests
        ],
    )


# -- deletes ------------------------------------------------------------------------------------


def delete_interaction(
    core: Core, org_id: str, req: DeleteUserInteractionRequest
) -> DeleteUserInteractionResponse:
    """Delete one turn of one user.

    Raises:
        NotFoundError: The user has no turn with this id in the caller's org.
    """
    where = InteractionFilter(ids=(req.interaction_id,), user_id=req.user_id)
    _, deleted = core.storage.delete_log(org_id, interactions=where)
    if not deleted:
        raise NotFoundError(f"interaction {req.interaction_id} of user {req.user_id!r} not found")
    return DeleteUserInteractionResponse(success=True, message=f"Deleted interaction {req.interaction_id}")


def delete_request(core: Core, org_id: str, req: DeleteRequestRequest) -> DeleteRequestResponse:
    """Delete a request and its turns.

    Raises:
        NotFoundError: No request with this id in the caller's org.
    """
    requests, turns = core.storage.delete_log(org_id, requests=RequestFilter(request_ids=(req.request_id,)))
    if not requests:
        raise NotFoundError(f"request {req.request_id!r} not found")
    return DeleteRequestResponse(
        success=True, message=f"Deleted request {req.request_id!r} and its {turns} interaction(s)"
    )


def delete_session(core: Core, org_id: str, req: DeleteSessionRequest) -> DeleteSessionResponse:
    """Delete every request of a session (with their turns).

    Raises:
        NotFoundError: No request of this session in the caller's org.
    """
    requests, turns = core.storage.delete_log(org_id, requests=RequestFilter(session_id=req.session_id))
    if not requests:
        raise NotFoundError(f"session {req.session_id!r} not found")
    return DeleteSessionResponse(
        success=True,
        message=f"Deleted {requests} request(s) and {turns} interaction(s) of session {req.session_id!r}",
        deleted_requests_count=requests,
    )


def delete_requests_by_ids(core: Core, org_id: str, req: DeleteRequestsByIdsRequest) -> BulkDeleteResponse:
    """Delete the listed requests that exist (with their turns); the count is of requests."""
    requests, turns = core.storage.delete_log(
        org_id, requests=RequestFilter(request_ids=tuple(req.request_ids))
    )
    return BulkDeleteResponse(
        success=True,
        deleted_count=requests,
        message=f"Deleted {requests} request(s) and {turns} interaction(s)",
    )


def delete_all_interactions(core: Core, org_id: str) -> BulkDeleteResponse:
    """Delete the org's whole log; the count is of interactions, as the route's name says."""
    requests, turns = core.storage.delete_log(
        org_id, requests=RequestFilter(), interactions=InteractionFilter()
    )
    return BulkDeleteResponse(
        success=True, deleted_count=turns, message=f"Deleted {turns} interaction(s) and {requests} request(s)"
    )
