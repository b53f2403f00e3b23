"""Server-side admin commands: API keys on the storage (seen at once by a running server), doctor."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from reflexio.config import LITELLM_MISSING
from tests.cli.conftest import Cli, home_env
from tests.client.live_server import running_server


@pytest.fixture
def keyed(tmp_path: Path) -> Iterator[Cli]:
    """A server of its own: creating a key locks every key-less caller out."""
    with running_server(tmp_path) as url:
        yield Cli(home_env(tmp_path, REFLEXIO_URL=url, COLUMNS="200"))


def test_a_key_created_while_the_server_runs_works_at_once(keyed: Cli) -> None:
    assert keyed.json("search", "anything")["success"] is True  # no key yet: loopback is trusted
    assert "no API keys" in keyed("keys", "list").stdout

    created = keyed.json("keys", "create", "--org", "acme", "--name", "ci")
    key = created["key"]
    assert key.startswith("rfx_") and created["prefix"] == key[:12]
    assert (created["org_id"], created["name"], created["active"]) == ("acme", "ci", True)
    assert "key_hash" not in created

    refused = keyed("search", "anything", "--json", ok=False)
    assert refused.exit_code == 3
    assert json.loads(refused.stdout)["error"] == "authentication_required"
    assert "set REFLEXIO_API_KEY or pass --api-key" in keyed("search", "anything", ok=False).stderr
    assert keyed.json("search", "anything", "--api-key", key)["success"] is True
    assert keyed.json("--api-key", key, "jobs", "list")["jobs"] == []

    listed = keyed.json("keys", "list", "--org", "acme")["keys"]
    assert [(k["id"], k["prefix"]) for k in listed] == [(created["id"], created["prefix"])]
    assert key not in keyed("keys", "list").stdout
    assert keyed.json("keys", "list", "--org", "other")["keys"] == []


def test_a_revoked_key_is_refused_at_once(keyed: Cli) -> None:
    created = keyed.json("keys", "create", "--org", "acme")
    keyed.json("keys", "create", "--org", "acme")  # another key keeps auth required
    keyed.json("keys", "revoke", str(created["id"]))
    refused = keyed("search", "q", "--api-key", created["key"], "--json", ok=False)
    assert refused.exit_code == 3
    again = keyed("keys", "revoke", str(created["id"]), "--json", ok=False)
    assert (again.exit_code, json.loads(again.stdout)["error"]) == (4, "not_found")
    listed = keyed.json("keys", "list")["keys"]
    assert [k["active"] for k in listed] == [False, True]


def test_a_key_needs_an_org(keyed: Cli) -> None:
    failed = keyed("keys", "create", "--org", " ", "--json", ok=False)
    assert (failed.exit_code, json.loads(failed.stdout)["error"]) == (2, "validation_error")


def test_human_output_shows_the_key_once(keyed: Cli) -> None:
    out = keyed("keys", "create", "--org", "acme").stdout
    assert "not shown again" in out
    assert "key: rfx_" in out


def test_doctor_says_what_is_configured_and_what_is_missing(cli: Cli) -> None:
    report = cli.json("doctor")
    statuses = {check["name"]: check["status"] for check in report["checks"]}
    assert statuses["python"] == statuses["storage"] == statuses["embedder"] == statuses["server"] == "ok"
    assert statuses["LLM provider"] == "missing"
    assert report["missing"] == ["LLM provider"]
    assert report["ok"] is True
    human = cli("doctor").stdout
    assert "missing: LLM provider" in human and "rule extractor will be used" in human


def test_doctor_reports_an_unreachable_server_without_failing(cli: Cli) -> None:
    report = cli.json("doctor", "--url", "http://127.0.0.1:9")
    server = next(check for check in report["checks"] if check["name"] == "server")
    assert server["status"] == "missing"
    assert "reflexio services start" in server["detail"]


def test_doctor_sees_a_provider_key(cli: Cli) -> None:
    with_key = Cli({**cli.env, "OPENAI_API_KEY": "sk-test-doctor-0000000000"})
    report = with_key.json("doctor")
    llm = next(check for check in report["checks"] if check["name"] == "LLM provider")
    assert llm["status"] in {"ok", "warn"}
    assert "sk-test" not in json.dumps(report)


def test_doctor_fails_on_storage_it_cannot_open(cli: Cli) -> None:
    broken = Cli({**cli.env, "REFLEXIO_STORAGE_URL": "bogus://nowhere"})
    failed = broken("doctor", "--json", ok=False)
    assert failed.exit_code == 1
    report = json.loads(failed.stdout)
    assert report["ok"] is False and report["errors"] == ["storage"]


def test_health_endpoint_is_public_after_keys_exist(keyed: Cli) -> None:
    keyed.json("keys", "create", "--org", "acme")
    assert httpx.get(f"{keyed.env['REFLEXIO_URL']}/health/ready").status_code == 200


def test_a_key_without_org_is_for_the_default_org_and_sees_what_came_before(keyed: Cli) -> None:
    keyed.json(
        "publish", "--user", "u-early", "--user-message", "I live in Oslo", "--agent-response", "Noted"
    )
    created = keyed.json("keys", "create")
    assert created["org_id"] == created["default_org_id"] == "self-host-org"
    assert "everything published without a key is visible" in created["notes"][0]
    exported = keyed.json("export", "--user", "u-early", "--api-key", created["key"])
    assert [turn["content"] for turn in exported["interactions"]][:1] == ["I live in Oslo"]


def test_a_key_for_another_org_says_where_the_keyless_data_is(keyed: Cli) -> None:
    keyed.json(
        "publish", "--user", "u-early", "--user-message", "I live in Oslo", "--agent-response", "Noted"
    )
    human = keyed("keys", "create", "--org", "acme").stdout
    assert "default org self-host-org" in human and "reflexio keys create` (no --org)" in human
    created = keyed.json("keys", "create", "--org", "acme")
    assert created["org_id"] == "acme" and "self-host-org" in created["notes"][0]
    hidden = keyed.json("export", "--user", "u-early", "--api-key", created["key"])
    assert hidden["interactions"] == []


def test_doctor_says_what_set_config_says_when_litellm_is_missing(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "litellm", None)  # as if the llm extra were not installed
    keyed = Cli({**cli.env, "OPENAI_API_KEY": "sk-test-0123456789"})
    report = keyed.json("doctor", ok=False)
    check = next(c for c in report["checks"] if c["name"] == "LLM provider")
    assert check["status"] == "error" and LITELLM_MISSING in check["detail"]
    bare = next(c for c in cli.json("doctor")["checks"] if c["name"] == "LLM provider")
    assert bare["status"] == "missing" and "pip install 'reflexio[llm]'" in bare["detail"]


def test_an_existing_key_is_made_a_reviewer_and_back(keyed: Cli) -> None:
    from reflexio import PermissionDeniedError, ReflexioClient

    created = keyed.json("keys", "create", "--org", "acme", "--name", "desk")
    assert created["reviewer"] is False
    with ReflexioClient(api_key=created["key"], url_endpoint=keyed.env["REFLEXIO_URL"]) as api:
        api.add_agent_playbooks([{"agent_version": "desk@1", "content": "Ask for the receipt"}])
        (playbook,) = api.get_agent_playbooks().agent_playbooks
        with pytest.raises(PermissionDeniedError):  # not a reviewer's key
            api.update_agent_playbook_status(playbook.agent_playbook_id, playbook_status="approved")
        made = keyed.json("keys", "set-reviewer", str(created["id"]))
        assert (made["id"], made["reviewer"], made["active"]) == (created["id"], True, True)
        api.update_agent_playbook_status(
            playbook.agent_playbook_id, playbook_status="approved"
        )  # at once, same server
        assert keyed.json("keys", "list", "--org", "acme")["keys"][0]["reviewer"] is True
        human = keyed("keys", "set-reviewer", str(created["id"]), "--off").stdout
        assert f"API key {created['id']} ({created['prefix']}) is no longer a reviewer" in human
        with pytest.raises(PermissionDeniedError):
            api.update_agent_playbook_status(playbook.agent_playbook_id, playbook_status="rejected")
    missing = keyed("keys", "set-reviewer", "999", "--json", ok=False)
    assert (missing.exit_code, json.loads(missing.stdout)["error"]) == (4, "not_found")
    elsewhere = keyed("keys", "set-reviewer", str(created["id"]), "--org", "other", "--json", ok=False)
    assert json.loads(elsewhere.stdout)["error"] == "not_found"
