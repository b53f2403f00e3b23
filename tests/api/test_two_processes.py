"""A rejection made through one server process is honoured by the next search in another.

Two real ``reflexio services start --foreground`` processes share one PostgreSQL schema, as two
replicas behind a load balancer would: what one reviewer revokes through the first is no
longer served by the second, with no restart, cache flush or wait.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.cli.conftest import free_port, home_env
from tests.conftest import POSTGRES_URL, postgres_schema_url

pytestmark = [pytest.mark.slow, pytest.mark.postgres]


class Replica:
    """One server process on the shared store, without job workers (search and review only)."""

    def __init__(self, home: Path, storage_url: str) -> None:
        self.port = free_port()
        base = {k: v for k, v in os.environ.items() if not k.startswith("REFLEXIO_")}
        env = {**base, **home_env(home), "REFLEXIO_STORAGE_URL": storage_url, "REFLEXIO_WORKERS": "0"}
        self.log = home / "server.log"
        command = [
            sys.executable,
            "-m",
            "reflexio",
            "services",
            "start",
            "--foreground",
            "--port",
            str(self.port),
        ]
        self._err = self.log.open("wb")
        self.proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=self._err)
        self.url = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + 90
        while not self._ready():
            if time.monotonic() > deadline:
                pytest.fail(f"replica on {self.port} did not start:\n{self.log.read_text()}")
            time.sleep(0.2)

    def _ready(self) -> bool:
        assert self.proc.poll() is None, self.log.read_text()
        try:
            return httpx.get(f"{self.url}/health", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    def call(self, method: str, path: str, body: dict[str, object]) -> dict[str, object]:
        answer = httpx.request(method, f"{self.url}{path}", json=body, timeout=30)
        assert answer.status_code == 200, answer.text
        data: dict[str, object] = answer.json()
        return data

    def serves(self, playbook_id: int) -> bool:
        body = {"query": "refund order number", "entity_types": ["agent_playbooks"], "threshold": 0.0}
        found = self.call("POST", "/api/search", body)["agent_playbooks"]
        assert isinstance(found, list)
        return playbook_id in {r["agent_playbook_id"] for r in found}

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        finally:
            self._err.close()


@pytest.fixture
def replicas(tmp_path: Path) -> Iterator[tuple[Replica, Replica]]:
    if not POSTGRES_URL:
        pytest.skip("REFLEXIO_TEST_POSTGRES_URL is not set")
    url = postgres_schema_url()
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = Replica(tmp_path / "a", url)
    try:
        second = Replica(tmp_path / "b", url)
    except BaseException:
        first.stop()
        raise
    yield first, second
    first.stop()
    second.stop()


def test_a_rejection_in_one_process_is_honoured_by_a_search_in_another(
    replicas: tuple[Replica, Replica],
) -> None:
    reviewer, agent = replicas
    rule = {
        "agent_version": "v1",
        "content": "Ask for the order number before a refund",
        "playbook_status": "approved",
    }
    added = reviewer.call("POST", "/api/add_agent_playbook", {"agent_playbooks": [rule]})
    ids = added["agent_playbook_ids"]
    assert isinstance(ids, list) and len(ids) == 1
    playbook_id = int(ids[0])
    assert agent.serves(playbook_id)
    status = {"agent_playbook_id": playbook_id, "playbook_status": "rejected", "note": "legal said no"}
    reviewer.call("PUT", "/api/update_agent_playbook_status", status)
    assert not agent.serves(playbook_id)  # the very next search, in the other process
    reopen = {"agent_playbook_id": playbook_id, "playbook_status": "approved"}
    agent.call("PUT", "/api/update_agent_playbook_status", reopen)
    assert reviewer.serves(playbook_id)
