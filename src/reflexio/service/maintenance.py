"""Housekeeping jobs that keep learnings honest over time: expiring profiles, collecting tombstones.

A profile's time to live first *hides* it (search and reads filter on ``expires_at``), then
the expiry job *archives* it: expired current profiles become ``expired`` tombstones with a
history event, so what search serves and what reviewers see agree, and nothing is silently
deleted. An org that turns on ``expiry_reclamation`` has them deleted instead (the history
event stays).

Tombstones (``superseded``, ``merged``, ``expired`` learnings) are kept for the org's
``lineage_gc.tombstone_grace_window_days`` (90 by default, as in Reflexio), then the lineage
GC job deletes them; their history events, with the snapshots they carry, stay. An org that
turns ``lineage_gc`` off keeps them for ever.

Each job is a durable recurring timer per org: each run enqueues the next one in the same
transaction as its effects, so there is always exactly one, and it survives restarts.
"""

from __future__ import annotations

import logging

from reflexio.filters import LearningFilter
from reflexio.jobs import Handler, JobContext
from reflexio.records import Audit, Job, LearningKind, LearningStatus, now
from reflexio.service.core import Core

__all__ = [
    "EXPIRE",
    "EXPIRE_EVERY_SECONDS",
    "LINEAGE_GC",
    "TOMBSTONES",
    "expire_handler",
    "lineage_gc_handler",
    "schedule_expiry",
    "schedule_lineage_gc",
]

log = logging.getLogger(__name__)

EXPIRE = "expire"
#: How often each org's expired profiles are archived (they are hidden from search at once).
EXPIRE_EVERY_SECONDS = 3600.0
LINEAGE_GC = "lineage_gc"
#: The statuses of learnings kept only for history.
TOMBSTONES = (LearningStatus.SUPERSEDED, LearningStatus.MERGED, LearningStatus.EXPIRED)
_DAY = 86_400


def _next_run(org_id: str, delay: float) -> Job:
    return Job(org_id=org_id, task=EXPIRE, key="profiles", run_at=now() + delay)


def expire_handler(core: Core) -> Handler:
    """Archive an org's expired current profiles, then schedule the next run."""

    def handle(ctx: JobContext) -> None:
        org_id = ctx.job.org_id
        t = int(now())
        reclaim = core.org_config(org_id).expiry_reclamation.enabled
        audit = Audit(actor="expiry", reason="time to live elapsed")
        with ctx.effects() as tx:
            expired = LearningFilter(
                kinds=(LearningKind.PROFILE,), statuses=(LearningStatus.CURRENT,), expired_at=t
            )
            if reclaim:
                count = tx.delete_learnings(org_id, expired, audit)
            else:
                count = len(tx.update_learnings(org_id, expired, {"status": LearningStatus.EXPIRED}, audit))
            tx.enqueue_jobs([_next_run(org_id, EXPIRE_EVERY_SECONDS)])
        if count:
            done = "deleted" if reclaim else "archived"
            log.info("%s %s expired profile(s) of org %s", done, count, org_id)

    return handle


def schedule_expiry(core: Core) -> None:
    """Make sure every org with learnings has its expiry timer (deduplicated per org)."""
    core.storage.enqueue_jobs([_next_run(org, 0.0) for org in core.storage.list_orgs()])


def _next_gc(org_id: str, delay: float) -> Job:
    return Job(org_id=org_id, task=LINEAGE_GC, key="tombstones", run_at=now() + delay)


def lineage_gc_handler(core: Core) -> Handler:
    """Delete an org's tombstones older than its grace window, then schedule the next run.

    The org's ``lineage_gc`` is read on every run, so turning it off (or changing the window
    or the interval) takes effect at the next run.
    """

    def handle(ctx: JobContext) -> None:
        org_id = ctx.job.org_id
        gc = core.org_config(org_id).lineage_gc
        deleted = 0
        with ctx.effects() as tx:
            if gc.enabled:
                cutoff = int(now()) - gc.tombstone_grace_window_days * _DAY
                old = LearningFilter(statuses=TOMBSTONES, updated_before=cutoff)
                reason = f"tombstone older than the {gc.tombstone_grace_window_days}-day grace window"
                deleted = tx.delete_learnings(org_id, old, Audit(actor="lineage_gc", reason=reason))
            tx.enqueue_jobs([_next_gc(org_id, gc.poll_interval_seconds)])
        if deleted:
            log.info("deleted %s tombstone(s) of org %s", deleted, org_id)

    return handle


def schedule_lineage_gc(core: Core) -> None:
    """Make sure every org with learnings has its lineage GC timer (deduplicated per org)."""
    core.storage.enqueue_jobs([_next_gc(org, 0.0) for org in core.storage.list_orgs()])
