"""Client method for ``POST /api/get_learning_provenance``.

The function is the body of the client method of the same name (see ``_transport``).
"""

from __future__ import annotations

from reflexio.client._transport import Call, Plan, dump, parse_as, single
from reflexio.models import GetLearningProvenanceRequest, GetLearningProvenanceResponse

__all__ = ["get_learning_provenance"]


def get_learning_provenance(kind: str, learning_id: str | int) -> Plan[GetLearningProvenanceResponse]:
    """Where a learning came from: the request and the interactions it was learned from.

    Args:
        kind: ``profile``, ``user_playbook`` or ``agent_playbook``.
        learning_id: Its id (the ``profile_id`` for profiles).

    Returns:
        ``provenance_status`` (exact, best_effort or unavailable), the trigger request and the
        source interactions.

    Raises:
        NotFoundError: No such learning in your org.
    """
    req = GetLearningProvenanceRequest.model_validate({"kind": kind, "id": str(learning_id)})
    return single(
        Call("POST", "/api/get_learning_provenance", parse_as(GetLearningProvenanceResponse), json=dump(req))
    )
