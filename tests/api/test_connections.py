"""No request ends without a response, and a failure does not take the connection down (defect 7).

Over a real socket to uvicorn: a route that crashes answers a 500 in the error shape, and the
next request on the same keep-alive connection is answered too. Before the fix the exception
reached uvicorn after the 500 was sent, and uvicorn closed the connection under the client.
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any, cast

from reflexio.api.server import in_background
from reflexio.config import Settings
from reflexio.embed import Embedder
from reflexio.service.core import Core
from reflexio.storage import Storage, open_storage


def _request(path: str) -> bytes:
    return f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n".encode()


def _read_response(sock: socket.socket) -> bytes:
    """One HTTP/1.1 response with a Content-Length body (what the API always sends)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length")
    )
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body


class _BrokenConfigStore:
    """A real store whose config read fails in a way nothing expects (a bug, not an outage)."""

    def __init__(self, inner: Storage) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def get_org_config(self, org_id: str) -> dict[str, Any] | None:
        raise RuntimeError("an unexpected bug")


def test_a_crash_answers_500_and_keeps_the_connection(tmp_path: Path, embedder: Embedder) -> None:
    settings = Settings(home=tmp_path, storage_url="memory://", workers=0)
    store = cast(Storage, _BrokenConfigStore(open_storage("memory://", embedder)))
    core = Core(settings=settings, storage=store, embedder=embedder)
    with in_background(core) as url:
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(_request("/api/get_config"))
            first = _read_response(sock)
            sock.sendall(_request("/health/live"))
            second = _read_response(sock)
    assert first.startswith(b"HTTP/1.1 500"), first[:200]
    assert b'"error":"internal_error"' in first
    assert second.startswith(b"HTTP/1.1 200"), second[:200]
