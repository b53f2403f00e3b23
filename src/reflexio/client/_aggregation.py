"""Client methods for durable aggregation: submit it, follow its operation, read change logs.

``submit_playbook_aggregation`` and ``get_playbook_aggregation_operation`` are the 0.2.32
client's; ``get_playbook_aggregation_change_logs`` is the route 0.2.x served without a method;
``get_agent_playbook_review_queue`` is an addition (what waits for a reviewer).
Each function is the body of the client method of the same name (see ``_transport``).
"""

from __future__ import annotations

from urllib.parse import quote

from reflexio.client._transport import Call, Plan, dump, parse_as, single
from reflexio.models import DEFAULT_AGENT_VERSION
from reflexio.models.api_aggregation import (
    GetReviewQueueRequest,
    PendingReviewResponse,
    PlaybookAggregationChangeLogResponse,
    PlaybookAggregationOperation,
    PlaybookAggregationOperationRequest,
)

__all__ = [
    "get_agent_playbook_review_queue",
    "get_playbook_aggregation_change_logs",
    "get_playbook_aggregation_operation",
    "submit_playbook_aggregation",
]


def submit_playbook_aggregation(
    *,
    request_id: str | None = None,
    agent_version: str = DEFAULT_AGENT_VERSION,
    playbook_name: str = "playbook",
    full: bool = False,
) -> Plan[PlaybookAggregationOperation]:
    """Queue a durable aggregation of one agent version's user playbooks.

    Args:
        request_id: Your idempotency key: the same one returns the same operation.
        agent_version: The agent version whose user playbooks are aggregated.
        playbook_name: The playbook name (default ``playbook``).
        full: Re-cluster every user playbook instead of the incremental run.

    Returns:
        The queued operation; poll it with ``get_playbook_aggregation_operation``.
    """
    req = PlaybookAggregationOperationRequest(
        request_id=request_id, agent_version=agent_version, playbook_name=playbook_name, full=full
    )
    return single(
        Call(
            "POST",
            "/api/playbook_aggregation_operations",
            parse_as(PlaybookAggregationOperation),
            json=dump(req),
        )
    )


def get_playbook_aggregation_operation(operation_id: str | int) -> Plan[PlaybookAggregationOperation]:
    """An aggregation operation: status, attempts, progress and, once done, result counts.

    Raises:
        NotFoundError: No such operation in your org.
    """
    path = f"/api/playbook_aggregation_operations/{quote(str(operation_id), safe='')}"
    return single(Call("GET", path, parse_as(PlaybookAggregationOperation)))


def get_playbook_aggregation_change_logs(
    *, agent_version: str = DEFAULT_AGENT_VERSION, playbook_name: str = "playbook", limit: int = 100
) -> Plan[PlaybookAggregationChangeLogResponse]:
    """What the latest aggregation runs of one scope added, retired and rewrote, newest first."""
    params = {"agent_version": agent_version, "playbook_name": playbook_name, "limit": limit}
    return single(
        Call(
            "GET",
            "/api/playbook_aggregation_change_logs",
            parse_as(PlaybookAggregationChangeLogResponse),
            params=params,
        )
    )


def get_agent_playbook_review_queue(
    *, agent_version: str | None = None, limit: int = 100
) -> Plan[PendingReviewResponse]:
    """The agent playbooks waiting for review, oldest first, with their evidence.

    Args:
        agent_version: Only this agent version's (default: every version).
        limit: At most this many pending items, 1 to 1000.

    Returns:
        The pending items (new playbooks and revisions, each with the user playbooks it
        generalises and how many distinct users taught it) and counts per review state.
    """
    req = GetReviewQueueRequest(agent_version=agent_version, limit=limit)
    return single(
        Call("POST", "/api/get_agent_playbook_review_queue", parse_as(PendingReviewResponse), json=dump(req))
    )
