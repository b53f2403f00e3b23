"""Wire shapes of Generalize: aggregation operations, change logs, provenance and review history.

Route and field names are Reflexio 0.2.32's (``/api/playbook_aggregation_operations``,
``/api/playbook_aggregation_change_logs``, ``/api/get_learning_provenance``). Additions are
marked: result counts beyond the original four, the reasons clusters were skipped, the review
history of an agent playbook and the pending-review queue a dashboard lists.
"""

from typing import Any, Literal

from pydantic import Field

from reflexio.models.api_generation import AgentVersion
from reflexio.models.entities import (
    AgentPlaybookView,
    BlockingIssue,
    InteractionView,
    PlaybookStatus,
    RetrievedLearningKind,
    UserPlaybookView,
)
from reflexio.models.fields import (
    DEFAULT_AGENT_VERSION,
    Id,
    NonEmptyStr,
    RequestModel,
    RowId,
    WireModel,
    now_epoch,
)

__all__ = [
    "AgentPlaybookHistoryRequest",
    "AgentPlaybookHistoryResponse",
    "AgentPlaybookSnapshot",
    "AgentPlaybookUpdateEntry",
    "GetLearningProvenanceRequest",
    "GetLearningProvenanceResponse",
    "GetReviewQueueRequest",
    "PendingReviewItem",
    "PendingReviewResponse",
    "PlaybookAggregationChangeLog",
    "PlaybookAggregationChangeLogResponse",
    "PlaybookAggregationOperation",
    "PlaybookAggregationOperationRequest",
    "PlaybookAggregationResult",
    "ReviewEvent",
]

OperationState = Literal["queued", "running", "retrying", "succeeded", "failed"]


class PlaybookAggregationOperationRequest(RequestModel):
    """Start a durable aggregation of one agent version's user playbooks (202 + operation id).

    ``request_id`` is the caller's idempotency key: the same id returns the same operation.
    ``full`` (addition) re-clusters every member instead of the incremental run.
    """

    request_id: Id | None = None
    agent_version: AgentVersion = DEFAULT_AGENT_VERSION
    playbook_name: Id = "playbook"
    full: bool = False


class PlaybookAggregationResult(WireModel):
    """What one aggregation run did (the first four are 0.2.32's)."""

    clusters_found: int = 0
    user_playbooks_processed: int = 0
    playbooks_generated: int = 0
    skipped: str | None = None
    clusters_changed: int = 0  # addition: clusters whose members changed since the last run
    clusters_unchanged: int = 0  # addition: cost nothing (no model call, no write)
    playbooks_updated: int = 0  # addition: pending playbooks rewritten in place
    revisions_proposed: int = 0  # addition: pending revisions of approved playbooks
    playbooks_retired: int = 0  # addition: pending playbooks whose evidence fell below the gate
    below_gate: int = 0  # addition: clusters with fewer than min_users distinct users
    same_evidence_as_rejected: int = 0  # addition: rejections not re-proposed
    aggregator_calls: int = 0  # addition: model (or deterministic) aggregations made
    failed_clusters: int = 0  # addition: clusters left for the next run (unusable model answer)


class PlaybookAggregationOperation(WireModel):
    """A durable aggregation: its state, attempts, progress and, once done, its result."""

    operation_id: str
    status: OperationState
    attempts: int = 0
    agent_version: str = ""
    playbook_name: str = "playbook"
    progress: dict[str, Any] = Field(default_factory=dict)  # addition: stage and counts so far
    result: PlaybookAggregationResult | None = None
    error: str | None = None
    created_at: int = Field(default_factory=now_epoch)
    updated_at: int = Field(default_factory=now_epoch)
    finished_at: int | None = None


