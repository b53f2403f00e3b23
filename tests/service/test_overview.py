"""The Overview's series: learnings created, review decisions and session verdicts per day."""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import pytest

from reflexio.config import Settings
from reflexio.learn.review import Action
from reflexio.models import AddAgentPlaybookRequest, AgentPlaybook, GetAgentPlaybooksRequest
from reflexio.records import Audit, EvaluationRecord, Learning, LearningKind
from reflexio.service import playbooks
from reflexio.service.core import Core, open_core
from reflexio.service.overview import DAY, overview, session_trend
from reflexio.service.review import review
from tests.conftest import BACKENDS, storage_url

ORG = "o"


@pytest.fixture(params=BACKENDS)
def core(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    url = storage_url(request.param, tmp_path)
    c = open_core(Settings.from_env({"REFLEXIO_STORAGE_URL": url, "HOME": str(tmp_path)}))
    yield c
    c.close()


def _verdict(at: float, agent: str, result: dict[str, object]) -> EvaluationRecord:
    return EvaluationRecord(
        org_id=ORG, kind="session", session_id=f"s{at}", agent_version=agent, result=result, created_at=at
    )


def test_each_series_counts_its_own_day(core: Core) -> None:
    today = int(time.time()) // DAY * DAY
    yesterday = today - DAY
    core.storage.save_learnings(
        [
            Learning(
                org_id=ORG,
                kind=LearningKind.PROFILE,
                user_id="u",
                content="Lives in Oslo",
                created_at=yesterday + 5,
            ),
            Learning(
                org_id=ORG, kind=LearningKind.PROFILE, user_id="u", content="Has a cat", created_at=today + 5
            ),
            Learning(
                org_id=ORG,
                kind=LearningKind.PROFILE,
                user_id="u",
                content="Long ago",
                created_at=today - 40 * DAY,
            ),
        ],
        Audit(),
    )
    row = AgentPlaybook(agent_version="v1", content="Confirm the order number first.")
    playbooks.add_agent_playbooks(core, ORG, AddAgentPlaybookRequest(agent_playbooks=[row]))
    (added,) = playbooks.get_agent_playbooks(core, ORG, GetAgentPlaybooksRequest()).agent_playbooks
    review(core, ORG, added.agent_playbook_id, Action.APPROVE, actor="lead")
    core.storage.add_evaluations(
        [
            _verdict(yesterday + 10, "v1", {"is_success": True, "number_of_correction_per_session": 1}),
            _verdict(yesterday + 20, "v1", {"is_success": False, "is_escalated": True}),
            _verdict(today + 10, "v2", {"is_success": True, "regular_vs_shadow": "shadow_is_better"}),
            _verdict(today - 30 * DAY, "v1", {"is_success": False}),  # outside the window
        ]
    )

    data = overview(core, ORG, days=14)
    assert data.days[-1] == today and len(data.days) == 14
    profiles = next(s for s in data.learnings if s.name == "profiles")
    assert profiles.values[-2:] == [1.0, 1.0] and sum(profiles.values) == 2
    approved = next(s for s in data.decisions if s.name == "approved")
    assert approved.values[-1] == 1.0 and sum(approved.values) == 1
    regular, shadow = data.success
    assert regular.values[-2:] == [0.5, 1.0] and math.isnan(regular.values[0])
    assert shadow.values[-1] == 1.0 and math.isnan(shadow.values[-2])
    corrections, escalated = data.friction
    assert corrections.values[-2] == 0.5 and escalated.values[-2] == 0.5
    assert data.verdicts == 3
    assert data.totals["agent_playbook"] == 1 and data.totals["pending_review"] == 0

    one = overview(core, ORG, days=14, agent_version="v1")
    assert one.verdicts == 2 and math.isnan(one.success[0].values[-1])
    month = session_trend(core, ORG, days=31)
    assert month.verdicts == 4 and len(month.days) == 31 and month.success[0].values[0] == 0.0
