"""Acting on what evaluation found: retire, suspend, supersede, propose a revision — audited
and revertible.

After each judgement (inside the same transaction as its verdicts) every learning the session
was given is looked at again: its impact is recomputed from the store and the org's
``ReflectionPolicy`` decides (``learn.reflect.decide``). A learning whose harm is established
stops being served at once: ``retired`` with the reason, or ``suspended`` for a reviewer when
the org requires approval. A learning the user contradicted is ``superseded`` by the learning
extraction made of that contradiction, when there is one (extraction supersedes within its
own window; this catches a contradiction that reached a learning extraction did not compare).

Every action is a ``reflection_actions`` row with its reason and the numbers it rested on,
and a history event on the learning (actor ``reflect``). ``revert`` undoes one with a
compare-and-set (409 when the learning moved since), and the evidence before a revert no
longer counts: reflection acts on that learning again only on newer sessions, so a reviewer's
decision is not overturned by the evidence they already weighed.

With an LLM, a retired or suspended agent playbook also gets a *revision*: a durable job asks
the model to rewrite it from its failure cases and stores the result as a new agent playbook,
suspended and pending, in the review queue, where a reviewer approves or rejects it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from reflexio.errors import ConflictError, NotFoundError
from reflexio.filters import InteractionFilter, LearningFilter
from reflexio.jobs import JobContext
from reflexio.learn.attribution import Verdict
from reflexio.learn.reflect import Action, decide, propose_revision, replaces, status_after, summarize
from reflexio.learn.usage import metered
from reflexio.models import (
    ListReflectionActionsRequest,
    ListReflectionActionsResponse,
    ReflectionActionView,
    RevertReflectionActionRequest,
    RevertReflectionActionResponse,
)
from reflexio.models.org_config import Config
from reflexio.records import (
    Approval,
    Audit,
    Job,
    Learning,
    LearningKind,
    LearningStatus,
    ReflectionActionRecord,
)
from reflexio.service import quotas
from reflexio.service.core import Core
from reflexio.service.impact import Ref, impact_rows
from reflexio.service.judgement import Judged, learnings_of
from reflexio.service.learners import org_llm
from reflexio.storage import Storage

__all__ = ["REVISE", "action_view", "list_actions", "reflect", "revert", "revise_handler"]

log = logging.getLogger(__name__)

#: The job task that asks a model for a revision of a hurting agent playbook.
REVISE = "propose_revision"
ACTOR = "reflect"


def _overruled_since(tx: Storage, org_id: str, rows: Sequence[Learning]) -> dict[Ref, float]:
    """When a reviewer last reverted an action on each learning (older evidence is spent)."""
    if not rows:
        return {}
    by_id = {row.id: row for row in rows}
    since: dict[Ref, float] = {}
    for action in tx.list_reflection_actions(org_id, learning_ids=list(by_id), limit=1000):
        row = by_id.get(action.learning_id)
        if row is not None and action.reverted_at is not None:
            ref = (row.kind.value, row.wire_id)
            since[ref] = max(since.get(ref, 0.0), action.reverted_at)
    return since


def reflect(
    tx: Storage, core: Core, judged: Judged, config: Config, *, job_id: int | None = None
) -> list[ReflectionActionRecord]:
    """Apply the org's policy to every learning a judged session was given (in ``tx``)."""
    refs = list(dict.fromkeys((v.injection.kind, v.injection.learning_id) for v in judged.verdicts))
    found = learnings_of(tx, judged.org_id, refs)
    live = [row for row in found.values() if row.status is LearningStatus.CURRENT]
    since = _overruled_since(tx, judged.org_id, live)
    evidence = impact_rows(tx, judged.org_id, [(r.kind.value, r.wire_id) for r in live], since=since)
    out: list[ReflectionActionRecord] = []
    for row in live:
        ref = (row.kind.value, row.wire_id)
        decision = decide(
            summarize(evidence[ref][0]), config.reflection_policy, approval_required=config.approval_required
        )
        if decision is not None:
            done = _apply(tx, row, decision.action, decision.reason, decision.evidence, job_id=job_id)
            out += done
            if done and _wants_revision(core, row, config):
                tx.enqueue_jobs(
                    [Job(org_id=row.org_id, task=REVISE, key=str(row.id), payload={"learning_id": row.id})]
                )
            continue
        successor = _successor(
            tx, row, [v for v in judged.verdicts if (v.injection.kind, v.injection.learning_id) == ref]
        )
        if successor is not None:
            reason = f"superseded: the user contradicted it and learning {successor.id} says otherwise"
            out += _apply(
                tx,
                row,
                Action.SUPERSEDE,
                reason,
                {"successor": successor.id},
                job_id=job_id,
                related=successor.id,
            )
    return out


def _wants_revision(core: Core, row: Learning, config: Config) -> bool:
    return (
        row.kind is LearningKind.AGENT_PLAYBOOK
        and config.reflection_policy.propose_revisions
        and org_llm(core, config) is not None
    )


