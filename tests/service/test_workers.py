"""The wired workers: publish → jobs → learnings found by search, with rules or an LLM."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from reflexio.config import Settings
from reflexio.filters import LearningFilter
from reflexio.jobs import Worker
from reflexio.models import (
    FinalizeSessionRequest,
    InteractionData,
    PublishUserInteractionRequest,
    UnifiedSearchRequest,
)
from reflexio.records import JobStatus, LearningKind
from reflexio.service import publish as pub
from reflexio.service import search
from reflexio.service.core import Core, open_core
from reflexio.service.workers import handlers
from reflexio.testing import rules_script
from tests.conftest import BACKENDS, storage_url


@pytest.fixture(params=BACKENDS)
def core(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    url = storage_url(request.param, tmp_path)
    c = open_core(Settings.from_env({"REFLEXIO_STORAGE_URL": url, "HOME": str(tmp_path)}))
    yield c
    c.close()


def converse(core: Core, user: str, session: str, turns: list[tuple[str, str]]) -> str:
    req = PublishUserInteractionRequest(
        user_id=user,
        session_id=session,
        agent_version="shop@1",
        interaction_data_list=[InteractionData(role=role, content=text) for role, text in turns],
    )
    request_id = pub.publish(core, "o", req).request_id or ""
    pub.finalize_session(core, "o", FinalizeSessionRequest(user_id=user, session_id=session))
    return request_id


def drain(core: Core) -> None:
    worker = Worker(core.storage, handlers(core))
    while worker.run_once():
        pass


LAPTOP = [
    ("User", "Recommend a laptop for me."),
    ("Assistant", "The MacBook Air is a great all-round choice."),
    ("User", "I only ever use Linux. Please don't suggest Macs."),
]


@pytest.mark.parametrize("with_llm", [False, True], ids=["rules", "scripted-llm"])
def test_a_correction_becomes_learnings_that_search_serves(core: Core, with_llm: bool) -> None:
    if with_llm:
        core.llm = rules_script()
    request_id = converse(core, "u1", "s1", LAPTOP)
    drain(core)
    assert pub.learning_status(core, "o", request_id).status == "done"
    found = search.search(
        core,
        "o",
        UnifiedSearchRequest(
            query="Which laptop should I buy for travelling?", user_id="u1", agent_version="shop@1"
        ),
    )
    texts = [p.content for p in found.profiles] + [f"{p.trigger} {p.content}" for p in found.user_playbooks]
    assert any("linux" in t.lower() for t in texts), texts
    assert all(v.score is not None for v in found.profiles)
    assert all(v.score is not None for v in found.user_playbooks)
    rows = core.storage.get_learnings("o", LearningFilter(user_id="u1"))
    assert {r.kind for r in rows} <= {LearningKind.PROFILE, LearningKind.USER_PLAYBOOK}
    assert all(r.source_interaction_ids for r in rows)
    usage = core.storage.llm_usage("o")
    assert (usage.calls > 0) is with_llm


def test_a_finished_session_is_flushed_and_judged(core: Core) -> None:
    converse(core, "u2", "s2", [*LAPTOP, ("Assistant", "Sorry! The ThinkPad X1 runs Fedora well.")])
    drain(core)
    (evaluation,) = core.storage.list_evaluations("o", kind="session", session_id="s2")
    assert evaluation.result["number_of_correction_per_session"] == 1
    assert evaluation.result["is_success"] is True
    assert evaluation.user_id == "u2" and evaluation.agent_version == "shop@1"


def test_session_verdicts_are_served_in_reflexio_shape(core: Core) -> None:
    from reflexio.models import GetAgentSuccessEvaluationResultsRequest
    from reflexio.service import evaluations

    converse(core, "u3", "s3", LAPTOP)
    drain(core)
    found = evaluations.agent_success_results(
        core, "o", GetAgentSuccessEvaluationResultsRequest(agent_version="shop@1")
    )
    (verdict,) = found.agent_success_evaluation_results
    assert verdict.session_id == "s3" and verdict.is_success is False
    assert verdict.number_of_correction_per_session == 1 and verdict.failure_type == "wrong_answer"
    other = evaluations.agent_success_results(
        core, "o", GetAgentSuccessEvaluationResultsRequest(agent_version="v9")
    )
    assert other.agent_success_evaluation_results == []


def test_no_model_runs_while_the_store_is_locked_for_writing(tmp_path: Path) -> None:
    """Embedding a new learning takes milliseconds; publishes must not queue behind it."""
    c = open_core(
        Settings.from_env({"REFLEXIO_STORAGE_URL": f"sqlite:///{tmp_path}/r.db", "HOME": str(tmp_path)})
    )
    storage: Any = c.storage
    inner = storage.embedder
    locked_calls: list[bool] = []

    class Watching:
        name, dim = inner.name, inner.dim

        def embed(self, texts: Any, *, kind: str = "document") -> Any:
            locked_calls.append(storage.db._write_lock.locked())
            return inner.embed(texts, kind=kind)

    storage.embedder = c.embedder = Watching()
    try:
        converse(c, "u1", "s1", LAPTOP)
        drain(c)
        assert c.storage.count_learnings("o", LearningFilter()) > 0
        assert locked_calls and not any(locked_calls)
    finally:
        c.close()


def test_publishes_batch_into_one_extraction_job_that_a_finished_session_makes_due(core: Core) -> None:
    def queued() -> list[float]:
        jobs = core.storage.list_jobs("o", statuses=[JobStatus.QUEUED])
        return [job.run_at for job in jobs if job.task == pub.EXTRACT]

    before = time.time()
    for i in range(3):
        req = PublishUserInteractionRequest(
            user_id="u1",
            session_id="s1",
            interaction_data_list=[InteractionData(role="User", content=f"turn {i}")],
        )
        pub.publish(core, "o", req)
    [due] = queued()
    assert before + pub.EXTRACTION_BATCH_SECONDS <= due <= time.time() + pub.EXTRACTION_BATCH_SECONDS
    pub.finalize_session(core, "o", FinalizeSessionRequest(user_id="u1", session_id="s1"))
    [due] = queued()
    assert due <= time.time()
