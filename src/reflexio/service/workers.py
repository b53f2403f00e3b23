"""Which code runs each job task, and the worker pool a process starts.

The task handlers are wired here, above ``jobs`` (generic worker loop) and ``learn`` (domain
logic): extraction runs the LLM extractors when the org has an LLM provider configured and the
offline rule extractor otherwise, and learns at once from a tail of turns that teaches
something (``learn.rules.triage``); the session-idle timer flushes the user's extraction and
judges the session. ``reflexio services start`` runs a pool in-process; ``reflexio worker``
runs one on its own against the same SQLite file or PostgreSQL.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path

from reflexio.jobs import Handler, JobContext, WorkerPool
from reflexio.learn.aggregation_trigger import AGGREGATE
from reflexio.learn.changes import Changes
from reflexio.learn.pipeline import learn_window
from reflexio.learn.rules.triage import teaches_now
from reflexio.learn.windows import Window, run_extraction
from reflexio.records import InteractionRecord, Job
from reflexio.service import judgement, maintenance, publish, quotas, reflection
from reflexio.service.aggregation import aggregation_handler
from reflexio.service.core import Core
from reflexio.service.learners import learner_for
from reflexio.service.rerun import RERUN, rerun_handler

__all__ = ["announce_ready", "handlers", "start_pool"]

log = logging.getLogger(__name__)


def _extract(core: Core) -> Handler:
    def handle(ctx: JobContext) -> None:
        org_id = ctx.job.org_id
        quotas.wait_while_paused(core, org_id)
        config = core.org_config(org_id)
        learner = learner_for(core, config, org_id, ctx.job.id)

        def learn(window: Window) -> Changes:
            changes = learn_window(core.storage, config, window, learner.proposer, learner.judge)
            quotas.record_learnings(core, org_id, len(changes.added))
            return changes.with_vectors(core.embedder)

        run_extraction(ctx, core.storage, config, learn, urgent=_teaches)

    return handle


def _teaches(tail: Sequence[InteractionRecord], before: Sequence[InteractionRecord]) -> bool:
    """The rule extractor's triage of a tail that waits for a stride (see ``learn.windows``)."""
    return teaches_now(tail, lambda: before)


def _evaluate_session(core: Core) -> Handler:
    """The session-idle job: learn from the session's last turns, judge it, act on the verdicts.

    The model calls run before the transaction; the verdicts, the reflection actions they
    lead to and the job's completion commit together (see ``service.judgement``).
    """

    def handle(ctx: JobContext) -> None:
        payload = ctx.job.payload
        org_id, user_id, session_id = ctx.job.org_id, str(payload["user_id"]), str(payload["session_id"])
        quotas.wait_while_paused(core, org_id)
        config = core.org_config(org_id)
        judged = judgement.judge(core, org_id, user_id, session_id, job_id=ctx.job.id)
        with ctx.effects() as tx:
            if publish.extractors_of(config):
                publish.enqueue_extraction(tx, [publish.extraction_job(org_id, user_id, flush=True)])
            if judged.session is not None:
                judgement.write(tx, judged)
                reflection.reflect(tx, core, judged, config, job_id=ctx.job.id)
            # integrations: an "evaluation finished" event for (org_id, user_id, session_id) belongs here.

    return handle


#: The task that re-embeds an org's learnings after the embedder changed.
REEMBED = "reembed"
REEMBED_BATCH = 256


def _reembed(core: Core) -> Handler:
    def handle(ctx: JobContext) -> None:
        # Each batch commits on its own (vectors are derived data; a crash only redoes a batch).
        while core.storage.refresh_vectors(ctx.job.org_id, limit=REEMBED_BATCH):
            core.storage.heartbeat_jobs(ctx.worker, [ctx.job.id], ctx.lease_seconds)

    return handle


def schedule_reembedding(core: Core) -> int:
    """Queue one re-embedding job per org whose vectors another embedder made."""
    orgs = core.storage.orgs_with_stale_vectors()
    if orgs:
        core.storage.enqueue_jobs([Job(org_id=org, task=REEMBED, key="all") for org in orgs])
        log.info("re-embedding learnings of %s org(s) for %s", len(orgs), core.embedder.name)
    return len(orgs)


def handlers(core: Core) -> dict[str, Handler]:
    """Task name → handler for every task a worker of this process serves."""
    return {
        publish.EXTRACT: _extract(core),
        publish.EVALUATE_SESSION: _evaluate_session(core),
        RERUN: rerun_handler(core),
        REEMBED: _reembed(core),
        reflection.REVISE: reflection.revise_handler(core),
        AGGREGATE: aggregation_handler(core),
        maintenance.EXPIRE: maintenance.expire_handler(core),
        maintenance.LINEAGE_GC: maintenance.lineage_gc_handler(core),
    }


def announce_ready(path: Path) -> None:
    """Say, in a file others can wait for, that this process's workers claim jobs now.

    ``reflexio services start`` waits for it before it says "ready": until the workers run,
    a publish is stored but nothing learns from it. The file holds this process's pid.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    partial.write_text(f"{os.getpid()}\n")
    partial.replace(path)


def start_pool(core: Core, size: int | None = None) -> WorkerPool:
    """Start a worker pool for this process (``settings.workers`` threads unless given).

    Learnings whose vectors an earlier embedder made are queued for re-embedding first, so
    changing ``REFLEXIO_EMBEDDER`` never leaves old learnings out of vector search.
    """
    schedule_reembedding(core)
    maintenance.schedule_expiry(core)
    maintenance.schedule_lineage_gc(core)
    pool = WorkerPool(
        core.storage,
        handlers(core),
        size=core.settings.workers if size is None else size,
        lease_seconds=core.settings.job_lease_seconds,
        poll_seconds=core.settings.job_poll_seconds,
    )
    pool.start()
    log.info("started %s job worker(s)", pool.size)
    return pool
