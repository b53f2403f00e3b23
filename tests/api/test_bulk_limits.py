"""Bulk routes are bounded and stop when nobody waits (issue 16, defect 2).

900 profiles of ~9,000 characters used to run for minutes, were not cancelled when the client
left and held a SIGTERM'd server up. Now a request is bounded (items, characters per item and
in all), embedding runs in batches with a cancellation check between them, and a stopping
server cancels it and exits within its grace period.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
import pydantic
import pytest
from bench.ingest import ROOT, _free_port

from reflexio.embed import Embedder, Vectors
from reflexio.errors import RequestCancelledError
from reflexio.filters import LearningFilter
from reflexio.models import AddAgentPlaybookRequest, AddUserProfileRequest, UserProfile
from reflexio.records import LearningKind
from reflexio.service import profiles
from reflexio.service.bulk import EMBED_BATCH
from reflexio.service.cancellation import Cancellation
from reflexio.service.core import Core
from tests.api.support import ok, profile


def _profiles(count: int, size: int, user_id: str = "u1") -> list[dict[str, Any]]:
    return [profile(f"p{i}", f"fact {i} " + "x" * size, user_id=user_id) for i in range(count)]


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        (_profiles(1_001, 10), "at most 1000 items"),
        (_profiles(1, 10_001), "at most 10000 characters"),
        (_profiles(200, 9_000), "1,000,000"),
    ],
)
def test_a_bulk_write_is_bounded(rows: list[dict[str, Any]], expected: str) -> None:
    # Checked on the model: the API fixture's body limit (64 KiB) would refuse these first.
    with pytest.raises(pydantic.ValidationError, match=expected):
        AddUserProfileRequest.model_validate({"user_profiles": rows})


def test_playbook_bulk_writes_are_bounded_in_all() -> None:
    rows = [{"agent_version": "v1", "content": "y" * 9_000, "trigger": "t" * 2_000} for _ in range(100)]
    with pytest.raises(pydantic.ValidationError, match="1,000,000"):
        AddAgentPlaybookRequest.model_validate({"agent_playbooks": rows})


class _CancelAfter:
    """An embedder that cancels the request once it has embedded ``batches`` batches."""

    def __init__(self, inner: Embedder, cancel: Cancellation, batches: int) -> None:
        self._inner, self._cancel, self._left = inner, cancel, batches
        self.calls = 0

    @property
    def name(self) -> str:
        return self._inner.name

    @property
    def dim(self) -> int:
        return self._inner.dim

    def embed(self, texts: Sequence[str], *, kind: Any = "document") -> Vectors:
        self.calls += 1
        assert len(texts) <= EMBED_BATCH
        self._left -= 1
        if self._left == 0:
            self._cancel.cancel("the client disconnected")
        return self._inner.embed(texts, kind=kind)


def test_embedding_stops_between_batches_and_nothing_is_stored(core: Core) -> None:
    cancel = Cancellation()
    slow = _CancelAfter(core.embedder, cancel, batches=2)
    core.embedder = slow
    req = AddUserProfileRequest(user_profiles=[UserProfile.model_validate(p) for p in _profiles(300, 20)])
    with pytest.raises(RequestCancelledError, match="client disconnected"):
        profiles.add_user_profiles(core, "org", req, cancel=cancel)
    assert slow.calls == 2  # not the 10 batches of the whole request
    assert core.storage.count_learnings("org", LearningFilter(kinds=(LearningKind.PROFILE,))) == 0


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _start_server(home: Path, grace: float) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    env = {
        **os.environ,
        "HOME": str(home),
        "REFLEXIO_HOME": str(home / ".reflexio"),
        "REFLEXIO_STORAGE_URL": f"sqlite:///{home}/bulk.db",
        "REFLEXIO_PORT": str(port),
        "REFLEXIO_WORKERS": "1",
        "REFLEXIO_SHUTDOWN_GRACE_SECONDS": str(grace),
        "REFLEXIO_LOG_LEVEL": "WARNING",
    }
    proc = subprocess.Popen([sys.executable, "-m", "reflexio.api.server"], env=env, cwd=ROOT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/health/ready", timeout=1).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError("the server did not start")


def _send_bulk(url: str) -> socket.socket:
    """Start the largest add_user_profile the limits allow, over a raw socket, without reading."""
    body = httpx.Request("POST", f"{url}/api/add_user_profile", json={"user_profiles": _profiles(1_000, 950)})
    host, port = url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)))
    head = f"POST /api/add_user_profile HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
    sock.sendall(f"{head}Content-Length: {len(body.read())}\r\n\r\n".encode() + body.read())
    return sock


@pytest.mark.slow
def test_a_client_that_leaves_stops_the_work(tmp_path: Path) -> None:
    proc, url = _start_server(tmp_path, grace=5)
    try:
        sock = _send_bulk(url)
        time.sleep(1.0)  # the server is embedding
        sock.close()
        time.sleep(1.0)  # one batch and a disconnect poll
        before = _cpu_seconds(proc.pid)
        time.sleep(2.0)
        assert _cpu_seconds(proc.pid) - before < 0.5  # idle again: the embedding stopped
        assert ok(httpx.post(f"{url}/api/get_profiles", json={"user_id": "u1"}))["user_profiles"] == []
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.slow
def test_shutdown_cancels_bulk_work_and_ends_within_its_grace(tmp_path: Path) -> None:
    grace = 5.0
    proc, url = _start_server(tmp_path, grace=grace)
    try:
        sock = _send_bulk(url)
        time.sleep(1.0)
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=grace + 10)
        took = time.monotonic() - started
        answer = sock.recv(4096)
        sock.close()
    finally:
        if proc.poll() is None:
            proc.kill()
    assert took < grace, f"the server took {took:.1f}s to stop"
    assert answer.startswith(b"HTTP/1.1 503") and b'"error":"cancelled"' in answer, answer[:300]
