"""Client methods that (re)run learning by hand, move learnings between versions, and read grades.

Each function is the body of the client method of the same name (see ``_transport``); the
docstrings are the public methods' docstrings. The rerun methods are the only plans with more
than one round trip: when asked to wait they poll the operation until it ends.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, Final, TypeVar

from reflexio.client._transport import Call, Plan, Sleep, When, build, dump, parse_as, single, single_if
from reflexio.errors import ServiceUnavailableError
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
    OperationStatus,
    OperationStatusInfo,
    RerunPlaybookGenerationRequest,
    RerunPlaybookGenerationResponse,
    RerunProfileGenerationRequest,
    RerunProfileGenerationResponse,
    RunPlaybookAggregationRequest,
    RunPlaybookAggregationResponse,
    UpgradeProfilesRequest,
    UpgradeProfilesResponse,
    UpgradeUserPlaybooksRequest,
    UpgradeUserPlaybooksResponse,
)

__all__ = [
    "downgrade_profiles",
    "downgrade_user_playbooks",
    "get_agent_success_evaluation_results",
    "get_operation_status",
    "get_retrieved_learning_evaluation_results",
    "manual_playbook_generation",
    "manual_profile_generation",
    "rerun_playbook_generation",
    "rerun_profile_generation",
    "run_playbook_aggregation",
    "upgrade_profiles",
    "upgrade_user_playbooks",
]

POLL_SECONDS: Final = 3.0
POLL_LIMIT_SECONDS: Final = 600.0
_ENDED: Final = frozenset({OperationStatus.COMPLETED, OperationStatus.FAILED, OperationStatus.CANCELLED})


def get_operation_status(service_name: str = "profile_generation") -> Plan[GetOperationStatusResponse]:
    """Progress of the latest long operation of a kind, e.g. a profile regeneration.

    Args:
        service_name: ``"profile_generation"`` or ``"playbook_generation"``.

    Returns:
        The operation's state, or no ``operation_status`` if none ever ran.
    """
    return single(
        Call(
            "GET",
            "/api/get_operation_status",
            parse_as(GetOperationStatusResponse),
            params={"service_name": service_name},
        )
    )


def _wait_for_operation(service_name: str, submitted_at: int) -> Plan[OperationStatusInfo | None]:
    """Poll until the operation started by our submit ends; ``None`` on timeout.

    A state that started more than a second before the submit belongs to an earlier run.
    A poll the server could not answer is retried; any other error ends the wait.
    """
    deadline = time.monotonic() + POLL_LIMIT_SECONDS
    while True:
        try:
            answer: GetOperationStatusResponse | None = yield from get_operation_status(service_name)
        except ServiceUnavailableError:
            answer = None
        operation = answer.operation_status if answer is not None else None
        if operation is not None and operation.started_at >= submitted_at - 1 and operation.status in _ENDED:
            return operation
        if time.monotonic() + POLL_SECONDS > deadline:
            return None
        yield Sleep(POLL_SECONDS)


def _outcome(operation: OperationStatusInfo, what: str) -> tuple[bool, str]:
    if operation.status == OperationStatus.COMPLETED:
        return True, f"{what} completed"
    if operation.status == OperationStatus.FAILED:
        return False, operation.error_message or f"{what} failed"
    return False, f"{what} was cancelled"


Rerun = TypeVar("Rerun", RerunProfileGenerationResponse, RerunPlaybookGenerationResponse)


def _rerun(call: Call[Rerun], service_name: str, what: str, count_field: str) -> Plan[Rerun]:
    """Submit a rerun, then wait for it and report how it ended, as Reflexio's client did."""
    submitted_at = int(time.time())
    initial = yield from single(call)
    if not initial.success:
        return initial
    operation = yield from _wait_for_operation(service_name, submitted_at)
    if operation is None:
        return initial
    success, msg = _outcome(operation, what)
    count = operation.processed_users if success else None
    return initial.model_copy(update={"success": success, "msg": msg, count_field: count})


