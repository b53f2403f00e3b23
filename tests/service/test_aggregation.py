"""Aggregation runs as durable jobs: the gate, unchanged clusters for free, revisions of approved
playbooks, rejections not re-proposed from the same evidence, auto-approval, and the LLM path."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace

from reflexio.embed import Embedder, EmbedKind, Vectors
from reflexio.filters import LearningFilter
from reflexio.jobs import Worker
from reflexio.learn.aggregation_trigger import AGGREGATE, aggregation_key
from reflexio.learn.review import Action
from reflexio.models import (
    ClearUserDataRequest,
    FinalizeSessionRequest,
    InteractionData,
    PublishUserInteractionRequest,
    SearchAgentPlaybookRequest,
    UnifiedSearchRequest,
)
from reflexio.models.api_aggregation import (
    GetLearningProvenanceRequest,
    PlaybookAggregationOperationRequest,
    PlaybookAggregationResult,
)
from reflexio.records import Approval, Audit, JobStatus, Learning, LearningKind, LearningStatus
from reflexio.service import aggregation, provenance, search, users
from reflexio.service import publish as pub
from reflexio.service.core import Core
from reflexio.service.review import review
from reflexio.service.review_queue import review_queue
from reflexio.service.workers import handlers
from reflexio.testing import ScriptedLLM

ORG = "o"
VERSION = "shop@1"
REFUND = [
    "Ask for the order number before issuing a refund.",
    "Always ask for the order number before you issue a refund.",
    "Before issuing any refund, ask the customer for the order number.",
    "Ask for the customer's order number before issuing the refund.",
    "Ask for the order number first, before issuing a refund.",
]


def teach(core: Core, user: str, content: str, trigger: str = "A customer asks for a refund") -> int:
    row = Learning(
        org_id=ORG,
        kind=LearningKind.USER_PLAYBOOK,
        user_id=user,
        agent_version=VERSION,
        playbook_name="playbook",
        content=content,
        trigger=trigger,
    )
    (saved,) = core.storage.save_learnings([row], Audit(actor="test"))
    return saved.id


def run(core: Core, *, full: bool = False) -> PlaybookAggregationResult:
    op = aggregation.submit(core, ORG, PlaybookAggregationOperationRequest(agent_version=VERSION, full=full))
    worker = Worker(core.storage, handlers(core))
    while worker.run_once():
        pass
    done = aggregation.get_operation(core, ORG, op.operation_id)
    assert done.status == "succeeded", done
    assert done.result is not None
    return done.result


def agent_playbooks(core: Core, *statuses: LearningStatus) -> list[Learning]:
    where = LearningFilter(
        kinds=(LearningKind.AGENT_PLAYBOOK,), statuses=statuses or (LearningStatus.CURRENT,)
    )
    return core.storage.get_learnings(ORG, where)


def test_a_lesson_of_enough_users_becomes_one_pending_agent_playbook(core: Core) -> None:
    ids = [teach(core, f"u{n}", text) for n, text in enumerate(REFUND[:3])]
    teach(core, "u9", "Recommend ThinkPads rather than MacBooks.", trigger="A Linux user wants a laptop")
    result = run(core)
    assert result.playbooks_generated == 1 and result.user_playbooks_processed == 4
    assert result.clusters_found == 2 and result.below_gate == 1  # one user's preference is no rule
    (playbook,) = agent_playbooks(core)
    assert playbook.approval is Approval.PENDING and "order number" in playbook.content
    (proposal,) = core.storage.get_proposals(ORG, [playbook.id])
    assert set(proposal.member_ids) == set(ids) and proposal.user_ids == ("u0", "u1", "u2")
    (log,) = core.storage.list_change_logs(ORG, VERSION, "playbook", limit=5)
    assert [s["agent_playbook_id"] for s in log.added] == [playbook.id]


def test_a_lesson_taught_on_different_requests_is_one_agent_playbook(core: Core) -> None:
    # the triggers keep the stored vectors apart; the instructions alone mean the same
    ids = [
        teach(
            core,
            "ola",
            "Run the tests before saying a fix works.",
            trigger="The nightly CSV export to the finance team drops the last row of every spreadsheet file",
        ),
        teach(
            core,
            "sam",
            "Run the test suite before you say the fix works.",
            trigger="Login redirects loop forever between the identity provider and the dashboard page",
        ),
    ]
    result = run(core)
    assert result.clusters_found == 1 and result.playbooks_generated == 1
    (playbook,) = agent_playbooks(core)
    (proposal,) = core.storage.get_proposals(ORG, [playbook.id])
    assert set(proposal.member_ids) == set(ids)
    assert len(core.storage.list_clusters(ORG, VERSION, "playbook")) == 1
    assert run(core).aggregator_calls == 0  # the merged cluster is kept as it is


class CountingEmbedder:
    """The test embedder, counting the texts embedded as documents."""

    def __init__(self, inner: Embedder) -> None:
        self.inner, self.name, self.dim = inner, inner.name, inner.dim
        self.documents: list[str] = []

    def embed(self, texts: Sequence[str], *, kind: EmbedKind = "document") -> Vectors:
        if kind == "document":
            self.documents += list(texts)
        return self.inner.embed(texts, kind=kind)


def test_one_off_lessons_are_embedded_for_their_instructions_once(core: Core) -> None:
    teach(core, "u1", "Recommend ThinkPads rather than MacBooks.", trigger="A Linux user wants a laptop")
    teach(core, "u2", "Quote prices in euros.", trigger="A customer in Berlin asks for a price")
    counting = CountingEmbedder(core.embedder)
    core.embedder = counting  # the core's memory of instructions starts afresh over it
    assert run(core).below_gate == 2 and len(counting.documents) == 2
    assert run(core).clusters_unchanged == 2 and len(counting.documents) == 2  # nothing changed
    teach(core, "u3", "Answer in French.", trigger="A user from Lyon asks about delivery")
    counting.documents.clear()
    third = run(core)
    assert (third.clusters_found, third.below_gate, third.clusters_unchanged) == (3, 1, 2)
    assert counting.documents == ["Answer in French."]  # the other two are remembered


def test_the_instruction_cache_follows_the_cores_embedder(core: Core) -> None:
    """Vectors of one model never answer for another's: a replaced embedder gets a new cache."""
    first = core.instruction_embedder
    assert core.instruction_embedder is first
    core.embedder = CountingEmbedder(core.embedder)
    assert core.instruction_embedder is not first


