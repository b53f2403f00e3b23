"""Generalize: aggregation runs as durable jobs, their operations and change logs.

One ``aggregate`` job per (org, agent version, playbook name) (``learn.aggregation_trigger``)
runs the steps of docs/generalize.md: read the scope's current user playbooks with their
vectors and the stored clusters; regroup (``learn.cluster``); decide per cluster
(``learn.generalize``) — unchanged clusters cost nothing, no call and no write; draft the
changed ones outside any transaction (one LLM call each with a provider, the deterministic
aggregator without); then write agent playbooks, proposals, clusters, the change log and the
operation's result in the job's effects transaction, which also completes the job.

A new agent playbook is pending, or approved at once when the org's auto-approval policy
holds (``aggregation_config.auto_approve_min_users`` distinct users, never with
``approval_required``). Approved text is never overwritten: a changed cluster proposes a
pending revision linked to it. A rejected playbook is re-proposed only when users its
proposal did not list teach the lesson, linked to the rejection.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from reflexio.errors import NotFoundError
from reflexio.filters import LearningFilter
from reflexio.jobs import Handler, JobContext, Worker
from reflexio.learn.aggregate import Aggregator, CentralAggregator, Draft, Evidence, LLMAggregator
from reflexio.learn.aggregation_trigger import AGGREGATE, aggregation_job, playbook_names, scope_of
from reflexio.learn.cluster import Cluster, Member, default_similarity, regroup
from reflexio.learn.generalize import Policy, Proposed, Stored, Verdict, Work, plan
from reflexio.learn.review import ReviewState, state_of
from reflexio.learn.usage import metered
from reflexio.llm import LLMError
from reflexio.models.api_aggregation import (
    AgentPlaybookSnapshot,
    PlaybookAggregationChangeLog,
    PlaybookAggregationChangeLogResponse,
    PlaybookAggregationOperation,
    PlaybookAggregationOperationRequest,
    PlaybookAggregationResult,
)
from reflexio.models.api_generation import RunPlaybookAggregationResponse
from reflexio.models.org_config import Config
from reflexio.records import (
    Approval,
    Audit,
    ChangeLogRecord,
    ClusterRecord,
    Job,
    JobStatus,
    Learning,
    LearningKind,
    LearningStatus,
    ProposalRecord,
)
from reflexio.service.core import Core
from reflexio.service.learners import org_llm
from reflexio.storage import Storage

__all__ = [
    "aggregation_handler",
    "change_logs",
    "get_operation",
    "policy_of",
    "run_and_wait",
    "run_response",
    "submit",
]

log = logging.getLogger(__name__)

USER = LearningKind.USER_PLAYBOOK
AGENT = LearningKind.AGENT_PLAYBOOK
#: The actor aggregation's writes are recorded under.
ACTOR = "aggregation"
#: How much more similar than the clustering threshold two members' vectors must be for the
#: offline aggregator to count them as one direction whatever their words.
DIRECTION_MARGIN = 0.1
#: Least time between two progress reports of a run (each is a write).
REPORT_SECONDS = 0.5


def policy_of(config: Config) -> Policy:
    """The org's generalisation gate from its ``aggregation_config``."""
    agg = _aggregation_config(config)
    if agg is None:
        return Policy()
    return Policy(
        min_users=agg.min_users,
        min_cluster_size=agg.min_cluster_size,
        trigger_count=agg.reaggregation_trigger_count,
    )


def _aggregation_config(config: Config) -> Any:
    extractor = config.user_playbook_extractor_config
    return extractor.aggregation_config if extractor is not None else None


def auto_approves(config: Config, users: int) -> bool:
    """Whether a new agent playbook taught by ``users`` distinct users is approved at once."""
    agg = _aggregation_config(config)
    threshold = agg.auto_approve_min_users if agg is not None else None
    return not config.approval_required and threshold is not None and users >= threshold


