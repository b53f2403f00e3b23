"""``reflexio eval``: overview, session and learning views against a real server, at 80 columns."""

from __future__ import annotations

import time
import uuid

from reflexio import InteractionData, ReflexioClient
from tests.cli.conftest import Cli


def _narrow(cli: Cli, *args: str) -> str:
    out = Cli({**cli.env, "COLUMNS": "80"})(*args).output
    assert all(len(line) <= 80 for line in out.splitlines()), out
    return out


def _judged_session(cli: Cli, api: ReflexioClient, user: str, session: str) -> str:
    """A session that injected a playbook, failed by report, and was graded on demand."""
    api.add_agent_playbooks(
        [{"agent_version": "v1", "content": "Offer a free express upgrade.", "playbook_status": "approved"}]
    )
    playbook = str(api.get_agent_playbooks(agent_version="v1").agent_playbooks[0].agent_playbook_id)
    api.publish_interaction(
        user_id=user,
        session_id=session,
        agent_version="v1",
        interactions=[
            InteractionData(role="User", content="My parcel is late"),
            InteractionData(
                role="Agent",
                content="I added a free express upgrade.",
                retrieved_learnings=[{"kind": "agent_playbook", "learning_id": playbook}],
            ),
            InteractionData(role="User", content="There is no free express upgrade, stop offering it."),
        ],
    )
    api.mark_session_outcome(session_id=session, outcome="failure", occurred_at=int(time.time()))
    assert "not judged yet" in _narrow(cli, "eval", "session", session)
    graded = api.grade_on_demand(session_id=session, agent_version="v1")  # this server runs no workers
    assert graded.result_id and not graded.cached and graded.retrieved_learning_status == "complete"
    assert api.grade_on_demand(session_id=session, agent_version="v1").cached
    return playbook


def test_a_judged_session_and_its_learning_read_at_80_columns(cli: Cli) -> None:
    user, session = f"u-{uuid.uuid4().hex[:8]}", f"s-{uuid.uuid4().hex[:8]}"
    with ReflexioClient(url_endpoint=cli.env["REFLEXIO_URL"]) as api:
        playbook = _judged_session(cli, api, user, session)
    shown = _narrow(cli, "eval", "session", session)
    assert "judged by: outcome" in shown and "success: False" in shown
    assert "negative" in shown and "Reported outcomes" in shown
    overview = _narrow(cli, "eval", "overview", "--days", "1")
    assert "success rate" in overview and "Recent sessions" in overview
    learning = _narrow(cli, "eval", "learning", playbook, "--kind", "agent_playbook")
    assert "helped / hurt / neutral: 0 / 1 / 0" in learning and "Reflection actions" in learning
    data = cli.json("eval", "learning", playbook, "--kind", "agent_playbook")
    assert data["impact"]["hurt"] == 1 and data["actions"] == []
