"""OpenAI Agents SDK: learnings injected through dynamic instructions and each run published,
driven by the SDK's own ScriptedModel (no network) against a live server."""

from __future__ import annotations

import asyncio

from agents import Agent, Runner, function_tool
from agents.testing import ScriptedModel, assistant_message, function_call

from reflexio import AsyncReflexioClient
from reflexio.integrations.openai_agents import ReflexioLearnings
from tests.integrations.conftest import Live

USER = "agents-user"


@function_tool
def track_package(order_id: str) -> str:
    """Where a package is."""
    return f"order {order_id} is in Bergen"


@function_tool
def refund(order_id: str) -> str:
    """Refund an order."""
    raise RuntimeError("refunds are closed on Sundays")


def test_a_run_gets_the_learnings_and_is_published_with_them(live: Live) -> None:
    with live.client() as api:
        api.add_agent_playbooks(
            [
                {
                    "agent_version": "agents-v1",
                    "trigger": "a package is late",
                    "content": "Give the tracking link first",
                }
            ]
        )
        playbook_id = str(
            api.get_agent_playbooks(agent_version="agents-v1").agent_playbooks[0].agent_playbook_id
        )

    model = ScriptedModel(
        [
            [function_call("track_package", {"order_id": "42"}, call_id="c1")],
            [function_call("refund", {"order_id": "42"}, call_id="c2")],
            [assistant_message("It is in Bergen: https://track.example/42")],
        ]
    )

    async def run() -> tuple[str, ReflexioLearnings]:
        async with AsyncReflexioClient(url_endpoint=live.url) as client:
            learnings = ReflexioLearnings(
                client, user_id=USER, session_id="agents-s1", agent_version="agents-v1"
            )
            agent = Agent(
                name="support",
                instructions=learnings.instructions("You are a support agent."),
                model=model,
                tools=[track_package, refund],
            )
            result = await Runner.run(agent, "My package 42 is late, where is it?", hooks=learnings)
            return str(result.final_output), learnings

    output, learnings = asyncio.run(run())
    assert output == "It is in Bergen: https://track.example/42"
    first = model.calls[0]
    assert "Give the tracking link first" in str(first.system_instructions)
    assert len(learnings.published) == 1

    with live.client() as api:
        turns = sorted(api.get_interactions(user_id=USER).interactions, key=lambda t: t.interaction_id)
    user, answer = turns[-2:]
    assert user.content == "My package 42 is late, where is it?"
    assert answer.content == output
    assert [(t.tool_name, t.status) for t in answer.tools_used] == [
        ("track_package", "success"),
        ("refund", "error"),
    ]
    assert [r.model_dump() for r in answer.retrieved_learnings] == [
        {"kind": "agent_playbook", "learning_id": playbook_id}
    ]


def test_with_reflexio_down_the_agent_still_answers() -> None:
    model = ScriptedModel([[assistant_message("fine")]])

    async def run() -> str:
        async with AsyncReflexioClient(url_endpoint="http://127.0.0.1:9", timeout=1) as client:
            learnings = ReflexioLearnings(client, user_id=USER)
            agent = Agent(name="a", instructions=learnings.instructions("Be brief."), model=model)
            result = await Runner.run(agent, "hello there", hooks=learnings)
            assert learnings.published == []
            return str(result.final_output)

    assert asyncio.run(run()) == "fine"
    assert model.calls[0].system_instructions == "Be brief."


def test_a_long_input_is_searched_by_its_head_and_tail(live: Live) -> None:
    """An input past the API's 10,000 characters (a pasted document) still gets its learnings."""
    with live.client() as api:
        api.add_agent_playbooks(
            [{"agent_version": "agents-long", "trigger": "a package is late", "content": "Say sorry first"}]
        )
    model = ScriptedModel([[assistant_message("Sorry: it is in Bergen")]])

    async def run() -> None:
        async with AsyncReflexioClient(url_endpoint=live.url) as client:
            learnings = ReflexioLearnings(client, user_id=USER, agent_version="agents-long")
            agent = Agent(name="a", instructions=learnings.instructions("Be brief."), model=model)
            pasted = "My package 42 is late, where is it?\n" + "-" * 12_000 + "\nthe package is late"
            await Runner.run(agent, pasted, hooks=learnings)

    asyncio.run(run())
    assert "Say sorry first" in str(model.calls[0].system_instructions)
