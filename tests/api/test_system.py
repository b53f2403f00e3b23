"""Banner, health, version, whoami, docs: the routes probes and people hit first."""

from __future__ import annotations

import re
from importlib.metadata import version
from typing import Any

import pytest
from starlette.testclient import TestClient

from reflexio.config import DEFAULT_ORG_ID
from reflexio.errors import StorageError
from reflexio.service import keys
from reflexio.service.core import Core
from tests.api.support import failed, ok


def test_root_points_to_docs_and_health(client: TestClient) -> None:
    assert ok(client.get("/")) == {"service": "Reflexio API", "docs": "/docs", "health": "/health"}


@pytest.mark.parametrize("path", ["/health", "/health/ready"])
def test_readiness_checks_storage(client: TestClient, path: str) -> None:
    response = client.get(path)
    body = ok(response)
    assert body["status"] == "healthy" and body["checks"]["storage"]["status"] == "passed"
    assert response.headers["cache-control"] == "no-store"


@pytest.mark.parametrize("path", ["/health", "/health/ready"])
def test_readiness_is_503_when_storage_fails(
    client: TestClient, core: Core, path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def down() -> None:
        raise StorageError("database is gone")

    monkeypatch.setattr(core.storage, "ping", down)
    response = client.get(path)
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "unhealthy"
    assert body["checks"]["storage"] == {
        "status": "failed",
        "required": True,
        "reason": "database is gone",
        "checked_at": body["checks"]["storage"]["checked_at"],
    }


def test_liveness_touches_nothing(client: TestClient, core: Core, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(core.storage, "ping", lambda: pytest.fail("liveness must not ping storage"))
    assert ok(client.get("/health/live")) == {"status": "alive"}


def test_version_is_the_installed_one(client: TestClient) -> None:
    body = ok(client.get("/meta/version"))
    assert body == {"server_version": version("reflexio"), "api_version": "v1", "min_client_version": "0.1.0"}


def test_whoami_names_the_default_org_for_a_local_caller(client: TestClient) -> None:
    body = ok(client.get("/api/whoami"))
    assert body["success"] is True and body["org_id"] == DEFAULT_ORG_ID
    assert body["storage_type"] in {"memory", "sqlite", "postgres"}


def test_docs_and_schema_are_served(client: TestClient) -> None:
    assert client.get("/docs").status_code == 200
    assert client.get("/redoc").status_code == 200
    paths: dict[str, Any] = ok(client.get("/openapi.json"))["paths"]
    assert "/api/publish_interaction" in paths and "/api/search" in paths


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_docs_pages_load_nothing_from_outside(client: TestClient, core: Core, page: str) -> None:
    """Offline, a page that pulls its script from a CDN is blank: every asset is served here."""
    keys.create_key(core, "acme")  # the docs stay public once keys exist
    html = client.get(page, headers={"Authorization": ""}).text
    sources = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert sources and all(source.startswith("/") for source in sources), sources
    for source in sources:
        asset = client.get(source)
        assert asset.status_code == 200 and len(asset.content) > 1000, source
    assert "cdn" not in html.lower()


@pytest.mark.parametrize("path", ["/api/whoami/", "/health/", "/api/get_config/"])
def test_a_trailing_slash_is_a_404_never_a_redirect(client: TestClient, path: str) -> None:
    failed(client.get(path), 404)


def test_a_wrong_method_is_405_in_the_error_shape(client: TestClient) -> None:
    body = failed(client.get("/api/search"), 405)
    assert body["error"] == "http_405"
