"""What an aggregation run reads of one scope before deciding, and the org's generalisation policy.

A scope is (org, agent version, playbook name): its current user playbooks with their vectors
(never profiles, never another org), the stored clusters, and for the agent playbooks those
clusters produced their review state, their proposals (the evidence) and whether a reviewer
rewrote them (a reviewer's words are never replaced by a run).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from reflexio.filters import LearningFilter
from reflexio.learn.aggregation_trigger import playbook_names
from reflexio.learn.generalize import Policy, Proposed, Stored
from reflexio.learn.review import ReviewState, state_of
from reflexio.models.org_config import Config
from reflexio.records import (
    ClusterRecord,
    Learning,
    LearningKind,
    LearningStatus,
    ProposalRecord,
)
from reflexio.storage import Storage

__all__ = ["AGENT", "USER", "Scope", "aggregation_config", "auto_approves", "policy_of", "read_scope"]

USER = LearningKind.USER_PLAYBOOK
AGENT = LearningKind.AGENT_PLAYBOOK


def policy_of(config: Config) -> Policy:
    """The org's generalisation gate from its ``aggregation_config``."""
    agg = aggregation_config(config)
    if agg is None:
        return Policy()
    return Policy(
        min_users=agg.min_users,
        min_cluster_size=agg.min_cluster_size,
        trigger_count=agg.reaggregation_trigger_count,
    )


def aggregation_config(config: Config) -> Any:
    extractor = config.user_playbook_extractor_config
    return extractor.aggregation_config if extractor is not None else None


def auto_approves(config: Config, users: int) -> bool:
    """Whether a new agent playbook taught by ``users`` distinct users is approved at once."""
    agg = aggregation_config(config)
    threshold = agg.auto_approve_min_users if agg is not None else None
    return not config.approval_required and threshold is not None and users >= threshold


# -- reading a scope ------------------------------------------------------------------------------
@dataclass(slots=True)
class Scope:
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


def read_scope(storage: Storage, org_id: str, agent_version: str, playbook_name: str) -> Scope:
    scope = Scope(org_id, agent_version, playbook_name)
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