# -- reading a scope ------------------------------------------------------------------------------
@dataclass(slots=True)
class _Scope:
    """What a run reads of one scope before deciding anything."""

    org_id: str
    agent_version: str
    playbook_name: str
    members: list[Learning] = field(default_factory=list)
    clusters: list[ClusterRecord] = field(default_factory=list)
    playbooks: dict[int, Learning] = field(default_factory=dict)
    proposals: dict[int, ProposalRecord] = field(default_factory=dict)
    rewritten: set[int] = field(default_factory=set)

    def stored(self) -> dict[int, Stored]:
        """What each stored cluster produced, as the planner sees it."""
        return {
            c.id: Stored(
                key=c.id,
                aggregated=c.decided_fingerprint,
                playbook=self._proposed(c.agent_playbook_id),
                revision=self._proposed(c.revision_id),
            )
            for c in self.clusters
        }

    def _proposed(self, playbook_id: int | None) -> Proposed | None:
        if playbook_id is None:
            return None
        row = self.playbooks.get(playbook_id)
        state = state_of(row.approval, row.status) if row else ReviewState.DELETED
        proposal = self.proposals.get(playbook_id)
        return Proposed(
            playbook_id=playbook_id,
            state=state,
            member_ids=frozenset(proposal.member_ids if proposal else ()),
            user_ids=frozenset(proposal.user_ids if proposal else ()),
            by_reviewer=playbook_id in self.rewritten,
        )


def _read_scope(storage: Storage, org_id: str, agent_version: str, playbook_name: str) -> _Scope:
    scope = _Scope(org_id, agent_version, playbook_name)
    for name in playbook_names(playbook_name):
        current = LearningFilter(
            kinds=(USER,),
            agent_version=agent_version,
            playbook_name=name,
            statuses=(LearningStatus.CURRENT,),
            active_at=int(time.time()),
        )
        found = storage.get_learnings(org_id, current)
        scope.members += [r for r in found if r.embedding is not None and r.user_id]
    scope.clusters = storage.list_clusters(org_id, agent_version, playbook_name)
    ids = sorted({i for c in scope.clusters for i in (c.agent_playbook_id, c.revision_id) if i is not None})
    if ids:
        rows = storage.get_learnings(org_id, LearningFilter(kinds=(AGENT,), ids=tuple(ids)))
        scope.playbooks = {r.id: r for r in rows}
        scope.proposals = {p.agent_playbook_id: p for p in storage.get_proposals(org_id, ids)}
        history = storage.list_events(org_id, learning_ids=ids, kinds=[AGENT.value], limit=10_000)
        # A text change made outside an aggregation job is a reviewer's: their words stay.
        scope.rewritten = {e.learning_id for e in history if e.event == "updated" and e.job_id is None}
    return scope


# -- one run --------------------------------------------------------------------------------------
@dataclass(slots=True)
class _Outcome:
    """What a run writes, gathered before the write transaction opens."""

    result: PlaybookAggregationResult
    clusters: list[Cluster]
    removed: list[int]
    works: list[Work]
    drafts: dict[int, Draft]  # index into works → its draft
    failed: set[int]  # index into works whose draft failed: left undecided for the next run


def _aggregator(core: Core, config: Config, org_id: str, job_id: int | None, similarity: float) -> Aggregator:
    llm = org_llm(core, config)
    if llm is None:
        agg = _aggregation_config(config)
        overlap = agg.direction_overlap_threshold if agg is not None else 0.6
        return CentralAggregator(overlap=overlap, link_similarity=similarity + DIRECTION_MARGIN)
    return LLMAggregator(
        metered(llm, core.storage, org_id, job_id), agent_context=config.agent_context_prompt or ""
    )


