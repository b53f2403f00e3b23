"""The server's job workers run in a child process it supervises (``api.worker_process``).

A real ``reflexio services start --foreground`` on SQLite: its worker child learns from what
is published, is restarted when killed, is stopped with the server, and stops itself when the
server is killed outright.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from tests.cli.conftest import free_port, home_env

pytestmark = pytest.mark.slow


def _children(pid: int) -> list[int]:
    """Direct children of ``pid`` (Linux /proc)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        found += [int(c) for c in task.read_text().split()]
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _eventually(check: Callable[[], bool], what: str, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting until {what}")
        time.sleep(0.1)


class Server:
    """``reflexio services start --foreground`` in a subprocess, with a private home."""

    def __init__(self, home: Path) -> None:
        if not Path("/proc/self/task").exists():
            pytest.skip("needs /proc to find the worker process")
        self.port = free_port()
        base = {k: v for k, v in os.environ.items() if not k.startswith("REFLEXIO_")}
        env = {**base, **home_env(home), "REFLEXIO_JOB_POLL_SECONDS": "0.1"}
        command = [sys.executable, "-m", "reflexio", "services", "start", "--foreground"]
        with (home / "server.log").open("wb") as log:  # the child keeps its own copy of the file
            self.proc = subprocess.Popen(
                [*command, "--port", str(self.port)], env=env, stdout=subprocess.DEVNULL, stderr=log
            )
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = home / "server.log"
        self.ready_file = home / ".reflexio" / "run" / f"workers-{self.port}.ready"
        _eventually(self._ready, "the server answers /health/ready")

    def _ready(self) -> bool:
        assert self.proc.poll() is None, self.log.read_text()
        try:
            return httpx.get(f"{self.url}/health/ready", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    def worker_pid(self) -> int | None:
        """The pid of the server's worker child, if one runs."""
        alive = [pid for pid in _children(self.proc.pid) if _alive(pid)]
        return alive[0] if len(alive) == 1 else None

    def workers_announced(self, pid: int) -> bool:
        """Whether worker process ``pid`` said its workers claim jobs (what "ready" waits for)."""
        try:
            return int(self.ready_file.read_text()) == pid
        except (OSError, ValueError):
            return False

    def learn(self, user: str) -> None:
        """Publish a finished session and wait (server side) until learning from it is done."""
        turns = [
            {"role": "User", "content": "Please always answer in metric units."},
            {"role": "Assistant", "content": "Sure, metric from now on."},
        ]
        body = {"user_id": user, "session_id": "s1", "interaction_data_list": turns, "session_finished": True}
        answer = httpx.post(
            f"{self.url}/api/publish_interaction",
            params={"wait_for_response": "true"},
            json=body,
            timeout=120,
        )
        assert answer.status_code == 200, answer.text
        assert answer.json()["learning_status"] == "done", answer.json()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    running = Server(tmp_path)
    yield running
    running.stop()


def test_the_worker_child_learns_is_restarted_and_stops_with_the_server(server: Server) -> None:
    _eventually(lambda: server.worker_pid() is not None, "the server has started its worker process")
    first = server.worker_pid()
    assert first is not None
    _eventually(lambda: server.workers_announced(first), "the worker process says its workers run")
    server.learn("alice")  # only the worker process runs jobs: the API process has no worker threads

    os.kill(first, signal.SIGKILL)
    _eventually(
        lambda: server.worker_pid() not in (None, first), "a new worker process replaced the killed one"
    )
    replacement = server.worker_pid()
    assert replacement is not None
    _eventually(lambda: server.workers_announced(replacement), "the new worker process says it runs")
    server.learn("bob")
    assert "exited with status -9; restarting it" in server.log.read_text()

    second = server.worker_pid()
    assert second is not None
    server.proc.send_signal(signal.SIGTERM)
    assert server.proc.wait(timeout=90) == 0
    assert not _alive(second), "the worker process outlived the server"
    assert not server.ready_file.exists(), "a stopped server must not look ready"


def test_the_worker_child_stops_itself_when_the_server_is_killed(server: Server) -> None:
    _eventually(lambda: server.worker_pid() is not None, "the server has started its worker process")
    child = server.worker_pid()
    assert child is not None
    server.proc.kill()
    server.proc.wait()
    _eventually(lambda: not _alive(child), "the orphaned worker process stopped", seconds=60)
