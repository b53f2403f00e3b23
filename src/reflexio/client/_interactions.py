"""Client methods for the interaction log: publish turns, read them back, delete them.

Each function is the body of the client method of the same name (see ``_transport``): it
validates its arguments locally, then describes the HTTP call. The docstrings are the public
methods' docstrings.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from reflexio.client._transport import Call, Plan, When, build, dump, parse_as, single, single_if
from reflexio.models import (
    DEFAULT_AGENT_VERSION,
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
    Interaction,
    InteractionData,
    PublishUserInteractionRequest,
    PublishUserInteractionResponse,
    SearchInteractionRequest,
    SearchInteractionsViewResponse,
    SearchMode,
)

__all__ = [
    "delete_all_interactions",
    "delete_interaction",
    "delete_request",
    "delete_requests_by_ids",
    "delete_session",
    "finalize_session",
    "get_all_interactions",
    "get_interactions",
    "get_learning_status",
    "get_requests",
    "publish_interaction",
    "search_interactions",
]


def publish_interaction(
    user_id: str,
    interactions: Sequence[InteractionData | Interaction | Mapping[str, Any]],
    source: str = "",
    agent_version: str = DEFAULT_AGENT_VERSION,
    session_id: str | None = None,
    wait_for_response: bool = False,
    skip_aggregation: bool = False,
    force_extraction: bool = False,
    evaluation_only: bool = False,
    override_learning_stall: bool = False,
    retrieval_experiment_id: str | None = None,
    retrieval_experiment_arm: Literal["treatment", "holdout"] | None = None,
    *,
    session_finished: bool = False,
    request_id: str | None = None,
) -> Plan[PublishUserInteractionResponse]:
    """Record one exchange of a session, so Reflexio can learn from it and grade it.

    This is the write every agent makes after answering. Publish the turns together with the
    ``retrieved_learnings`` that were injected into the prompt (the ids :meth:`search`
    returned), so evaluation can credit or blame exactly what the agent saw.

    Args:
        user_id: Whose session this is; profiles are learned per user.
        interactions: The turns, as :class:`~reflexio.InteractionData` or dicts (or
            :class:`~reflexio.Interaction`, as Reflexio 0.2.7 wrote them). Unknown keys and
            empty turns are stripped locally and reported in ``warnings``.
        source: Non-sensitive producer label (``^[a-z0-9][a-z0-9._:-]{0,127}$`` or ``""``).
        agent_version: Version of the agent that answered; agent playbooks are per version.
        session_id: The conversation this exchange belongs to. Required, unless
            ``request_id`` is given: then the request is its own session (Reflexio 0.2.7 had
            no sessions).
        wait_for_response: Ask the server to finish learning before answering (slower; the
            response then carries real profile and playbook counts).
        skip_aggregation: Extract learnings but do not aggregate them into agent playbooks.
        force_extraction: Run extraction now, bypassing the window and pre-filters.
        evaluation_only: Store for grading only, never learn from it.
        override_learning_stall: Learn even if a provider stall was recorded.
        retrieval_experiment_id: Experiment id returned by the search used for this answer.
        retrieval_experiment_arm: ``"treatment"`` or ``"holdout"``, as the search returned.
        session_finished: The session is over: learn and grade it without waiting for idle.
        request_id: Your own id for this exchange; a retry with the same id is stored once.

    Returns:
        The server's answer, with ``request_id`` and ``learning_status``; ``warnings`` also
        lists what was stripped locally.

    Raises:
        ValueError: ``session_id`` (and ``request_id``) is missing or blank (nothing was sent).
        pydantic.ValidationError: The payload is malformed (nothing was sent).
    """
    if session_id is None and request_id:
        session_id = request_id
    if session_id is None or not session_id.strip():
        raise ValueError("session_id is required and cannot be empty")
    request = PublishUserInteractionRequest.model_validate(
        {
            "request_id": request_id,
            "user_id": user_id,
            "interaction_data_list": [_turn(item) for item in interactions],
            "source": source,
            "agent_version": agent_version,
            "session_id": session_id,
            "session_finished": session_finished,
            "skip_aggregation": skip_aggregation,
            "force_extraction": force_extraction,
            "evaluation_only": evaluation_only,
            "override_learning_stall": override_learning_stall,
            "retrieval_experiment_id": retrieval_experiment_id,
            "retrieval_experiment_arm": retrieval_experiment_arm,
        }
    )

    def finish(body: Any) -> PublishUserInteractionResponse:
        # Stripped keys and skipped turns never reach the server, so only we can report them.
        response = PublishUserInteractionResponse.model_validate(body)
        response.warnings = [*response.warnings, *request.payload_warnings()]
        return response

    params = {"wait_for_response": "true"} if wait_for_response else None
    # Only what the caller set: a turn's created_at left unset is the server's to fill, so a
    # retry with the same request_id from a new process is the same request, not a 409.
    body = request.model_dump(mode="json", exclude_unset=True)
    return single(Call("POST", "/api/publish_interaction", finish, params=params, json=body))


#: The fields a published turn has (a stored ``Interaction`` also has ids and counts).
_TURN_FIELDS = set(InteractionData.model_fields)


def _turn(item: InteractionData | Interaction | Mapping[str, Any]) -> InteractionData | Mapping[str, Any]:
    """A turn to publish: an ``Interaction`` becomes the ``InteractionData`` it describes."""
    if isinstance(item, Interaction):
        return InteractionData.model_validate(item.model_dump(include=_TURN_FIELDS, exclude_unset=True))
    return item


def get_learning_status(request_id: str) -> Plan[str]:
    """How far learning has got with a published request, for callers that poll after publish.

    Args:
        request_id: The ``request_id`` from :meth:`publish_interaction`'s response.

    Returns:
        ``"pending"``, ``"processing"``, ``"done"``, ``"failed"`` or ``"not_tracked"``.

    Raises:
        NotFoundError: No such request in your org.
    """
    return single(
        Call(
            "GET", "/api/learning_status", lambda body: str(body["status"]), params={"request_id": request_id}
        )
    )


def finalize_session(user_id: str, session_id: str) -> Plan[FinalizeSessionResponse]:
    """Say a session is over, so it is learned from and graded now rather than after idling.

    Args:
        user_id: The session's user.
        session_id: The session to finalize.

    Returns:
        Whether the hint was accepted; learning itself still runs in the background.
    """
    request = FinalizeSessionRequest(user_id=user_id, session_id=session_id)
    return single(
        Call("POST", "/api/finalize_session", parse_as(FinalizeSessionResponse), json=dump(request))
    )


def get_interactions(
    request: GetInteractionsRequest | Mapping[str, Any] | None = None,
    *,
    user_id: str | None = None,
    start_time: When | None = None,
    end_time: When | None = None,
    top_k: int | None = None,
) -> Plan[GetInteractionsViewResponse]:
    """A user's most recent turns, newest first, to show or audit what was published.

    Args:
        request: A whole request instead of (or as a base for) the keywords.
        user_id: Whose turns.
        start_time: Only turns created at or after this time.
        end_time: Only turns created before this time.
        top_k: At most this many turns (server default 30).

    Returns:
        The turns, including the ``retrieved_learnings`` published with them.
    """
    req = build(
        GetInteractionsRequest,
        request,
        user_id=user_id,
        start_time=start_time,
        end_time=end_time,
        top_k=top_k,
    )
    return single(
        Call("POST", "/api/get_interactions", parse_as(GetInteractionsViewResponse), json=dump(req))
    )


def get_all_interactions(limit: int = 100) -> Plan[GetInteractionsViewResponse]:
    """The most recent turns across every user of the org, for dashboards and exports.

    Args:
        limit: At most this many turns.

    Returns:
        The turns, newest first.
    """
    return single(
        Call(
            "GET", "/api/get_all_interactions", parse_as(GetInteractionsViewResponse), params={"limit": limit}
        )
    )


def get_requests(
    request: GetRequestsRequest | Mapping[str, Any] | None = None,
    *,
    user_id: str | None = None,
    request_id: str | None = None,
    session_id: str | None = None,
    source: str | None = None,
    start_time: When | None = None,
    end_time: When | None = None,
    top_k: int | None = None,
    offset: int | None = None,
) -> Plan[GetRequestsViewResponse]:
    """Published requests grouped by session, with their turns: the log as sessions.

    Args:
        request: A whole request instead of (or as a base for) the keywords.
        user_id: Only this user's sessions.
        request_id: Only this request.
        session_id: Only this session.
        source: Only requests with this source.
        start_time: Only requests created at or after this time.
        end_time: Only requests created before this time.
        top_k: At most this many sessions per page (server default 30).
        offset: Sessions to skip, for paging (``has_more`` says whether to go on).

    Returns:
        A page of sessions, newest first.
    """
    req = build(
        GetRequestsRequest,
        request,
        user_id=user_id,
        request_id=request_id,
        session_id=session_id,
        source=source,
        start_time=start_time,
        end_time=end_time,
        top_k=top_k,
        offset=offset,
    )
    return single(Call("POST", "/api/get_requests", parse_as(GetRequestsViewResponse), json=dump(req)))


def search_interactions(
    request: SearchInteractionRequest | Mapping[str, Any] | None = None,
    *,
    user_id: str | None = None,
    request_id: str | None = None,
    query: str | None = None,
    start_time: When | None = None,
    end_time: When | None = None,
    top_k: int | None = None,
    most_recent_k: int | None = None,
    threshold: float | None = None,
    search_mode: SearchMode | str | None = None,
) -> Plan[SearchInteractionsViewResponse]:
    """Find a user's past turns by words or meaning, e.g. to quote earlier context.

    Args:
        request: A whole request instead of (or as a base for) the keywords.
        user_id: Whose turns to search.
        request_id: Only turns of this request.
        query: What to look for; without it the most recent turns are returned.
        start_time: Only turns created at or after this time.
        end_time: Only turns created before this time.
        top_k: At most this many matches.
        most_recent_k: Search only this many most recent turns.
        threshold: Minimum relevance (0..1); ``None`` uses the embedder's default.
        search_mode: ``"hybrid"`` (default), ``"vector"`` or ``"fts"``.

    Returns:
        The matching turns, best first.
    """
    req = build(
        SearchInteractionRequest,
        request,
        user_id=user_id,
        request_id=request_id,
        query=query,
        start_time=start_time,
        end_time=end_time,
        top_k=top_k,
        most_recent_k=most_recent_k,
        threshold=threshold,
        search_mode=search_mode,
    )
    return single(
        Call("POST", "/api/search_interactions", parse_as(SearchInteractionsViewResponse), json=dump(req))
    )


def delete_interaction(
    user_id: str, interaction_id: int, wait_for_response: bool = False
) -> Plan[DeleteUserInteractionResponse | None]:
    """Delete one turn, e.g. one a user asked to forget.

    The call is always made and its errors raised; ``wait_for_response`` only decides
    whether the answer is returned (Reflexio's client sent it in the background).

    Args:
        user_id: The turn's user.
        interaction_id: The turn to delete.
        wait_for_response: Return the server's answer instead of ``None``.

    Returns:
        The answer when ``wait_for_response`` is true, else ``None``.

    Raises:
        NotFoundError: No such turn for this user.
    """
    req = DeleteUserInteractionRequest(user_id=user_id, interaction_id=interaction_id)
    call = Call("DELETE", "/api/delete_interaction", parse_as(DeleteUserInteractionResponse), json=dump(req))
    return single_if(call, wait_for_response)


def delete_request(request_id: str, wait_for_response: bool = False) -> Plan[DeleteRequestResponse | None]:
    """Delete a published request and its turns.

    The call is always made and its errors raised; ``wait_for_response`` only decides
    whether the answer is returned.

    Args:
        request_id: The request to delete.
        wait_for_response: Return the server's answer instead of ``None``.

    Returns:
        The answer when ``wait_for_response`` is true, else ``None``.
    """
    req = DeleteRequestRequest(request_id=request_id)
    call = Call("DELETE", "/api/delete_request", parse_as(DeleteRequestResponse), json=dump(req))
    return single_if(call, wait_for_response)


def delete_session(session_id: str, wait_for_response: bool = False) -> Plan[DeleteSessionResponse | None]:
    """Delete every request and turn of a session.

    The call is always made and its errors raised; ``wait_for_response`` only decides
    whether the answer is returned.

    Args:
        session_id: The session to delete.
        wait_for_response: Return the server's answer instead of ``None``.

    Returns:
        The answer (with ``deleted_requests_count``) when ``wait_for_response`` is true,
        else ``None``.
    """
    req = DeleteSessionRequest(session_id=session_id)
    call = Call("DELETE", "/api/delete_session", parse_as(DeleteSessionResponse), json=dump(req))
    return single_if(call, wait_for_response)


def delete_requests_by_ids(request_ids: list[str]) -> Plan[BulkDeleteResponse]:
    """Delete several requests (and their turns) in one call.

    Args:
        request_ids: 1 to 10,000 request ids.

    Returns:
        How many requests were deleted.
    """
    req = DeleteRequestsByIdsRequest(request_ids=request_ids)
    return single(Call("DELETE", "/api/delete_requests_by_ids", parse_as(BulkDeleteResponse), json=dump(req)))


def delete_all_interactions() -> Plan[BulkDeleteResponse]:
    """Delete every request and turn of the org; learnings stay.

    Returns:
        How many requests were deleted.
    """
    return single(Call("DELETE", "/api/delete_all_interactions", parse_as(BulkDeleteResponse)))
