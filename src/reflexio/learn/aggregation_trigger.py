"""When aggregation runs: one durable job per (org, agent version, playbook name), debounced.

Whatever changes user playbooks of a scope (extraction, reruns, the API) enqueues the scope's
``aggregate`` job in the same transaction as the change, due ``DEBOUNCE_SECONDS`` later; a
burst of changes moves that one job's due time instead of queueing a run per change, and a
crash can never lose the trigger of a committed change. An on-demand run enqueues the same
job due now.
"""

from __future__ import annotations

from collections.abc import Iterable

from reflexio.models.org_config import Config
from reflexio.records import Job, Learning, LearningKind, LearningStatus, now
from reflexio.storage import Storage

__all__ = [
    "AGGREGATE",
    "DEBOUNCE_SECONDS",
    "aggregation_job",
    "aggregation_key",
    "delay_of",
    "enqueue_aggregations",
    "scope_of",
]

#: The job task that aggregates one scope.
AGGREGATE = "aggregate"
#: How long after the last change of a scope its aggregation runs, unless the org sets
#: ``aggregation_config.delay_seconds``.
DEBOUNCE_SECONDS = 10.0
#: The playbook name of rules stored without one (0.2.32's aggregation default).
DEFAULT_PLAYBOOK_NAME = "playbook"


def playbook_names(name: str) -> tuple[str, ...]:
    """The stored names a scope aggregates: the default scope also holds unnamed rules."""
    return (name, "") if name == DEFAULT_PLAYBOOK_NAME else (name,)


def aggregation_key(agent_version: str, playbook_name: str) -> str:
    """The job key of a scope: at most one aggregation of it is queued."""
    return f"{agent_version}\x1f{playbook_name}"


def scope_of(key: str) -> tuple[str, str]:
    """(agent version, playbook name) from a job key."""
    agent_version, _, playbook_name = key.partition("\x1f")
    return agent_version, playbook_name


def aggregation_job(
    org_id: str,
    agent_version: str,
    playbook_name: str,
    *,
    delay: float = DEBOUNCE_SECONDS,
    full: bool = False,
    request_id: str | None = None,
) -> Job:
    """The aggregation job of one scope, due ``delay`` seconds from now."""
    return Job(
        org_id=org_id,
        task=AGGREGATE,
        key=aggregation_key(agent_version, playbook_name),
        payload={"agent_version": agent_version, "playbook_name": playbook_name, "full": full},
        run_at=now() + delay,
        request_id=request_id,
        max_attempts=3,
    )


def delay_of(config: Config) -> float:
    """The org's debounce: seconds from a scope's last change to its aggregation run."""
    extractor = config.user_playbook_extractor_config
    return extractor.aggregation_config.delay_seconds if extractor is not None else DEBOUNCE_SECONDS


def enqueue_aggregations(
    tx: Storage, org_id: str, changed: Iterable[Learning], *, delay: float = DEBOUNCE_SECONDS
) -> int:
    """Queue (debounced) the aggregation of every scope whose current user playbooks ``changed``.

    Profiles never aggregate, and agent playbooks are what aggregation writes, so only user
    playbooks trigger it; those learned from a publish with ``skip_aggregation`` do not.
    Returns how many scopes were queued.
    """
    rules = [
        r for r in changed if r.kind is LearningKind.USER_PLAYBOOK and r.status is LearningStatus.CURRENT
    ]
    skipped = {rid for rid in {r.request_id for r in rules if r.request_id} if _skips(tx, org_id, rid)}
    scopes = sorted(
        {
            (r.agent_version, r.playbook_name or DEFAULT_PLAYBOOK_NAME)
            for r in rules
            if r.request_id not in skipped
        }
    )
    if scopes:
        tx.enqueue_jobs([aggregation_job(org_id, v, name, delay=delay) for v, name in scopes], debounce=True)
    return len(scopes)


def _skips(tx: Storage, org_id: str, request_id: str) -> bool:
    request = tx.get_request(org_id, request_id)
    return request is not None and request.skip_aggregation