def _decide(
    core: Core,
    config: Config,
    scope: _Scope,
    *,
    full: bool,
    job_id: int | None,
    report: Callable[[dict[str, Any]], object] = lambda _: None,
) -> _Outcome:
    agg = _aggregation_config(config)
    similarity = agg.clustering_similarity if agg is not None and agg.clustering_similarity else None
    similarity = similarity or default_similarity(core.embedder.name)
    members = [Member(r.id, str(r.user_id), r.embedding) for r in scope.members if r.embedding is not None]
    previous = [Cluster(c.id, c.member_ids) for c in scope.clusters]
    regrouped = regroup(previous, members, similarity, full=full)
    authors = {r.id: str(r.user_id) for r in scope.members}
    policy = policy_of(config)
    works = plan(regrouped.clusters, scope.stored(), authors, policy)
    evidence = {
        r.id: Evidence(
            r.id, str(r.user_id), r.content, r.trigger, r.rationale, r.pitfall, r.blocking_issue, r.embedding
        )
        for r in scope.members
    }
    aggregator = _aggregator(core, config, scope.org_id, job_id, similarity)
    drafts: dict[int, Draft] = {}
    failed: set[int] = set()
    result = PlaybookAggregationResult(
        clusters_found=len(regrouped.clusters), user_playbooks_processed=len(members)
    )
    todo = [n for n, work in enumerate(works) if work.verdict.needs_text]
    report({"stage": "aggregating", "clusters_done": 0, "clusters_total": len(todo)})
    reported = time.monotonic()
    for done, n in enumerate(todo, start=1):
        work = works[n]
        result.aggregator_calls += 1
        try:
            draft = aggregator.aggregate(
                [evidence[i] for i in work.cluster.member_ids], min_users=policy.min_users
            )
        except LLMError as exc:  # an unusable answer: this cluster waits for the next run
            log.warning("aggregation of cluster %s failed: %s", work.cluster.key, exc)
            failed.add(n)
            draft = None
        if draft is not None:
            drafts[n] = draft
        if time.monotonic() - reported >= REPORT_SECONDS:  # a write per report: not per cluster
            report({"stage": "aggregating", "clusters_done": done, "clusters_total": len(todo)})
            reported = time.monotonic()
    return _Outcome(result, regrouped.clusters, regrouped.removed, works, drafts, failed)


def _snapshot(row: Learning) -> dict[str, Any]:
    return AgentPlaybookSnapshot(
        agent_playbook_id=row.id,
        playbook_name=row.playbook_name,
        agent_version=row.agent_version,
        content=row.content,
        trigger=row.trigger,
        rationale=row.rationale,
        blocking_issue=row.blocking_issue,
        playbook_status=(row.approval or Approval.PENDING).value,
    ).model_dump(mode="json")