def test_unchanged_clusters_cost_nothing(core: Core) -> None:
    for n, text in enumerate(REFUND[:3]):
        teach(core, f"u{n}", text)
    run(core)
    before = [(r.id, r.updated_at) for r in agent_playbooks(core)]
    clusters = core.storage.list_clusters(ORG, VERSION, "playbook")
    again = run(core)
    assert again.clusters_unchanged == again.clusters_found and again.clusters_changed == 0
    assert again.aggregator_calls == 0 and again.playbooks_generated == 0
    assert [(r.id, r.updated_at) for r in agent_playbooks(core)] == before
    assert core.storage.list_clusters(ORG, VERSION, "playbook") == clusters
    assert len(core.storage.list_change_logs(ORG, VERSION, "playbook", limit=5)) == 1


def test_an_approved_playbook_is_revised_never_overwritten(core: Core) -> None:
    for n, text in enumerate(REFUND[:3]):
        teach(core, f"u{n}", text)
    run(core)
    (approved,) = agent_playbooks(core)
    review(core, ORG, approved.id, Action.APPROVE, actor="local")
    teach(core, "u3", REFUND[3])
    teach(core, "u4", REFUND[4])
    result = run(core)
    assert result.revisions_proposed == 1
    rows = {r.id: r for r in agent_playbooks(core)}
    assert rows[approved.id].content == approved.content and rows[approved.id].approval is Approval.APPROVED
    (revision,) = [r for r in rows.values() if r.id != approved.id]
    assert revision.approval is Approval.PENDING
    (proposal,) = core.storage.get_proposals(ORG, [revision.id])
    assert proposal.revises_id == approved.id and len(proposal.user_ids) == 5
    review(core, ORG, revision.id, Action.APPROVE, actor="local")  # archives the old version
    (old,) = agent_playbooks(core, LearningStatus.SUPERSEDED)
    assert old.id == approved.id and old.superseded_by == revision.id
    assert [r.id for r in agent_playbooks(core)] == [revision.id]
    assert (
        "replaced by its approved revision" in core.storage.list_events(ORG, learning_ids=[old.id])[0].reason
    )
    assert run(core).revisions_proposed == 0  # the approved revision now speaks for the cluster


