"""End to end with the LLM extractor: publish, a worker learns through the LLM seam, search finds it.

The model is a ScriptedLLM, used exactly where production uses a LiteLLM model: the worker's
extraction handler wraps it in the usage ledger and hands it to ``window_learner``, which runs
the real windows, pipeline, similarity search, merge policy and transactional writes.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from reflexio.config import Settings
from reflexio.filters import LearningFilter
from reflexio.jobs import JobContext, Worker
from reflexio.learn.llm_extract import window_learner
from reflexio.learn.usage import metered
from reflexio.learn.windows import run_extraction
from reflexio.models import InteractionData, PublishUserInteractionRequest, UnifiedSearchRequest
from reflexio.records import JobStatus, Learning, LearningKind, LearningStatus
from reflexio.service import publish as pub
from reflexio.service import search as retrieval
from reflexio.service.core import Core, open_core
from reflexio.testing import ScriptedLLM
from tests.conftest import BACKENDS, storage_url

ORG = "org-e2e"


@pytest.fixture(params=BACKENDS)
def core(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Core]:
    settings = Settings.from_env(
        {"REFLEXIO_STORAGE_URL": storage_url(request.param, tmp_path), "HOME": str(tmp_path)}
    )
    c = open_core(settings)
    yield c
    c.close()


def existing_id(inputs: Mapping[str, Any], words: str) -> int:
    """The id of the known profile containing ``words`` (what a model reads from the prompt)."""
    rows: list[Learning] = inputs["context"].existing[LearningKind.PROFILE]
    return next(row.id for row in rows if words in row.content)


def script() -> ScriptedLLM:
    first = {
        "profiles": [
            {
                "content": "The user only uses Linux.",
                "type": "preference",
                "ttl": "one_year",
                "evidence": [3],
            },
            {
                "content": "The user lives in San Francisco.",
                "type": "fact",
                "ttl": "one_year",
                "evidence": [3],
            },
        ],
        "playbooks": [
            {
                "track": "correction",
                "rationale": "The user had to reject a Mac suggestion.",
                "trigger": "Recommending laptops or computers to this user",
                "content": "Recommend only Linux-friendly machines such as ThinkPads; never suggest Macs.",
                "pitfall": "Suggesting a Mac makes the user repeat that they use Linux.",
                "evidence": [3],
            }
        ],
    }

    def second(inputs: Mapping[str, Any]) -> dict[str, Any]:
        austin = {
            "content": "The user lives in Austin.",
            "ttl": "one_year",
            "evidence": [6],
            "relation": "contradicts",
            "existing_id": existing_id(inputs, "San Francisco"),
        }
        return {"profiles": [austin]}

    llm = ScriptedLLM().on("extract", first)
    return llm.on("extract", second, when=lambda inputs: "Austin" in inputs["conversation"])


def publish(core: Core, session: str, *turns: tuple[str, str]) -> str:
    req = PublishUserInteractionRequest(
        user_id="u1",
        session_id=session,
        agent_version="shop@1",
        interaction_data_list=[InteractionData(role=role, content=content) for role, content in turns],
    )
    return pub.publish(core, ORG, req, flush=True).request_id or ""


def drain(core: Core, llm: ScriptedLLM) -> None:
    def extract(ctx: JobContext) -> None:
        config = core.org_config(ctx.job.org_id)
        accounted = metered(llm, core.storage, ctx.job.org_id, ctx.job.id)
        run_extraction(ctx, core.storage, config, window_learner(core.storage, config, accounted))

    worker = Worker(core.storage, {pub.EXTRACT: extract})
    while worker.run_once():
        pass


def search(core: Core, query: str) -> Any:
    return retrieval.search(
        core, ORG, UnifiedSearchRequest(query=query, user_id="u1", agent_version="shop@1")
    )


def test_learn_through_the_llm_seam_then_supersede(core: Core) -> None:
    llm = script()
    publish(
        core,
        "s1",
        ("User", "Recommend a laptop for me."),
        ("Assistant", "The MacBook Air is a great all-round choice."),
        ("User", "I only ever use Linux, please don't suggest Macs. I'm in San Francisco by the way."),
    )
    drain(core, llm)
    assert [c.prompt for c in llm.calls] == ["extract"]  # a correction: no gate, one call for both kinds

    found = search(core, "which laptop suits a Linux user")
    assert any("Linux" in p.content for p in found.profiles)
    (rule,) = found.user_playbooks
    assert (
        rule.trigger == "Recommending laptops or computers to this user"
        and "never suggest Macs" in rule.content
    )
    stored = core.storage.list_learnings(ORG, LearningFilter(user_id="u1"), limit=10)
    assert {r.source_interaction_ids[0] for r in stored} == {3} and all(r.request_id for r in stored)

    publish(
        core,
        "s2",
        ("User", "Find me a coworking space near home."),
        ("Assistant", "Here are three in San Francisco."),
        ("User", "I moved to Austin last month, I don't live in San Francisco any more."),
    )
    drain(core, llm)
    assert [c.prompt for c in llm.calls] == ["extract", "extract"]  # the relation spared a merge call

    homes = [p.content for p in search(core, "where does the user live").profiles]
    assert "The user lives in Austin." in homes and "The user lives in San Francisco." not in homes
    old, new = _by_content(core, "San Francisco"), _by_content(core, "Austin")
    assert (
        old.status is LearningStatus.SUPERSEDED and old.superseded_by == new.id
    )  # kept, linked, not deleted
    events = core.storage.list_events(ORG, learning_ids=[old.id])
    assert [e.event for e in events] == ["superseded", "created"]
    assert events[0].actor == "extractor:profile+playbook" and "contradicts" in events[0].reason

    jobs = core.storage.list_jobs(ORG, task=pub.EXTRACT, statuses=[JobStatus.DONE])
    assert len(jobs) == 2
    usage = core.storage.llm_usage(ORG)
    assert usage.calls == 2 and usage.failed == 0 and usage.by_role["extraction"].prompt_tokens > 0
    assert usage.cost_usd == 0.0
    assert [core.storage.llm_usage(ORG, job_id=j.id).calls for j in jobs] == [1, 1]
    assert core.storage.llm_usage("another-org").calls == 0


def _by_content(core: Core, words: str) -> Any:
    rows = core.storage.list_learnings(
        ORG, LearningFilter(user_id="u1", kinds=(LearningKind.PROFILE,)), limit=10
    )
    return next(row for row in rows if words in row.content)


def test_quiet_sessions_cost_nothing(core: Core) -> None:
    llm = ScriptedLLM()  # any call would fail loudly: there is no rule
    publish(
        core, "s1", ("User", "What is your return policy?"), ("Assistant", "30 days, no questions asked.")
    )
    drain(core, llm)
    assert llm.calls == [] and core.storage.llm_usage(ORG).calls == 0
    assert core.storage.get_bookmark(ORG, "u1", "profile") is not None  # the window still counts as read