@dataclass(slots=True)
class _Writer:
    """Writes one run's outcome through a transaction."""

    tx: Storage
    scope: _Scope
    config: Config
    audit: Audit
    job_id: int | None
    log: ChangeLogRecord

    def new_playbook(self, draft: Draft, users: frozenset[str], *, revision: bool) -> Learning:
        approved = not revision and auto_approves(self.config, len(users))
        row = Learning(
            org_id=self.scope.org_id,
            kind=AGENT,
            content=draft.content,
            agent_version=self.scope.agent_version,
            playbook_name=self.scope.playbook_name,
            trigger=draft.trigger,
            rationale=draft.rationale,
            pitfall=draft.pitfall,
            blocking_issue=draft.blocking_issue,
            approval=Approval.APPROVED if approved else Approval.PENDING,
            source="aggregation",
        )
        (saved,) = self.tx.save_learnings([row], self.audit)
        self.log.added.append(_snapshot(saved))
        return saved

    def rewrite(self, playbook_id: int, draft: Draft) -> Learning | None:
        old = self.scope.playbooks.get(playbook_id)
        if old is None:
            return None
        new = old.copy(
            content=draft.content,
            trigger=draft.trigger,
            rationale=draft.rationale,
            pitfall=draft.pitfall,
            blocking_issue=draft.blocking_issue,
        )
        (saved,) = self.tx.save_learnings([new], self.audit)
        self.log.updated.append({"before": _snapshot(old), "after": _snapshot(saved)})
        return saved

    def retire(self, playbook_id: int) -> None:
        """A pending playbook whose evidence fell below the gate leaves review (archived)."""
        old = self.scope.playbooks.get(playbook_id)
        where = LearningFilter(
            kinds=(AGENT,),
            ids=(playbook_id,),
            approvals=(Approval.PENDING,),
            statuses=(LearningStatus.CURRENT,),
        )
        if old is not None and self.tx.update_learnings(
            self.scope.org_id, where, {"status": LearningStatus.ARCHIVED}, self.audit
        ):
            self.log.removed.append(_snapshot(old))

    def propose(
        self,
        cluster_id: int,
        playbook: Learning,
        work: Work,
        *,
        revises_id: int | None = None,
        follows_rejection_id: int | None = None,
    ) -> None:
        """Its evidence: the cluster's members and users (a rejection is re-proposed only
        from users this list does not hold)."""
        self.tx.add_proposals(
            [
                ProposalRecord(
                    org_id=self.scope.org_id,
                    agent_playbook_id=playbook.id,
                    cluster_id=cluster_id,
                    member_ids=tuple(work.cluster.member_ids),
                    user_ids=tuple(sorted(work.users)),
                    job_id=self.job_id,
                    revises_id=revises_id,
                    follows_rejection_id=follows_rejection_id,
                )
            ]
        )


def _write(
    tx: Storage, scope: _Scope, config: Config, outcome: _Outcome, *, full: bool, job_id: int | None
) -> None:
    audit = Audit(actor=ACTOR, reason="aggregated from user playbooks", job_id=job_id)
    change_log = ChangeLogRecord(
        org_id=scope.org_id,
        agent_version=scope.agent_version,
        playbook_name=scope.playbook_name,
        run_mode="full_archive" if full else "incremental",
        job_id=job_id,
    )
    w = _Writer(tx, scope, config, audit, job_id, change_log)
    result = outcome.result
    stored = {c.id: c for c in scope.clusters}
    for gone in outcome.removed:  # every member left: its pending playbook has no evidence now
        for pid in (stored[gone].agent_playbook_id, stored[gone].revision_id):
            if pid is not None and pid not in scope.rewritten:
                w.retire(pid)
    rows: list[ClusterRecord] = []
    for n, work in enumerate(outcome.works):
        cluster = work.cluster
        before = stored.get(cluster.key)
        record = before or ClusterRecord(
            org_id=scope.org_id,
            agent_version=scope.agent_version,
            playbook_name=scope.playbook_name,
            member_ids=(),
            fingerprint="",
        )
        if work.verdict is Verdict.UNCHANGED:
            result.clusters_unchanged += 1
            if record.member_ids != tuple(cluster.member_ids):  # same set, other order: nothing to write
                rows.append(replace(record, member_ids=tuple(cluster.member_ids)))
            continue
        result.clusters_changed += 1
        record = replace(record, member_ids=tuple(cluster.member_ids), fingerprint=cluster.fingerprint)
        if n in outcome.failed:
            result.failed_clusters += 1
            rows.append(record)  # members stored, decision left for the next run
            continue
        record = replace(record, decided_fingerprint=cluster.fingerprint)
        if not record.id:
            (record,) = tx.save_clusters(scope.org_id, scope.agent_version, scope.playbook_name, [record])
        record = _apply(w, record, work, outcome.drafts.get(n), result)
        rows.append(record)
    tx.save_clusters(scope.org_id, scope.agent_version, scope.playbook_name, rows, outcome.removed)
    if change_log.added or change_log.removed or change_log.updated:
        tx.add_change_log(change_log)


