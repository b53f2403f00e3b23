"""The evaluation overview over HTTP: regular vs shadow answers, corrections, rules cited.

Two sessions with shadow answers are judged offline (no model): in one the user contradicts the
agent's answer and not the shadow's, in the other the agent's answer is the expert's. The overview
and the recent shadow verdicts must tell that story, on every backend.
"""

from __future__ import annotations

from typing import Any

from starlette.testclient import TestClient

from reflexio.service.core import Core
from tests.api.support import ok, turn
from tests.api.test_evaluation import run_due_evaluations

WINDOW = {"from_ts": 0, "to_ts": 4_000_000_000}


def _shadow_mode(client: TestClient, enabled: bool = True) -> None:
    config = ok(client.get("/api/get_config"))
    ok(client.post("/api/set_config", json={**config, "shadow_mode_enabled": enabled}))


def _publish(client: TestClient, user: str, session: str, turns: list[dict[str, Any]]) -> None:
    body = {"user_id": user, "session_id": session, "agent_version": "v1", "interaction_data_list": turns}
    ok(client.post("/api/publish_interaction", json=body))


def _laptop_session(client: TestClient) -> None:
    """The user contradicts the agent's answer; the shadow's was what they wanted."""
    _publish(
        client,
        "a",
        "laptop",
        [
            turn("Recommend a laptop."),
            turn(
                "Get a MacBook Air.",
                role="Agent",
                shadow_content="Get a ThinkPad running Fedora Linux.",
                citations=[{"kind": "playbook", "real_id": "41"}],
            ),
            turn("Wrong. Don't suggest a MacBook, I hate Macs."),
        ],
    )


def _password_session(client: TestClient) -> None:
    """The agent's answer is the expert's; the shadow's asks for the password."""
    _publish(
        client,
        "b",
        "password",
        [
            turn("How do I reset my password?"),
            turn(
                "Use the reset link on the sign-in page; it expires in one hour.",
                role="Agent",
                shadow_content="Tell me your current password and I will change it.",
                expert_content="Send the user the password reset link from the sign-in page.",
                citations=[{"kind": "playbook", "real_id": "41"}, {"kind": "profile", "real_id": "p-7"}],
            ),
            turn("Thanks, that worked."),
        ],
    )


def test_the_overview_compares_regular_and_shadow_and_credits_the_cited_rules(
    client: TestClient, core: Core
) -> None:
    _shadow_mode(client)
    _laptop_session(client)
    _password_session(client)
    assert run_due_evaluations(core) == 2

    recent = ok(client.get("/api/evaluations/shadow_comparisons/recent"))["verdicts"]
    assert {(v["session_id"], v["winner"]) for v in recent} == {("laptop", "shadow"), ("password", "regular")}
    for v in recent:  # which side was shown first is recorded, and the output names that side
        shown_first = "regular" if v["reflexio_is_request_1"] else "shadow"
        assert v["output"]["better_request"] == ("1" if v["winner"] == shown_first else "2")
    sessions = ok(client.post("/api/get_agent_success_evaluation_results", json={}))[
        "agent_success_evaluation_results"
    ]
    assert {s["session_id"]: s["regular_vs_shadow"] for s in sessions} == {
        "laptop": "shadow_is_better",  # the user contradicted the agent's answer
        "password": "regular_is_better",  # the agent's answer is the expert's
    }

    overview = ok(client.post("/api/get_evaluation_overview", json={**WINDOW, "bucket": "day"}))
    hero = overview["hero"]
    # Regular: the password session succeeded, the laptop one failed. Shadow: each session's
    # verdict flips where the other side won, so the laptop session would have succeeded and the
    # password one failed.
    assert hero["regular_success_rate_pp"] == 50.0 and hero["shadow_success_rate_pp"] == 50.0
    assert hero["delta_pp"] == 0.0 and hero["state"] == "early"
    (bucket,) = hero["buckets"]
    assert (bucket["regular_n"], bucket["shadow_n"], bucket["regular_rate"], bucket["shadow_rate"]) == (
        2,
        2,
        0.5,
        0.5,
    )
    assert bucket["avg_corrections"] == 0.5  # the laptop session's one correction
    assert overview["score_distribution"]["current_bins"] == [1, 1, 0, 0, 0, 0]

    trend = overview["shadow_win_rate_trend"]["window_total"]
    assert (trend["n"], trend["wins"], trend["losses"], trend["ties"], trend["net_win"]) == (2, 1, 1, 0, 0.0)

    attribution = {(r["kind"], r["rule_id"]): r for r in overview["rule_attribution"]}
    assert set(attribution) == {("playbook", "41"), ("profile", "p-7")}
    rule = attribution[("playbook", "41")]
    assert (rule["successes_with"], rule["failures_with"], rule["net_sessions"]) == (1, 1, 0)
    assert rule["cited_session_ids"] == ["laptop", "password"]
    assert attribution[("profile", "p-7")]["net_sessions"] == 1

    recent_results = {r["session_id"]: r for r in overview["recent_results"]}
    assert recent_results["laptop"]["is_success"] is False and recent_results["password"]["is_success"]


def test_without_shadow_mode_the_overview_has_no_shadow_side(client: TestClient, core: Core) -> None:
    _laptop_session(client)
    run_due_evaluations(core)
    assert ok(client.get("/api/evaluations/shadow_comparisons/recent"))["verdicts"] == []
    hero = ok(client.post("/api/get_evaluation_overview", json=WINDOW))["hero"]
    assert hero["state"] == "shadow_off" and hero.get("shadow_success_rate_pp") is None
    assert hero["regular_success_rate_pp"] == 0.0 and hero["buckets"][0]["shadow_n"] == 0


def test_the_overview_of_an_empty_window_is_empty(client: TestClient, core: Core) -> None:
    _shadow_mode(client)
    _laptop_session(client)
    run_due_evaluations(core)
    hero = ok(client.post("/api/get_evaluation_overview", json={"from_ts": 0, "to_ts": 1}))["hero"]
    assert hero["state"] == "empty" and hero["buckets"] == []
