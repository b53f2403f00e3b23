"""Storage contract: the live event stream's rows, and the trace context a job carries.

Events are written in the transaction of the change they report, numbered per org in commit
order; the stream route reads them with ``list_stream_events(after=...)``.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

from reflexio.filters import LearningFilter
from reflexio.records import Approval, Audit, EvaluationRecord, Job, Learning, LearningKind, LearningStatus
from reflexio.storage import Storage

AUDIT = Audit(actor="test")


def rule(org: str = "o1", content: str = "Confirm the order number first", **kw: object) -> Learning:
    return Learning(org_id=org, kind=LearningKind.AGENT_PLAYBOOK, content=content, agent_version="v1", **kw)  # type: ignore[arg-type]


def types(storage: Storage, org: str = "o1", after: int = 0) -> list[tuple[int, str, str | None]]:
    return [(e.seq, e.type, e.subject_id) for e in storage.list_stream_events(org, after=after)]


def test_a_learnings_life_is_streamed_in_order(storage: Storage) -> None:
    (row,) = storage.save_learnings([rule(approval=Approval.PENDING)], AUDIT)
    (other,) = storage.save_learnings([rule(content="Say which carrier ships the parcel")], AUDIT)
    storage.update_learnings("o1", LearningFilter(ids=(row.id,)), {"approval": Approval.APPROVED}, AUDIT)
    storage.update_learnings("o1", LearningFilter(ids=(other.id,)), {"approval": Approval.REJECTED}, AUDIT)
    storage.update_learnings(
        "o1", LearningFilter(ids=(row.id,)), {"status": LearningStatus.SUPERSEDED}, AUDIT
    )
    storage.update_learnings(
        "o1", LearningFilter(ids=(other.id,)), {"status": LearningStatus.ARCHIVED}, AUDIT
    )
    storage.delete_learnings("o1", LearningFilter(ids=(other.id,)), AUDIT)
    a, b = str(row.id), str(other.id)
    assert types(storage) == [
        (1, "learning.created", a),
        (2, "learning.created", b),
        (3, "learning.approved", a),
        (4, "learning.rejected", b),
        (5, "learning.superseded", a),
        (6, "learning.retired", b),
        (7, "learning.retired", b),
    ]
    events = storage.list_stream_events("o1", after=0)
    assert (
        events[0].kind == "agent_playbook" and events[0].data["content"] == "Confirm the order number first"
    )
    assert events[-1].data["how"] == "deleted"
    assert types(storage, after=5) == [(6, "learning.retired", b), (7, "learning.retired", b)]
    assert storage.last_stream_event("o1") == 7


def test_a_profile_is_named_by_its_profile_id(storage: Storage) -> None:
    row = Learning(
        org_id="o1", kind=LearningKind.PROFILE, content="Lives in Oslo", user_id="u1", profile_id="p-1"
    )
    storage.save_learnings([row], AUDIT)
    (event,) = storage.list_stream_events("o1", after=0)
    assert (event.subject_id, event.user_id, event.kind) == ("p-1", "u1", "profile")


def test_filters_and_orgs(storage: Storage) -> None:
    storage.save_learnings([rule()], AUDIT)
    storage.save_learnings([rule("o2")], AUDIT)
    storage.save_learnings(
        [Learning(org_id="o1", kind=LearningKind.PROFILE, content="Uses Linux", user_id="u9")], AUDIT
    )
    assert [e.seq for e in storage.list_stream_events("o2", after=0)] == [1]  # numbered per org
    assert [e.kind for e in storage.list_stream_events("o1", after=0, kinds=["profile"])] == ["profile"]
    assert [e.user_id for e in storage.list_stream_events("o1", after=0, user_id="u9")] == ["u9"]
    assert storage.list_stream_events("o1", after=0, types=["learning.approved"]) == []
    assert len(storage.list_stream_events("o1", after=0, limit=1)) == 1
    assert storage.last_stream_event("nobody") == 0
    assert storage.clear_user("o1", "u9")["stream_events"] == 1
    assert [e.kind for e in storage.list_stream_events("o1", after=0)] == ["agent_playbook"]


def test_dead_jobs_and_finished_evaluations_are_streamed(storage: Storage) -> None:
    storage.enqueue_jobs([Job(org_id="o1", task="extract", key="u1", max_attempts=1)])
    (held,) = storage.claim_jobs("w1", limit=1, lease_seconds=30)
    assert storage.finish_job(held.id, "w1", error="ValueError: bad payload")
    storage.enqueue_jobs([Job(org_id="o1", task="evaluate_session", key="s1", max_attempts=1)])
    (lost,) = storage.claim_jobs("w1", limit=1, lease_seconds=0.05)
    time.sleep(0.1)
    storage.claim_jobs("w2", limit=1, lease_seconds=30)  # buries the job whose worker died
    (judged,) = storage.add_evaluations(
        [
            EvaluationRecord(
                org_id="o1", kind="session", result={"is_success": True}, user_id="u1", session_id="s1"
            )
        ]
    )
    events = storage.list_stream_events("o1", after=0)
    assert [(e.type, e.kind, e.subject_id) for e in events] == [
        ("job.dead", "extract", str(held.id)),
        ("job.dead", "evaluate_session", str(lost.id)),
        ("evaluation.finished", "session", str(judged.id)),
    ]
    assert events[0].data["error"] == "ValueError: bad payload"
    assert events[2].data["result"] == {"is_success": True} and events[2].user_id == "u1"


def test_concurrent_writers_get_distinct_consecutive_numbers(storage: Storage) -> None:
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda i: storage.save_learnings([rule(content=f"Rule number {i}")], AUDIT), range(20)))
    assert [e.seq for e in storage.list_stream_events("o1", after=0)] == list(range(1, 21))


def test_a_job_keeps_the_trace_context_it_was_enqueued_with(storage: Storage) -> None:
    context = {"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
    (queued,) = storage.enqueue_jobs([Job(org_id="o1", task="extract", key="u1", trace_context=context)])
    assert queued.trace_context == context
    (claimed,) = storage.claim_jobs("w1", limit=1, lease_seconds=30)
    assert claimed.trace_context == context
    (plain,) = storage.enqueue_jobs([Job(org_id="o1", task="extract", key="u2")])
    assert plain.trace_context == {}


def test_queue_and_llm_statistics_for_metrics(storage: Storage) -> None:
    from reflexio.records import JobStatus, LLMUsageRecord

    past = time.time() - 30
    storage.enqueue_jobs(
        [
            Job(org_id="o1", task="extract", key="a", run_at=past),
            Job(org_id="o1", task="extract", key="b", run_at=time.time() + 3600),
            Job(org_id="o2", task="evaluate_session", key="c", max_attempts=1),
        ]
    )
    (held,) = storage.claim_jobs("w1", limit=1, lease_seconds=30, tasks=["evaluate_session"])
    storage.finish_job(held.id, "w1", error="boom")
    stats = {(s.org_id, s.task, s.status): s for s in storage.job_stats()}
    queued = stats[("o1", "extract", JobStatus.QUEUED)]
    assert queued.count == 2 and queued.oldest_due is not None and abs(queued.oldest_due - past) < 1
    assert stats[("o2", "evaluate_session", JobStatus.DEAD)].count == 1
    storage.add_llm_usage(
        [
            LLMUsageRecord(
                org_id="o1", role="extraction", model="m", prompt="p", prompt_tokens=10, cost_usd=0.5
            ),
            LLMUsageRecord(
                org_id="o1", role="gate", model="m", prompt="p", completion_tokens=4, cost_usd=0.25
            ),
        ]
    )
    (usage,) = storage.llm_usage_by_org()
    assert (usage.org_id, usage.model, usage.prompt_tokens, usage.completion_tokens) == ("o1", "m", 10, 4)
    assert abs(usage.cost_usd - 0.75) < 1e-9
