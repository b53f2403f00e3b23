"""``reflexio agent-playbooks aggregate``: the lifecycle a reviewer sees, end to end over the CLI.

A worker on the server's store runs the jobs, as ``reflexio worker`` would next to a server.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from reflexio.config import Settings
from reflexio.jobs import Worker
from reflexio.service.core import open_core
from reflexio.service.workers import handlers
from tests.cli.conftest import Cli, home_env

LESSON = [
    "Ask for the order number before issuing a refund.",
    "Always ask for the order number before you issue a refund.",
    "Before issuing any refund, ask the customer for the order number.",
]


@pytest.fixture
def worker(server: tuple[str, Path]) -> Iterator[None]:
    _, home = server
    core = open_core(Settings.from_env(home_env(home)))
    stop = threading.Event()
    thread = threading.Thread(
        target=Worker(core.storage, handlers(core), poll_seconds=0.05).run, args=(stop,)
    )
    thread.start()
    yield
    stop.set()
    thread.join(timeout=30)
    core.close()


def test_aggregate_review_serve_revoke(cli: Cli, worker: None) -> None:
    version = f"v-{uuid.uuid4().hex[:6]}"
    for n, text in enumerate(LESSON):
        args = ("--user", f"u{n}", "--agent-version", version, "--trigger", "A customer asks for a refund")
        cli.json("user-playbooks", "add", "--content", text, *args)
    done = cli("agent-playbooks", "aggregate", "--agent-version", version, "--wait").stdout
    assert "succeeded" in done and "new (pending review): 1" in done
    assert max(len(line) for line in done.splitlines()) <= 80, done
    again = cli("agent-playbooks", "aggregate", "--agent-version", version, "--wait").stdout
    assert "unchanged clusters: 1" in again and "aggregator calls: 0" in again  # nothing changed
    queued = cli.json("agent-playbooks", "aggregate", "--agent-version", version)  # without --wait
    assert queued["status"] in ("queued", "running", "succeeded")

    pending = cli.json("agent-playbooks", "list", "--agent-version", version, "--status", "pending")
    (rule,) = pending["agent_playbooks"]
    rule_id = str(rule["agent_playbook_id"])
    assert "order number" in rule["content"]
    cli.json("agent-playbooks", "approve", rule_id, "--note", "matches the refund policy")
    served = cli.json("search", "refund", "--agent-version", version, "--kind", "agent-playbooks")
    assert [str(r["agent_playbook_id"]) for r in served["agent_playbooks"]] == [rule_id]
    cli.json("agent-playbooks", "reject", rule_id, "--note", "legal wants receipts instead")
    hidden = cli.json("search", "refund", "--agent-version", version, "--kind", "agent-playbooks")
    assert hidden["agent_playbooks"] == []
    rebuilt = cli.json("agent-playbooks", "aggregate", "--agent-version", version, "--full", "--wait")
    assert rebuilt["result"]["playbooks_generated"] == 0  # the same evidence does not re-propose it
