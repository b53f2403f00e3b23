"""What an aggregation run writes, in the job's effects transaction.

Per cluster verdict (``learn.generalize``): a new agent playbook (pending, or approved at once
by the org's policy) with its proposal, a pending playbook rewritten in place, a pending
revision linked to an approved one (approved text is never overwritten), a pending playbook
retired below the gate; then the changed cluster rows and one change log. Unchanged clusters
are not written.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from reflexio.filters import LearningFilter
from reflexio.learn.aggregate import Draft
from reflexio.learn.cluster import Cluster
from reflexio.learn.generalize import Verdict, Work
from reflexio.models.api_aggregation import (
    AgentPlaybookSnapshot,
    PlaybookAggregationResult,
)
from reflexio.models.org_config import Config
from reflexio.records import (
    Approval,
    Audit,
    ChangeLogRecord,
    ClusterRecord,
    Learning,
    LearningStatus,
    ProposalRecord,
)
from reflexio.service.aggregation_state import AGENT, Scope, auto_approves
from reflexio.storage import Storage

__all__ = ["ACTOR", "Outcome", "write_outcome"]

#: The actor aggregation's writes are recorded under.
ACTOR = "aggregation"


@dataclass(slots=True)
class Outcome:
    """What a run writes, gathered before the write transaction opens."""

    result: PlaybookAggregationResult
    clusters: list[Cluster]
    removed: list[int]
    works: list[Work]
    drafts: dict[int, Draft]  # index into works → its draft
    failed: set[int]  # index into works whose draft failed: left undecided for the next run
    basis: str | None = None  # what the clusters were grouped with, written on each
    full: bool = False  # regrouped from scratch (asked for, or the basis changed)


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
    scope: Scope
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


def write_outcome(
    tx: Storage, scope: Scope, config: Config, outcome: Outcome, *, full: bool, job_id: int | None
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
            # same set in the same order, on the same basis: nothing to write
            if record.member_ids != tuple(cluster.member_ids) or record.basis != outcome.basis:
                rows.append(replace(record, member_ids=tuple(cluster.member_ids), basis=outcome.basis))
            continue
        result.clusters_changed += 1
        record = replace(
            record, member_ids=tuple(cluster.member_ids), fingerprint=cluster.fingerprint, basis=outcome.basis
        )
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


def _is_approved(scope: Scope, playbook_id: int | None) -> bool:
    row = scope.playbooks.get(playbook_id) if playbook_id is not None else None
    return row is not None and row.approval is Approval.APPROVED and row.status is LearningStatus.CURRENT
