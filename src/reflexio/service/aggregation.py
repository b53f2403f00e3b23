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
from typing import Any

from reflexio.errors import NotFoundError, ReflexioError
from reflexio.jobs import Handler, JobContext, Worker
from reflexio.learn.aggregate import Aggregator, CentralAggregator, Draft, Evidence, LLMAggregator
from reflexio.learn.aggregation_trigger import AGGREGATE, aggregation_job, scope_of
from reflexio.learn.cluster import (
    Cluster,
    Member,
    Regrouping,
    default_similarity,
    merge_on_instructions,
    regroup,
)
from reflexio.learn.generalize import Policy, Stored, plan, short_of_gate
from reflexio.learn.usage import metered
from reflexio.llm import LLMError
from reflexio.models.api_aggregation import (
    PlaybookAggregationChangeLog,
    PlaybookAggregationChangeLogResponse,
    PlaybookAggregationOperation,
    PlaybookAggregationOperationRequest,
    PlaybookAggregationResult,
)
from reflexio.models.api_generation import RunPlaybookAggregationResponse
from reflexio.models.org_config import Config
from reflexio.records import Job, JobStatus
from reflexio.service import quotas
from reflexio.service.aggregation_state import Scope, aggregation_config, policy_of, read_scope
from reflexio.service.aggregation_writes import Outcome, write_outcome
from reflexio.service.core import Core
from reflexio.service.learners import org_llm

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

#: How much more similar than the clustering threshold two members' stored vectors must be for
#: the offline aggregator to count them as one direction whatever their words (a trigger two
#: members share raises it; their instructions' own vectors are compared at the threshold).
DIRECTION_MARGIN = 0.1
#: Least time between two progress reports of a run (each is a write).
REPORT_SECONDS = 0.5


def _aggregator(core: Core, config: Config, org_id: str, job_id: int | None, similarity: float) -> Aggregator:
    llm = org_llm(core, config)
    if llm is None:
        agg = aggregation_config(config)
        overlap = agg.direction_overlap_threshold if agg is not None else 0.6
        return CentralAggregator(
            overlap=overlap,
            link_similarity=similarity + DIRECTION_MARGIN,
            instruction_similarity=similarity,
            embed=lambda texts: core.embedder.embed(texts, kind="document"),
        )
    return LLMAggregator(
        metered(llm, core.storage, org_id, job_id), agent_context=config.agent_context_prompt or ""
    )


def _decide(
    core: Core,
    config: Config,
    scope: Scope,
    *,
    full: bool,
    job_id: int | None,
    report: Callable[[dict[str, Any]], object] = lambda _: None,
) -> Outcome:
    agg = aggregation_config(config)
    similarity = agg.clustering_similarity if agg is not None and agg.clustering_similarity else None
    similarity = similarity or default_similarity(core.embedder.name)
    basis = basis_of(core.embedder.name, similarity)
    # Clusters grouped under another embedder or threshold do not hold: regroup from scratch.
    full = full or any(c.basis != basis for c in scope.clusters)
    members = [
        Member(r.id, str(r.user_id), r.embedding)
        for r in scope.members
        if r.embedding is not None and r.embed_model == core.embedder.name
    ]
    previous = [Cluster(c.id, c.member_ids) for c in scope.clusters]
    regrouped = regroup(previous, members, similarity, full=full)
    authors = {r.id: str(r.user_id) for r in scope.members}
    policy = policy_of(config)
    stored = scope.stored()
    regrouped = _merged_on_instructions(
        core, scope, regrouped, stored, authors, policy, similarity, full=full
    )
    works = plan(regrouped.clusters, stored, authors, policy)
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
    return Outcome(result, regrouped.clusters, regrouped.removed, works, drafts, failed, basis, full)


def _merged_on_instructions(
    core: Core,
    scope: Scope,
    regrouped: Regrouping,
    stored: Mapping[int, Stored],
    authors: Mapping[int, str],
    policy: Policy,
    similarity: float,
    *,
    full: bool,
) -> Regrouping:
    """Clusters short of the gate, merged where their instructions mean the same.

    Only clusters that produced no agent playbook take part (one that did keeps its
    identity), and only their members' instructions are embedded, those embedded in an
    earlier run read from memory (``Core.instruction_embedder``). When none of them is new or
    changed since it was last decided, the last run already compared them all and nothing is
    embedded. An embedder that fails leaves the clusters as the stored vectors formed them.
    """
    short = short_of_gate(regrouped.clusters, stored, authors, policy)
    clusters = regrouped.clusters
    changed = any(
        not clusters[n].key
        or clusters[n].key not in stored
        or stored[clusters[n].key].aggregated != clusters[n].fingerprint
        for n in short
    )
    if len(short) < 2 or not (changed or full):
        return regrouped
    content = {r.id: r.content for r in scope.members}
    ids = [i for n in short for i in clusters[n].member_ids]
    try:
        vectors = core.instruction_embedder.embed([content[i] for i in ids], kind="document")
    except ReflexioError as exc:  # a hosted embedder is down: the stored vectors decide
        log.warning("instructions not embedded, clusters as the stored vectors formed them: %s", exc)
        return regrouped
    merged = merge_on_instructions(clusters, short, dict(zip(ids, vectors, strict=True)), similarity)
    return Regrouping(
        clusters=merged.clusters,
        removed=regrouped.removed + merged.removed,
        joined=regrouped.joined,
        residual=regrouped.residual,
    )


def basis_of(embed_model: str, similarity: float) -> str:
    """What a scope's clusters are grouped with, stored on each cluster."""
    return f"{embed_model} similarity {similarity:.4f}"


def aggregation_handler(core: Core) -> Handler:
    """The ``aggregate`` task: one run of one scope, committed with the job."""

    def handle(ctx: JobContext) -> None:
        job = ctx.job
        quotas.wait_while_paused(core, job.org_id)  # it calls the org's LLM
        agent_version, playbook_name = scope_of(job.key or "")
        full = bool(job.payload.get("full"))
        config = core.org_config(job.org_id)
        ctx.storage.set_job_progress(job.id, ctx.worker, {"stage": "clustering"})
        scope = read_scope(core.storage, job.org_id, agent_version, playbook_name)
        outcome = _decide(
            core,
            config,
            scope,
            full=full,
            job_id=job.id,
            report=lambda progress: ctx.storage.set_job_progress(job.id, ctx.worker, progress),
        )
        with ctx.effects() as tx:
            write_outcome(tx, scope, config, outcome, full=outcome.full, job_id=job.id)
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
    (queued,) = core.storage.enqueue_jobs([job], sooner=True)
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

    The waiting request helps the queue: it claims its org's due aggregation jobs itself
    (leased like any worker's, so a worker elsewhere never runs the same one; never another
    org's), so a server started without workers still answers; when a worker already holds
    the job, it waits for that one.
    """
    op = submit(core, org_id, req)
    helper = Worker(
        core.storage,
        {AGGREGATE: aggregation_handler(core)},
        name=f"api:{uuid.uuid4().hex[:8]}",
        lease_seconds=core.settings.job_lease_seconds,
        org_id=org_id,
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
    waiting = f" ({op.error})" if op.error else ""  # a paused org's says why it waits
    return RunPlaybookAggregationResponse(
        success=False,
        message=f"aggregation is still {op.status}{waiting}: follow operation {op.operation_id}",
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