def _successor(tx: Storage, row: Learning, verdicts: Sequence[Verdict]) -> Learning | None:
    """A learning extracted from a turn that contradicted ``row`` and saying otherwise.

    The contradicting turns are this session's and every earlier one's: the session is often
    judged before extraction has made a learning of the contradiction, so the successor is
    found the next time ``row`` is served and judged.
    """
    if row.kind is LearningKind.AGENT_PLAYBOOK:
        return None
    turns = {v.contradicted_by for v in verdicts if v.impact == "negative" and v.contradicted_by}
    earlier = tx.find_evaluations(
        row.org_id, kind="learning", learning_kind=row.kind.value, learning_ids=[row.wire_id], limit=200
    )
    turns |= {
        int(e.result["contradicted_by"])
        for e in earlier
        if e.result.get("impact") == "negative" and isinstance(e.result.get("contradicted_by"), int)
    }
    if not turns:
        return None
    where = LearningFilter(kinds=(row.kind,), user_id=row.user_id, statuses=(LearningStatus.CURRENT,))
    for candidate in tx.list_learnings(row.org_id, where, limit=50):
        if turns & set(candidate.source_interaction_ids) and replaces(row, candidate):
            return candidate
    return None


def _apply(
    tx: Storage,
    row: Learning,
    action: Action,
    reason: str,
    evidence: dict[str, Any],
    *,
    job_id: int | None,
    related: int | None = None,
) -> list[ReflectionActionRecord]:
    after = status_after(action, row.status)
    changes: dict[str, Any] = {"status": after}
    if related is not None and action is Action.SUPERSEDE:
        changes["superseded_by"] = related
    where = LearningFilter(ids=(row.id,), statuses=(row.status,))
    if not tx.update_learnings(row.org_id, where, changes, Audit(actor=ACTOR, reason=reason, job_id=job_id)):
        return []  # it moved meanwhile (a reviewer, another worker): nothing to do
    log.info("reflection %s %s %s: %s", action.value, row.kind.value, row.id, reason)
    # integrations: an "evaluation acted" event for this learning belongs here (same tx).
    record = ReflectionActionRecord(
        org_id=row.org_id,
        learning_id=row.id,
        kind=row.kind.value,
        action=action.value,
        reason=reason,
        evidence=evidence,
        status_before=row.status.value,
        status_after=after.value,
        related_learning_id=related,
        actor=ACTOR,
        job_id=job_id,
    )
    return tx.add_reflection_actions([record])


# -- revisions (a durable job) -------------------------------------------------------------------


def _failures(storage: Storage, row: Learning) -> list[str]:
    """What the judges and the users said where the learning hurt."""
    verdicts = storage.find_evaluations(
        row.org_id, kind="learning", learning_kind=row.kind.value, learning_ids=[row.wire_id], limit=200
    )
    bad = [v for v in verdicts if v.result.get("impact") == "negative"]
    ids = sorted(
        {int(i) for v in bad for i in (v.result.get("diagnosis") or {}).get("evidence_interaction_ids", [])}
    )
    said = (
        {t.id: t.content for t in storage.list_interactions(row.org_id, InteractionFilter(ids=tuple(ids)))}
        if ids
        else {}
    )
    out = []
    for v in bad[:20]:
        quoted = [
            said[i]
            for i in (v.result.get("diagnosis") or {}).get("evidence_interaction_ids", [])
            if i in said
        ]
        out.append(
            f"{v.result.get('impact_reason', '')}"
            + (f' — the user said: "{quoted[0][:300]}"' if quoted else "")
        )
    return out


def revise_handler(core: Core) -> Any:
    """The ``propose_revision`` job: a model rewrites a hurting agent playbook, for review."""

    def handle(ctx: JobContext) -> None:
        org_id, learning_id = ctx.job.org_id, int(ctx.job.payload["learning_id"])
        quotas.wait_while_paused(core, org_id)  # it calls the org's LLM
        config = core.org_config(org_id)
        raw = org_llm(core, config)
        rows = core.storage.get_learnings(org_id, LearningFilter(ids=(learning_id,)))
        if raw is None or not rows:
            return
        row = rows[0]
        failures = _failures(core.storage, row)
        proposal = propose_revision(metered(raw, core.storage, org_id, ctx.job.id), row, failures)
        with ctx.effects() as tx:
            if not proposal.content:
                return
            revision = row.copy(
                id=0,
                content=proposal.content,
                trigger=proposal.trigger or row.trigger,
                rationale=proposal.rationale or row.rationale,
                approval=Approval.PENDING,
                status=LearningStatus.SUSPENDED,
                created_at=0,
                updated_at=0,
                embedding=None,
                text_hash="",
            )
            reason = f"revision of agent playbook {row.id} proposed from {len(failures)} failure case(s)"
            (saved,) = tx.save_learnings([revision], Audit(actor=ACTOR, reason=reason, job_id=ctx.job.id))
            tx.add_reflection_actions(
                [
                    ReflectionActionRecord(
                        org_id=org_id,
                        learning_id=row.id,
                        kind=row.kind.value,
                        action=Action.PROPOSE_REVISION.value,
                        reason=reason,
                        evidence={"revision": saved.id},
                        status_before=saved.status.value,
                        status_after=saved.status.value,
                        related_learning_id=saved.id,
                        job_id=ctx.job.id,
                    )
                ]
            )

    return handle