def rerun_profile_generation(
    request: RerunProfileGenerationRequest | Mapping[str, Any] | None = None,
    wait_for_response: bool = False,
    *,
    user_id: str | None = None,
    start_time: When | None = None,
    end_time: When | None = None,
    source: str | None = None,
    extractor_names: list[str] | None = None,
) -> Plan[RerunProfileGenerationResponse | None]:
    """Re-learn profiles from all past interactions, e.g. after changing the extractor prompt.

    New profiles arrive ``pending``; promote them with :meth:`upgrade_profiles`. The request
    is always sent and its errors raised; with ``wait_for_response`` the client then polls
    the operation (every 3 s, up to 10 minutes) and reports how it ended.

    Args:
        request: A whole request instead of (or as a base for) the keywords.
        wait_for_response: Wait for the operation to end and return its outcome.
        user_id: Only this user (default: everyone).
        start_time: Only interactions at or after this time.
        end_time: Only interactions before this time.
        source: Only interactions with this source.
        extractor_names: Accepted and ignored, as by Reflexio.

    Returns:
        The outcome when waiting (or the server's first answer if polling timed out),
        else ``None``.
    """
    req = build(
        RerunProfileGenerationRequest,
        request,
        user_id=user_id,
        start_time=start_time,
        end_time=end_time,
        source=source,
        extractor_names=extractor_names,
    )
    call = Call(
        "POST", "/api/rerun_profile_generation", parse_as(RerunProfileGenerationResponse), json=dump(req)
    )
    if not wait_for_response:
        return single_if(call, False)
    return _rerun(call, "profile_generation", "Profile generation", "profiles_generated")


def manual_profile_generation(
    request: ManualProfileGenerationRequest | Mapping[str, Any] | None = None,
    *,
    user_id: str | None = None,
    source: str | None = None,
    extractor_names: list[str] | None = None,
) -> Plan[None]:
    """Learn profiles now from the latest window of interactions, without waiting for a stride.

    Unlike :meth:`rerun_profile_generation` the results are current at once. The request
    is sent and its errors raised; the learning itself runs in the background.

    Args:
        request: A whole request instead of (or as a base for) the keywords.
        user_id: Only this user (default: everyone).
        source: Only interactions with this source.
        extractor_names: Accepted and ignored, as by Reflexio.

    Returns:
        ``None``, as Reflexio's client did.
    """
    req = build(
        ManualProfileGenerationRequest,
        request,
        user_id=user_id,
        source=source,
        extractor_names=extractor_names,
    )
    call = Call(
        "POST", "/api/manual_profile_generation", parse_as(ManualProfileGenerationResponse), json=dump(req)
    )
    return _discard(single(call))


def _discard(plan: Plan[Any]) -> Plan[None]:
    yield from plan
    return None


def upgrade_profiles(
    *, user_id: str | None = None, only_affected_users: bool = True, profile_ids: list[str] | None = None
) -> Plan[UpgradeProfilesResponse]:
    """Promote pending profiles (from a rerun) to current, archiving the ones they replace.

    Args:
        user_id: Only this user (default: everyone).
        only_affected_users: Only users who have pending profiles.
        profile_ids: Only these pending profiles.

    Returns:
        How many profiles were promoted, archived and deleted.
    """
    req = UpgradeProfilesRequest(
        user_id=user_id, only_affected_users=only_affected_users, profile_ids=profile_ids
    )
    return single(
        Call("POST", "/api/upgrade_all_profiles", parse_as(UpgradeProfilesResponse), json=dump(req))
    )


def downgrade_profiles(
    *, user_id: str | None = None, only_affected_users: bool = False, profile_ids: list[str] | None = None
) -> Plan[DowngradeProfilesResponse]:
    """Undo :meth:`upgrade_profiles`: restore the archived profiles, demote the promoted ones.

    Args:
        user_id: Only this user (default: everyone).
        only_affected_users: Only users who have archived profiles.
        profile_ids: Only these profiles.

    Returns:
        How many profiles were demoted and restored.
    """
    req = DowngradeProfilesRequest(
        user_id=user_id, only_affected_users=only_affected_users, profile_ids=profile_ids
    )
    return single(
        Call("POST", "/api/downgrade_all_profiles", parse_as(DowngradeProfilesResponse), json=dump(req))
    )


