"""The rows storage keeps, as plain dataclasses.

These are the storage layer's own types, independent of the wire models: the wire keeps
Reflexio's quirks (``Status.CURRENT`` is JSON null, three separate learning shapes), while
storage keeps one ``Learning`` row with a ``kind`` column, as HOUSE_STYLE asks ("variants are
data"). The service converts between the two at its edge.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = [
    "NEVER_EXPIRES",
    "ApiKeyRecord",
    "Approval",
    "Audit",
    "Bookmark",
    "ChangeLogRecord",
    "ClusterRecord",
    "EvaluationRecord",
    "ExposureRecord",
    "InteractionRecord",
    "Job",
    "JobStats",
    "JobStatus",
    "LLMUsageRecord",
    "Learning",
    "LearningEvent",
    "LearningKind",
    "LearningStatus",
    "ModelUsage",
    "OutcomeRecord",
    "ProposalRecord",
    "ReflectionActionRecord",
    "RequestRecord",
    "SessionVerdictDay",
    "StreamEventRecord",
    "UsageSummary",
    "UsageTotals",
    "Vector",
    "now",
]

#: Reflexio's "never expires" timestamp (2100-01-01), kept for wire compatibility.
NEVER_EXPIRES = 4_102_444_800

Vector = npt.NDArray[np.float32]


def now() -> float:
    """Current time in epoch seconds; one place so tests can reason about clocks."""
    return time.time()


class LearningKind(StrEnum):
    """What a learning is: a fact about a user or a behaviour rule."""

    PROFILE = "profile"
    USER_PLAYBOOK = "user_playbook"
    AGENT_PLAYBOOK = "agent_playbook"


class LearningStatus(StrEnum):
    """Lifecycle of a learning; merged, superseded and expired are tombstones kept for history.

    ``suspended`` and ``retired`` are set by reflection when a learning is found to hurt
    (suspended: waiting for a reviewer; retired: stopped with a reason); neither is served,
    and both can be reverted to current.
    """

    CURRENT = "current"
    PENDING = "pending"
    ARCHIVED = "archived"
    ARCHIVE_IN_PROGRESS = "archive_in_progress"
    MERGED = "merged"
    SUPERSEDED = "superseded"
    EXPIRED = "expired"
    SUSPENDED = "suspended"
    RETIRED = "retired"


class Approval(StrEnum):
    """Human review state of an agent playbook."""

    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"


@dataclass(slots=True, kw_only=True)
class RequestRecord:
    """One publish call: the unit of idempotency (org, request_id)."""

    org_id: str
    request_id: str
    user_id: str
    session_id: str
    source: str = ""
    agent_version: str = ""
    created_at: int = 0
    payload_hash: str = ""
    #: What is learned from this request queues no aggregation run (the publish asked so).
    skip_aggregation: bool = False


@dataclass(slots=True, kw_only=True)
class InteractionRecord:
    """One turn of a conversation, as published. ``id`` orders turns within an org."""

    org_id: str
    request_id: str
    user_id: str
    session_id: str
    id: int = 0
    role: str = "User"
    content: str = ""
    shadow_content: str = ""
    expert_content: str = ""
    user_action: str = "none"
    user_action_description: str = ""
    interacted_image_url: str = ""
    image_encoding: str = ""
    tools_used: list[dict[str, Any]] = field(default_factory=list)
    citations: list[dict[str, Any]] = field(default_factory=list)
    retrieved_learnings: list[dict[str, Any]] = field(default_factory=list)
    created_at: int = 0


@dataclass(slots=True, kw_only=True, eq=False)
class Learning:
    """A profile, user playbook or agent playbook.

    ``id`` is assigned by storage (0 before the first save). Profiles also carry
    ``profile_id``, their wire id, which callers may choose. The embedding is owned by
    storage: it is recomputed whenever ``search_text`` changes, and stored with the model
    name and dimension so a model change can be detected.
    """

    org_id: str
    kind: LearningKind
    content: str
    id: int = 0
    profile_id: str | None = None
    user_id: str | None = None
    agent_version: str = ""
    playbook_name: str = ""
    trigger: str | None = None
    rationale: str | None = None
    pitfall: str | None = None
    blocking_issue: dict[str, Any] | None = None
    status: LearningStatus = LearningStatus.CURRENT
    approval: Approval | None = None
    source: str | None = None
    tags: list[str] = field(default_factory=list)
    custom_features: dict[str, Any] | None = None
    extractor_names: list[str] | None = None
    ttl: str = "infinity"
    expires_at: int = NEVER_EXPIRES
    request_id: str = ""
    source_interaction_ids: list[int] = field(default_factory=list)
    superseded_by: int | None = None
    metadata: str = ""
    created_at: int = 0
    updated_at: int = 0
    embedding: Vector | None = field(default=None, repr=False)
    embed_model: str = ""
    text_hash: str = ""

    @property
    def search_text(self) -> str:
        """The text that is both full-text indexed and embedded."""
        parts = [self.trigger or "", self.content]
        if self.custom_features:
            parts.extend(str(v) for v in self.custom_features.values() if v)
        return "\n".join(p for p in parts if p)

    @property
    def wire_id(self) -> str:
        """The id a caller sees: ``profile_id`` for profiles, the number for playbooks."""
        if self.kind is LearningKind.PROFILE and self.profile_id:
            return self.profile_id
        return str(self.id)

    def computed_text_hash(self) -> str:
        """Fingerprint of ``search_text``; a change means the vector must be recomputed."""
        return hashlib.sha1(self.search_text.encode("utf-8"), usedforsecurity=False).hexdigest()

    def copy(self, **changes: Any) -> Learning:
        """Return a modified copy (rows are treated as values)."""
        return replace(self, **changes)

    def snapshot(self) -> dict[str, Any]:
        """A JSON-ready dict of the row without its vector, for audit events and export."""
        out: dict[str, Any] = {}
        for name in self.__dataclass_fields__:
            if name in {"embedding", "text_hash"}:
                continue
            value = getattr(self, name)
            out[name] = value.value if isinstance(value, StrEnum) else value
        return out


@dataclass(slots=True, kw_only=True)
class Audit:
    """Who changed learnings and why; storage turns it into ``LearningEvent`` rows."""

    actor: str = "api"
    reason: str = ""
    request_id: str | None = None
    job_id: int | None = None


@dataclass(slots=True, kw_only=True)
class LearningEvent:
    """One entry of a learning's history (created, updated, status change, deleted...)."""

    org_id: str
    learning_id: int
    kind: LearningKind
    event: str
    id: int = 0
    user_id: str | None = None
    actor: str = ""
    reason: str = ""
    request_id: str | None = None
    job_id: int | None = None
    before: dict[str, Any] | None = None
    after: dict[str, Any] | None = None
    created_at: float = 0.0


