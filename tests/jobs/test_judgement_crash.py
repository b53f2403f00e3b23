"""Crash test: a judgement killed mid-run is redone exactly once, with nothing doubled or lost.

A worker process starts judging idle sessions with the product's handler and is SIGKILLed
while a model call of the judgement is in flight. Once its lease expires another worker takes
the jobs over. In the end every session has exactly one session verdict and one verdict per
injected learning, and the killed job was attempted exactly twice.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.conftest import storage_url

from reflexio.config import Settings
from reflexio.models import FinalizeSessionRequest, InteractionData, PublishUserInteractionRequest
from reflexio.records import Audit, JobStatus, Learning, LearningKind
from reflexio.service import publish as pub
from reflexio.service.core import open_core

ROOT = Path(__file__).resolve().parents[2]
ORG = "self-host-org"
SESSIONS = 4
LEASE = 2.0


def _worker(url: str, home: Path, markers: Path, *, slow: bool) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "tests.support.judge", url, str(home), str(LEASE), str(markers)]
    if slow:
        cmd.append("slow")
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_a_judgement_killed_mid_run_is_redone_exactly_once(backend: str, tmp_path: Path) -> None:
    url = storage_url(backend, tmp_path)
    core = open_core(Settings.from_env({"REFLEXIO_STORAGE_URL": url, "HOME": str(tmp_path)}))
    config = core.org_config(ORG).model_dump(mode="json")
    config["agent_success_config"]["sampling_rate"] = 1.0  # the model judges every session
    config["profile_extractor_config"] = config["user_playbook_extractor_config"] = None
    core.storage.put_org_config(ORG, config)
    (rule,) = core.storage.save_learnings(
        [Learning(org_id=ORG, kind=LearningKind.AGENT_PLAYBOOK, content="Offer a free express upgrade.")],
        Audit(),
    )
    for i in range(SESSIONS):
        turns = [
            InteractionData(role="User", content="My parcel is late."),
            InteractionData(
                role="Agent",
                content="I've added a free express upgrade.",
                retrieved_learnings=[{"kind": "agent_playbook", "learning_id": str(rule.id)}],
            ),
            InteractionData(role="User", content="There is no free express upgrade any more."),
        ]
        req = PublishUserInteractionRequest(user_id=f"u{i}", session_id=f"s{i}", interaction_data_list=turns)
        pub.publish(core, ORG, req)
        pub.finalize_session(core, ORG, FinalizeSessionRequest(user_id=f"u{i}", session_id=f"s{i}"))
    markers = tmp_path / "markers"
    markers.mkdir()
    doomed = _worker(url, tmp_path, markers, slow=True)
    try:
        deadline = time.monotonic() + 60
        while not any(markers.iterdir()):
            assert time.monotonic() < deadline, "the slow worker never started judging"
            time.sleep(0.05)
        doomed.send_signal(signal.SIGKILL)  # mid-call: nothing of this judgement was committed
        doomed.wait()
        survivor = _worker(url, tmp_path, markers, slow=False)
        try:
            _wait_done(core, timeout=120)
        finally:
            survivor.send_signal(signal.SIGTERM)
            survivor.wait(timeout=30)
    finally:
        if doomed.poll() is None:
            doomed.kill()
    jobs = core.storage.list_jobs(ORG, task=pub.EVALUATE_SESSION, limit=100)
    assert len(jobs) == SESSIONS and all(j.status is JobStatus.DONE for j in jobs)
    assert sorted(j.attempts for j in jobs) == [1] * (SESSIONS - 1) + [2]  # the killed one, redone once
    sessions = core.storage.list_evaluations(ORG, kind="session", limit=100)
    learnings = core.storage.list_evaluations(ORG, kind="learning", limit=100)
    assert sorted(e.session_id or "" for e in sessions) == [f"s{i}" for i in range(SESSIONS)]
    assert sorted(e.session_id or "" for e in learnings) == [f"s{i}" for i in range(SESSIONS)]
    assert all(e.result.get("judge") == "llm" for e in learnings)
    core.close()


def _wait_done(core: object, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    storage = core.storage  # type: ignore[attr-defined]
    while time.monotonic() < deadline:
        open_jobs = storage.list_jobs(
            ORG, task=pub.EVALUATE_SESSION, statuses=[JobStatus.QUEUED, JobStatus.RUNNING]
        )
        if not open_jobs:
            return
        time.sleep(0.2)
    pytest.fail("the judgements did not finish")