def rerun_playbook_generation(
    request: RerunPlaybookGenerationRequest | Mapping[str, Any] | None = None,
    wait_for_response: bool = False,
    *,
    agent_version: str | None = None,
    start_time: When | None = None,
    end_time: When | None = None,
    playbook_name: str | None = None,
    source: str | None = None,
) -> Plan[RerunPlaybookGenerationResponse | None]:
    """Re-learn user playbooks from all past interactions of an agent version.

    New playbooks arrive ``pending``; promote them with :meth:`upgrade_user_playbooks`. The
    request is always sent and its errors raised; with ``wait_for_response`` the client then
    polls the operation (every 3 s, up to 10 minutes) and reports how it ended.

    Args:
        request: A whole request instead of (or as a base for) the keywords.
        wait_for_response: Wait for the operation to end and return its outcome.
        agent_version: The agent version to learn for (default ``agent-v0``).
        start_time: Only interactions at or after this time.
        end_time: Only interactions before this time.
        playbook_name: Accepted and ignored, as by Reflexio.
        source: Only interactions with this source.

    Returns:
        The outcome when waiting (or the server's first answer if polling timed out),
        else ``None``.
    """
    req = build(
        RerunPlaybookGenerationRequest,
        request,
        agent_version=agent_version,
        start_time=start_time,
        end_time=end_time,
        playbook_name=playbook_name,
        source=source,
    )
    call = Call(
        "POST", "/api/rerun_playbook_generation", parse_as(RerunPlaybookGenerationResponse), json=dump(req)
    )
    if not wait_for_response:
        return single_if(call, False)
    return _rerun(call, "playbook_generation", "Playbook generation", "playbooks_generated")


def manual_playbook_generation(
    request: ManualPlaybookGenerationRequest | Mapping[str, Any] | None = None,
    *,
    agent_version: str | None = None,
    source: str | None = None,
    playbook_name: str | None = None,
) -> Plan[None]:
    """Learn user playbooks now from the latest window of interactions.

    The request is sent and its errors raised; the learning itself runs in the background.

    Args:
        request: A whole request instead of (or as a base for) the keywords.
        agent_version: The agent version to learn for (default ``agent-v0``).
        source: Only interactions with this source.
        playbook_name: Accepted and ignored, as by Reflexio.

    Returns:
        ``None``, as Reflexio's client did.
    """
    req = build(
        ManualPlaybookGenerationRequest,
        request,
        agent_version=agent_version,
        source=source,
        playbook_name=playbook_name,
    )
    call = Call(
        "POST", "/api/manual_playbook_generation", parse_as(ManualPlaybookGenerationResponse), json=dump(req)
    )
    return _discard(single(call))


def upgrade_user_playbooks(
    *, agent_version: str | None = None, playbook_name: str | None = None, archive_current: bool = True
) -> Plan[UpgradeUserPlaybooksResponse]:
    """Promote pending user playbooks (from a rerun) to current.

    Args:
        agent_version: Only this agent version (default: all).
        playbook_name: Only this playbook name (default: all).
        archive_current: Archive the current playbooks they replace.

    Returns:
        How many playbooks were promoted, archived and deleted.
    """
    req = UpgradeUserPlaybooksRequest(
        agent_version=agent_version, playbook_name=playbook_name, archive_current=archive_current
    )
    return single(
        Call(
            "POST", "/api/upgrade_all_user_playbooks", parse_as(UpgradeUserPlaybooksResponse), json=dump(req)
        )
    )


