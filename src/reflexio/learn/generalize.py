"""Decide, per cluster, what an aggregation run does: nothing, propose, update or revise.

This is the policy half of the Generalize step, as pure functions. ``learn.cluster`` has said
which user playbooks belong together; here each cluster is compared with what the store knows
about it (the fingerprint it had when last aggregated, the agent playbook it produced and that
playbook's review state) and given one ``Work`` item:

* ``unchanged`` — same members as when last aggregated: nothing is called or written.
* ``below_gate`` — fewer distinct users than ``min_users`` (or members than
  ``min_cluster_size``): one person's preference never becomes a rule for everyone. A pending
  playbook the cluster produced earlier is retired; an approved one is left alone.
* ``same_evidence`` — its playbook was rejected and no new user has taught the lesson since:
  a rejection is not undone by the same evidence.
* ``few_changes`` — its playbook exists and fewer members changed than
  ``reaggregation_trigger_count``: the membership is stored, no model is called.
* ``propose`` — no live playbook yet (or only a rejected one, now with new users): a new
  agent playbook, linked to the rejection it follows.
* ``update`` — its playbook is pending and no reviewer touched it: rewritten in place.
* ``revise`` — its playbook is approved (or a reviewer rewrote it): approved text is never
  overwritten, so a pending revision linked to it is proposed (or the pending revision
  updated).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from reflexio.learn.cluster import Cluster
from reflexio.learn.review import ReviewState

__all__ = ["Policy", "Proposed", "Stored", "Verdict", "Work", "plan", "short_of_gate"]


class Verdict(StrEnum):
    """What a run does with one cluster (see the module docstring)."""

    UNCHANGED = "unchanged"
    BELOW_GATE = "below_gate"
    SAME_EVIDENCE = "same_evidence"
    FEW_CHANGES = "few_changes"
    PROPOSE = "propose"
    UPDATE = "update"
    REVISE = "revise"

    @property
    def needs_text(self) -> bool:
        """Whether the cluster is aggregated (one aggregator call) for this verdict."""
        return self in (Verdict.PROPOSE, Verdict.UPDATE, Verdict.REVISE)


@dataclass(frozen=True, slots=True)
class Policy:
    """The org's generalisation settings.

    Attributes:
        min_users: Distinct users a lesson needs before it becomes an agent playbook.
        min_cluster_size: User playbooks a cluster needs (``aggregation_config``).
        trigger_count: Changed members before an existing playbook is re-aggregated.
    """

    min_users: int = 2
    min_cluster_size: int = 2
    trigger_count: int = 1


@dataclass(frozen=True, slots=True)
class Proposed:
    """An agent playbook aggregation produced, with the evidence it was produced from.

    Attributes:
        playbook_id: The agent playbook.
        state: Its review state now.
        member_ids: The user playbooks it cites.
        user_ids: Their authors.
        by_reviewer: A reviewer rewrote it since it was proposed.
    """

    playbook_id: int
    state: ReviewState
    member_ids: frozenset[int]
    user_ids: frozenset[str]
    by_reviewer: bool = False


@dataclass(frozen=True, slots=True)
class Stored:
    """What the store knows about a cluster from earlier runs.

    Attributes:
        key: The cluster's id.
        aggregated: Its fingerprint when a run last decided about it (None: never).
        playbook: The agent playbook it produced (the approved one when a revision exists).
        revision: The pending revision proposed for an approved ``playbook``.
    """

    key: int
    aggregated: str | None = None
    playbook: Proposed | None = None
    revision: Proposed | None = None


@dataclass(frozen=True, slots=True)
class Work:
    """One cluster's verdict and the playbooks it concerns.

    Attributes:
        cluster: The cluster as this run formed it.
        verdict: What to do.
        users: Distinct authors of its members.
        target: The playbook written in place (``update``), revised (``revise``), retired
            (``below_gate``) or whose rejection a ``propose`` follows.
    """

    cluster: Cluster
    verdict: Verdict
    users: frozenset[str]
    target: int | None = None


def plan(
    clusters: Sequence[Cluster],
    stored: Mapping[int, Stored],
    authors: Mapping[int, str],
    policy: Policy,
) -> list[Work]:
    """One ``Work`` per cluster, in the clusters' order."""
    return [_decide(c, stored.get(c.key) if c.key else None, authors, policy) for c in clusters]


def short_of_gate(
    clusters: Sequence[Cluster], stored: Mapping[int, Stored], authors: Mapping[int, str], policy: Policy
) -> list[int]:
    """Indices of the clusters below the gate that never produced an agent playbook.

    These are the ones ``learn.cluster.merge_on_instructions`` may merge: a cluster with a
    playbook (even one below the gate now) keeps its identity and its evidence.
    """
    out = []
    for n, c in enumerate(clusters):
        users = {authors[i] for i in c.member_ids}
        if len(users) >= policy.min_users and len(c.member_ids) >= policy.min_cluster_size:
            continue
        known = stored.get(c.key) if c.key else None
        if known is None or (known.playbook is None and known.revision is None):
            out.append(n)
    return out


def _decide(cluster: Cluster, known: Stored | None, authors: Mapping[int, str], policy: Policy) -> Work:
    users = frozenset(authors[i] for i in cluster.member_ids)
    known = known or Stored(key=cluster.key)
    live, revision = _live(known)

    def work(verdict: Verdict, target: int | None = None) -> Work:
        return Work(cluster, verdict, users, target)

    if known.aggregated == cluster.fingerprint:
        return work(Verdict.UNCHANGED)
    if len(users) < policy.min_users or len(cluster.member_ids) < policy.min_cluster_size:
        owned = [p for p in (live, revision) if p and p.state is ReviewState.PENDING and not p.by_reviewer]
        return work(Verdict.BELOW_GATE, owned[0].playbook_id if owned else None)
    if live is None:
        return work(Verdict.PROPOSE)
    if live.state is ReviewState.REJECTED:
        if users <= live.user_ids:
            return work(Verdict.SAME_EVIDENCE, live.playbook_id)
        return work(Verdict.PROPOSE, live.playbook_id)
    basis = revision if revision is not None and revision.state is ReviewState.PENDING else live
    if revision is not None and revision.state is ReviewState.REJECTED and users <= revision.user_ids:
        return work(Verdict.SAME_EVIDENCE, revision.playbook_id)
    if len(basis.member_ids ^ set(cluster.member_ids)) < policy.trigger_count:
        return work(Verdict.FEW_CHANGES, basis.playbook_id)
    if live.state is ReviewState.PENDING and not live.by_reviewer:
        return work(Verdict.UPDATE, live.playbook_id)
    if revision is not None and revision.state is ReviewState.PENDING and not revision.by_reviewer:
        return work(Verdict.UPDATE, revision.playbook_id)
    return work(Verdict.REVISE, live.playbook_id)


def _live(known: Stored) -> tuple[Proposed | None, Proposed | None]:
    """The cluster's current playbook and pending revision, deleted ones forgotten.

    A playbook that was deleted, or archived without an approved successor, no longer speaks
    for the cluster: the next change proposes afresh.
    """
    live = known.playbook
    revision = known.revision
    gone = (ReviewState.DELETED, ReviewState.ARCHIVED)
    if revision is not None and revision.state is ReviewState.APPROVED:
        live, revision = revision, None
    if revision is not None and revision.state in gone:
        revision = None
    if live is not None and live.state in gone:
        live = None
    return live, revision