@dataclass(slots=True, kw_only=True)
class EvaluationRecord:
    """A judgement: a session's success (``kind="session"``) or one injected learning's."""

    org_id: str
    kind: str
    result: dict[str, Any]
    id: int = 0
    user_id: str | None = None
    session_id: str | None = None
    agent_version: str | None = None
    learning_kind: str | None = None
    learning_id: str | None = None
    interaction_id: int | None = None
    created_at: float = 0.0


@dataclass(slots=True, kw_only=True)
class OutcomeRecord:
    """One report of a session's outcome by the agent's own systems (a revision)."""

    org_id: str
    session_id: str
    user_id: str
    outcome: str
    occurred_at: int
    outcome_id: str = ""
    revision: int = 0
    source: str = "reported"
    label: str | None = None
    value: float | None = None
    metadata: dict[str, Any] | None = None
    id: int = 0
    created_at: float = 0.0


@dataclass(slots=True, kw_only=True)
class ExposureRecord:
    """A search's decision about one eligible learning in one session: served or withheld."""

    org_id: str
    session_id: str
    kind: str
    learning_id: str
    user_id: str | None = None
    withheld: bool = False
    holdout_rate: float = 0.0
    served_at: float = 0.0


@dataclass(slots=True, kw_only=True)
class ReflectionActionRecord:
    """What reflection did to a learning, why, on what evidence; revertible once."""

    org_id: str
    learning_id: int
    kind: str
    action: str
    reason: str
    evidence: dict[str, Any] = field(default_factory=dict)
    status_before: str | None = None
    status_after: str | None = None
    related_learning_id: int | None = None
    actor: str = "reflect"
    job_id: int | None = None
    id: int = 0
    created_at: float = 0.0
    reverted_at: float | None = None
    reverted_by: str | None = None
    revert_note: str | None = None


@dataclass(slots=True, kw_only=True)
class SessionVerdictDay:
    """Session verdicts of one day, tallied where they are stored (``Storage.session_verdict_days``).

    ``day`` counts whole days from the window's start; ``shadow_judged`` are the verdicts that
    compared a shadow answer, ``shadow_won`` those where the shadow was (slightly) better.
    """

    day: int
    judged: int = 0
    succeeded: int = 0
    corrections: int = 0
    escalated: int = 0
    shadow_judged: int = 0
    shadow_won: int = 0


@dataclass(slots=True, kw_only=True)
class Bookmark:
    """How far an extractor has read one user's interactions."""

    org_id: str
    user_id: str
    extractor: str
    last_interaction_id: int = 0
    updated_at: float = 0.0


class JobStatus(StrEnum):
    """Where a job is in its life."""

    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    DEAD = "dead"


@dataclass(slots=True, kw_only=True)
class Job:
    """Durable background work. ``key`` dedupes queued jobs and makes timers debounceable."""

    org_id: str
    task: str
    id: int = 0
    key: str | None = None
    payload: dict[str, Any] = field(default_factory=dict)
    status: JobStatus = JobStatus.QUEUED
    run_at: float = 0.0
    attempts: int = 0
    max_attempts: int = 5
    lease_owner: str | None = None
    lease_expires_at: float | None = None
    last_error: str | None = None
    request_id: str | None = None
    created_at: float = 0.0
    updated_at: float = 0.0
    finished_at: float | None = None
    #: What a long job reports while it runs (users done, counts...); see ``set_job_progress``.
    progress: dict[str, Any] = field(default_factory=dict)
    #: The trace the job continues (W3C ``traceparent`` headers of whoever enqueued it).
    trace_context: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class JobStats:
    """How many jobs of one org and task are in one open status (what ``/metrics`` reports).

    ``oldest_due`` is the run time of the oldest queued job that is due (None when none is).
    """

    org_id: str
    task: str
    status: JobStatus
    count: int
    oldest_due: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelUsage:
    """An org's LLM use of one model, summed over every call ever accounted."""

    org_id: str
    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0


