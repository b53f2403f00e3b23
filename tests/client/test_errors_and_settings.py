"""Failures become the server's typed errors; where and how the client connects."""

from __future__ import annotations

import asyncio
import socket

import httpx
import pytest

from reflexio import (
    AsyncReflexioClient,
    AuthenticationError,
    ConflictError,
    NotFoundError,
    ReflexioClient,
    ReflexioError,
    ServiceUnavailableError,
    StorageError,
    ValidationError,
)
from reflexio.errors import ConflictError as ServerConflictError
from reflexio.errors import QuotaExceededError, RateLimitedError
from tests.client.fake_server import FakeServer


def _answer(status: int, **kwargs: object) -> FakeServer:
    return FakeServer({("POST", "/api/search"): httpx.Response(status, **kwargs)})  # type: ignore[arg-type]


def _search(server: FakeServer) -> None:
    server.client().search(query="q")


def test_server_error_body_becomes_the_same_class() -> None:
    error = ServerConflictError("request r1 exists with another payload", details={"request_id": "r1"})
    server = _answer(409, json=error.to_body())
    with pytest.raises(ConflictError) as caught:
        _search(server)
    assert caught.value.message == "request r1 exists with another payload"
    assert caught.value.details == {"request_id": "r1"}


def test_error_code_wins_over_status() -> None:
    body = {"success": False, "error": "storage_error", "message": "database is locked"}
    with pytest.raises(StorageError, match="database is locked"):
        _search(_answer(503, json=body))


def test_fastapi_validation_errors_keep_their_locations() -> None:
    detail = [{"loc": ["body", "query"], "msg": "Field required", "type": "missing"}]
    with pytest.raises(ValidationError) as caught:
        _search(_answer(422, json={"detail": detail}))
    assert "query: Field required" in caught.value.message
    assert caught.value.details["errors"] == detail


def test_plain_detail_and_unknown_route() -> None:
    with pytest.raises(NotFoundError, match="Not Found"):
        _search(_answer(404, json={"detail": "Not Found"}))
    with pytest.raises(AuthenticationError):
        _search(_answer(401, json={"detail": "missing API key"}))


def test_unmapped_status_is_named_in_the_message() -> None:
    with pytest.raises(ReflexioError, match="HTTP 418") as caught:
        _search(_answer(418, json={"detail": "slow down"}))
    assert "slow down" in caught.value.message
    with pytest.raises(ReflexioError, match=r"HTTP 502.*bad gateway"):
        _search(_answer(502, text="bad gateway"))


def test_a_failure_is_never_a_success() -> None:
    # An HTML error page with status 200 (a proxy, a wrong host) must not parse as a result.
    with pytest.raises(ReflexioError, match="expected JSON"):
        _search(_answer(200, text="<html>hello</html>", headers={"content-type": "text/html"}))
    with pytest.raises(ReflexioError, match="cannot read"):
        _search(_answer(200, json={"profiles": "not a list"}))


def test_redirects_are_errors_not_followed() -> None:
    server = _answer(307, headers={"location": "https://elsewhere.test/api/search"})
    with pytest.raises(ReflexioError, match="redirect") as caught:
        _search(server)
    assert "elsewhere.test" in caught.value.message
    assert len(server.requests) == 1


def test_unhealthy_server_returns_its_report() -> None:
    report = {"status": "unhealthy", "checks": {"storage": {"status": "failed", "reason": "locked"}}}
    server = FakeServer({("GET", "/health"): httpx.Response(503, json=report)})
    health = server.client().health()
    assert health.status == "unhealthy"
    assert health.checks["storage"].reason == "locked"
    server = FakeServer({("GET", "/health"): httpx.Response(503, text="upstream down")})
    with pytest.raises(ServiceUnavailableError):
        server.client().health()


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_unreachable_server_names_the_url() -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    with pytest.raises(ServiceUnavailableError, match=f"{url}/api/search"):
        ReflexioClient(url_endpoint=url, timeout=5).search(query="q")

    async def run() -> None:
        async with AsyncReflexioClient(url_endpoint=url, timeout=5) as client:
            await client.whoami()

    with pytest.raises(ServiceUnavailableError, match=f"{url}/api/whoami"):
        asyncio.run(run())


def test_timeouts_are_service_unavailable() -> None:
    def slow(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    client = ReflexioClient(url_endpoint="http://reflexio.test", transport=httpx.MockTransport(slow))
    with pytest.raises(ServiceUnavailableError, match="no answer in time"):
        client.whoami()


def test_async_errors_are_the_same() -> None:
    server = _answer(404, json={"success": False, "error": "not_found", "message": "gone"})

    async def run() -> None:
        async with server.async_client() as client:
            await client.search(query="q")

    with pytest.raises(NotFoundError, match="gone"):
        asyncio.run(run())


# -- settings ------------------------------------------------------------------------------------


def test_defaults_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REFLEXIO_URL", "http://env.test:9000/")
    monkeypatch.setenv("REFLEXIO_API_KEY", "rfx-env")
    server = FakeServer()
    client = ReflexioClient(transport=server.transport())
    assert (client.base_url, client.api_key, client.timeout) == ("http://env.test:9000", "rfx-env", 300)
    client.whoami()
    assert str(server.last.url) == "http://env.test:9000/api/whoami"
    assert server.last.headers["authorization"] == "Bearer rfx-env"


def test_arguments_win_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REFLEXIO_URL", "http://env.test:9000")
    monkeypatch.setenv("REFLEXIO_API_KEY", "rfx-env")
    client = AsyncReflexioClient(api_key="rfx-arg", url_endpoint="http://arg.test", timeout=7)
    assert (client.base_url, client.api_key, client.timeout) == ("http://arg.test", "rfx-arg", 7)


def test_default_is_the_local_server_without_auth(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REFLEXIO_URL", raising=False)
    monkeypatch.delenv("REFLEXIO_API_KEY", raising=False)
    server = FakeServer()
    client = ReflexioClient(transport=server.transport())
    assert client.base_url == "http://127.0.0.1:8081"
    client.whoami()
    assert "authorization" not in server.last.headers
    assert server.last.headers["user-agent"].startswith("reflexio-python/")


def test_a_path_prefix_is_kept() -> None:
    whoami = {"success": True, "org_id": "o"}
    server = FakeServer({("GET", "/reflexio/api/whoami"): httpx.Response(200, json=whoami)})
    ReflexioClient(url_endpoint="http://proxy.test/reflexio/", transport=server.transport()).whoami()
    assert str(server.last.url) == "http://proxy.test/reflexio/api/whoami"


def test_a_rate_limit_is_typed_and_says_when_to_retry() -> None:
    with pytest.raises(RateLimitedError) as caught:
        _search(
            _answer(
                429, json={"error": "quota_exceeded", "detail": "searches"}, headers={"retry-after": "42"}
            )
        )
    assert isinstance(caught.value, QuotaExceededError) and caught.value.retry_after == 42.0
