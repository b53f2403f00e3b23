"""Data commands against a real server over a real socket: publish, search, learnings, config, jobs."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

from reflexio.api.server import in_background
from reflexio.cli import app
from reflexio.config import Settings
from reflexio.service.core import open_core
from tests.cli.conftest import Cli, home_env


def _user() -> str:
    return f"u-{uuid.uuid4().hex[:8]}"


def test_publish_turns_from_flags_and_from_a_file(cli: Cli, tmp_path: Path) -> None:
    user = _user()
    published = cli.json(
        "publish", "--user", user, "--session", "s1", "--user-message", "Hi", "--agent-response", "Hello"
    )
    assert published["success"] is True
    assert published["request_id"]
    assert published["session_id"] == "s1"

    turns = [{"role": "User", "content": "I use metric units"}, {"role": "Assistant", "content": "Noted"}]
    file = tmp_path / "turns.json"
    file.write_text(json.dumps({"interactions": turns}))
    again = cli.json("publish", "--user", user, "--file", str(file), "--request-id", "r-file")
    assert again["request_id"] == "r-file"
    assert again["session_id"].startswith("cli-")

    exported = cli.json("export", "--user", user)
    assert {turn["content"] for turn in exported["interactions"]} >= {"Hi", "Hello", "I use metric units"}


def test_publish_reads_stdin(cli: Cli) -> None:
    user = _user()
    turns = json.dumps([{"role": "User", "content": "from stdin"}])
    result = cli.runner.invoke(
        app,
        ["publish", "--user", user, "--session", "s", "--stdin", "--json"],
        input=turns,
        env=cli.env,
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["success"] is True


def test_publish_without_turns_is_a_usage_error(cli: Cli) -> None:
    failed = cli("publish", "--user", "x", "--json", ok=False)
    assert failed.exit_code == 2
    assert json.loads(failed.stdout)["error"] == "bad_request"
    human = cli("publish", "--user", "x", ok=False)
    assert "nothing to publish" in human.stderr
    assert human.stdout == ""


def test_profiles_add_list_search_delete(cli: Cli) -> None:
    user = _user()
    added = cli.json("profiles", "add", "--user", user, "--content", "prefers metric units")
    profile_id = added["profile_id"]

    listed = cli.json("profiles", "list", "--user", user)
    assert [p["profile_id"] for p in listed["user_profiles"]] == [profile_id]
    assert "prefers metric units" in cli("profiles", "list", "--user", user).stdout

    found = cli.json("search", "metric units", "--user", user, "--kind", "profiles")
    assert [p["profile_id"] for p in found["profiles"]] == [profile_id]
    assert found["user_playbooks"] == [] and found["agent_playbooks"] == []
    assert "prefers metric units" in cli("search", "metric units", "--user", user).stdout

    cli.json("profiles", "delete", "--user", user, "--id", profile_id)
    assert cli.json("profiles", "list", "--user", user)["user_profiles"] == []


def test_search_rejects_an_unknown_kind(cli: Cli) -> None:
    failed = cli.json("search", "q", "--kind", "nonsense", ok=False)
    assert failed["error"] == "bad_request"


def test_user_playbooks_add_list_delete(cli: Cli) -> None:
    user = _user()
    cli.json(
        "user-playbooks", "add", "--user", user, "--content", "answer in French", "--trigger", "any reply"
    )
    rules = cli.json("user-playbooks", "list", "--user", user)["user_playbooks"]
    assert [r["content"] for r in rules] == ["answer in French"]
    cli.json("user-playbooks", "delete", str(rules[0]["user_playbook_id"]))
    assert cli.json("user-playbooks", "list", "--user", user)["user_playbooks"] == []


def test_agent_playbooks_review_decides_what_search_serves(cli: Cli) -> None:
    version = f"v-{uuid.uuid4().hex[:6]}"
    cli.json("agent-playbooks", "add", "--agent-version", version, "--content", "cite the refund policy")
    pending = cli.json("agent-playbooks", "list", "--agent-version", version, "--status", "pending")
    rule_id = pending["agent_playbooks"][0]["agent_playbook_id"]

    approved = cli.json("agent-playbooks", "approve", str(rule_id))
    assert approved["playbook_status"] == "approved"
    listed = cli.json("agent-playbooks", "list", "--agent-version", version, "--status", "approved")
    assert [r["agent_playbook_id"] for r in listed["agent_playbooks"]] == [rule_id]
    served = cli.json("search", "refund policy", "--agent-version", version, "--kind", "agent-playbooks")
    assert [r["agent_playbook_id"] for r in served["agent_playbooks"]] == [rule_id]

    cli.json("agent-playbooks", "reject", str(rule_id))
    hidden = cli.json("search", "refund policy", "--agent-version", version, "--kind", "agent_playbooks")
    assert hidden["agent_playbooks"] == []

    cli.json("agent-playbooks", "delete", str(rule_id))
    assert cli.json("agent-playbooks", "list", "--agent-version", version)["agent_playbooks"] == []


def test_review_conflicts_name_the_current_state(cli: Cli) -> None:
    version = f"v-{uuid.uuid4().hex[:6]}"
    cli.json("agent-playbooks", "add", "--agent-version", version, "--content", "cite the refund policy")
    pending = cli.json("agent-playbooks", "list", "--agent-version", version, "--status", "pending")
    rule_id = str(pending["agent_playbooks"][0]["agent_playbook_id"])
    cli.json("agent-playbooks", "approve", rule_id, "--note", "checked with legal", "--if-status", "pending")
    late = cli("agent-playbooks", "reject", rule_id, "--if-status", "pending", "--json", ok=False)
    body = json.loads(late.stdout)
    assert body["error"] == "conflict" and "it is approved now" in body["detail"]
    again = cli("agent-playbooks", "approve", rule_id, "--json", ok=False)
    assert "already approved" in json.loads(again.stdout)["detail"]
    assert cli.json("agent-playbooks", "reopen", rule_id)["playbook_status"] == "pending"


def test_approving_a_missing_playbook_fails_with_not_found(cli: Cli) -> None:
    failed = cli("agent-playbooks", "approve", "987654", "--json", ok=False)
    assert failed.exit_code == 4
    body = json.loads(failed.stdout)
    assert set(body) == {"error", "detail"}
    assert body["error"] == "not_found"
    assert "987654" in body["detail"]


def test_export_to_a_file(cli: Cli, tmp_path: Path) -> None:
    user = _user()
    cli("publish", "--user", user, "--session", "s", "--user-message", "hello there")
    out = tmp_path / "export.json"
    summary = cli.json("export", "--user", user, "--out", str(out))
    assert summary["counts"]["interactions"] == 1
    assert json.loads(out.read_text())["user_id"] == user
    assert "Exported" in cli("export", "--user", user, "--out", str(out)).stdout


def test_config_show_and_set(cli: Cli, tmp_path: Path) -> None:
    shown = cli.json("config", "show")
    assert "window_size" in shown

    cli.json("config", "set", "--field", "window_size=12", "--field", "stride_size=4")
    assert (cli.json("config", "show")["window_size"], cli.json("config", "show")["stride_size"]) == (12, 4)

    cli.json("config", "set", "--field", "llm_config.generation_model_name=gpt-4o-mini")
    assert cli.json("config", "show")["llm_config"]["generation_model_name"] == "gpt-4o-mini"

    cli.json("config", "set", "--data", '{"search_threshold": 0.2}', "--merge")
    merged = cli.json("config", "show")
    assert (merged["search_threshold"], merged["window_size"]) == (0.2, 12)

    document = tmp_path / "config.json"
    document.write_text(json.dumps({"window_size": 8, "stride_size": 2}))
    cli.json("config", "set", "--file", str(document))
    replaced = cli.json("config", "show")
    assert (replaced["window_size"], replaced["llm_config"]) == (8, None)

    bad = cli.json("config", "set", "--field", "no_such_key=1", ok=False)
    assert bad["error"] == "validation_error"


def test_config_set_keeps_masked_secrets(cli: Cli) -> None:
    secret = "sk-test-" + "x" * 30
    cli.json("config", "set", "--field", f'api_key_config={{"openai": {{"api_key": "{secret}"}}}}')
    shown = cli.json("config", "show")
    masked = json.dumps(shown["api_key_config"])
    assert secret not in masked and "****" in masked
    cli.json("config", "set", "--field", "window_size=10")
    assert secret not in cli("config", "show").stdout


def test_jobs_list_dead_retry(cli: Cli) -> None:
    user = _user()
    cli("publish", "--user", user, "--session", "s", "--user-message", "hello", "--finished")
    listed = cli.json("jobs", "list")
    assert listed["jobs"], "publishing enqueues learning jobs"
    assert {"id", "task", "status", "attempts"} <= set(listed["jobs"][0])
    assert all(job["status"] == "queued" for job in cli.json("jobs", "list", "--status", "queued")["jobs"])
    assert cli.json("jobs", "dead")["jobs"] == []
    assert cli.json("jobs", "retry")["retried_count"] == 0
    assert cli.json("jobs", "retry", "1", "2")["retried_count"] == 0
    assert "Jobs" in cli("jobs", "list").stdout


def test_global_options_before_the_command(cli: Cli, server: tuple[str, Path]) -> None:
    url, _ = server
    env = {k: v for k, v in cli.env.items() if k != "REFLEXIO_URL"}
    other = Cli(env)
    listed = json.loads(other("--url", url, "--json", "jobs", "list").stdout)
    assert "jobs" in listed


def test_unreachable_server_is_a_clear_error(cli: Cli) -> None:
    failed = cli("search", "q", "--url", "http://127.0.0.1:9", "--json", ok=False)
    assert failed.exit_code == 6
    body = json.loads(failed.stdout)
    assert body["error"] == "service_unavailable"
    assert "127.0.0.1:9" in body["detail"]


def test_add_commands_print_the_new_id(cli: Cli) -> None:
    human = cli("agent-playbooks", "add", "--content", "Confirm the order number before refunding").stdout
    added = re.search(r"Added agent playbook (\d+) \(pending\)", human)
    assert added, human
    assert f"reflexio agent-playbooks approve {added.group(1)}" in human
    listed = cli.json("agent-playbooks", "list", "--status", "pending")["agent_playbooks"]
    assert int(added.group(1)) in [rule["agent_playbook_id"] for rule in listed]
    user_rule = cli.json("user-playbooks", "add", "--user", _user(), "--content", "Answer in French")
    assert len(user_rule["user_playbook_ids"]) == 1


def test_a_failure_says_how_to_fix_it(cli: Cli) -> None:
    down = cli("search", "anything", "--url", "http://127.0.0.1:9", ok=False)
    assert down.exit_code == 6 and "Start it with `reflexio services start`" in down.stderr


def test_publish_wait_prints_what_was_learned(tmp_path: Path) -> None:
    settings = Settings.from_env(
        {"HOME": str(tmp_path), "REFLEXIO_STORAGE_URL": f"sqlite:///{tmp_path}/r.db"}
    )
    with in_background(open_core(settings)) as url:
        learning = Cli(home_env(tmp_path, REFLEXIO_URL=url, COLUMNS="200"))
        out = learning(
            "publish", "--user", "u-wait", "--user-message", "I live in Oslo and I prefer metric units.",
            "--agent-response", "Noted.", "--wait",
        ).stdout  # fmt: skip
        quiet = learning(
            "publish",
            "--user",
            "u-wait",
            "--user-message",
            "Thanks!",
            "--agent-response",
            "Anytime.",
            "--wait",
        ).stdout
        data = learning.json("publish", "--user", "u-wait", "--user-message", "I use Linux.", "--wait")
    assert "learning: done" in out and "profiles added: " in out
    assert "learned:\n  - profile " in out and "Oslo" in out.split("learned:", 1)[1]
    assert "learned: nothing new" in quiet
    assert data["profiles_added"] >= 1 and any("Linux" in line for line in data["learned"])