def test_a_rejection_is_not_re_proposed_from_the_same_evidence(core: Core) -> None:
    for n, text in enumerate(REFUND[:3]):
        teach(core, f"u{n}", text)
    run(core)
    (rejected,) = agent_playbooks(core)
    review(core, ORG, rejected.id, Action.REJECT, actor="local", note="not our policy")
    run(core, full=True)  # even a full rebuild: the same users, the same evidence
    assert [r.id for r in agent_playbooks(core)] == [rejected.id]
    teach(core, "u1", REFUND[3])  # more from a user it already heard
    assert run(core).playbooks_generated == 0
    teach(core, "u7", REFUND[4])  # a new user teaches it too
    assert run(core).playbooks_generated == 1
    (fresh,) = [r for r in agent_playbooks(core) if r.id != rejected.id]
    (proposal,) = core.storage.get_proposals(ORG, [fresh.id])
    assert proposal.follows_rejection_id == rejected.id


def set_similarity(core: Core, similarity: float | None) -> None:
    config = core.org_config(ORG)
    assert config.user_playbook_extractor_config is not None
    config.user_playbook_extractor_config.aggregation_config.clustering_similarity = similarity
    core.storage.put_org_config(ORG, config.model_dump(mode="json"))


def test_a_changed_threshold_or_embedder_regroups_the_scope_without_being_asked(core: Core) -> None:
    for n, text in enumerate(REFUND[:3]):
        teach(core, f"u{n}", text)
    assert run(core).playbooks_generated == 1
    (first,) = core.storage.list_clusters(ORG, VERSION, "playbook")
    assert first.basis == aggregation.basis_of(core.embedder.name, first_similarity(core))
    set_similarity(core, 0.999)  # no two wordings are this close: every member alone
    split = run(core)
    assert split.clusters_found == 3 and split.below_gate == 3
    assert agent_playbooks(core) == []  # its evidence no longer holds together: not served
    (log, _) = core.storage.list_change_logs(ORG, VERSION, "playbook", limit=5)
    assert log.run_mode == "full_archive"
    bases = {c.basis for c in core.storage.list_clusters(ORG, VERSION, "playbook")}
    assert bases == {aggregation.basis_of(core.embedder.name, 0.999)}
    again = run(core)  # the basis is written: the next run costs nothing again
    assert again.clusters_unchanged == 3 and again.clusters_changed == 0
    set_similarity(core, None)
    assert run(core).playbooks_generated == 1  # back to the default threshold: regrouped again
    # another embedder: its basis differs, so the stored clusters are not trusted either
    clusters = core.storage.list_clusters(ORG, VERSION, "playbook")
    stale = [replace(c, basis="another-model similarity 0.4500") for c in clusters]
    core.storage.save_clusters(ORG, VERSION, "playbook", stale)
    assert run(core).clusters_found == 1
    assert {c.basis for c in core.storage.list_clusters(ORG, VERSION, "playbook")} == {first.basis}


