"""A turn that teaches is learned within the 2 s batch; ordinary turns still wait for a stride."""

from __future__ import annotations

import time

from reflexio.jobs import Worker
from reflexio.models import InteractionData, PublishUserInteractionRequest, UnifiedSearchRequest
from reflexio.records import Job, JobStatus
from reflexio.service import publish as pub
from reflexio.service import search
from reflexio.service.core import Core
from reflexio.service.workers import handlers


def send(core: Core, *turns: tuple[str, str]) -> None:
    """One publish of the seed's pattern: a user turn and the agent's answer, no waiting."""
    req = PublishUserInteractionRequest(
        user_id="u1",
        session_id="s1",
        agent_version="shop@1",
        interaction_data_list=[InteractionData(role=role, content=text) for role, text in turns],
    )
    pub.publish(core, "o", req)


def queued(core: Core) -> Job:
    [job] = [j for j in core.storage.list_jobs("o", statuses=[JobStatus.QUEUED]) if j.task == pub.EXTRACT]
    return job


def run_due(core: Core) -> None:
    worker = Worker(core.storage, handlers(core))
    while worker.run_once():
        pass


def served(core: Core, query: str) -> list[str]:
    found = search.search(core, "o", UnifiedSearchRequest(query=query, user_id="u1", agent_version="shop@1"))
    return [p.content for p in found.profiles] + [p.content for p in found.user_playbooks]


def batch_runs(core: Core) -> None:
    """The user's batched extraction job comes due (as it does ``EXTRACTION_BATCH_SECONDS`` after
    the first publish) and a worker runs it; no finalize, no idle timer."""
    job = queued(core)
    assert (
        job.payload["flush"] is False
        and time.time() < job.run_at <= time.time() + pub.EXTRACTION_BATCH_SECONDS
    )
    core.storage.expedite_job("o", pub.EXTRACT, job.key or "")
    run_due(core)


def test_a_correction_published_without_waiting_is_learned_by_the_batch(core: Core) -> None:
    send(core, ("User", "Recommend a laptop for me."), ("Assistant", "The MacBook Air is great."))
    send(core, ("User", "I only ever use Linux. Please don't suggest Macs."), ("Assistant", "Noted!"))
    batch_runs(core)
    assert any("linux" in text.lower() for text in served(core, "Which laptop for travelling?"))


def test_ordinary_turns_keep_the_stride(core: Core) -> None:
    send(core, ("User", "Recommend a laptop for me."), ("Assistant", "The MacBook Air is great."))
    send(core, ("User", "What is your return policy?"), ("Assistant", "30 days."))
    batch_runs(core)
    assert core.storage.get_bookmark("o", "u1", "profile") is None  # a tail shorter than a stride waits