@dataclass(slots=True, kw_only=True)
class StreamEventRecord:
    """One event of an org's live stream (``GET /api/events``); ``seq`` orders it in the org."""

    org_id: str
    type: str
    seq: int = 0
    kind: str | None = None
    subject_id: str | None = None
    user_id: str | None = None
    data: dict[str, Any] = field(default_factory=dict)
    created_at: float = 0.0


@dataclass(slots=True, kw_only=True)
class ApiKeyRecord:
    """An API key, stored as a SHA-256 hash; the plain key is shown once at creation."""

    org_id: str
    key_hash: str
    prefix: str
    id: int = 0
    name: str = ""
    created_at: float = 0.0
    revoked_at: float | None = None
    #: May review (approve, reject) on surfaces handed to agents: the MCP endpoint.
    reviewer: bool = False


@dataclass(slots=True, kw_only=True)
class LLMUsageRecord:
    """One logical LLM call (retries and the repair attempt included): what it cost and took.

    Rows are written as calls finish, outside the job's effects transaction, so a job that
    fails after paying for a call still has that call accounted.
    """

    org_id: str
    role: str
    model: str
    prompt: str
    prompt_version: str = ""
    job_id: int | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    latency_ms: float = 0.0
    ok: bool = True
    error: str | None = None
    id: int = 0
    created_at: float = 0.0


@dataclass(slots=True, kw_only=True)
class ClusterRecord:
    """A cluster of one aggregation scope (org, agent version, playbook name) between runs.

    ``decided_fingerprint`` is the fingerprint of the members when a run last decided about
    the cluster: while it equals ``fingerprint`` the cluster costs the next run nothing.
    ``basis`` names what the members were grouped with (embedder, threshold); a run under
    another basis regroups the scope from scratch.
    """

    org_id: str
    agent_version: str
    playbook_name: str
    member_ids: tuple[int, ...]
    fingerprint: str
    decided_fingerprint: str | None = None
    agent_playbook_id: int | None = None
    revision_id: int | None = None
    basis: str | None = None
    id: int = 0
    updated_at: float = 0.0


@dataclass(slots=True, kw_only=True)
class ProposalRecord:
    """The evidence an agent playbook was proposed from, written once with it.

    It is the playbook's provenance (which user playbooks, how many users), its link to the
    approved playbook it revises, and to the rejection it follows: a rejected playbook is only
    re-proposed from users its proposal did not list.
    """

    org_id: str
    agent_playbook_id: int
    cluster_id: int
    member_ids: tuple[int, ...]
    user_ids: tuple[str, ...]
    revises_id: int | None = None
    follows_rejection_id: int | None = None
    job_id: int | None = None
    created_at: float = 0.0


@dataclass(slots=True, kw_only=True)
class ChangeLogRecord:
    """What one aggregation run added, removed and rewrote (agent playbook snapshots)."""

    org_id: str
    agent_version: str
    playbook_name: str
    run_mode: str = "incremental"
    added: list[dict[str, Any]] = field(default_factory=list)
    removed: list[dict[str, Any]] = field(default_factory=list)
    updated: list[dict[str, Any]] = field(default_factory=list)
    job_id: int | None = None
    id: int = 0
    created_at: float = 0.0


@dataclass(slots=True, kw_only=True)
class UsageTotals:
    """Sums over LLM usage rows (``failed`` counts calls that ended in an error)."""

    calls: int = 0
    failed: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    latency_ms: float = 0.0

    @property
    def tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens

    def add(self, other: UsageTotals) -> None:
        """Fold ``other`` into these totals."""
        self.calls += other.calls
        self.failed += other.failed
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.cost_usd += other.cost_usd
        self.latency_ms += other.latency_ms

    @classmethod
    def of_row(cls, row: LLMUsageRecord) -> UsageTotals:
        """The totals of a single call."""
        return cls(
            calls=1,
            failed=0 if row.ok else 1,
            prompt_tokens=row.prompt_tokens,
            completion_tokens=row.completion_tokens,
            cost_usd=row.cost_usd,
            latency_ms=row.latency_ms,
        )


@dataclass(slots=True, kw_only=True)
class UsageSummary(UsageTotals):
    """LLM usage of an org (or one job of it): overall totals and totals per role."""

    by_role: dict[str, UsageTotals] = field(default_factory=dict)

    @classmethod
    def of_roles(cls, by_role: dict[str, UsageTotals]) -> UsageSummary:
        """Overall totals computed from per-role totals."""
        out = cls(by_role=dict(sorted(by_role.items())))
        for totals in out.by_role.values():
            out.add(totals)
        return out
