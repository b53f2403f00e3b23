"""``reflexio worker`` as a process of its own: it serves the queue of a SQLite file and stops cleanly."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from reflexio.config import Settings
from reflexio.models import InteractionData, PublishUserInteractionRequest
from reflexio.records import JobStatus
from reflexio.service import publish as pub
from reflexio.service.core import Core, open_core

ORG = "self-host-org"


@pytest.fixture
def core(tmp_path: Path) -> Iterator[Core]:
    opened = open_core(Settings.from_env({"HOME": str(tmp_path), "REFLEXIO_STORAGE_URL": _url(tmp_path)}))
    yield opened
    opened.close()


def _url(home: Path) -> str:
    return f"sqlite:///{home}/queue.db"


def _spawn_worker(home: Path) -> tuple[subprocess.Popen[str], threading.Event, list[str], threading.Thread]:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith("REFLEXIO_") and not k.endswith("_API_KEY")
    }
    env |= {"HOME": str(home), "REFLEXIO_JOB_POLL_SECONDS": "0.1"}
    command = [sys.executable, "-m", "reflexio", "worker", "--concurrency", "2", "--storage-url", _url(home)]
    proc = subprocess.Popen(
        [*command, "--json"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    started, lines = threading.Event(), []

    def read() -> None:
        assert proc.stderr is not None
        with proc.stderr:
            for line in proc.stderr:
                lines.append(line)
                if "worker started" in line:
                    started.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return proc, started, lines, reader


def _publish(core: Core, user: str) -> str:
    turns = [
        InteractionData(role="User", content="Please always answer in metric units."),
        InteractionData(role="Assistant", content="Sure, metric from now on."),
    ]
    req = PublishUserInteractionRequest(
        user_id=user, session_id="s1", interaction_data_list=turns, session_finished=True
    )
    response = pub.publish(core, ORG, req, flush=True)  # learn and judge now, not after idling
    assert response.request_id
    return response.request_id


@pytest.mark.slow
def test_a_worker_process_runs_jobs_and_stops_on_sigterm(core: Core, tmp_path: Path) -> None:
    proc, started, lines, reader = _spawn_worker(tmp_path)
    try:
        assert started.wait(60), "the worker did not start:\n" + "".join(lines)
        request_id = _publish(core, "alice")
        deadline = time.monotonic() + 60
        while True:
            jobs = core.storage.list_jobs(ORG, request_id=request_id)
            if jobs and all(job.status == JobStatus.DONE for job in jobs):
                break
            errors = [job.last_error for job in jobs if job.last_error]
            if time.monotonic() > deadline or any(job.status == JobStatus.DEAD for job in jobs):
                pytest.fail(f"jobs not done: {[(j.task, j.status) for j in jobs]} {errors}\n{''.join(lines)}")
            time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        reader.join(10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, "".join(lines)
    assert proc.stdout is not None
    with proc.stdout:
        assert json.loads(proc.stdout.read())["stopped"] is True
    assert any("worker stopped" in line for line in lines)
    leased = core.storage.list_jobs(ORG, statuses=[JobStatus.RUNNING])
    assert leased == [], "a stopped worker holds no job"
