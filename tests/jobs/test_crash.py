"""Crash test: stream interactions while kill -9-ing worker processes, then check every effect.

Three worker processes (the product's WorkerPool, windows and bookmarks, with an extractor that
writes one row per new turn) run against one store while ≥2,000 interactions are published,
some of them retried, and workers are killed with SIGKILL at random moments and restarted. In
the end every interaction must be stored once, every extraction job must be done or dead with
a reason, and every interaction must have exactly one learning row: none lost, none doubled.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from tests.conftest import storage_url

from reflexio.config import Settings
from reflexio.filters import InteractionFilter, LearningFilter
from reflexio.models import FinalizeSessionRequest, InteractionData, PublishUserInteractionRequest
from reflexio.records import JobStatus
from reflexio.service import publish as pub
from reflexio.service.core import Core, open_core

ROOT = Path(__file__).resolve().parents[2]
USERS = [f"user{i}" for i in range(12)]
TARGET_INTERACTIONS = 2_000
MIN_KILLS = 20


class Fleet:
    """Worker processes that can be killed and replaced.

    Only workers that have finished starting are killed, at a random moment of their work, so
    kills land while jobs are in hand (between a model call and its commit, or inside it).
    """

    def __init__(self, url: str, size: int) -> None:
        self.url = url
        self.ready = [threading.Event() for _ in range(size)]
        self.procs = [self._spawn(i) for i in range(size)]
        self.kills = 0

    def _spawn(self, i: int) -> subprocess.Popen[bytes]:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        cmd = [sys.executable, "-m", "tests.support.echo", self.url, "2", "0.02"]
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.ready[i] = ready = threading.Event()
        threading.Thread(target=_await_ready, args=(proc, ready), daemon=True).start()
        return proc

    def kill_one(self, rng: random.Random) -> None:
        i = rng.randrange(len(self.procs))
        if not self.ready[i].wait(30):
            pytest.fail("a worker process did not start")
        time.sleep(rng.uniform(0.05, 0.6))
        self.procs[i].send_signal(signal.SIGKILL)
        self.procs[i].wait()
        self.kills += 1
        self.procs[i] = self._spawn(i)

    def stop(self) -> None:
        for proc in self.procs:
            proc.send_signal(signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()


def _await_ready(proc: subprocess.Popen[bytes], ready: threading.Event) -> None:
    assert proc.stdout is not None
    with proc.stdout:  # read to the end (the worker exits), then let the pipe go
        if proc.stdout.readline().strip() == b"ready":
            ready.set()
        proc.stdout.read()


def stream(core: Core, rng: random.Random, done: threading.Event) -> Counter[str]:
    """Publish ≥ TARGET_INTERACTIONS turns in small requests; 10 % are retried."""
    sent: Counter[str] = Counter()
    n = 0
    while n < TARGET_INTERACTIONS:
        user = rng.choice(USERS)
        size = rng.randint(1, 6)
        request_id = f"req-{n}"
        req = PublishUserInteractionRequest(
            request_id=request_id,
            user_id=user,
            session_id=f"{user}-s{n // 500}",
            interaction_data_list=[
                InteractionData(role="User", content=f"{request_id} turn {i}") for i in range(size)
            ],
        )
        for _ in range(2 if rng.random() < 0.1 else 1):
            pub.publish(core, "o", req)
        sent[request_id] = size
        n += size
        time.sleep(0.02)
    done.set()
    return sent


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_no_effect_is_lost_or_doubled_when_workers_are_killed(backend: str, tmp_path: Path) -> None:
    url = storage_url(backend, tmp_path)
    core = open_core(Settings.from_env({"REFLEXIO_STORAGE_URL": url, "HOME": str(tmp_path)}))
    rng = random.Random(42)
    fleet = Fleet(url, 3)
    streamed = threading.Event()
    try:
        result: dict[str, Counter[str]] = {}
        publisher = threading.Thread(
            target=lambda: result.setdefault("sent", stream(core, random.Random(7), streamed))
        )
        publisher.start()
        while not streamed.is_set() or fleet.kills < MIN_KILLS:
            fleet.kill_one(rng)
        publisher.join()
        for user in USERS:
            pub.finalize_session(core, "o", FinalizeSessionRequest(user_id=user, session_id="end"))
        _wait_for_extraction(core, timeout=240)
    finally:
        fleet.stop()
    sent = result["sent"]
    _check(core, sent)
    assert fleet.kills >= MIN_KILLS
    core.close()


def _wait_for_extraction(core: Core, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        open_jobs = core.storage.list_jobs(
            "o", task=pub.EXTRACT, statuses=[JobStatus.QUEUED, JobStatus.RUNNING]
        )
        if not open_jobs:
            return
        time.sleep(0.5)
    pytest.fail(f"extraction did not finish: {len(open_jobs)} job(s) still open")


def _check(core: Core, sent: Counter[str]) -> None:
    turns = core.storage.list_interactions("o", InteractionFilter())
    assert sum(sent.values()) >= TARGET_INTERACTIONS
    assert Counter(t.request_id for t in turns) == sent  # each request stored once, retries included
    jobs = core.storage.list_jobs("o", task=pub.EXTRACT, limit=100_000)
    assert all(j.status is JobStatus.DONE or (j.status is JobStatus.DEAD and j.last_error) for j in jobs)
    rows = core.storage.get_learnings("o", LearningFilter())
    learned = Counter(int(r.custom_features["interaction_id"]) for r in rows if r.custom_features)
    assert learned == Counter(t.id for t in turns)  # no learning row missing, none doubled