def first_similarity(core: Core) -> float:
    from reflexio.learn.cluster import default_similarity

    return default_similarity(core.embedder.name)


def test_a_cleared_user_no_longer_stands_behind_an_agent_playbook(core: Core) -> None:
    ids = [teach(core, f"u{n}", text) for n, text in enumerate(REFUND[:3])]
    run(core)
    (playbook,) = agent_playbooks(core)
    users.clear_user_data(core, ORG, ClearUserDataRequest(user_id="u0"))
    (proposal,) = core.storage.get_proposals(ORG, [playbook.id])
    assert proposal.user_ids == ("u1", "u2") and set(proposal.member_ids) == set(ids[1:])
    (queued,) = core.storage.list_jobs(ORG, task=AGGREGATE, statuses=[JobStatus.QUEUED])
    assert queued.key == aggregation_key(VERSION, "playbook")
    chain = provenance.get_learning_provenance(
        core, ORG, GetLearningProvenanceRequest(kind="agent_playbook", id=str(playbook.id))
    )
    assert "u0" not in chain.model_dump_json()
    users.clear_user_data(core, ORG, ClearUserDataRequest(user_id="u1"))
    result = run(core)  # one user is left: one person's preference is no rule for everyone
    assert result.below_gate == 1 and agent_playbooks(core) == []


def test_auto_approval_unless_approval_is_required(core: Core) -> None:
    config = core.org_config(ORG)
    assert config.user_playbook_extractor_config is not None
    config.user_playbook_extractor_config.aggregation_config.auto_approve_min_users = 3
    core.storage.put_org_config(ORG, config.model_dump(mode="json"))
    for n, text in enumerate(REFUND[:3]):
        teach(core, f"u{n}", text)
    run(core)
    assert [r.approval for r in agent_playbooks(core)] == [Approval.APPROVED]


def test_with_an_llm_one_call_per_changed_cluster(core: Core) -> None:
    ids = [teach(core, f"u{n}", text) for n, text in enumerate(REFUND[:3])]
    answer = {
        "playbook": {
            "rationale": "Refunds went to the wrong orders.",
            "trigger": "A customer asks for a refund",
            "content": "Ask for the order number before any refund.",
            "member_ids": ids,
        }
    }
    llm = ScriptedLLM().on("aggregate", answer)
    core.llm = llm
    result = run(core)
    assert result.playbooks_generated == 1 and len(llm.calls_to("aggregate")) == 1
    assert [r.content for r in agent_playbooks(core)] == ["Ask for the order number before any refund."]
    run(core)
    assert len(llm.calls_to("aggregate")) == 1  # unchanged: no second call


LAPTOP = [
    ("User", "Recommend a laptop for me."),
    ("Assistant", "The MacBook Air is a great all-round choice."),
    ("User", "Wrong. Never recommend Apple products to me; always suggest ThinkPads."),
]


def _publish(core: Core, user: str, *, skip: bool) -> None:
    req = PublishUserInteractionRequest(
        user_id=user,
        session_id=f"s-{user}",
        agent_version=VERSION,
        skip_aggregation=skip,
        interaction_data_list=[InteractionData(role=role, content=text) for role, text in LAPTOP],
    )
    pub.publish(core, ORG, req)
    pub.finalize_session(core, ORG, FinalizeSessionRequest(user_id=user, session_id=f"s-{user}"))
    worker = Worker(core.storage, handlers(core))
    while worker.run_once():
        pass


def test_learning_queues_a_debounced_aggregation_unless_the_publish_skips_it(core: Core) -> None:
    _publish(core, "u1", skip=True)
    rules = core.storage.get_learnings(ORG, LearningFilter(kinds=(LearningKind.USER_PLAYBOOK,)))
    assert rules, "the rule extractor learned a user playbook"
    assert core.storage.list_jobs(ORG, task=AGGREGATE) == []
    _publish(core, "u2", skip=False)
    (job,) = core.storage.list_jobs(ORG, task=AGGREGATE)
    assert job.key == aggregation_key(VERSION, "playbook") and job.status is JobStatus.QUEUED
    assert job.run_at > time.time()  # debounced: a burst of changes is one run