# -- reading and reverting -----------------------------------------------------------------------


def action_view(
    row: ReflectionActionRecord, wire_id: str | None = None, related_wire_id: str | None = None
) -> ReflectionActionView:
    """An action as the wire shows it."""
    return ReflectionActionView(
        action_id=row.id,
        kind=row.kind,
        learning_id=wire_id or str(row.learning_id),
        action=row.action,
        reason=row.reason,
        evidence=row.evidence,
        status_before=row.status_before,
        status_after=row.status_after,
        related_learning_id=related_wire_id
        or (str(row.related_learning_id) if row.related_learning_id else None),
        actor=row.actor,
        created_at=int(row.created_at),
        reverted_at=int(row.reverted_at) if row.reverted_at else None,
        reverted_by=row.reverted_by,
        revert_note=row.revert_note,
    )


def _wire_ids(storage: Storage, org_id: str, rows: Sequence[ReflectionActionRecord]) -> dict[int, str]:
    ids = {r.learning_id for r in rows} | {r.related_learning_id for r in rows if r.related_learning_id}
    found = storage.get_learnings(org_id, LearningFilter(ids=tuple(ids))) if ids else []
    return {row.id: row.wire_id for row in found}


def list_actions(core: Core, org_id: str, req: ListReflectionActionsRequest) -> ListReflectionActionsResponse:
    """Reflection actions, newest first: on one learning, or the org's latest."""
    learning_ids = None
    if req.learning_id is not None:
        learning_ids = [_internal_id(core.storage, org_id, req.kind, req.learning_id)]
    rows = core.storage.list_reflection_actions(
        org_id,
        learning_ids=learning_ids,
        kind=req.kind,
        include_reverted=req.include_reverted,
        limit=req.limit,
    )
    wire = _wire_ids(core.storage, org_id, rows)
    views = [action_view(r, wire.get(r.learning_id), wire.get(r.related_learning_id or 0)) for r in rows]
    return ListReflectionActionsResponse(success=True, actions=views)


def _internal_id(storage: Storage, org_id: str, kind: str | None, learning_id: str) -> int:
    if kind == "profile" or not learning_id.isdigit():
        found = storage.get_learnings(
            org_id, LearningFilter(kinds=(LearningKind.PROFILE,), profile_ids=(learning_id,))
        )
        if not found:
            raise NotFoundError(f"profile {learning_id!r} not found")
        return found[0].id
    return int(learning_id)


def revert(
    core: Core, org_id: str, req: RevertReflectionActionRequest, *, actor: str
) -> RevertReflectionActionResponse:
    """Undo a reflection action: the learning gets back the status it had before.

    Raises:
        NotFoundError: No such action in the org.
        ConflictError: It was already reverted, or the learning moved since (HTTP 409).
    """
    with core.storage.transaction() as tx:
        found = tx.list_reflection_actions(org_id, ids=[req.action_id], limit=1)
        if not found:
            raise NotFoundError(f"reflection action {req.action_id} not found")
        action = found[0]
        if action.reverted_at is not None:
            raise ConflictError(
                f"reflection action {action.id} was already reverted by {action.reverted_by}",
                details={"action_id": action.id},
            )
        reason = f"reverted {action.action} (action {action.id}) by {actor}" + (
            f": {req.note}" if req.note else ""
        )
        target, before, after = _revert_target(action)
        changes: dict[str, Any] = {"status": before}
        if action.action == Action.SUPERSEDE.value:
            changes["superseded_by"] = None
        where = LearningFilter(ids=(target,), statuses=(after,))
        if not tx.update_learnings(org_id, where, changes, Audit(actor=actor, reason=reason)):
            raise ConflictError(
                f"cannot revert action {action.id}: learning {target} is no longer {after.value}",
                details={"action_id": action.id, "learning_id": target},
            )
        if not tx.revert_reflection_action(org_id, action.id, by=actor, note=req.note):
            raise ConflictError(
                f"reflection action {action.id} was reverted meanwhile", details={"action_id": action.id}
            )
        (done,) = tx.list_reflection_actions(org_id, ids=[action.id], limit=1)
        wire = _wire_ids(tx, org_id, [done])
    return RevertReflectionActionResponse(
        success=True,
        action=action_view(done, wire.get(done.learning_id), wire.get(done.related_learning_id or 0)),
    )


def _revert_target(action: ReflectionActionRecord) -> tuple[int, LearningStatus, LearningStatus]:
    """(learning to change, status to restore, status it must have now)."""
    if action.action == Action.PROPOSE_REVISION.value:
        if action.related_learning_id is None:
            raise ConflictError(f"reflection action {action.id} has no revision to withdraw")
        return action.related_learning_id, LearningStatus.RETIRED, LearningStatus.SUSPENDED
    return (
        action.learning_id,
        LearningStatus(action.status_before or "current"),
        LearningStatus(action.status_after or "current"),
    )
