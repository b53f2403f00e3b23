"""Bad input is a 422 that names the field, the same on every backend (issue 16, defects 1, 3, 4, 9).

Each test sends what once broke the server (a 500, a silently stored NUL, a config that stopped
all learning) and checks the refusal; the ``client`` fixture runs every test on memory, SQLite
and PostgreSQL.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from starlette.testclient import TestClient

from reflexio.models import Config
from tests.api.support import failed, ok, profile, publish_body

HUGE = 2**70
LONE_SURROGATE = "\\ud800"  # as it travels in JSON: an escape no UTF-8 text can hold


def raw(client: TestClient, method: str, path: str, text: str) -> Any:
    """Send ``text`` as the JSON body, byte for byte (json= would refuse the surrogate)."""
    return client.request(method, path, content=text.encode(), headers={"Content-Type": "application/json"})


def problem_locs(body: dict[str, Any]) -> list[list[Any]]:
    return [error["loc"] for error in body["details"]["errors"]]


# -- defect 1: numeric settings have ranges ------------------------------------------------------


@pytest.mark.parametrize("field", ["window_size", "stride_size", "extraction_idle_timeout_seconds"])
def test_a_huge_numeric_setting_is_refused_naming_it(client: TestClient, field: str) -> None:
    body = failed(client.post("/api/update_config", json={field: HUGE}), 422)
    assert field in body["detail"]
    assert ok(client.get("/api/get_config"))[field] != HUGE


def test_every_numeric_setting_has_a_documented_range() -> None:
    schema = Config.model_json_schema()
    unbounded = []
    for model_name, model in {"Config": schema, **schema["$defs"]}.items():
        for name, prop in model.get("properties", {}).items():
            options = prop.get("anyOf", [prop])
            for option in options:
                if option.get("type") in ("integer", "number"):
                    low = {"minimum", "exclusiveMinimum"} & option.keys()
                    high = {"maximum", "exclusiveMaximum"} & option.keys()
                    if not (low and high):
                        unbounded.append(f"{model_name}.{name}")
    assert not unbounded, unbounded


# -- defect 3: lone surrogates and NUL refused at the edge ------------------------------------------


@pytest.mark.parametrize("bad", [LONE_SURROGATE, "\\u0000"])
def test_publish_refuses_bad_text_naming_the_field(client: TestClient, bad: str) -> None:
    text = json.dumps(publish_body("hello")).replace("hello", f"he{bad}llo")
    body = failed(raw(client, "POST", "/api/publish_interaction", text), 422)
    assert problem_locs(body) == [["body", "interaction_data_list", 0, "content"]]
    assert ok(client.post("/api/get_interactions", json={"user_id": "u1"}))["interactions"] == []


@pytest.mark.parametrize(
    ("path", "text", "loc"),
    [
        ("/api/search", '{"query": "a\\ud800"}', ["body", "query"]),
        ("/api/get_interactions", '{"user_id": "u\\ud800"}', ["body", "user_id"]),
        ("/api/search", '{"query": "a\\u0000b"}', ["body", "query"]),
        ("/api/update_config", '{"agent_context_prompt": "x\\ud800"}', ["body", "agent_context_prompt"]),
        ("/api/update_config", '{"agent_context_prompt": "x\\u0000"}', ["body", "agent_context_prompt"]),
    ],
)
def test_bad_text_is_refused_on_every_route(client: TestClient, path: str, text: str, loc: list[Any]) -> None:
    assert problem_locs(failed(raw(client, "POST", path, text), 422)) == [loc]


def test_a_surrogate_in_a_profile_is_refused_and_the_config_stays_readable(client: TestClient) -> None:
    text = json.dumps({"user_profiles": [profile("p1", "likes tea")]}).replace("likes tea", "likes \\udfff")
    body = failed(raw(client, "POST", "/api/add_user_profile", text), 422)
    assert problem_locs(body) == [["body", "user_profiles", 0, "content"]]
    failed(raw(client, "POST", "/api/set_config", '{"agent_context_prompt": "\\ud83d"}'), 422)
    assert ok(client.get("/api/get_config"))["window_size"] == 10


def test_a_nul_in_a_key_or_a_query_parameter_is_refused(client: TestClient) -> None:
    body = failed(raw(client, "POST", "/api/search", '{"query": "q", "a\\u0000": 1}'), 422)
    assert problem_locs(body) == [["body", "a\\u0000"]]
    body = failed(client.get("/api/learning_status", params={"request_id": "r\x00"}), 422)
    assert problem_locs(body) == [["query", "request_id"]]


# -- defect 4: integers beyond 64 bits --------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "body", "field"),
    [
        ("POST", "/api/search", {"query": "q", "top_k": HUGE}, "top_k"),
        ("POST", "/api/search", {"query": "q", "interaction_id": HUGE}, "interaction_id"),
        ("POST", "/api/get_interactions", {"user_id": "u", "top_k": HUGE}, "top_k"),
        ("POST", "/api/get_requests", {"offset": HUGE}, "offset"),
        ("POST", "/api/get_user_playbooks", {"user_playbook_id": HUGE}, "user_playbook_id"),
        ("POST", "/api/get_agent_playbooks", {"start_time": HUGE}, "start_time"),
        ("DELETE", "/api/delete_user_playbook", {"user_playbook_id": HUGE}, "user_playbook_id"),
        ("DELETE", "/api/delete_interaction", {"user_id": "u", "interaction_id": -HUGE}, "interaction_id"),
        ("POST", "/api/jobs/retry", {"job_ids": [HUGE]}, "job_ids"),
        ("POST", "/api/publish_interaction", publish_body("x"), "interaction_data_list"),
    ],
)
def test_a_huge_integer_is_a_422_naming_the_field(
    client: TestClient, method: str, path: str, body: dict[str, Any], field: str
) -> None:
    if path == "/api/publish_interaction":
        body["interaction_data_list"][0]["created_at"] = HUGE
    answer = failed(client.request(method, path, json=body), 422)
    assert field in answer["detail"] and all(loc[1] == field for loc in problem_locs(answer))


@pytest.mark.parametrize(
    "path", ["/api/get_all_interactions?limit=99999999999999999999999", "/api/get_all_profiles?start_time=-1"]
)
def test_query_integers_are_bounded(client: TestClient, path: str) -> None:
    failed(client.get(path), 422)


def test_a_row_id_at_the_top_of_its_range_is_a_404_not_a_500(client: TestClient) -> None:
    failed(client.request("DELETE", "/api/delete_user_playbook", json={"user_playbook_id": 2**53 - 1}), 404)


# -- defect 9: one set of limits, unknown fields, parse errors --------------------------------------


def test_the_longest_user_id_can_be_written_and_searched(client: TestClient) -> None:
    longest = "u" * 255
    ok(client.post("/api/publish_interaction", json=publish_body("I live in Oslo", user_id=longest)))
    ok(client.post("/api/search", json={"query": "Oslo", "user_id": longest}))
    ok(client.post("/api/add_user_profile", json={"user_profiles": [profile("p1", "tea", user_id=longest)]}))
    too_long = longest + "u"
    for path, body in [
        ("/api/publish_interaction", publish_body("x", user_id=too_long)),
        ("/api/search", {"query": "x", "user_id": too_long}),
        ("/api/add_user_profile", {"user_profiles": [profile("p2", "tea", user_id=too_long)]}),
        ("/api/get_interactions", {"user_id": too_long}),
    ]:
        assert "user_id" in failed(client.post(path, json=body), 422)["detail"], path


@pytest.mark.parametrize("user_id", ["", "   "])
def test_add_user_profile_refuses_a_blank_user_id(client: TestClient, user_id: str) -> None:
    body = failed(
        client.post("/api/add_user_profile", json={"user_profiles": [profile("p", "x", user_id)]}), 422
    )
    assert problem_locs(body) == [["body", "user_profiles", 0, "user_id"]]
    assert body["details"]["errors"][0]["msg"] == "must not be empty or blank"


@pytest.mark.parametrize(
    ("path", "body", "loc"),
    [
        ("/api/search", {"query": "q", "top_K": 3}, ["body", "top_K"]),
        (
            "/api/add_user_profile",
            {"user_profiles": [profile("p", "x", colour="red")]},
            ["body", "user_profiles", 0, "colour"],
        ),
        ("/api/get_profiles", {"user_id": "u", "limit": 3}, ["body", "limit"]),
    ],
)
def test_unknown_fields_are_refused_naming_them(
    client: TestClient, path: str, body: dict[str, Any], loc: list[Any]
) -> None:
    answer = failed(client.post(path, json=body), 422)
    assert problem_locs(answer) == [loc]
    assert "not a field of this request" in answer["detail"]


def test_fields_the_published_client_sends_on_learnings_are_accepted(client: TestClient) -> None:
    row = profile("p1", "likes tea", embedding=[], retired_at=None)
    assert ok(client.post("/api/add_user_profile", json={"user_profiles": [row]}))["added_count"] == 1


def test_a_parse_error_says_what_and_where(client: TestClient) -> None:
    body = failed(raw(client, "POST", "/api/search", '{"query": "x",\n "top_k": }'), 422)
    assert "line 2, column 11" in body["detail"]
    body = failed(
        client.post(
            "/api/search", content=b'{"query": "\xff"}', headers={"Content-Type": "application/json"}
        ),
        422,
    )
    assert "not valid UTF-8 (byte 11 is 0xff)" in body["detail"]
    body = failed(raw(client, "POST", "/api/search", '{"query": "x", "threshold": NaN}'), 422)
    assert "NaN is not a JSON number" in body["detail"]


def test_json_types_are_the_schemas(client: TestClient) -> None:
    for field, value in [("top_k", "5"), ("enable_reformulation", "yes"), ("threshold", False)]:
        assert field in failed(client.post("/api/search", json={"query": "q", field: value}), 422)["detail"]
    ok(client.post("/api/search", json={"query": "q", "top_k": 5.0}))  # JSON Schema's integer
