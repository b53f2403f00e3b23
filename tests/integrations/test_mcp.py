"""The MCP server through the SDK's own client, over streamable HTTP (mounted by the API) and stdio.

Both transports serve the same tools over the same gateway protocol: HTTP calls the service
in the server process for the caller's org, stdio (``reflexio mcp``) goes through our SDK.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from reflexio.api.mounts import CALLER_SCOPE_KEY as API_KEY_NAME
from reflexio.integrations import mcp_server
from reflexio.service import keys
from tests.integrations.conftest import Live

pytestmark = pytest.mark.anyio

REVIEW_TOOLS = {"approve", "reject"}
READ_WRITE_TOOLS = {"search", "publish", "list_learnings", "get_learning"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@asynccontextmanager
async def over_http(live: Live, api_key: str = "") -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(f"{live.url}/api/mcp", http_client=http)) as client,
    ):
        yield client


@asynccontextmanager
async def over_stdio(live: Live, *args: str) -> AsyncIterator[Client]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REFLEXIO_")}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "reflexio", "mcp", "--url", live.url, *args], env=env
    )
    async with Client(params) as client:
        yield client


def structured(result: Any) -> Any:
    assert not result.is_error, result.content
    return result.structured_content


def seed(live: Live) -> str:
    """An agent playbook and a profile to find; returns the agent playbook's id."""
    with live.client() as api:
        api.add_agent_playbooks(
            [
                {
                    "agent_version": "mcp-v1",
                    "trigger": "a customer asks for a refund",
                    "content": "Confirm the order number before refunding",
                }
            ]
        )
        api.add_user_profile(
            [
                {"user_id": "mcp-user", "content": "Prefers answers in Spanish", "tags": ["standing"]},
                {"user_id": "mcp-user", "content": "Ordered a blue kettle in May"},
            ]
        )
        rows = api.get_agent_playbooks(agent_version="mcp-v1").agent_playbooks
    return str(rows[0].agent_playbook_id)


def test_the_api_and_the_mcp_server_agree_on_where_the_caller_is() -> None:
    assert mcp_server.CALLER_SCOPE_KEY == API_KEY_NAME


async def test_every_tool_over_streamable_http(live: Live) -> None:
    playbook_id = seed(live)
    async with over_http(live) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert names == READ_WRITE_TOOLS | REVIEW_TOOLS  # a local caller is the operator: reviews

        found = structured(
            await client.call_tool(
                "search",
                {"query": "I want a refund for my order", "agent_version": "mcp-v1", "user_id": "mcp-user"},
            )
        )
        assert "Confirm the order number before refunding" in found["prompt"]
        assert {"kind": "agent_playbook", "learning_id": playbook_id} in found["retrieved_learnings"]
        assert found["tokens"] > 0 and found["degraded"] is False
        assert "Prefers answers in Spanish" in found["prompt"]  # standing: served whatever the query

        published = structured(
            await client.call_tool(
                "publish",
                {
                    "user_id": "mcp-user",
                    "session_id": "mcp-session",
                    "request_id": "mcp-turn-1",
                    "agent_version": "mcp-v1",
                    "interactions": [
                        {"role": "User", "content": "I want a refund for my order"},
                        {
                            "role": "Assistant",
                            "content": "What is the order number?",
                            "retrieved_learnings": found["retrieved_learnings"],
                        },
                    ],
                },
            )
        )
        assert published["request_id"] == "mcp-turn-1"

        listed = structured(
            await client.call_tool("list_learnings", {"kind": "agent_playbook", "agent_version": "mcp-v1"})
        )
        assert [row["id"] for row in listed["result"]] == [playbook_id]
        one = structured(
            await client.call_tool("get_learning", {"kind": "agent_playbook", "learning_id": playbook_id})
        )
        assert one["review"] == "pending" and one["trigger"] == "a customer asks for a refund"

        approved = structured(await client.call_tool("approve", {"agent_playbook_id": int(playbook_id)}))
        assert approved["review"] == "approved"
        facts = await client.read_resource("reflexio://users/mcp-user/standing-preferences")
        standing = facts.contents[0].text  # type: ignore[union-attr]
        assert "Prefers answers in Spanish" in standing and "blue kettle" not in standing

    with live.client() as api:
        stored = {i.content: i for i in api.get_interactions(user_id="mcp-user").interactions}
        answer = stored["What is the order number?"]
        assert [r.model_dump() for r in answer.retrieved_learnings] == found["retrieved_learnings"]
        playbook = api.get_agent_playbooks(agent_version="mcp-v1").agent_playbooks[0]
        assert playbook.playbook_status.value == "approved"


async def test_errors_reach_the_agent_with_their_message(live: Live) -> None:
    async with over_http(live) as client:
        missing = await client.call_tool("get_learning", {"kind": "user_playbook", "learning_id": "999999"})
        assert missing.is_error and "NotFoundError" in missing.content[0].text  # type: ignore[union-attr]
        no_user = await client.call_tool("list_learnings", {"kind": "profile"})
        assert no_user.is_error and "give user_id" in no_user.content[0].text  # type: ignore[union-attr]


async def test_over_http_the_endpoint_is_keyed_like_every_api_route(live: Live) -> None:
    record, plain = keys.create_key(live.core, "mcp-org", "agent")
    try:
        with pytest.raises(Exception):  # noqa: B017  (the SDK surfaces the 401 as a transport error)
            async with over_http(live) as client:
                await client.list_tools()
        raw = httpx2.post(f"{live.url}/api/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert raw.status_code == 401 and "Bearer" in raw.json()["detail"]
        async with over_http(live, plain) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert names == READ_WRITE_TOOLS  # an agent's key may not review
            hits = structured(
                await client.call_tool("search", {"query": "refund my order", "agent_version": "mcp-v1"})
            )
            assert hits["retrieved_learnings"] == []  # another org sees nothing of the default org
    finally:
        keys.revoke_key(live.core, record.id, "mcp-org")


async def test_a_reviewer_key_is_offered_the_review_tools(live: Live) -> None:
    record, plain = keys.create_key(live.core, "mcp-review-org", "reviewer", reviewer=True)
    try:
        async with over_http(live, plain) as client:
            assert {
                tool.name for tool in (await client.list_tools()).tools
            } == READ_WRITE_TOOLS | REVIEW_TOOLS
    finally:
        keys.revoke_key(live.core, record.id, "mcp-review-org")


async def test_over_stdio_through_the_sdk(live: Live) -> None:
    playbook_id = seed(live)
    async with over_stdio(live) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert names == READ_WRITE_TOOLS
        found = structured(
            await client.call_tool("search", {"query": "refund for my order", "agent_version": "mcp-v1"})
        )
        assert "Confirm the order number" in found["prompt"]
        listed = structured(
            await client.call_tool("list_learnings", {"kind": "profile", "user_id": "mcp-user"})
        )
        assert any("Spanish" in row["content"] for row in listed["result"])
    async with over_stdio(live, "--review") as client:
        assert {tool.name for tool in (await client.list_tools()).tools} >= REVIEW_TOOLS
        rejected = structured(await client.call_tool("reject", {"agent_playbook_id": int(playbook_id)}))
        assert rejected["review"] == "rejected"
        after = structured(
            await client.call_tool("search", {"query": "refund for my order", "agent_version": "mcp-v1"})
        )
        assert {"kind": "agent_playbook", "learning_id": playbook_id} not in after["retrieved_learnings"]
    assert json.dumps(found)  # structured output is plain JSON
