"""A rejection, edit or delete made through one server process is honoured by the next search in
another.

Two real ``reflexio services start --foreground`` processes share one PostgreSQL schema, as two
replicas behind a load balancer would: what one reviewer revokes through the first is no
longer served by the second, with no restart, cache flush or wait. Each process answers from
its own in-process search index (``storage.postgres_index``), which must catch up from the
change log before every answer, on both arms: full-text and vector.
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

    def serves(self, playbook_id: int, query: str = "refund order number", mode: str = "hybrid") -> bool:
        body = {"query": query, "entity_types": ["agent_playbooks"], "threshold": 0.0, "search_mode": mode}
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


def test_an_edit_and_a_delete_in_one_process_leave_both_arms_of_another_at_once(
    replicas: tuple[Replica, Replica],
) -> None:
    writer, reader = replicas
    rules = [
        {"agent_version": "v1", "content": f"Quote the warranty terms before a repair, case {i}"}
        for i in range(30)
    ]
    ids = writer.call("POST", "/api/add_agent_playbook", {"agent_playbooks": rules})["agent_playbook_ids"]
    assert isinstance(ids, list) and len(ids) == 30
    target = int(ids[0])
    for mode in ("fts", "vector"):
        assert reader.serves(target, "warranty repair case 0", mode)  # the reader's index is built now
    edit = {"agent_playbook_id": target, "content": "Offer a replacement battery for swollen cells"}
    writer.call("PUT", "/api/update_agent_playbook", edit)
    assert not reader.serves(target, "warranty repair case 0", "fts")  # the old words are gone
    assert reader.serves(target, "swollen battery replacement", "fts")  # the new ones found
    writer.call("DELETE", "/api/delete_agent_playbook", {"agent_playbook_id": target})
    for mode in ("fts", "vector", "hybrid"):
        assert not reader.serves(target, "swollen battery replacement", mode)
    assert reader.serves(int(ids[1]), "warranty repair case 1", "fts")  # the others stay