def _apply(
    w: _Writer, record: ClusterRecord, work: Work, draft: Draft | None, result: PlaybookAggregationResult
) -> ClusterRecord:
    """One cluster's verdict, written; returns its cluster row as it is now."""
    verdict = work.verdict
    if verdict is Verdict.BELOW_GATE:
        result.below_gate += 1
        if work.target is not None:
            w.retire(work.target)
            result.playbooks_retired += 1
        return record
    if verdict is Verdict.SAME_EVIDENCE:
        result.same_evidence_as_rejected += 1
        return record
    if verdict is Verdict.FEW_CHANGES or draft is None:
        return record
    if verdict is Verdict.PROPOSE:
        new = w.new_playbook(draft, work.users, revision=False)
        w.propose(record.id, new, work, follows_rejection_id=work.target)
        result.playbooks_generated += 1
        return replace(record, agent_playbook_id=new.id, revision_id=None)
    if verdict is Verdict.UPDATE and work.target is not None:
        updated = w.rewrite(work.target, draft)
        if updated is not None:
            old = w.scope.proposals.get(work.target)
            w.propose(record.id, updated, work, revises_id=old.revises_id if old else None)
            result.playbooks_updated += 1
        return record
    # REVISE: approved text stays; a pending revision linked to it is proposed.
    live = record.revision_id if _is_approved(w.scope, record.revision_id) else record.agent_playbook_id
    revision = w.new_playbook(draft, work.users, revision=True)
    w.propose(record.id, revision, work, revises_id=live)
    result.revisions_proposed += 1
    return replace(record, agent_playbook_id=live, revision_id=revision.id)


def _is_approved(scope: _Scope, playbook_id: int | None) -> bool:
    row = scope.playbooks.get(playbook_id) if playbook_id is not None else None
    return row is not None and row.approval is Approval.APPROVED and row.status is LearningStatus.CURRENT


def aggregation_handler(core: Core) -> Handler:
    """The ``aggregate`` task: one run of one scope, committed with the job."""

    def handle(ctx: JobContext) -> None:
        job = ctx.job
        agent_version, playbook_name = scope_of(job.key or "")
        full = bool(job.payload.get("full"))
        config = core.org_config(job.org_id)
        ctx.storage.set_job_progress(job.id, ctx.worker, {"stage": "clustering"})
        scope = _read_scope(core.storage, job.org_id, agent_version, playbook_name)
        outcome = _decide(
            core,
            config,
            scope,
            full=full,
            job_id=job.id,
            report=lambda progress: ctx.storage.set_job_progress(job.id, ctx.worker, progress),
        )
        with ctx.effects() as tx:
            _write(tx, scope, config, outcome, full=full, job_id=job.id)
            total = outcome.result.aggregator_calls
            progress = {"stage": "done", "clusters_done": total, "clusters_total": total}
            tx.set_job_progress(job.id, ctx.worker, progress | {"result": outcome.result.model_dump()})

    return handle


# -- operations -----------------------------------------------------------------------------------
_STATES = {
    JobStatus.QUEUED: "queued",
    JobStatus.RUNNING: "running",
    JobStatus.DONE: "succeeded",
    JobStatus.DEAD: "failed",
}


def operation_of(job: Job) -> PlaybookAggregationOperation:
    """A job of the ``aggregate`` task as 0.2.32's operation."""
    status = _STATES[job.status]
    if job.status is JobStatus.QUEUED and job.attempts:
        status = "retrying"
    agent_version, playbook_name = scope_of(job.key or "")
    done = job.progress.get("result")
    return PlaybookAggregationOperation(
        operation_id=str(job.id),
        status=status,
        attempts=job.attempts,
        agent_version=agent_version,
        playbook_name=playbook_name,
        progress={k: v for k, v in job.progress.items() if k != "result"},
        result=PlaybookAggregationResult.model_validate(done) if isinstance(done, Mapping) else None,
        error=job.last_error if job.status is not JobStatus.DONE else None,
        created_at=int(job.created_at),
        updated_at=int(job.updated_at),
        finished_at=int(job.finished_at) if job.finished_at else None,
    )


