"""Who may call: loopback clients while no key exists, then only holders of a valid key."""

from __future__ import annotations

from typing import Any

import pytest

from reflexio.config import DEFAULT_ORG_ID
from reflexio.errors import NotFoundError
from reflexio.service import keys
from reflexio.service.core import Core
from tests.api.support import LOOPBACK, failed, make_client, ok

REMOTE = ("203.0.113.7", 40_000)


def test_key_format_and_storage(core: Core) -> None:
    record, plain = keys.create_key(core, "org-a", "ci")
    assert plain.startswith("rfx_") and len(plain) == 44
    assert record.key_hash == keys.hash_key(plain) and plain not in repr(record)
    assert plain.startswith(record.prefix) and len(record.prefix) == 12
    assert keys.authenticate(core, plain) == "org-a"
    assert keys.authenticate(core, plain + "x") is None


def test_a_remote_client_is_refused_while_no_key_exists(app: Any) -> None:
    body = failed(make_client(app, peer=REMOTE).get("/api/whoami"), 403)
    assert "reflexio keys create" in body["detail"] and "Authorization: Bearer" in body["detail"]


@pytest.mark.parametrize(
    "headers",
    [
        {"X-Forwarded-For": "203.0.113.7"},
        {"Forwarded": "for=203.0.113.7"},
        {"X-Real-IP": "203.0.113.7"},
        {"Host": "evil.example"},
        {"Origin": "https://evil.example"},
    ],
)
def test_loopback_means_this_machine_not_a_proxy_or_a_foreign_page(app: Any, headers: dict[str, str]) -> None:
    failed(make_client(app).get("/api/whoami", headers=headers), 403)


def test_a_page_on_a_local_origin_is_refused_unless_the_org_allows_it(app: Any) -> None:
    """Defect 11: any page a local browser opens used to reach the API in local-only mode."""
    page = {"Origin": "http://localhost:3000"}
    body = failed(make_client(app).get("/api/whoami", headers=page), 403)
    assert "allowed_origins" in body["detail"]
    ok(make_client(app).post("/api/update_config", json={"allowed_origins": ["http://localhost:3000"]}))
    response = make_client(app).get("/api/whoami", headers=page)
    assert ok(response)["org_id"] == DEFAULT_ORG_ID
    assert response.headers["access-control-allow-origin"] == "http://localhost:3000"


def test_ipv6_loopback_is_local(app: Any) -> None:
    assert ok(make_client(app, peer=("::1", 1)).get("/api/whoami"))["org_id"] == DEFAULT_ORG_ID


def test_once_a_key_exists_every_api_call_needs_one(app: Any, core: Core) -> None:
    _, plain = keys.create_key(core, "org-a")  # created while the app runs: effective at once
    response = make_client(app).get("/api/whoami")
    body = failed(response, 401)
    assert response.headers["www-authenticate"] == "Bearer" and "missing" in body["detail"]
    assert "not a valid" in failed(make_client(app, key="rfx_" + "x" * 40).get("/api/whoami"), 401)["detail"]
    failed(make_client(app, key=plain).get("/api/whoami", headers={"Authorization": "Basic abc"}), 401)
    assert ok(make_client(app, key=plain).get("/api/whoami"))["org_id"] == "org-a"
    assert ok(make_client(app, peer=REMOTE, key=plain).get("/api/whoami"))["org_id"] == "org-a"


def test_public_paths_need_no_key_even_when_keys_exist(app: Any, core: Core) -> None:
    keys.create_key(core, "org-a")
    remote = make_client(app, peer=REMOTE)
    for path in ("/", "/health", "/health/live", "/health/ready", "/meta/version", "/docs", "/openapi.json"):
        assert remote.get(path).status_code == 200, path


def test_a_revoked_key_stops_working_at_once(app: Any, core: Core) -> None:
    record, plain = keys.create_key(core, "org-a")
    _, other = keys.create_key(core, "org-b")
    caller = make_client(app, key=plain)
    ok(caller.get("/api/whoami"))
    keys.revoke_key(core, record.id, "org-a")
    failed(caller.get("/api/whoami"), 401)
    assert ok(make_client(app, key=other).get("/api/whoami"))["org_id"] == "org-b"


def test_revoking_another_orgs_key_is_not_found(core: Core) -> None:
    record, _ = keys.create_key(core, "org-a")
    with pytest.raises(NotFoundError):
        keys.revoke_key(core, record.id, "org-b")
    assert [k.revoked_at for k in keys.list_keys(core, "org-a")] == [None]


def test_when_the_last_key_is_revoked_local_access_returns(app: Any, core: Core) -> None:
    record, _ = keys.create_key(core, "org-a")
    failed(make_client(app, peer=LOOPBACK).get("/api/whoami"), 401)
    keys.revoke_key(core, record.id)
    assert ok(make_client(app).get("/api/whoami"))["org_id"] == DEFAULT_ORG_ID


def test_a_keyed_server_does_not_ask_storage_whether_keys_exist_on_every_request(
    app: Any, core: Core, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, plain = keys.create_key(core, "org-a")
    asked: list[int] = []
    has_api_keys = core.storage.has_api_keys

    def counted() -> bool:
        asked.append(1)
        return has_api_keys()

    monkeypatch.setattr(core.storage, "has_api_keys", counted)
    client = make_client(app, peer=LOOPBACK)
    for _ in range(5):
        assert (
            ok(client.get("/api/whoami", headers={"Authorization": f"Bearer {plain}"}))["org_id"] == "org-a"
        )
        failed(client.get("/api/whoami"), 401)  # a key is still demanded on every request
    assert len(asked) <= 1