class AgentPlaybookSnapshot(WireModel):
    """An agent playbook as a change log records it (no vector, no lifecycle bookkeeping)."""

    agent_playbook_id: int
    playbook_name: str = ""
    agent_version: str
    content: str
    trigger: str | None = None
    rationale: str | None = None
    blocking_issue: BlockingIssue | None = None
    playbook_status: PlaybookStatus = PlaybookStatus.PENDING
    playbook_metadata: str = ""


class AgentPlaybookUpdateEntry(WireModel):
    """One agent playbook before and after a run changed it."""

    before: AgentPlaybookSnapshot
    after: AgentPlaybookSnapshot


class PlaybookAggregationChangeLog(WireModel):
    """What one aggregation run added, retired and rewrote."""

    id: int = 0
    created_at: int = Field(default_factory=now_epoch)
    playbook_name: str = ""
    agent_version: str
    run_mode: Literal["full_archive", "incremental"] = "incremental"
    added_agent_playbooks: list[AgentPlaybookSnapshot] = Field(default_factory=list)
    removed_agent_playbooks: list[AgentPlaybookSnapshot] = Field(default_factory=list)
    updated_agent_playbooks: list[AgentPlaybookUpdateEntry] = Field(default_factory=list)


class PlaybookAggregationChangeLogResponse(WireModel):
    """The latest change logs of one (playbook name, agent version), newest first."""

    success: bool
    change_logs: list[PlaybookAggregationChangeLog] = Field(default_factory=list)
    msg: str | None = None


class GetLearningProvenanceRequest(RequestModel):
    """Where a learning came from: ``kind`` and its wire id."""

    kind: RetrievedLearningKind
    id: Id


class GetLearningProvenanceResponse(WireModel):
    """The chain from a learning down to the interactions it was learned from.

    ``exact`` when every link is stored; ``best_effort`` when some source is gone (a user
    playbook superseded, an interaction deleted); ``unavailable`` when nothing is known.
    """

    success: bool = True
    kind: RetrievedLearningKind
    id: str
    provenance_status: Literal["exact", "best_effort", "unavailable"]
    trigger_request_id: str | None = None
    source_interactions: list[InteractionView] = Field(default_factory=list)
    source_user_playbooks: list[UserPlaybookView] = Field(default_factory=list)
    distinct_users: int = 0  # addition: how many users taught what an agent playbook generalises
    revises_agent_playbook_id: int | None = None  # addition: the approved playbook it revises
    follows_rejected_agent_playbook_id: int | None = None  # addition: the rejection it follows
    msg: str | None = None


class ReviewEvent(WireModel):
    """One entry of an agent playbook's history: what was done, by whom, and why."""

    event: str
    actor: str
    note: str = ""
    created_at: float
    before: dict[str, Any] | None = None
    after: dict[str, Any] | None = None


class AgentPlaybookHistoryRequest(RequestModel):
    """The history of one agent playbook (addition)."""

    agent_playbook_id: RowId


class AgentPlaybookHistoryResponse(WireModel):
    """Every event of an agent playbook, newest first, refused attempts included (addition)."""

    success: bool = True
    agent_playbook_id: int
    state: str
    events: list[ReviewEvent] = Field(default_factory=list)


class PendingReviewItem(WireModel):
    """A playbook waiting for review, with its evidence (addition, for review screens)."""

    agent_playbook: AgentPlaybookView
    distinct_users: int
    source_user_playbooks: list[UserPlaybookView] = Field(default_factory=list)
    revises: AgentPlaybookView | None = None
    follows_rejected_agent_playbook_id: int | None = None


class GetReviewQueueRequest(RequestModel):
    """``POST /api/get_agent_playbook_review_queue`` (addition): what waits for a reviewer."""

    agent_version: NonEmptyStr | None = None
    limit: int = Field(default=100, gt=0, le=1000)


class PendingReviewResponse(WireModel):
    """The review queue and the counts per review state (addition)."""

    success: bool = True
    pending: list[PendingReviewItem] = Field(default_factory=list)
    counts: dict[str, int] = Field(default_factory=dict)