def downgrade_user_playbooks(
    *, agent_version: str | None = None, playbook_name: str | None = None
) -> Plan[DowngradeUserPlaybooksResponse]:
    """Undo :meth:`upgrade_user_playbooks`: restore archived playbooks, demote promoted ones.

    Args:
        agent_version: Only this agent version (default: all).
        playbook_name: Only this playbook name (default: all).

    Returns:
        How many playbooks were demoted and restored.
    """
    req = DowngradeUserPlaybooksRequest(agent_version=agent_version, playbook_name=playbook_name)
    return single(
        Call(
            "POST",
            "/api/downgrade_all_user_playbooks",
            parse_as(DowngradeUserPlaybooksResponse),
            json=dump(req),
        )
    )


def run_playbook_aggregation(
    request: RunPlaybookAggregationRequest | Mapping[str, Any] | None = None,
    wait_for_response: bool = False,
    *,
    agent_version: str | None = None,
    playbook_name: str | None = None,
) -> Plan[RunPlaybookAggregationResponse | None]:
    """Cluster an agent version's user playbooks into agent playbooks now.

    The call is always made and its errors raised; ``wait_for_response`` only decides
    whether the answer is returned (Reflexio's client sent it in the background).

    Args:
        request: A whole request instead of (or as a base for) the keywords.
        wait_for_response: Return the server's answer instead of ``None``.
        agent_version: The agent version (default ``agent-v0``).
        playbook_name: The playbook name (default ``playbook``).

    Returns:
        The answer when ``wait_for_response`` is true, else ``None``.
    """
    req = build(
        RunPlaybookAggregationRequest, request, agent_version=agent_version, playbook_name=playbook_name
    )
    call = Call(
        "POST", "/api/run_playbook_aggregation", parse_as(RunPlaybookAggregationResponse), json=dump(req)
    )
    return single_if(call, wait_for_response)


def get_agent_success_evaluation_results(
    request: GetAgentSuccessEvaluationResultsRequest | Mapping[str, Any] | None = None,
    *,
    limit: int | None = None,
    agent_version: str | None = None,
    start_time: When | None = None,
    end_time: When | None = None,
) -> Plan[GetEvaluationResultsViewResponse]:
    """Whether sessions succeeded, as graded after they ended: the loop's outcome metric.

    Args:
        request: A whole request instead of (or as a base for) the keywords.
        limit: At most this many (server default 100).
        agent_version: Only sessions of this agent version.
        start_time: Only verdicts at or after this time.
        end_time: Only verdicts before this time.

    Returns:
        The session verdicts, newest first.
    """
    req = build(
        GetAgentSuccessEvaluationResultsRequest,
        request,
        limit=limit,
        agent_version=agent_version,
        start_time=start_time,
        end_time=end_time,
    )
    return single(
        Call(
            "POST",
            "/api/get_agent_success_evaluation_results",
            parse_as(GetEvaluationResultsViewResponse),
            json=dump(req),
        )
    )


def get_retrieved_learning_evaluation_results(
    request: GetRetrievedLearningEvaluationResultsRequest | Mapping[str, Any] | None = None,
    *,
    user_id: str | None = None,
    session_id: str | None = None,
    start_time: When | None = None,
    end_time: When | None = None,
    limit: int | None = None,
) -> Plan[GetRetrievedLearningEvaluationResultsResponse]:
    """Whether each learning injected into a turn was relevant and helped, with the judge's reasons.

    Time filters apply to the turn that received the learning, not to when it was graded.

    Args:
        request: A whole request instead of (or as a base for) the keywords.
        user_id: Only this user's turns.
        session_id: Only this session.
        start_time: Only turns at or after this time.
        end_time: Only turns before this time.
        limit: At most this many, 1 to 1,000 (server default 100).

    Returns:
        One verdict per (turn, learning).
    """
    req = build(
        GetRetrievedLearningEvaluationResultsRequest,
        request,
        user_id=user_id,
        session_id=session_id,
        start_time=start_time,
        end_time=end_time,
        limit=limit,
    )
    return single(
        Call(
            "POST",
            "/api/get_retrieved_learning_evaluation_results",
            parse_as(GetRetrievedLearningEvaluationResultsResponse),
            json=dump(req),
        )
    )
