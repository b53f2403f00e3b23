"""``profiles`` / ``user-playbooks`` rerun, upgrade, downgrade and status through the CLI."""

from __future__ import annotations

from tests.cli.conftest import Cli


def test_a_rerun_is_queued_and_its_progress_shown(cli: Cli) -> None:
    assert cli.json("profiles", "status", "--json")["operation_status"] is None
    started = cli.json("profiles", "rerun", "--user", "nobody", "--json")
    assert started["success"] is True
    status = cli.json("profiles", "status", "--json")["operation_status"]
    assert status["service_name"] == "profile_generation" and status["status"] == "in_progress"
    again = cli("profiles", "rerun", "--json", ok=False)  # one rerun at a time
    assert again.exit_code == 5


def test_upgrade_and_downgrade_need_something_to_swap(cli: Cli) -> None:
    assert cli("profiles", "upgrade", "--json", ok=False).exit_code == 5
    assert cli("user-playbooks", "downgrade", "--json", ok=False).exit_code == 5


def test_generate_schedules_extraction(cli: Cli) -> None:
    cli(
        "publish",
        "--user",
        "gen-user",
        "--user-message",
        "I live in Oslo",
        "--agent-response",
        "Noted",
        "--json",
    )
    scheduled = cli.json("profiles", "generate", "--user", "gen-user", "--json")
    assert scheduled["success"] is True
    jobs = cli.json("jobs", "list", "--json")
    assert any(j["task"] == "extract" for j in jobs["jobs"])
