"""The learning-throughput benchmark: a tiny run end to end on PostgreSQL, checking its report.

The real run (240 users, 1, 2 and 4 worker processes) takes minutes; this one drains two users'
jobs with one worker process, so it checks the plumbing (schema, filling, worker processes
starting together, the lock sampler, the claim plan, the JSON), not the numbers.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bench import learning

from tests.conftest import POSTGRES_URL

pytestmark = [pytest.mark.slow, pytest.mark.postgres]


def test_a_tiny_run_reports_throughput_locks_and_the_claim_plan(tmp_path: Path) -> None:
    if not POSTGRES_URL:
        pytest.skip("REFLEXIO_TEST_POSTGRES_URL is not set")
    out = tmp_path / "learning.json"
    tiny = ["--workers", "1", "--llm-ms", "0,10", "--users", "2", "--publishes", "1"]
    learning.main([*tiny, "--postgres-url", POSTGRES_URL, "--out", str(out)])
    report = json.loads(out.read_text())
    assert [(r["extractor"], r["workers"]) for r in report["runs"]] == [
        ("rules", 1),
        ("scripted-llm-10ms", 1),
    ]
    for run in report["runs"]:
        assert run["interactions"] == 8 and run["extraction_jobs"] == 2 and run["learnings"] > 0
        assert run["learned_interactions_per_s"] > 0 and run["locks"]["samples"] >= 0
        assert any("LockRows" in line for line in run["claim_plan"])  # FOR UPDATE SKIP LOCKED
    assert report["speedup_1_to_2"] == {}
