"""Housekeeping jobs that keep learnings honest over time: expiring profiles.

A profile's time to live first *hides* it (search and reads filter on ``expires_at``), then
this job *archives* it: expired current profiles become ``expired`` tombstones with a history
event, so what search serves and what reviewers see agree, and nothing is silently deleted.

The job is a durable recurring timer per org: each run enqueues the next one in the same
transaction as its effects, so there is always exactly one, and it survives restarts.
"""

from __future__ import annotations

import logging

from reflexio.filters import LearningFilter
from reflexio.jobs import Handler, JobContext
from reflexio.records import Audit, Job, LearningKind, LearningStatus, now
from reflexio.service.core import Core

__all__ = ["EXPIRE", "EXPIRE_EVERY_SECONDS", "expire_handler", "schedule_expiry"]

log = logging.getLogger(__name__)

EXPIRE = "expire"
#: How often each org's expired profiles are archived (they are hidden from search at once).
EXPIRE_EVERY_SECONDS = 3600.0


def _next_run(org_id: str, delay: float) -> Job:
    return Job(org_id=org_id, task=EXPIRE, key="profiles", run_at=now() + delay)


def expire_handler(core: Core) -> Handler:
    """Archive an org's expired current profiles, then schedule the next run."""

    def handle(ctx: JobContext) -> None:
        org_id = ctx.job.org_id
        t = int(now())
        with ctx.effects() as tx:
            expired = LearningFilter(
                kinds=(LearningKind.PROFILE,), statuses=(LearningStatus.CURRENT,), expired_at=t
            )
            ids = tx.update_learnings(
                org_id,
                expired,
                {"status": LearningStatus.EXPIRED},
                Audit(actor="expiry", reason="time to live elapsed"),
            )
            tx.enqueue_jobs([_next_run(org_id, EXPIRE_EVERY_SECONDS)])
        if ids:
            log.info("archived %s expired profile(s) of org %s", len(ids), org_id)

    return handle


def schedule_expiry(core: Core) -> None:
    """Make sure every org with learnings has its expiry timer (deduplicated per org)."""
    core.storage.enqueue_jobs([_next_run(org, 0.0) for org in core.storage.list_orgs()])
