"""Drive our server with the published reflexio-client 0.2.16, and with raw 0.2.32-style HTTP.

Runs inside the Python 3.12 virtualenv made by ``scripts/compat_venv.sh`` (not under pytest:
that venv has only reflexio-client and its dependencies). Usage::

    REFLEXIO_URL=http://127.0.0.1:PORT python driver.py

The client is built as ``ReflexioClient()``, so it finds the server the way users' code does.

Every check is named after the client method (or ``HTTP <route>`` for routes 0.2.16 has no
method for) and asserts on what the server answered. The last line printed is a JSON summary
``{"client_version", "passed": [...], "failed": {name: reason}}`` that the pytest side reads.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
import os
import sys
import time
import traceback
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import requests

from reflexio import InteractionData, ReflexioClient, UserActionType

BASE_URL = os.environ["REFLEXIO_URL"].rstrip("/")

passed: list[str] = []
failed: dict[str, str] = {}
RUN = uuid.uuid4().hex[:8]
USER = f"compat-user-{RUN}"
SESSION = f"compat-session-{RUN}"
VERSION = f"compat-v-{RUN}"


@contextmanager
def check(*names: str) -> Iterator[None]:
    """Record ``names`` as passed when the block completes, as failed with the reason if not."""
    try:
        yield
    except Exception as exc:  # the summary must name every failure, whatever it is
        reason = f"{type(exc).__name__}: {exc}"
        ours = [frame for frame in traceback.extract_tb(exc.__traceback__) if frame.filename == __file__]
        line = ours[-1].lineno if ours else "?"
        for name in names:
            failed.setdefault(name, f"{reason} (driver.py line {line})")
    else:
        passed.extend(name for name in names if name not in failed)


def http_status(call: Callable[[], Any]) -> int:
    """The status of the ``requests.HTTPError`` the call raises (0.2.16 surfaces errors so)."""
    try:
        call()
    except requests.HTTPError as exc:
        return exc.response.status_code
    raise AssertionError("expected an HTTP error")


def eventually(probe: Callable[[], bool], seconds: float = 10.0) -> None:
    """Wait for a fire-and-forget call of the 0.2.16 client to have taken effect."""
    deadline = time.monotonic() + seconds
    while not probe():
        if time.monotonic() > deadline:
            raise AssertionError("the background call never took effect")
        time.sleep(0.1)


def raw(method: str, path: str, **kwargs: Any) -> requests.Response:
    return requests.request(method, BASE_URL + path, timeout=60, allow_redirects=False, **kwargs)


client = ReflexioClient()
state: dict[str, Any] = {}


def system() -> None:
    for path, key, value in (
        ("/", "service", "Reflexio API"),
        ("/health", "status", "healthy"),
        ("/health/ready", "status", "healthy"),
        ("/health/live", "status", "alive"),
        ("/meta/version", "api_version", "v1"),
    ):
        with check(f"HTTP GET {path}"):
            answer = raw("GET", path)
            assert answer.status_code == 200, answer.status_code
            assert answer.json()[key] == value, answer.json()
            if path.startswith("/health"):
                assert answer.headers.get("cache-control") == "no-store"
    with check("whoami"):
        assert client.whoami().org_id
    with check("HTTP no redirects"):
        answer = raw("POST", "/api/search/", json={"query": "q"})
        assert answer.status_code == 404, answer.status_code


def config() -> None:
    with check("update_config", "get_config"):
        assert client.update_config({"window_size": 12, "stride_size": 6})["success"] is True
        current = client.get_config()
        assert (current.window_size, current.stride_size) == (12, 6)
    with check("get_config masks secrets", "set_config"):
        secret = f"sk-compat-{uuid.uuid4().hex}"
        client.update_config({"api_key_config": {"openai": {"api_key": secret}}})
        shown = client.get_config().api_key_config.openai.api_key
        assert shown != secret and "****" in shown and shown.endswith(secret[-4:]), shown
        assert client.set_config(client.get_config())["success"] is True
        assert client.get_config().api_key_config.openai.api_key == shown
        assert http_status(lambda: client.update_config({"no_such_setting": 1})) == 422
        client.update_config({"api_key_config": None, "window_size": 10, "stride_size": 8})


def publish() -> None:
    with check("publish_interaction", "get_learning_status"):
        turns = [
            InteractionData(
                role="User", content="Recommend a laptop for me.", user_action=UserActionType.NONE
            ),
            {
                "role": "Agent",
                "content": "Here are three light laptops.",
                "retrieved_learnings": [{"kind": "profile", "learning_id": "p-none"}],
                "Contnet": "typo",
            },
        ]
        out = client.publish_interaction(
            user_id=USER, interactions=turns, source="compat", agent_version="v1", session_id=SESSION
        )
        assert out.success and out.request_id, out
        assert any("Contnet" in warning for warning in out.warnings), out.warnings
        state["request_id"] = out.request_id
        status = client.get_learning_status(out.request_id)
        assert status in {"pending", "processing", "done", "not_tracked"}, status
        assert http_status(lambda: client.get_learning_status("no-such-request")) == 404
    with check("publish_interaction wait_for_response"):
        out = client.publish_interaction(
            USER, [{"content": "I travel a lot."}], session_id=SESSION, wait_for_response=True
        )
        assert out.success and out.learning_status in {"done", "deferred"}, out
        state["second_request_id"] = out.request_id
    with check("publish_interaction_async"):
        out = asyncio.run(
            client.publish_interaction_async(USER, [{"content": "async turn"}], session_id=f"{SESSION}-a")
        )
        assert out.success, out
    with check("publish_interaction rejects a blank session locally"):
        try:
            client.publish_interaction(USER, [{"content": "x"}], session_id=" ")
        except ValueError:
            pass
        else:
            raise AssertionError("no ValueError")
    with check("HTTP POST /api/finalize_session"):
        answer = raw("POST", "/api/finalize_session", json={"user_id": USER, "session_id": SESSION})
        assert answer.status_code == 200 and answer.json()["success"] is True, answer.text


def read_log() -> None:
    with check("get_interactions"):
        turns = client.get_interactions(user_id=USER).interactions
        contents = {turn.content for turn in turns}
        assert {"Recommend a laptop for me.", "Here are three light laptops.", "async turn"} <= contents
        agent = next(turn for turn in turns if turn.content == "Here are three light laptops.")
        assert [(r.kind, r.learning_id) for r in agent.retrieved_learnings] == [("profile", "p-none")]
        state["interaction_id"] = agent.interaction_id
    with check("get_all_interactions"):
        assert any(turn.user_id == USER for turn in client.get_all_interactions(limit=100).interactions)
    with check("get_requests"):
        sessions = client.get_requests(session_id=SESSION).sessions
        assert [s.session_id for s in sessions] == [SESSION]
        ids = {r.request.request_id for r in sessions[0].requests}
        assert ids == {state["request_id"], state["second_request_id"]}, ids
    with check("search_interactions"):
        hits = client.search_interactions(user_id=USER, query="laptop").interactions
        assert any("laptop" in turn.content for turn in hits)


def profiles() -> None:
    with check("add_user_profile", "get_profiles"):
        added = client.add_user_profile([{"user_id": USER, "content": "Prefers laptops under 1.3 kg"}])
        assert added.success and added.added_count == 1, added
        listed = client.get_profiles(user_id=USER, force_refresh=True).user_profiles
        assert [p.content for p in listed] == ["Prefers laptops under 1.3 kg"]
        state["profile_id"] = listed[0].profile_id
    with check("get_all_profiles"):
        listed = client.get_all_profiles(user_id=USER).user_profiles
        assert state["profile_id"] in {p.profile_id for p in listed}
        assert http_status(lambda: client.get_all_profiles(status_filter="bogus")) == 422
    with check("HTTP PUT /api/update_user_profile"):
        body = {"user_id": USER, "profile_id": state["profile_id"], "content": "Prefers laptops under 1.2 kg"}
        answer = raw("PUT", "/api/update_user_profile", json=body)
        assert answer.status_code == 200 and answer.json()["success"], answer.text
        listed = client.get_profiles(user_id=USER, force_refresh=True).user_profiles
        assert [p.content for p in listed] == ["Prefers laptops under 1.2 kg"]
    with check("search_user_profiles", "search_profiles"):
        hits = client.search_user_profiles(user_id=USER, query="laptop weight").user_profiles
        assert [p.profile_id for p in hits] == [state["profile_id"]]
        assert client.search_profiles(user_id=USER, query="laptop").success
    with check("get_profile_change_log"):
        assert client.get_profile_change_log().success
    with check("HTTP GET /api/get_profile_statistics"):
        answer = raw("GET", "/api/get_profile_statistics")
        assert answer.status_code == 200 and answer.json()["current_count"] >= 1, answer.text


def playbooks() -> None:
    with check("add_user_playbook", "get_user_playbooks"):
        rule = {
            "user_id": USER,
            "agent_version": "v1",
            "request_id": state["request_id"],
            "trigger": "recommending a laptop",
            "content": "ask for the budget first",
        }
        assert client.add_user_playbook([rule]).added_count == 1
        listed = client.get_user_playbooks(user_id=USER).user_playbooks
        assert [r.content for r in listed] == ["ask for the budget first"]
        state["user_playbook_id"] = listed[0].user_playbook_id
    with check("update_user_playbook", "search_user_playbooks"):
        assert client.update_user_playbook(
            state["user_playbook_id"], content="ask for budget and weight"
        ).success
        hits = client.search_user_playbooks(query="laptop budget", user_id=USER).user_playbooks
        assert [r.content for r in hits] == ["ask for budget and weight"]
    with check("add_agent_playbooks", "get_agent_playbooks", "update_agent_playbook"):
        rule = {"agent_version": VERSION, "trigger": "asked about laptops", "content": "compare three models"}
        assert client.add_agent_playbooks([rule]).added_count == 1
        pending = client.get_agent_playbooks(
            agent_version=VERSION, playbook_status_filter="pending", force_refresh=True
        ).agent_playbooks
        assert len(pending) == 1, pending
        state["agent_playbook_id"] = pending[0].agent_playbook_id
        assert client.update_agent_playbook(
            state["agent_playbook_id"], content="compare three laptops"
        ).success
    with check("update_agent_playbook_status", "search", "search_agent_playbooks"):
        rule_id = state["agent_playbook_id"]

        def served(statuses: list[str] | None) -> bool:
            found = client.search(
                query="which laptop should I buy",
                agent_version=VERSION,
                entity_types=["agent_playbooks"],
                agent_playbook_status_filter=statuses,
            )
            return rule_id in {r.agent_playbook_id for r in found.agent_playbooks}

        assert not served(["approved"])
        assert client.update_agent_playbook_status(rule_id, playbook_status="approved").success
        assert served(["approved"]) and served(None)
        assert client.update_agent_playbook_status(rule_id, playbook_status="rejected").success
        assert not served(None)
        client.update_agent_playbook_status(rule_id, playbook_status="approved")
        hits = client.search_agent_playbooks(query="laptop", agent_version=VERSION).agent_playbooks
        assert [r.agent_playbook_id for r in hits] == [rule_id]


def unified_search() -> None:
    query = {"query": "Recommend a laptop for me.", "user_id": USER, "top_k": 5}
    with check("search scored hits"):
        found = client.search(**query)
        assert state["profile_id"] in {p.profile_id for p in found.profiles}
        assert state["user_playbook_id"] in {r.user_playbook_id for r in found.user_playbooks}
        body = raw("POST", "/api/search", json=query).json()
        scores = [hit.get("score") for hit in [*body["profiles"], *body["user_playbooks"]]]
        assert scores and all(isinstance(score, float) for score in scores), scores
        assert body["degraded"] is False
    with check("search_async"):
        found = asyncio.run(client.search_async(**query))
        assert state["profile_id"] in {p.profile_id for p in found.profiles}
    with check("HTTP GET /api/export_user_data"):
        answer = raw("GET", "/api/export_user_data", params={"user_id": USER})
        assert answer.status_code == 200, answer.text
        assert state["profile_id"] in {p["profile_id"] for p in answer.json()["profiles"]}


def deletes() -> None:
    with check("delete_interaction"):
        assert client.delete_interaction(USER, state["interaction_id"], wait_for_response=True).success
        ids = {t.interaction_id for t in client.get_interactions(user_id=USER).interactions}
        assert state["interaction_id"] not in ids
        assert (
            http_status(lambda: client.delete_interaction(USER, 999_999_999, wait_for_response=True)) == 404
        )
    with check("delete_profile"):
        assert client.delete_profile(USER, state["profile_id"]) is None  # fire-and-forget
        eventually(lambda: not client.get_profiles(user_id=USER, force_refresh=True).user_profiles)
    with check("delete_user_playbook"):
        assert client.delete_user_playbook(state["user_playbook_id"]) is None  # fire-and-forget
        eventually(lambda: not client.get_user_playbooks(user_id=USER).user_playbooks)
    with check("delete_agent_playbook"):
        assert client.delete_agent_playbook(state["agent_playbook_id"], wait_for_response=True).success
    with check("delete_request"):
        assert client.delete_request(state["request_id"]) is None  # fire-and-forget
        eventually(lambda: not client.get_requests(request_id=state["request_id"]).sessions)
    with check("delete_session"):
        assert client.delete_session(SESSION, wait_for_response=True).success
        assert client.get_requests(session_id=SESSION).sessions == []


def bulk_deletes() -> None:
    with check("delete_requests_by_ids"):
        out = client.publish_interaction(USER, [{"content": "bulk"}], session_id=f"{SESSION}-bulk")
        assert client.delete_requests_by_ids([out.request_id]).deleted_count == 1
    with check("delete_profiles_by_ids"):
        client.add_user_profile([{"user_id": USER, "content": "bulk fact", "profile_id": f"bulk-{RUN}"}])
        assert client.delete_profiles_by_ids([f"bulk-{RUN}"]).deleted_count == 1
    with check("delete_user_playbooks_by_ids"):
        client.add_user_playbook(
            [{"user_id": USER, "agent_version": "v1", "request_id": "r", "content": "bulk"}]
        )
        ids = [r.user_playbook_id for r in client.get_user_playbooks(user_id=USER).user_playbooks]
        assert len(ids) == 1 and client.delete_user_playbooks_by_ids(ids).deleted_count == 1
    with check("delete_agent_playbooks_by_ids"):
        client.add_agent_playbooks([{"agent_version": VERSION, "content": "bulk agent rule"}])
        listed = client.get_agent_playbooks(agent_version=VERSION, force_refresh=True).agent_playbooks
        ids = [r.agent_playbook_id for r in listed]
        assert len(ids) == 1 and client.delete_agent_playbooks_by_ids(ids).deleted_count == 1


def wipe() -> None:
    with check("clear_user_data"):
        client.publish_interaction(USER, [{"content": "to be cleared"}], session_id=f"{SESSION}-wipe")
        client.add_user_profile([{"user_id": USER, "content": "to be cleared"}])
        cleared = client.clear_user_data(USER)
        assert cleared.success and cleared.deleted_counts.get("profiles", 0) >= 1, cleared
        assert client.get_profiles(user_id=USER, force_refresh=True).user_profiles == []
        assert client.get_interactions(user_id=USER).interactions == []
    for method in (
        "delete_all_interactions",
        "delete_all_profiles",
        "delete_all_user_playbooks",
        "delete_all_agent_playbooks",
        "delete_all_playbooks",
    ):
        with check(method):
            assert getattr(client, method)().success
    with check("delete_all_interactions empties the log", "delete_all_profiles empties profiles"):
        assert client.get_all_interactions().interactions == []
        assert client.get_all_profiles().user_profiles == []


def main() -> None:
    for step in (
        system,
        config,
        publish,
        read_log,
        profiles,
        playbooks,
        unified_search,
        deletes,
        bulk_deletes,
    ):
        step()
    wipe()
    summary = {
        "client_version": importlib.metadata.version("reflexio-client"),
        "client_file": sys.modules["reflexio"].__file__,
        "passed": sorted(set(passed)),
        "failed": failed,
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
