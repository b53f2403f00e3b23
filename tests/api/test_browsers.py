"""A real CORS policy and the usual security headers (issue 16, defect 11)."""

from __future__ import annotations

from typing import Any

import pytest

from reflexio.service import keys
from reflexio.service.core import Core
from tests.api.support import failed, make_client, ok

PAGE = "https://app.example.com"


def _allow(app: Any, *origins: str) -> None:
    ok(make_client(app).post("/api/update_config", json={"allowed_origins": list(origins)}))


def _preflight(app: Any, origin: str) -> Any:
    headers = {
        "Origin": origin,
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type",
    }
    return make_client(app).options("/api/search", headers=headers)


def test_no_origin_is_allowed_by_default(app: Any) -> None:
    assert failed(_preflight(app, PAGE), 403)["details"]["origin"] == PAGE
    response = make_client(app).post("/api/search", json={"query": "x"}, headers={"Origin": PAGE})
    assert (
        "access-control-allow-origin" not in failed(response, 403)
        and "access-control-allow-origin" not in response.headers
    )


def test_an_allowed_origin_gets_a_preflight_and_its_headers(app: Any) -> None:
    _allow(app, PAGE)
    response = _preflight(app, PAGE)
    assert response.status_code == 204
    assert response.headers["access-control-allow-origin"] == PAGE
    assert "POST" in response.headers["access-control-allow-methods"]
    assert "Authorization" in response.headers["access-control-allow-headers"]
    answer = make_client(app).post("/api/search", json={"query": "x"}, headers={"Origin": PAGE})
    assert answer.status_code == 200 and answer.headers["access-control-allow-origin"] == PAGE
    assert "Origin" in answer.headers["vary"]
    assert failed(_preflight(app, "https://evil.example"), 403)


def test_the_origin_is_held_to_the_callers_org(app: Any, core: Core) -> None:
    _, key_a = keys.create_key(core, "org-a")
    _, key_b = keys.create_key(core, "org-b")
    ok(make_client(app, key=key_a).post("/api/update_config", json={"allowed_origins": [PAGE]}))
    ok(make_client(app, key=key_a).get("/api/whoami", headers={"Origin": PAGE}))
    assert _preflight(app, PAGE).status_code == 204  # some org allows it: the browser may ask
    failed(make_client(app, key=key_b).get("/api/whoami", headers={"Origin": PAGE}), 403)


def test_same_origin_requests_need_no_policy(app: Any) -> None:
    ok(make_client(app).get("/api/whoami", headers={"Origin": "http://127.0.0.1"}))


@pytest.mark.parametrize("path", ["/api/whoami", "/health/live", "/api/nowhere"])
def test_every_response_carries_the_security_headers(app: Any, path: str) -> None:
    headers = make_client(app).get(path).headers
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["x-frame-options"] == "DENY"
    assert headers["referrer-policy"] == "no-referrer"
    assert headers["content-security-policy"] == "default-src 'none'; frame-ancestors 'none'"
    assert headers.get("cache-control") == (
        "no-store" if path.startswith("/api/") else headers.get("cache-control")
    )


def test_the_docs_may_load_their_scripts(app: Any) -> None:
    headers = make_client(app).get("/docs").headers
    assert "content-security-policy" not in headers and headers["x-frame-options"] == "DENY"


@pytest.mark.parametrize("origin", ["localhost:3000", "ftp://x.example", "https://x.example/path"])
def test_allowed_origins_must_be_origins(app: Any, origin: str) -> None:
    failed(make_client(app).post("/api/update_config", json={"allowed_origins": [origin]}), 422)
