"""The OpenAPI document says what the server does: each rule here is one the fuzz run found broken.

Every schema claim is checked against the server both ways: a value the document admits is
accepted, one it refuses is a 422 (or a 405 naming the methods the document lists).
"""

from __future__ import annotations

from typing import Any

import jsonschema_rs
import pytest
from starlette.testclient import TestClient

from reflexio.models import INT64_MAX
from reflexio.service.org_config import NOT_SUPPORTED
from tests.api.support import failed, ok

pytestmark = pytest.mark.usefixtures("core")


@pytest.fixture
def document(client: TestClient) -> dict[str, Any]:
    return ok(client.get("/openapi.json"))


def _validator(document: dict[str, Any], name: str) -> jsonschema_rs.Draft202012Validator:
    """A validator for component ``name``, its references resolved inside the document."""
    schema = {"$ref": f"#/components/schemas/{name}", "components": document["components"]}
    return jsonschema_rs.Draft202012Validator(schema)


def test_a_405_allows_every_method_the_path_serves(client: TestClient, document: dict[str, Any]) -> None:
    """Two routes share ``/api/retrieval_experiments``; a 405 there names both methods."""
    declared = {method.upper() for method in document["paths"]["/api/retrieval_experiments"]}
    assert declared == {"GET", "POST"}
    response = client.request("PATCH", "/api/retrieval_experiments")
    failed(response, 405)
    assert {m.strip() for m in response.headers["allow"].split(",")} - {"HEAD"} == declared


def test_an_unsupported_setting_is_held_to_its_default_in_the_schema(
    client: TestClient, document: dict[str, Any]
) -> None:
    config = _validator(document, "Config-Input")
    for change in (
        {"enable_document_expansion": True},
        {"extraction_idle_timeout_seconds": 60},
        {"retrieval_floor": {"enabled": True}},
        {"user_playbook_extractor_config": {"extraction_definition_prompt": "x", "deduplication_config": {}}},
    ):
        assert not config.is_valid(change), change
        body = failed(client.post("/api/update_config", json=change), 422)
        assert "not supported by this server" in body["message"], change
    for default in (
        {"enable_document_expansion": False},
        {"retrieval_floor": {"enabled": False}},
        {"retrieval_floor": None},
        {"storage_config": None},
    ):
        assert config.is_valid(default), default
        ok(client.post("/api/update_config", json=default))
    unsupported = document["components"]["schemas"]["Config-Input"]["properties"]["enable_document_expansion"]
    assert NOT_SUPPORTED["enable_document_expansion"] in unsupported["description"]


def test_override_learning_stall_is_documented_as_false_only(document: dict[str, Any]) -> None:
    publish = document["components"]["schemas"]["PublishUserInteractionRequest"]
    assert publish["properties"]["override_learning_stall"]["const"] is False


@pytest.mark.parametrize(
    ("value", "valid"),
    [
        ({"depth": [{"n": INT64_MAX}]}, True),
        ({"depth": [{"n": INT64_MAX + 1}]}, False),
        ({"n": -INT64_MAX - 2}, False),
        ({"x": 1.5, "s": "text", "b": None, "t": True}, True),
        ({"s": "nul\x00"}, False),
    ],
)
def test_free_form_values_are_held_to_64_bits_at_any_depth(
    client: TestClient, document: dict[str, Any], value: dict[str, Any], valid: bool
) -> None:
    profile = document["components"]["schemas"]["UpdateUserProfileRequest"]
    custom = next(o for o in profile["properties"]["custom_features"]["anyOf"] if o.get("type") == "object")
    schema = {**custom, "components": document["components"]}
    assert jsonschema_rs.Draft202012Validator(schema).is_valid(value) is valid
    body = {"user_id": "u1", "profile_id": "p1", "custom_features": value}
    response = client.put("/api/update_user_profile", json=body)
    if valid:  # past validation: the profile does not exist
        failed(response, 404)
    else:
        failed(response, 422)


@pytest.mark.parametrize(
    ("query", "headers"),
    [
        ({"types": "v1", "follow": "false"}, {}),
        ({"after": str(INT64_MAX + 1), "follow": "false"}, {}),
        ({"follow": "false"}, {"Last-Event-ID": "Deleted 2117 playbook(s)"}),
    ],
)
def test_the_event_stream_refuses_what_its_schema_refuses_before_it_starts(
    client: TestClient, query: dict[str, str], headers: dict[str, str]
) -> None:
    """An unknown type, an id past 64 bits, a resume id that is not a number: 422s, not a
    stream broken after its first chunk."""
    failed(client.get("/api/events", params=query, headers=headers), 422)
