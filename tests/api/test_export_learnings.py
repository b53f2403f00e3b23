"""Export holds every kind of learning each extractor makes, through HTTP and the CLI.

Each scenario is a conversation that teaches one kind of lesson (a fact, a preference, a
correction, a failed tool call, an expert's answer, a recipe). Both extractors learn from all
of them through the real job handlers: the offline rule extractor, and the LLM extractor fed
by ``ScriptedLLM`` (``rules_script``, validated against the same schemas as live output). The
export must then answer 200 and carry every learning that was made, whatever its shape.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from reflexio.api import create_app
from reflexio.api.server import in_background
from reflexio.cli import app as cli_app
from reflexio.config import Settings
from reflexio.filters import LearningFilter
from reflexio.jobs import Worker
from reflexio.models import InteractionData, PublishUserInteractionRequest, UnifiedSearchViewResponse
from reflexio.records import Audit, Learning, LearningKind
from reflexio.service import publish
from reflexio.service.core import Core, open_core
from reflexio.service.workers import handlers
from reflexio.testing import rules_script
from tests.api.support import make_client, ok

USER = "u-export"


def _tool(name: str, status: str, **data: Any) -> dict[str, Any]:
    return {"tool_name": name, "tool_data": data, "status": status}


#: (what it teaches, turns) — each a separate session of the same user.
SCENARIOS: list[tuple[str, list[dict[str, Any]]]] = [
    ("fact", [{"role": "User", "content": "I live in Oslo and work as a data engineer."}]),
    ("preference", [{"role": "User", "content": "I prefer metric units, always."}]),
    (
        "correction",
        [
            {"role": "User", "content": "Recommend a laptop for me."},
            {"role": "Assistant", "content": "The MacBook Air is a great all-round choice."},
            {"role": "User", "content": "I only ever use Linux. Please don't suggest Macs."},
        ],
    ),
    (
        "tool_failure",
        [
            {"role": "User", "content": "Find me a hotel in Lisbon from June 12."},
            {
                "role": "Assistant",
                "content": "Found one.",
                "tools_used": [
                    _tool("hotels.search", "failed", checkin="12/06", error="expected YYYY-MM-DD"),
                    _tool("hotels.search", "ok", checkin="2025-06-12"),
                ],
            },
        ],
    ),
    (
        "expert",
        [
            {"role": "User", "content": "What can I take for a tension headache?"},
            {
                "role": "Assistant",
                "content": "Ibuprofen usually helps with tension headaches.",
                "expert_content": "Ibuprofen usually helps with tension headaches. Take it with food, "
                "and see a doctor if headaches last more than a week.",
            },
        ],
    ),
    (
        "recipe",
        [
            {"role": "User", "content": "The nightly backup failed again, can you fix it?"},
            {
                "role": "Assistant",
                "content": "Rotated the credentials, re-ran the job and checked the log: it passes now.",
                "tools_used": [
                    _tool("vault.rotate", "ok", secret="backup"),
                    _tool("jobs.run", "ok", job="nightly-backup"),
                    _tool("logs.read", "ok", job="nightly-backup"),
                ],
            },
            {"role": "User", "content": "That fixed it, thanks!"},
        ],
    ),
]


def _learn_everything(core: Core) -> None:
    for number, (_, turns) in enumerate(SCENARIOS):
        req = PublishUserInteractionRequest(
            user_id=USER,
            session_id=f"s{number}",
            interaction_data_list=[InteractionData.model_validate(t) for t in turns],
        )
        publish.publish(core, "self-host-org", req, flush=True)
    worker = Worker(core.storage, handlers(core))
    while worker.run_once():
        pass


@pytest.fixture(params=["rules", "scripted_llm"])
def learned(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Core]:
    settings = Settings.from_env(
        {"HOME": str(tmp_path), "REFLEXIO_STORAGE_URL": f"sqlite:///{tmp_path}/reflexio.db"}
    )
    core = open_core(settings)
    if request.param == "scripted_llm":
        core.llm = rules_script()
    _learn_everything(core)
    yield core
    core.close()


def _stored(core: Core) -> dict[LearningKind, set[str]]:
    rows = core.storage.get_learnings("self-host-org", LearningFilter(user_id=USER))
    out: dict[LearningKind, set[str]] = {}
    for row in rows:
        out.setdefault(row.kind, set()).add(row.content)
    return out


def test_export_answers_with_every_learning_both_extractors_make(learned: Core) -> None:
    stored = _stored(learned)
    with_issue = learned.storage.get_learnings(
        "self-host-org", LearningFilter(kinds=(LearningKind.USER_PLAYBOOK,), user_id=USER)
    )
    assert any(row.blocking_issue for row in with_issue), "the failed tool call taught nothing"
    assert stored.get(LearningKind.PROFILE) and stored.get(LearningKind.USER_PLAYBOOK)

    exported = ok(make_client(create_app(learned)).get("/api/export_user_data", params={"user_id": USER}))

    assert {p["content"] for p in exported["profiles"]} == stored[LearningKind.PROFILE]
    assert {p["content"] for p in exported["user_playbooks"]} == stored[LearningKind.USER_PLAYBOOK]
    issues = [p["blocking_issue"] for p in exported["user_playbooks"] if p.get("blocking_issue")]
    assert issues and all(issue["kind"] and issue["details"] for issue in issues)


def test_cli_export_of_a_failed_tool_lesson(learned: Core, tmp_path: Path) -> None:
    with in_background(learned) as url:
        env = {"HOME": str(tmp_path), "REFLEXIO_HOME": str(tmp_path / ".reflexio"), "REFLEXIO_URL": url}
        done = CliRunner().invoke(
            cli_app, ["export", "--user", USER, "--out", str(tmp_path / "out.json")], env=env
        )
    assert done.exit_code == 0, done.output
    assert "Exported user" in done.stdout


def test_a_legacy_tool_failure_row_still_exports(tmp_path: Path) -> None:
    """Rows stored with the rule extractor's old ``tool_failure`` kind export as external dependencies."""
    core = open_core(Settings.from_env({"HOME": str(tmp_path), "REFLEXIO_STORAGE_URL": "memory://"}))
    legacy = {"kind": "tool_failure", "details": "expected YYYY-MM-DD", "tool": "hotels.search"}
    row = Learning(
        org_id="self-host-org",
        kind=LearningKind.USER_PLAYBOOK,
        user_id=USER,
        content="Call hotels.search with checkin=2025-06-12",
        blocking_issue=legacy,
    )
    core.storage.save_learnings([row], audit=Audit(actor="test", reason="as an older version stored it"))
    exported = ok(make_client(create_app(core)).get("/api/export_user_data", params={"user_id": USER}))
    (issue,) = [p["blocking_issue"] for p in exported["user_playbooks"]]
    assert issue["kind"] == "external_dependency"
    assert "hotels.search" in issue["details"] and "YYYY-MM-DD" in issue["details"]
    core.close()


def test_prompt_block_of_learned_rules_never_says_when_twice(learned: Core) -> None:
    """The rule extractor writes triggers as clauses ("When the user asks: ..."); rendered once."""
    client = make_client(create_app(learned))
    for query in ("tension headache", "hotel in Lisbon", "recommend a laptop"):
        found = UnifiedSearchViewResponse.model_validate(
            ok(client.post("/api/search", json={"query": query, "user_id": USER}))
        )
        text = found.to_prompt().text
        assert text and "When When" not in text and "when When" not in text, text
