"""LangChain: the retriever and the publishing callback, with langchain-core's fake chat models
against a live server (no LLM anywhere)."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableConfig, RunnableLambda, RunnablePassthrough
from langchain_core.tools import tool

from reflexio import AsyncReflexioClient
from reflexio.integrations.langchain import ReflexioCallbackHandler, ReflexioRetriever, as_context
from tests.integrations.conftest import Live

USER = "lc-user"


@pytest.fixture(scope="module")
def seeded(live: Live) -> tuple[str, str]:
    """An agent playbook and a profile to retrieve: their ids."""
    with live.client() as api:
        api.add_agent_playbooks(
            [
                {
                    "agent_version": "lc-v1",
                    "trigger": "a package is late",
                    "content": "Give the tracking link first",
                }
            ]
        )
        api.add_user_profile([{"user_id": USER, "content": "Lives in Oslo; packages go to the Oslo office"}])
        playbook = api.get_agent_playbooks(agent_version="lc-v1").agent_playbooks[0]
        profile = api.get_profiles(user_id=USER).user_profiles[0]
    return str(playbook.agent_playbook_id), profile.profile_id


@tool
def track_package(order_id: str) -> str:
    """Where a package is."""
    return f"order {order_id} is in Bergen"


@tool
def refund(order_id: str) -> str:
    """Refund an order."""
    raise RuntimeError("refunds are closed on Sundays")


def test_the_retriever_returns_learnings_as_documents(live: Live, seeded: tuple[str, str]) -> None:
    playbook_id, profile_id = seeded
    with live.client() as api:
        retriever = ReflexioRetriever(client=api, user_id=USER, agent_version="lc-v1")
        docs = retriever.invoke("my package to Oslo is late, where is it?")
    by_kind = {d.metadata["kind"]: d for d in docs}
    assert by_kind["agent_playbook"].metadata["id"] == playbook_id
    assert by_kind["agent_playbook"].page_content == "When a package is late: Give the tracking link first"
    assert by_kind["profile"].metadata["id"] == profile_id
    assert all(isinstance(d.metadata["score"], float) for d in docs)
    scores = [d.metadata["score"] for d in docs]
    assert scores == sorted(scores, reverse=True)
    assert as_context(docs).startswith("Rules to follow:\n- When a package is late")

    async def asynchronous() -> list[Any]:
        async with AsyncReflexioClient(url_endpoint=live.url) as client:
            with live.client() as api:
                return await ReflexioRetriever(client=api, async_client=client, user_id=USER).ainvoke(
                    "my package to Oslo is late"
                )

    assert {d.metadata["id"] for d in asyncio.run(asynchronous())} >= {profile_id}


def test_the_retriever_searches_a_long_query_by_its_head_and_tail(
    live: Live, seeded: tuple[str, str]
) -> None:
    """A query past the API's 10,000 characters (a pasted document) is not refused: the retriever
    searches with its head and tail, where the question is."""
    playbook_id, _ = seeded
    query = "my package to Oslo is late, where is it?\n" + "-" * 12_000 + "\nthe package is late"
    with live.client() as api:
        docs = ReflexioRetriever(client=api, user_id=USER, agent_version="lc-v1").invoke(query)
    assert playbook_id in {d.metadata["id"] for d in docs}


def test_the_callback_publishes_each_turn_with_tools_and_the_learnings_injected(
    live: Live, seeded: tuple[str, str]
) -> None:
    playbook_id, _ = seeded
    with live.client() as api:
        retriever = ReflexioRetriever(client=api, user_id=USER, agent_version="lc-v1")
        model = GenericFakeChatModel(messages=iter([AIMessage("It is in Bergen: https://track.example/42")]))
        prompt = ChatPromptTemplate.from_messages([("system", "{context}"), ("human", "{question}")])

        def use_tools(question: str, config: RunnableConfig) -> str:
            track_package.invoke({"order_id": "42"}, config)
            with contextlib.suppress(RuntimeError):
                refund.invoke({"order_id": "42"}, config)
            return question

        chain = (
            RunnableLambda(use_tools)
            | {"context": retriever | as_context, "question": RunnablePassthrough()}
            | prompt
            | model
        )
        handler = ReflexioCallbackHandler(api, user_id=USER, session_id="lc-session", agent_version="lc-v1")
        answer = chain.invoke("My package 42 is late, where is it?", config={"callbacks": [handler]})
        assert str(answer.content).startswith("It is in Bergen")
        assert len(handler.published) == 1

        turns = sorted(api.get_interactions(user_id=USER).interactions, key=lambda t: t.interaction_id)
    user, agent = turns[-2:]
    assert (user.role, user.content) == ("User", "My package 42 is late, where is it?")
    assert agent.content == "It is in Bergen: https://track.example/42"
    assert [(t.tool_name, t.status) for t in agent.tools_used] == [
        ("track_package", "success"),
        ("refund", "error"),
    ]
    assert {"kind": "agent_playbook", "learning_id": playbook_id} in [
        r.model_dump() for r in agent.retrieved_learnings
    ]


def test_a_publish_that_fails_never_breaks_the_chain(live: Live) -> None:
    from reflexio import ReflexioClient

    with ReflexioClient(url_endpoint="http://127.0.0.1:9", timeout=1) as down:
        handler = ReflexioCallbackHandler(down, user_id=USER)
        model = GenericFakeChatModel(messages=iter([AIMessage("fine")]))
        assert model.invoke("hello", config={"callbacks": [handler]}).content == "fine"
        assert handler.published == []
