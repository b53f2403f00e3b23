"""``reflexio plan`` assigns an org its quotas on the storage; ``reflexio usage`` reads them back
from the running server (issue 16)."""

from __future__ import annotations

from tests.cli.conftest import Cli


def test_a_plan_set_on_the_storage_is_what_the_server_reports(cli: Cli) -> None:
    assert cli.json("plan", "show")["name"] == "unlimited"
    custom = cli.json("plan", "set", "custom", "--searches", "500", "--learnings", "20")
    assert custom["limits"] == {"input_tokens": None, "learnings_generated": 20, "searches": 500}
    cli("search", "laptop", "--user", "u1")
    report = cli.json("usage")
    assert report["plan"] == "custom"
    assert report["usage"]["searches"]["used"] >= 1 and report["usage"]["searches"]["limit"] == 500
    human = cli("usage").stdout
    assert "plan custom" in human and "searches" in human and "500" in human
    assert cli.json("plan", "set", "default")["name"] == "unlimited"


def test_limits_go_with_a_custom_plan_only(cli: Cli) -> None:
    refused = cli("plan", "set", "pro", "--searches", "5", ok=False)
    assert refused.exit_code != 0 and "custom" in refused.output
    assert cli("plan", "set", "gold", ok=False).exit_code != 0
    assert cli.json("plan", "set", "pro")["limits"]["searches"] == 100_000
    cli("plan", "set", "default")
