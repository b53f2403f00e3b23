"""Aggregation routes: 202 with an operation id, polling it, change logs, and bad input."""

from __future__ import annotations

from starlette.testclient import TestClient

from reflexio.jobs import Worker
from reflexio.service.core import Core
from reflexio.service.workers import handlers
from tests.api.support import failed, ok

OPS = "/api/playbook_aggregation_operations"
LESSON = [
    "Ask for the order number before issuing a refund.",
    "Always ask for the order number before you issue a refund.",
    "Before issuing any refund, ask the customer for the order number.",
]


def _teach(client: TestClient) -> None:
    rows = [
        {
            "user_id": f"u{n}",
            "agent_version": "desk@1",
            "playbook_name": "playbook",
            "request_id": f"r{n}",
            "content": text,
            "trigger": "A customer asks for a refund",
        }
        for n, text in enumerate(LESSON)
    ]
    ok(client.post("/api/add_user_playbook", json={"user_playbooks": rows}))


def test_submit_is_202_with_an_operation_to_poll(client: TestClient, core: Core) -> None:
    _teach(client)
    answer = client.post(OPS, json={"agent_version": "desk@1", "request_id": "op-1"})
    assert answer.status_code == 202
    op = answer.json()
    assert op["status"] == "queued" and op["attempts"] == 0 and op.get("result") is None
    worker = Worker(core.storage, handlers(core))
    while worker.run_once():
        pass
    done = ok(client.get(f"{OPS}/{op['operation_id']}"))
    assert done["status"] == "succeeded" and done["attempts"] == 1
    assert done["result"]["playbooks_generated"] == 1 and done["result"]["clusters_found"] == 1
    logs = ok(
        client.get(
            "/api/playbook_aggregation_change_logs",
            params={"agent_version": "desk@1", "playbook_name": "playbook"},
        )
    )
    (log,) = logs["change_logs"]
    assert (
        log["run_mode"] == "incremental" and log["added_agent_playbooks"][0]["playbook_status"] == "pending"
    )


def test_bad_input(client: TestClient) -> None:
    failed(client.get(f"{OPS}/12345"), 404)
    failed(client.get(f"{OPS}/not-a-number"), 404)
    failed(client.post(OPS, json={"playbook_name": " "}), 422)
    failed(client.get("/api/playbook_aggregation_change_logs", params={"agent_version": "desk@1"}), 422)
