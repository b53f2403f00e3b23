"""The storage protocol: what the service needs from storage, and the job queue inside it.

One implementation (``sql_storage.SqlStorage``) serves it over SQLite and PostgreSQL. The
protocol is narrow on purpose: a handful of primitives per table, with variants expressed as
data (filters, kinds, statuses) rather than method families. ``transaction()`` returns an
object that satisfies this same protocol, bound to one database transaction, so "publish the
request and enqueue its jobs" or "write the learnings and complete the job" commit together or
not at all. Every method takes the org first; nothing reads or writes across orgs.

Learnings own their vectors: a backend is opened with an ``Embedder`` and recomputes a row's
embedding whenever its searchable text changes, so the vector can never describe stale text.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol, runtime_checkable

from reflexio.filters import (
    Candidate,
    CandidateQuery,
    InteractionFilter,
    LearningFilter,
    RequestFilter,
)
from reflexio.records import (
    ApiKeyRecord,
    Audit,
    Bookmark,
    ChangeLogRecord,
    ClusterRecord,
    EvaluationRecord,
    ExposureRecord,
    InteractionRecord,
    Job,
    JobStats,
    JobStatus,
    Learning,
    LearningEvent,
    LLMUsageRecord,
    ModelUsage,
    OutcomeRecord,
    ProposalRecord,
    ReflectionActionRecord,
    RequestRecord,
    SessionVerdictDay,
    StreamEventRecord,
    UsageSummary,
)

__all__ = ["JobQueue", "Storage", "iter_chunks"]


@runtime_checkable
class JobQueue(Protocol):
    """What the worker loop (``reflexio.jobs``) needs: leases on job rows."""

    def claim_jobs(
        self,
        worker: str,
        *,
        limit: int,
        lease_seconds: float,
        tasks: Sequence[str] | None = None,
        org_id: str | None = None,
    ) -> list[Job]:
        """Atomically lease due queued jobs (and jobs whose lease expired) to ``worker``; only
        ``org_id``'s when given (a request helping the queue works for its own org only)."""
        ...

    def heartbeat_jobs(self, worker: str, job_ids: Sequence[int], lease_seconds: float) -> list[int]:
        """Extend leases still held by ``worker``; returns the ids it still holds."""
        ...

    def finish_job(
        self,
        job_id: int,
        worker: str,
        *,
        error: str | None = None,
        retry_at: float | None = None,
        spend_attempt: bool = True,
    ) -> bool:
        """Complete a leased job: done (no error), retried at ``retry_at``, or dead.

        ``spend_attempt=False`` requeues a job that did not fail but must wait: the attempt
        its claim counted is given back, so waiting can never dead-letter it.

        Returns:
            False when ``worker`` no longer holds the lease (nothing changed).
        """
        ...

    def release_jobs(self, worker: str, job_ids: Sequence[int]) -> int:
        """Give leased jobs back to the queue without counting an attempt (shutdown)."""
        ...


