"""Aggregation through the SDK over a real socket: submit, follow, run synchronously, change logs."""

from __future__ import annotations

from pathlib import Path

import httpx
import pydantic
import pytest

from reflexio import ReflexioClient
from reflexio.errors import NotFoundError
from tests.client.live_server import running_server

VERSION = "desk@1"
LESSON = [
    "Ask for the order number before issuing a refund.",
    "Always ask for the order number before you issue a refund.",
    "Before issuing any refund, ask the customer for the order number.",
]


def test_aggregation_through_the_sdk(tmp_path: Path) -> None:
    with running_server(tmp_path) as url, ReflexioClient(url_endpoint=url) as client:
        client.add_user_playbook(
            [
                {
                    "user_id": f"u{n}",
                    "agent_version": VERSION,
                    "playbook_name": "playbook",
                    "request_id": f"r{n}",
                    "trigger": "A customer asks for a refund",
                    "content": text,
                }
                for n, text in enumerate(LESSON)
            ]
        )
        op = client.submit_playbook_aggregation(request_id="first", agent_version=VERSION)
        assert op.status == "queued" and op.agent_version == VERSION
        assert (
            client.submit_playbook_aggregation(request_id="first", agent_version=VERSION).operation_id
            == op.operation_id
        )
        # No worker runs in this server: the synchronous run claims the queued job itself.
        answer = client.run_playbook_aggregation(wait_for_response=True, agent_version=VERSION)
        assert answer is not None and answer.success, answer
        assert "1 new" in answer.message
        done = client.get_playbook_aggregation_operation(op.operation_id)
        assert done.status == "succeeded" and done.result is not None
        assert (done.result.playbooks_generated, done.result.user_playbooks_processed) == (1, 3)
        logs = client.get_playbook_aggregation_change_logs(agent_version=VERSION)
        assert [len(log.added_agent_playbooks) for log in logs.change_logs] == [1]
        with pytest.raises(NotFoundError):
            client.get_playbook_aggregation_operation("999999")
        queue = client.get_agent_playbook_review_queue(agent_version=VERSION)
        (item,) = queue.pending
        assert item.distinct_users == 3 and len(item.source_user_playbooks) == 3 and item.revises is None
        assert queue.counts["pending"] == 1
        assert client.get_agent_playbook_review_queue(agent_version="other@1").pending == []
        with pytest.raises(pydantic.ValidationError):  # checked before anything is sent
            client.get_agent_playbook_review_queue(limit=0)
        refused = httpx.post(f"{url}/api/get_agent_playbook_review_queue", json={"limit": 0}, timeout=10)
        assert refused.status_code == 422 and "limit" in refused.text
