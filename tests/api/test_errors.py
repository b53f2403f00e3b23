"""Failures are real status codes with a JSON body that says what is wrong."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from starlette.testclient import TestClient

from tests.api.conftest import MAX_BODY_BYTES
from tests.api.support import failed, publish_body


def test_validation_errors_are_422_and_name_the_field(client: TestClient) -> None:
    body = failed(client.post("/api/search", json={"query": "x", "top_k": 0}), 422)
    assert body["error"] == "validation_error"
    assert body["detail"].startswith("top_k: ") and body["details"]["errors"][0]["loc"] == ["body", "top_k"]


def test_a_missing_required_field_is_named(client: TestClient) -> None:
    assert "user_id" in failed(client.post("/api/get_interactions", json={}), 422)["detail"]


def test_a_missing_query_parameter_is_named(client: TestClient) -> None:
    assert failed(client.get("/api/learning_status"), 422)["detail"].startswith("request_id: ")


def test_malformed_json_is_422(client: TestClient) -> None:
    response = client.post("/api/search", content=b'{"query": ', headers={"Content-Type": "application/json"})
    assert "not valid JSON" in failed(response, 422)["detail"]


def test_validation_errors_do_not_echo_the_input(client: TestClient) -> None:
    body = failed(client.post("/api/search", json={"query": "sk-secret-value", "top_k": "many"}), 422)
    assert "sk-secret-value" not in str(body)


def test_a_body_over_the_limit_is_413_by_content_length(client: TestClient) -> None:
    big = publish_body("x" * (MAX_BODY_BYTES + 10))
    body = failed(client.post("/api/publish_interaction", json=big), 413)
    assert body["error"] == "payload_too_large" and body["details"]["max_body_bytes"] == MAX_BODY_BYTES


def test_a_streamed_body_over_the_limit_is_413(client: TestClient) -> None:
    def chunks() -> Iterator[bytes]:
        yield b'{"user_id": "u1", "session_id": "s1", "interaction_data_list": [{"content": "'
        for _ in range(MAX_BODY_BYTES // 1024 + 2):
            yield b"y" * 1024
        yield b'"}]}'

    response = client.post(
        "/api/publish_interaction", content=chunks(), headers={"Content-Type": "application/json"}
    )
    assert response.request.headers.get("content-length") is None  # really streamed
    assert failed(response, 413)["error"] == "payload_too_large"


def test_a_body_under_the_limit_is_read(client: TestClient) -> None:
    response = client.post("/api/publish_interaction", json=publish_body("x" * (MAX_BODY_BYTES // 2)))
    assert response.status_code == 200, response.text


def test_an_unknown_path_is_a_json_404(client: TestClient) -> None:
    body: dict[str, Any] = failed(client.get("/api/no_such_route"), 404)
    assert body["error"] == "not_found"
