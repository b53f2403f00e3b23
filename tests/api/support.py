"""Request builders and response checks shared by the API tests."""

from __future__ import annotations

import atexit
import contextlib
import functools
from typing import Any

from anyio.from_thread import BlockingPortal, start_blocking_portal
from starlette.testclient import TestClient

LOOPBACK = ("127.0.0.1", 50_000)


def make_client(app: Any, *, peer: tuple[str, int] = LOOPBACK, key: str | None = None) -> TestClient:
    """A caller at ``peer``, optionally presenting an API key; redirects are never followed.

    Its requests run on the test process's one event loop (see ``_event_loop``), as a server's do.
    """
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    client = TestClient(
        app, base_url="http://127.0.0.1", client=peer, headers=headers, follow_redirects=False
    )
    client.portal = _event_loop()  # what ``with TestClient(app)`` sets, without running the lifespan
    return client


@functools.cache
def _event_loop() -> BlockingPortal:
    """The event loop, in its own thread, that serves every in-process client of this process.

    Left alone, Starlette's TestClient starts a new thread and event loop for every request:
    thousands per run, and one CI run hung for good when such a thread died before its loop
    started (``start_blocking_portal`` then waits forever). One long-lived loop is also what a
    server process has. It is stopped when the test process exits.
    """
    stack = contextlib.ExitStack()
    atexit.register(stack.close)
    return stack.enter_context(start_blocking_portal())


def turn(content: str, role: str = "User", **extra: Any) -> dict[str, Any]:
    return {"role": role, "content": content, **extra}


def publish_body(
    *contents: str, user_id: str = "u1", session_id: str = "s1", request_id: str | None = None, **extra: Any
) -> dict[str, Any]:
    """A publish request body with one turn per content string."""
    body: dict[str, Any] = {
        "user_id": user_id,
        "session_id": session_id,
        "interaction_data_list": [turn(c) for c in contents],
        **extra,
    }
    if request_id is not None:
        body["request_id"] = request_id
    return body


def profile(profile_id: str, content: str, user_id: str = "u1", **extra: Any) -> dict[str, Any]:
    return {
        "profile_id": profile_id,
        "user_id": user_id,
        "content": content,
        "last_modified_timestamp": 1_700_000_000,
        "generated_from_request_id": "manual",
        **extra,
    }


def user_playbook(content: str, user_id: str = "u1", **extra: Any) -> dict[str, Any]:
    return {"user_id": user_id, "agent_version": "v1", "request_id": "manual", "content": content, **extra}


def agent_playbook(content: str, **extra: Any) -> dict[str, Any]:
    return {"agent_version": "v1", "content": content, **extra}


def ok(response: Any) -> dict[str, Any]:
    """The JSON body of a 200, failing with the body when the status is anything else."""
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def failed(response: Any, status: int) -> dict[str, Any]:
    """The error body of a response that must fail with ``status`` in the API's error shape."""
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()
    assert body["success"] is False and body["error"] and body["detail"] == body["message"], body
    return body