@runtime_checkable
class Storage(JobQueue, Protocol):
    """What the service needs from a backend."""

    #: Short backend name: "sqlite", "postgres", or "memory" (SQLite in a throwaway file).
    backend: str

    # -- lifecycle -----------------------------------------------------------------------
    def transaction(self) -> AbstractContextManager[Storage]:
        """Open a transaction; the yielded object is this protocol bound to it.

        Nested calls on a transaction yield the same transaction. On exception everything
        done through it is rolled back.
        """
        ...

    def ping(self) -> None:
        """Raise ``StorageError`` unless the backend answers a trivial query."""
        ...

    def close(self) -> None:
        """Release connections and caches."""
        ...

    # -- the log: requests and interactions ------------------------------------------------
    def insert_request(
        self, request: RequestRecord, interactions: Sequence[InteractionRecord]
    ) -> list[InteractionRecord]:
        """Store a request and its interactions; returns interactions with ids assigned.

        Raises:
            ConflictError: A request with the same (org, request_id) exists.
        """
        ...

    def get_request(self, org_id: str, request_id: str) -> RequestRecord | None:
        """One request by id, or None."""
        ...

    def list_requests(
        self, org_id: str, where: RequestFilter, *, limit: int, offset: int = 0
    ) -> list[RequestRecord]:
        """Requests matching ``where``, newest first."""
        ...

    def list_interactions(
        self,
        org_id: str,
        where: InteractionFilter,
        *,
        limit: int | None = None,
        newest_first: bool = False,
    ) -> list[InteractionRecord]:
        """Interactions matching ``where`` ordered by id (oldest first unless asked)."""
        ...

    def search_interactions(
        self, org_id: str, where: InteractionFilter, text: str, *, limit: int
    ) -> list[tuple[InteractionRecord, float]]:
        """Full-text search over interaction content, best first, with scores."""
        ...

    def delete_log(
        self,
        org_id: str,
        *,
        requests: RequestFilter | None = None,
        interactions: InteractionFilter | None = None,
    ) -> tuple[int, int]:
        """Delete requests (with their interactions) and/or single interactions.

        Returns:
            (requests deleted, interactions deleted).
        """
        ...

    # -- learnings --------------------------------------------------------------------------
    def save_learnings(self, rows: Sequence[Learning], /, audit: Audit) -> list[Learning]:
        """Insert rows with ``id == 0``, replace rows with an id; returns the stored rows.

        Embeddings are (re)computed for rows whose searchable text changed. Each change is
        recorded as a ``LearningEvent`` from ``audit``.

        Raises:
            NotFoundError: An id to update does not exist in the org.
            ConflictError: A profile_id is already used in the org by another row.
        """
        ...

    def get_learnings(self, org_id: str, where: LearningFilter) -> list[Learning]:
        """All learnings matching ``where`` (meant for id lookups), by id."""
        ...

    def list_learnings(
        self,
        org_id: str,
        where: LearningFilter,
        *,
        limit: int,
        offset: int = 0,
        newest_first: bool = True,
    ) -> list[Learning]:
        """Learnings matching ``where`` ordered by ``updated_at`` then id."""
        ...

    def count_learnings(self, org_id: str, where: LearningFilter) -> int:
        """How many learnings match ``where``."""
        ...

    def update_learnings(
        self, org_id: str, where: LearningFilter, changes: dict[str, Any], audit: Audit
    ) -> list[int]:
        """Set non-text fields (status, approval, superseded_by, tags...) on matching rows.

        Returns:
            Ids of the rows changed.
        """
        ...

    def delete_learnings(self, org_id: str, where: LearningFilter, audit: Audit) -> int:
        """Hard-delete matching rows, from full-text and vector search too."""
        ...

    def search_candidates(self, org_id: str, query: CandidateQuery) -> list[Candidate]:
        """Full-text and vector candidates per filter, filtered before ranking."""
        ...

    def warm_search(self) -> None:
        """Make the first search as fast as later ones (an in-process index loads now): what a
        server calls before it says ready."""
        ...

    def list_events(
        self,
        org_id: str,
        *,
        learning_ids: Sequence[int] | None = None,
        user_id: str | None = None,
        kinds: Sequence[str] | None = None,
        events: Sequence[str] | None = None,
        limit: int = 100,
    ) -> list[LearningEvent]:
        """Learning history, newest first (``events``: only these, e.g. ``["approved"]``)."""
        ...

    def add_events(self, events: Sequence[LearningEvent], /) -> None:
        """Append history events that change no row (a refused review attempt, a note).

        A decision that lost a race is part of the playbook's history: who tried what, and
        why it was refused, next to the decision that won.
        """
        ...

    def list_stream_events(
        self,
        org_id: str,
        *,
        after: int,
        types: Sequence[str] | None = None,
        kinds: Sequence[str] | None = None,
        user_id: str | None = None,
        limit: int = 500,
    ) -> list[StreamEventRecord]:
        """The org's live-stream events numbered after ``after``, in order (``storage.stream``)."""
        ...

    def last_stream_event(self, org_id: str) -> int:
        """The number of the org's latest stream event (0 when there is none)."""
        ...

    def add_exposures(self, org_id: str, session_id: str, refs: Sequence[tuple[str, str]]) -> None:
        """Remember that search served these (kind, learning id) pairs in a session."""
        ...

    def list_exposures(self, org_id: str, session_id: str) -> set[tuple[str, str]]:
        """(kind, learning id) pairs already served in a session."""
        ...

    def record_exposures(self, decisions: Sequence[ExposureRecord], /) -> None:
        """Record search's serve-or-withhold decisions; the first decision of a (session,
        learning) stands (the holdout hash would repeat it anyway)."""
        ...

    def learning_exposures(self, org_id: str, kind: str, learning_ids: Sequence[str]) -> list[ExposureRecord]:
        """Every decision about these learnings (of one kind), oldest first."""
        ...

    def most_exposed(
        self, org_id: str, *, kind: str | None = None, limit: int = 100
    ) -> list[tuple[str, str, int]]:
        """(kind, learning id, sessions) of the learnings decided on in most sessions."""
        ...

    # -- session outcomes, verdicts and reflection actions ----------------------------------
    def add_outcome(self, row: OutcomeRecord) -> OutcomeRecord:
        """Record a new revision of a session's outcome (revision = the session's last + 1)."""
        ...

    def list_outcomes(
        self,
        org_id: str,
        *,
        session_ids: Sequence[str] | None = None,
        user_id: str | None = None,
        source: str | None = None,
        outcome: str | None = None,
        label: str | None = None,
        occurred_after: int | None = None,
        occurred_before: int | None = None,
        latest_only: bool = True,
        limit: int = 100,
        offset: int = 0,
    ) -> list[OutcomeRecord]:
        """Outcomes, newest ``occurred_at`` first; only each session's latest revision unless
        ``latest_only`` is False."""
        ...

    def replace_evaluations(
        self,
        org_id: str,
        user_id: str,
        session_id: str,
        kinds: Sequence[str],
        rows: Sequence[EvaluationRecord],
    ) -> list[EvaluationRecord]:
        """Replace a session's judgements of these kinds (a re-judged session keeps one set)."""
        ...

    def find_evaluations(
        self,
        org_id: str,
        *,
        kind: str,
        session_ids: Sequence[str] | None = None,
        learning_kind: str | None = None,
        learning_ids: Sequence[str] | None = None,
        limit: int = 10_000,
    ) -> list[EvaluationRecord]:
        """Judgements of one kind for these sessions and/or learnings, newest first."""
        ...

    def add_reflection_actions(
        self, actions: Sequence[ReflectionActionRecord], /
    ) -> list[ReflectionActionRecord]:
        """Record actions taken on learnings; returns them with ids."""
        ...

    def list_reflection_actions(
        self,
        org_id: str,
        *,
        ids: Sequence[int] | None = None,
        learning_ids: Sequence[int] | None = None,
        related_learning_ids: Sequence[int] | None = None,
        kind: str | None = None,
        include_reverted: bool = True,
        limit: int = 100,
    ) -> list[ReflectionActionRecord]:
        """Actions, newest first (``related_learning_ids``: those naming one of these as the
        other learning, e.g. the revision a ``propose_revision`` action created)."""
        ...

    def revert_reflection_action(self, org_id: str, action_id: int, *, by: str, note: str | None) -> bool:
        """Mark an action reverted; False when it was already reverted or does not exist."""
        ...

    # -- aggregation state -------------------------------------------------------------------
    def list_clusters(self, org_id: str, agent_version: str, playbook_name: str) -> list[ClusterRecord]:
        """The stored clusters of one aggregation scope, by id."""
        ...

    def save_clusters(
        self,
        org_id: str,
        agent_version: str,
        playbook_name: str,
        upserts: Sequence[ClusterRecord],
        removed: Sequence[int] = (),
    ) -> list[ClusterRecord]:
        """Insert clusters with ``id == 0``, replace those with an id, drop ``removed`` ones.

        Only rows of the given scope are touched: an id of another org or scope changes
        nothing. Returns the upserted clusters with their ids.
        """
        ...

    def add_proposals(self, rows: Sequence[ProposalRecord], /) -> None:
        """Record the evidence agent playbooks were proposed from (one per playbook: a later
        proposal of the same playbook, rewritten in place, replaces it)."""
        ...

    def get_proposals(self, org_id: str, agent_playbook_ids: Sequence[int]) -> list[ProposalRecord]:
        """The proposals of these agent playbooks, by playbook id (missing ones are left out)."""
        ...

    def add_change_log(self, row: ChangeLogRecord, /) -> ChangeLogRecord:
        """Store what one aggregation run changed; returns it with its id and time."""
        ...

    def list_change_logs(
        self, org_id: str, agent_version: str, playbook_name: str, *, limit: int
    ) -> list[ChangeLogRecord]:
        """Change logs of one aggregation scope, newest first."""
        ...

    # -- evaluations, bookmarks, configs ---------------------------------------------------
    def add_evaluations(self, rows: Sequence[EvaluationRecord], /) -> list[EvaluationRecord]:
        """Store judgements; returns them with ids."""
        ...

    def list_evaluations(
        self,
        org_id: str,
        *,
        kind: str,
        user_id: str | None = None,
        session_id: str | None = None,
        agent_version: str | None = None,
        created_after: float | None = None,
        created_before: float | None = None,
        limit: int = 100,
    ) -> list[EvaluationRecord]:
        """Judgements of one kind, newest first."""
        ...

    def session_verdict_days(
        self, org_id: str, *, since: float, day_seconds: int, agent_version: str | None = None
    ) -> list[SessionVerdictDay]:
        """Session verdicts since ``since``, tallied per ``day_seconds`` (days without any omitted).

        Counted where they are stored, so a window of a million verdicts costs one grouped
        scan of the index, not a million decoded rows.
        """
        ...

    def get_bookmark(self, org_id: str, user_id: str, extractor: str) -> Bookmark | None:
        """An extractor's read position for one user."""
        ...

    def put_bookmark(self, bookmark: Bookmark) -> None:
        """Move an extractor's read position (insert or replace)."""
        ...

    def get_org_config(self, org_id: str) -> dict[str, Any] | None:
        """The org's stored config document, if any."""
        ...

    def put_org_config(self, org_id: str, config: dict[str, Any]) -> None:
        """Replace the org's config document."""
        ...

    # -- plans and quotas -------------------------------------------------------------------
    def get_org_plan(self, org_id: str) -> dict[str, Any] | None:
        """The plan an operator assigned to the org, if any (the server's default otherwise)."""
        ...

    def put_org_plan(self, org_id: str, plan: dict[str, Any] | None) -> None:
        """Assign the org a plan document, or remove its own (``None``) so the default applies."""
        ...

    def count_usage(
        self, org_id: str, period: str, meter: str, amount: int, *, limit: int | None
    ) -> int | None:
        """Add ``amount`` to the org's use of ``meter`` in ``period``, unless that exceeds ``limit``.

        Atomic (one statement): concurrent callers can never take the total past the limit.
        Returns the new total, or None when the amount did not fit and nothing was counted.
        """
        ...

    def usage_of_period(self, org_id: str, period: str) -> dict[str, int]:
        """What the org used of each counted meter in ``period`` (meters never used are absent)."""
        ...

    def clear_user(self, org_id: str, user_id: str) -> dict[str, int]:
        """Delete everything of one user (log, learnings, history, judgements, bookmarks)."""
        ...

    # -- api keys ---------------------------------------------------------------------------
    def add_api_key(self, key: ApiKeyRecord) -> ApiKeyRecord:
        """Store a hashed key."""
        ...

    def find_api_key(self, key_hash: str) -> ApiKeyRecord | None:
        """The active key with this hash, if any."""
        ...

    def list_api_keys(self, org_id: str | None = None) -> list[ApiKeyRecord]:
        """Keys (active and revoked), oldest first; all orgs when ``org_id`` is None."""
        ...

    def revoke_api_key(self, key_id: int) -> bool:
        """Revoke a key; False when it does not exist or was already revoked."""
        ...

    def set_api_key_reviewer(self, key_id: int, reviewer: bool) -> bool:
        """Let an active key review agent playbooks, or stop it; False when no such active key."""
        ...

    def has_api_keys(self) -> bool:
        """Whether any active key exists (then every /api request needs one)."""
        ...

    # -- jobs -------------------------------------------------------------------------------
    def enqueue_jobs(self, jobs: Sequence[Job], *, debounce: bool = False, sooner: bool = False) -> list[Job]:
        """Queue jobs. A job whose (org, task, key) is already queued is not duplicated:
        the queued one is returned, and with ``debounce`` its run time and payload move to
        the new job's (the session-idle timer); with ``sooner`` its run time moves to the new
        job's when that is earlier (an on-demand run joining a debounced one), and its payload
        to the new job's.
        """
        ...

    def set_job_progress(self, job_id: int, worker: str, progress: dict[str, Any]) -> bool:
        """Replace a running job's progress report, if ``worker`` still holds its lease.

        Long jobs (a rerun over every user) report what they have done so far, so callers can
        poll it; the lease check keeps a worker that lost the job from overwriting the report
        of the worker that took it over.

        Returns:
            False when ``worker`` no longer holds the lease (nothing changed).
        """
        ...

    def get_job(self, job_id: int) -> Job | None:
        """One job by id (any org; callers check the org)."""
        ...

    def list_jobs(
        self,
        org_id: str,
        *,
        statuses: Sequence[JobStatus] | None = None,
        request_id: str | None = None,
        task: str | None = None,
        key: str | None = None,
        limit: int = 100,
    ) -> list[Job]:
        """Jobs of an org, newest first."""
        ...

    def expedite_job(self, org_id: str, task: str, key: str) -> bool:
        """Make the queued job with this key due now; False when there is none."""
        ...

    def retry_jobs(self, org_id: str, job_ids: Sequence[int] | None = None) -> int:
        """Move dead jobs (all, or these) back to the queue with fresh attempts."""
        ...

    def job_stats(self) -> list[JobStats]:
        """Jobs per org, task and open status (queued, running, dead), across every org."""
        ...

    def list_orgs(self) -> list[str]:
        """Orgs that have written learnings (for per-org maintenance jobs)."""
        ...

    # -- vectors ----------------------------------------------------------------------------
    def orgs_with_stale_vectors(self) -> list[str]:
        """Orgs holding learnings whose vectors this backend's embedder did not make."""
        ...

    def refresh_vectors(self, org_id: str, *, limit: int) -> int:
        """Re-embed up to ``limit`` stale learnings of an org (after an embedder change).

        Only the vector changes: no history event, ``updated_at`` is kept. Returns how many
        rows were refreshed (0 when none is stale).
        """
        ...

    # -- LLM accounting ---------------------------------------------------------------------
    def add_llm_usage(self, rows: Sequence[LLMUsageRecord], /) -> None:
        """Record finished LLM calls (append-only; ``created_at`` 0 means now)."""
        ...

    def llm_usage_by_org(self) -> list[ModelUsage]:
        """LLM tokens and cost ever accounted, per org and model, across every org."""
        ...

    def llm_usage(
        self, org_id: str, *, job_id: int | None = None, since: float | None = None
    ) -> UsageSummary:
        """Totals of an org's LLM calls, per role; only one job's or those since a time."""
        ...


def iter_chunks(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    """Slices of at most ``size`` items (SQL parameter limits, batch embedding)."""
    for start in range(0, len(items), size):
        yield items[start : start + size]