def submit(core: Core, org_id: str, req: PlaybookAggregationOperationRequest) -> PlaybookAggregationOperation:
    """Queue the scope's aggregation due now (joining one already queued); the same
    ``request_id`` returns the same operation."""
    if req.request_id:
        earlier = core.storage.list_jobs(org_id, task=AGGREGATE, request_id=req.request_id, limit=1)
        if earlier:
            return operation_of(earlier[0])
    job = aggregation_job(
        org_id, req.agent_version, req.playbook_name, delay=0.0, full=req.full, request_id=req.request_id
    )
    (queued,) = core.storage.enqueue_jobs([job], debounce=True)
    return operation_of(queued)


def get_operation(core: Core, org_id: str, operation_id: str) -> PlaybookAggregationOperation:
    """One aggregation operation of the org.

    Raises:
        NotFoundError: No aggregation operation with this id in the org.
    """
    job = core.storage.get_job(int(operation_id)) if operation_id.isdigit() else None
    if job is None or job.org_id != org_id or job.task != AGGREGATE:
        raise NotFoundError(f"playbook aggregation operation {operation_id} not found")
    return operation_of(job)


def run_and_wait(
    core: Core,
    org_id: str,
    req: PlaybookAggregationOperationRequest,
    *,
    wait_seconds: float,
    poll_seconds: float = 0.1,
) -> PlaybookAggregationOperation:
    """Submit and wait (up to ``wait_seconds``) for the run: 0.2.32's synchronous
    ``run_playbook_aggregation``, run by the same durable job.

    The waiting request helps the queue: it claims due aggregation jobs itself (leased like
    any worker's, so a worker elsewhere never runs the same one), so a server started without
    workers still answers; when a worker already holds the job, it waits for that one.
    """
    op = submit(core, org_id, req)
    helper = Worker(
        core.storage,
        {AGGREGATE: aggregation_handler(core)},
        name=f"api:{uuid.uuid4().hex[:8]}",
        lease_seconds=core.settings.job_lease_seconds,
    )
    deadline = time.monotonic() + wait_seconds
    while op.status not in ("succeeded", "failed") and time.monotonic() < deadline:
        if not helper.run_once():
            time.sleep(poll_seconds)
        op = get_operation(core, org_id, op.operation_id)
    return op


def run_response(op: PlaybookAggregationOperation) -> RunPlaybookAggregationResponse:
    """0.2.32's answer to a synchronous run: did it finish, and what it did."""
    if op.status == "succeeded" and op.result is not None:
        r = op.result
        message = (
            f"Aggregated {r.user_playbooks_processed} user playbook(s) into {r.clusters_found} "
            f"cluster(s): {r.playbooks_generated} new, {r.playbooks_updated} updated, "
            f"{r.revisions_proposed} revision(s), {r.clusters_unchanged} unchanged"
        )
        return RunPlaybookAggregationResponse(success=True, message=message)
    if op.status == "failed":
        return RunPlaybookAggregationResponse(success=False, message=f"aggregation failed: {op.error}")
    return RunPlaybookAggregationResponse(
        success=False, message=f"aggregation is still {op.status}: follow operation {op.operation_id}"
    )


def change_logs(
    core: Core, org_id: str, *, agent_version: str, playbook_name: str, limit: int = 10
) -> PlaybookAggregationChangeLogResponse:
    """The latest change logs of one scope, newest first."""
    found = core.storage.list_change_logs(org_id, agent_version, playbook_name, limit=limit)
    logs = [
        PlaybookAggregationChangeLog(
            id=r.id,
            created_at=int(r.created_at),
            playbook_name=r.playbook_name,
            agent_version=r.agent_version,
            run_mode=r.run_mode,
            added_agent_playbooks=r.added,
            removed_agent_playbooks=r.removed,
            updated_agent_playbooks=r.updated,
        )
        for r in found
    ]
    return PlaybookAggregationChangeLogResponse(success=True, change_logs=logs)