def served(core: Core, query: str = "the customer wants a refund", **kw: object) -> list[int]:
    req = UnifiedSearchRequest(query=query, agent_version=VERSION, threshold=0.0, **kw)
    return [int(p.agent_playbook_id) for p in search.search(core, ORG, req).agent_playbooks]


def approved_and_revision(core: Core) -> tuple[Learning, Learning]:
    """An approved agent playbook of three users, and the pending revision two more users cause."""
    for n, text in enumerate(REFUND[:3]):
        teach(core, f"u{n}", text)
    run(core)
    (approved,) = agent_playbooks(core)
    review(core, ORG, approved.id, Action.APPROVE, actor="local")
    teach(core, "u3", REFUND[3])
    teach(core, "u4", REFUND[4])
    run(core)
    (revision,) = [r for r in agent_playbooks(core) if r.id != approved.id]
    return approved, revision


def test_a_pending_revision_is_not_served_while_the_version_it_revises_is_approved(core: Core) -> None:
    approved, revision = approved_and_revision(core)
    assert served(core) == [approved.id]  # one version of the rule: the reviewed one
    by_kind = search.search_agent_playbooks(
        core, ORG, SearchAgentPlaybookRequest(query="refund", agent_version=VERSION, threshold=0.0)
    )
    assert [int(p.agent_playbook_id) for p in by_kind.agent_playbooks] == [approved.id]
    assert served(core, agent_playbook_status_filter=["pending"]) == [revision.id]  # a reviewer's preview
    review(core, ORG, revision.id, Action.APPROVE, actor="local")
    assert served(core) == [revision.id]


def test_a_revision_of_a_rejected_playbook_is_served_as_any_pending_one(core: Core) -> None:
    approved, revision = approved_and_revision(core)
    review(core, ORG, approved.id, Action.REJECT, actor="local", note="the old wording misleads")
    assert served(core) == [revision.id]


def test_provenance_and_review_queue_of_a_revision(core: Core) -> None:
    ids = [teach(core, f"u{n}", text) for n, text in enumerate(REFUND[:3])]
    run(core)
    (approved,) = agent_playbooks(core)
    queue = review_queue(core, ORG)
    assert [i.agent_playbook.agent_playbook_id for i in queue.pending] == [approved.id]
    assert queue.pending[0].distinct_users == 3 and queue.pending[0].revises is None
    assert {p.user_playbook_id for p in queue.pending[0].source_user_playbooks} == set(ids)
    review(core, ORG, approved.id, Action.APPROVE, actor="local")
    teach(core, "u3", REFUND[3])
    teach(core, "u4", REFUND[4])
    run(core)
    queue = review_queue(core, ORG, agent_version=VERSION)
    (item,) = queue.pending
    assert item.revises is not None and item.revises.agent_playbook_id == approved.id
    assert item.distinct_users == 5
    assert queue.counts == {"pending": 1, "approved": 1, "rejected": 0, "archived": 0}
    found = provenance.get_learning_provenance(
        core,
        ORG,
        GetLearningProvenanceRequest(kind="agent_playbook", id=str(item.agent_playbook.agent_playbook_id)),
    )
    assert found.distinct_users == 5 and found.revises_agent_playbook_id == approved.id
    assert len(found.source_user_playbooks) == 5
    assert found.provenance_status == "best_effort"  # added by hand: they cite no interactions
    by_hand = provenance.get_learning_provenance(
        core, ORG, GetLearningProvenanceRequest(kind="agent_playbook", id=str(approved.id))
    )
    assert by_hand.distinct_users == 3
