"""The rule extractor's benchmark: a short run end to end, checking what it reports.

Only the shape and the deterministic parts are checked (every scenario session is a window,
the proposals found); how fast it ran is the benchmark's to record, not a test's to assert.
"""

from __future__ import annotations

import json
from pathlib import Path

from bench import rules


def test_a_short_run_reports_throughput_latency_commit_and_machine(tmp_path: Path) -> None:
    out = tmp_path / "rules.json"
    rules.main(["--rounds", "3", "--out", str(out)])
    report = json.loads(out.read_text())
    assert {
        "commit",
        "date",
        "machine",
        "corpus",
        "rounds",
        "windows_per_s",
        "ms_per_window",
    } <= report.keys()
    assert {"cores", "cpu", "python", "load_average_1m_at_start"} <= report["machine"].keys()
    sessions = sum(len(json.loads(p.read_text())["sessions"]) for p in rules.SCENARIOS.glob("*.json"))
    assert report["corpus"]["windows"] == sessions > 0
    assert report["corpus"]["scenarios"] == "tests/data/scenarios_heldout"
    assert report["windows_per_s_best_round"] >= report["windows_per_s"] > 0
    timings = report["ms_per_window"]
    assert 0 < timings["p50"] <= timings["p95"] <= timings["p99"]
    assert report["proposals_per_round"] > 0  # the scenarios teach: the timed work is real work


def test_a_scenario_session_becomes_the_turns_the_simulator_publishes() -> None:
    session = {
        "user_id": "u1",
        "session_id": "s1",
        "turns": [
            {
                "user": "Book a flight.",
                "agent_without": "Seat 23E.",
                "feedback": "Window, please.",
                "expert": None,
                "tools": [{"tool_name": "flights.book", "tool_data": {}, "status": "success"}],
            },
            {
                "user": "Thanks.",
                "agent_without": "You're welcome.",
                "feedback": None,
                "expert": "Say goodbye.",
            },
        ],
    }
    turns = rules.session_turns(session)
    assert [(t.role, t.content) for t in turns] == [
        ("User", "Book a flight."),
        ("Assistant", "Seat 23E."),
        ("User", "Window, please."),
        ("User", "Thanks."),
        ("Assistant", "You're welcome."),
    ]
    assert [t.id for t in turns] == [1, 2, 3, 4, 5]
    assert turns[1].tools_used[0]["tool_name"] == "flights.book" and turns[4].expert_content == "Say goodbye."
