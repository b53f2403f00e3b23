"""Every table a person reads fits 80 columns with its headers whole, never broken mid-word."""

from __future__ import annotations

import re
import uuid

import pytest

from reflexio.cli.output import HEADERS
from tests.cli.conftest import Cli

LONG = "Always confirm the order number and the refund amount with the customer before refunding " * 2


@pytest.fixture
def narrow(cli: Cli) -> Cli:
    return Cli({**cli.env, "COLUMNS": "80"})


def _headers(columns: tuple[str, ...]) -> list[str]:
    return [HEADERS.get(column, column) for column in columns]


#: How a rich table's lines start (its rules, header and rows).
_BOX = tuple("┏┃┡│└")


def _assert_fits(out: str, headers: list[str]) -> None:
    lines = [line for line in out.splitlines() if line.startswith(_BOX)]
    assert all(len(line) <= 80 for line in lines), "\n".join(line for line in lines if len(line) > 80)
    header_rows = [line for line in lines if line.startswith("┃")]
    assert header_rows, out
    cells = [cell.strip() for cell in header_rows[0].strip("┃").split("┃")]
    assert cells == headers, f"{cells} != {headers}\n{out}"


def test_learning_tables_fit_80_columns(narrow: Cli) -> None:
    user = f"u-{uuid.uuid4().hex[:8]}"
    narrow("profiles", "add", "--user", user, "--content", LONG)
    narrow("user-playbooks", "add", "--user", user, "--content", LONG, "--trigger", "refund requests")
    narrow(
        "agent-playbooks", "add", "--content", LONG, "--trigger", "refund requests", "--agent-version", user
    )
    from reflexio.cli.learnings import _AGENT_RULE_COLUMNS, _PROFILE_COLUMNS, _USER_RULE_COLUMNS

    _assert_fits(narrow("profiles", "list", "--user", user).stdout, _headers(_PROFILE_COLUMNS))
    _assert_fits(narrow("user-playbooks", "list", "--user", user).stdout, _headers(_USER_RULE_COLUMNS))
    _assert_fits(
        narrow("agent-playbooks", "list", "--agent-version", user).stdout, _headers(_AGENT_RULE_COLUMNS)
    )
    found = narrow("search", "refund the order", "--user", user, "--agent-version", user).stdout
    for table in re.split(r"\n(?=Profiles|User playbooks|Agent playbooks)", found):
        if "┃" in table:
            assert all(len(line) <= 80 for line in table.splitlines() if line.startswith(_BOX)), table


def test_admin_tables_fit_80_columns(narrow: Cli) -> None:
    narrow("publish", "--user", "u-jobs", "--user-message", LONG, "--agent-response", "ok")
    from reflexio.cli.admin import _JOB_COLUMNS

    _assert_fits(narrow("jobs", "list").stdout, _headers(_JOB_COLUMNS))
    _assert_fits(narrow("doctor").stdout, ["name", "status", "detail"])
    _assert_fits(
        narrow("services", "status").stdout, _headers(("port", "running", "pid", "health", "url", "log_file"))
    )
