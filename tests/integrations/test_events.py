"""``GET /api/events``: the live stream over a real socket, through the SDK and ``reflexio watch``,
and resumed across a ``kill -9`` of the server without a gap or a duplicate."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from reflexio import AsyncReflexioClient, ReflexioClient
from reflexio.errors import AuthenticationError
from reflexio.models.api_events import StreamEvent
from reflexio.service import keys
from tests.cli.conftest import free_port
from tests.integrations.conftest import Live

ROOT = Path(__file__).resolve().parents[2]


def add_rules(url: str, version: str, count: int, start: int = 0) -> None:
    with ReflexioClient(url_endpoint=url) as api:
        for i in range(start, start + count):
            api.add_agent_playbooks([{"agent_version": version, "content": f"Rule number {i} of {version}"}])


def test_the_stream_serves_what_happened_with_filters(live: Live) -> None:
    with live.client() as api:
        start = api.events(after=0, follow=False)
        before = max((e.id for e in start), default=0)
        add_rules(live.url, "ev-v1", 2)
        created = list(api.events(after=before, follow=False))
        assert [e.type for e in created] == ["learning.created", "learning.created"]
        assert [e.id for e in created] == [before + 1, before + 2]
        assert created[0].kind == "agent_playbook" and created[0].data["content"] == "Rule number 0 of ev-v1"
        api.update_agent_playbook_status(int(created[0].subject_id or 0), playbook_status="approved")
        approved = list(api.events(after=before, follow=False, types=["learning.approved"]))
        assert [(e.type, e.subject_id) for e in approved] == [("learning.approved", created[0].subject_id)]
        assert list(api.events(after=before, follow=False, kinds=["profile"])) == []
    wrong = httpx.get(f"{live.url}/api/events", params={"types": "learning.exploded", "follow": "false"})
    assert wrong.status_code == 422 and "learning.exploded" in wrong.text


def test_the_async_client_follows_the_stream_and_reports_a_refusal(live: Live) -> None:
    async def follow() -> list[StreamEvent]:
        async with AsyncReflexioClient(url_endpoint=live.url) as api:
            backlog = [e async for e in api.events(after=0, follow=False)]
            stream = api.events(after=max((e.id for e in backlog), default=0), types=["learning.created"])
            # The rules are added while the stream is open: it delivers them as they commit.
            adding = asyncio.create_task(asyncio.to_thread(add_rules, live.url, "ev-async", 2))
            seen = [await anext(stream), await anext(stream)]
            await adding
            await stream.aclose()
        return seen

    async def keyless() -> None:
        async with AsyncReflexioClient(url_endpoint=live.url) as stranger:
            await anext(stranger.events(follow=False))

    seen = asyncio.run(follow())
    assert [e.data["content"] for e in seen] == ["Rule number 0 of ev-async", "Rule number 1 of ev-async"]
    assert seen[1].id == seen[0].id + 1
    record, _ = keys.create_key(live.core, "events-async-org")  # from now on a key is required
    try:
        with pytest.raises(AuthenticationError, match="Bearer token is missing"):
            asyncio.run(keyless())
    finally:
        keys.revoke_key(live.core, record.id, "events-async-org")


def test_an_org_sees_only_its_own_events(live: Live) -> None:
    record, plain = keys.create_key(live.core, "events-org")
    try:
        with ReflexioClient(api_key=plain, url_endpoint=live.url) as api:
            api.add_agent_playbooks([{"agent_version": "v", "content": "Greet the customer by name"}])
            mine = list(api.events(after=0, follow=False))
        assert [(e.id, e.data["content"]) for e in mine] == [(1, "Greet the customer by name")]
        assert httpx.get(f"{live.url}/api/events", params={"follow": "false"}).status_code == 401
    finally:
        keys.revoke_key(live.core, record.id, "events-org")


def test_reflexio_watch_prints_the_events(live: Live, tmp_path: Path) -> None:
    add_rules(live.url, "watch-v1", 1)
    env = {k: v for k, v in os.environ.items() if not k.startswith("REFLEXIO_")}
    command = [sys.executable, "-m", "reflexio", "watch", "--url", live.url, "--after", "0", "--no-follow"]
    people = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
    assert people.returncode == 0, people.stderr
    assert "learning.created" in people.stdout and "Rule number 0 of watch-v1" in people.stdout
    machines = subprocess.run(
        [*command, "--json", "--type", "learning.created"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    events = [StreamEvent.model_validate(json.loads(line)) for line in machines.stdout.splitlines()]
    assert events and all(e.type == "learning.created" for e in events)


@contextmanager
def server(home: Path, port: int) -> Iterator[subprocess.Popen[bytes]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REFLEXIO_")}
    env |= {
        "REFLEXIO_HOME": str(home),
        "REFLEXIO_STORAGE_URL": f"sqlite:///{home}/reflexio.db",
        "REFLEXIO_PORT": str(port),
        "REFLEXIO_WORKERS": "0",
        "REFLEXIO_EMBEDDER": "wordllama",
        "REFLEXIO_LOG_LEVEL": "WARNING",
    }
    proc = subprocess.Popen([sys.executable, "-m", "reflexio.api.server"], env=env, cwd=ROOT)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health/ready", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, "the server did not start"
            time.sleep(0.1)
        yield proc
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(timeout=60)


@pytest.mark.slow
def test_every_event_once_in_order_across_a_kill_9_and_a_restart(tmp_path: Path) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    seen: list[StreamEvent] = []
    done = threading.Event()

    def follow() -> None:
        with ReflexioClient(url_endpoint=url) as api:
            for event in api.events(after=0, give_up_after=120):
                seen.append(event)
                if len(seen) >= 100:
                    break
        done.set()

    with server(tmp_path, port) as first:
        reader = threading.Thread(target=follow, daemon=True)
        reader.start()
        add_rules(url, "crash", 50)
        first.send_signal(signal.SIGKILL)  # kill -9: nothing is flushed, nothing is said goodbye
        first.wait(timeout=30)
    with server(tmp_path, port):
        add_rules(url, "crash", 50, start=50)
        assert done.wait(timeout=120), f"only {len(seen)} events arrived"
    assert [e.id for e in seen] == list(range(1, 101))
    assert [e.data["content"] for e in seen] == [f"Rule number {i} of crash" for i in range(100)]
