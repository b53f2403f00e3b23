"""What a reviewer does in the browser, end to end, against a real server and the real SDK.

The org starts empty: three users publish the same correction through the real pipeline (the
job workers learn their user playbooks), aggregation generalises them into a pending agent
playbook whose recorded evidence the queue shows, and everything after that is clicks in
Chromium, checked with the SDK's own search. A fourth user's correction makes aggregation
propose a revision of the approved playbook, shown as a diff; sessions it hurts make
reflection suspend it for a reviewer (the org requires approval), who restores it.

Some tests add further pending playbooks through the service, as a team adding one by hand
through the API would, to have a long queue.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reflexio.client import ReflexioClient
from reflexio.embed import Embedder
from reflexio.jobs import Worker
from reflexio.learn.review import Action
from reflexio.models import (
    AddAgentPlaybookRequest,
    AgentPlaybook,
    GetAgentPlaybooksRequest,
    InteractionData,
    PlaybookAggregationOperationRequest,
    PublishUserInteractionRequest,
)
from reflexio.records import ProposalRecord
from reflexio.service import aggregation, org_config, playbooks, publish
from reflexio.service.core import Core
from reflexio.service.review import review
from reflexio.service.workers import handlers
from tests.web.conftest import Served, serving

AGENT = "support-agent@3"
USERS = ("rita.moreau", "sam.lee", "tomas.berg")
CORRECTION = "Don't refund to the card, I paid with PayPal. Always check the payment method before a refund."
PLAYBOOK = "Confirm the payment method before starting any refund."


def _run_jobs(core: Core) -> None:
    """Run due jobs in this thread until none has been due for a second."""
    worker = Worker(core.storage, handlers(core), name="test-flows")
    quiet_since = time.monotonic()
    while time.monotonic() - quiet_since < 1.0:
        if worker.run_once():
            quiet_since = time.monotonic()
        else:
            time.sleep(0.05)


def _publish_corrections(core: Core, org_id: str, users: tuple[str, ...] = USERS) -> None:
    for user_id in users:
        turns = [
            InteractionData(role="User", content="My order arrived damaged, I want a refund."),
            InteractionData(role="Agent", content="Sorry! I've refunded your order to your card."),
            InteractionData(role="User", content=CORRECTION),
            InteractionData(role="Agent", content="You're right, I'll refund to PayPal instead."),
        ]
        req = PublishUserInteractionRequest(
            user_id=user_id,
            session_id=f"{user_id}-1",
            agent_version=AGENT,
            interaction_data_list=turns,
            session_finished=True,
        )
        publish.publish(core, org_id, req, flush=True)
    _run_jobs(core)


def _aggregate(core: Core, org_id: str) -> list[int]:
    """Run the agent version's aggregation now; the ids of the playbooks it generated or revised."""
    req = PlaybookAggregationOperationRequest(agent_version=AGENT)
    op = aggregation.run_and_wait(core, org_id, req, wait_seconds=30)
    assert op.status == "succeeded", op
    listed = playbooks.get_agent_playbooks(
        core, org_id, GetAgentPlaybooksRequest(agent_version=AGENT, limit=100)
    )
    return sorted(p.agent_playbook_id for p in listed.agent_playbooks)


def _add_pending(core: Core, org_id: str, content: str) -> int:
    row = AgentPlaybook(
        agent_version=AGENT,
        trigger="a customer asks for a refund",
        content=content,
        rationale="Three users corrected refunds sent to the wrong payment method.",
    )
    playbooks.add_agent_playbooks(core, org_id, AddAgentPlaybookRequest(agent_playbooks=[row]))
    listed = playbooks.get_agent_playbooks(
        core, org_id, GetAgentPlaybooksRequest(agent_version=AGENT, limit=100)
    ).agent_playbooks
    return next(p.agent_playbook_id for p in listed if p.content == content)


@pytest.fixture(scope="module")
def org(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> Iterator[Served]:
    """An org that serves approved agent playbooks only, after three users taught the lesson."""
    with serving(tmp_path_factory.mktemp("flows"), embedder, demo=False) as server:
        org_id = server.core.settings.default_org_id
        org_config.update_config(server.core, org_id, {"approval_required": True})
        _publish_corrections(server.core, org_id)
        yield server


def _served_ids(served: Served) -> set[int]:
    with ReflexioClient(url_endpoint=served.url, timeout=10) as client:
        found = client.search(
            query="the customer wants a refund for a damaged order",
            agent_version=AGENT,
            entity_types=["agent_playbooks"],
            threshold=0.0,
        )
    return {p.agent_playbook_id for p in found.agent_playbooks}


def test_the_aggregated_playbook_shows_its_recorded_evidence_is_approved_served_and_rejected(
    page: Any, org: Served
) -> None:
    org_id = org.core.settings.default_org_id
    (pid,) = _aggregate(org.core, org_id)
    assert pid not in _served_ids(org), "a pending playbook is served although approval is required"

    page.goto(org.url + "/ui/review")
    card = page.locator(f"#playbook-{pid}")
    assert "3 user(s)" in card.inner_text()
    card.locator("summary", has_text="Evidence").click()
    evidence = card.locator(".evidence-body")
    assert "Proposed by aggregation from 3 user playbook(s) taught by 3 user(s)" in evidence.inner_text()
    for user_id in USERS:
        assert evidence.locator("p").first.get_by_role("link", name=user_id).count() == 1
        assert evidence.get_by_role("link", name=f"session {user_id}-1").count() >= 1
    assert "PayPal" in evidence.inner_text()  # the conversations it was learned from

    card.get_by_role("button", name="Approve").click()
    page.locator(f"#playbook-{pid} .pill.approved").wait_for()
    assert pid in _served_ids(org)

    card = page.locator(f"#playbook-{pid}")
    card.get_by_label(f"Note for playbook {pid}").fill("the card is not always the payment method")
    card.get_by_role("button", name="Reject").click()
    page.locator(f"#playbook-{pid} .pill.rejected").wait_for()
    assert pid not in _served_ids(org)

    page.goto(org.url + f"/ui/learnings/agent_playbook/{pid}")
    history = page.locator("ol.timeline").inner_text()
    assert "rejected" in history and "approved" in history and "by local" in history
    assert "the card is not always the payment method" in history


def test_a_rewrite_shows_its_diff_and_lands_in_the_history(page: Any, org: Served) -> None:
    pid = _add_pending(org.core, org.core.settings.default_org_id, "Check the payment method on refunds.")
    page.goto(org.url + "/ui/review")
    card = page.locator(f"#playbook-{pid}")
    card.get_by_role("button", name="Rewrite").click()
    editor = page.locator(f"#edit-{pid}")
    editor.get_by_label("Instruction").fill("Check the original payment method before any refund.")
    editor.get_by_label("Note").fill("clearer")
    editor.get_by_role("button", name="Show the diff").click()
    diff = page.locator(f"#diff-{pid} [data-diff=content]")
    diff.wait_for()
    assert diff.locator("ins").all_inner_texts() and diff.locator("del").all_inner_texts()
    assert "original" in " ".join(diff.locator("ins").all_inner_texts())

    editor.get_by_role("button", name="Save the rewrite").click()
    page.wait_for_url(f"**/ui/learnings/agent_playbook/{pid}#history")
    assert (
        "Check the original payment method before any refund." in page.locator(".content").first.inner_text()
    )
    latest = page.locator("ol.timeline li").last  # the history reads oldest first
    assert "by local" in latest.inner_text() and "clearer" in latest.inner_text()
    assert "original" in " ".join(latest.locator("[data-diff=content] ins").all_inner_texts())


def test_a_user_page_exports_everything_stored_about_them(page: Any, org: Served) -> None:
    user = USERS[1]
    page.goto(org.url + f"/ui/users/{user}")
    with page.expect_download() as download:
        page.get_by_role("link", name="Export everything (JSON)").click()
    assert download.value.suggested_filename == f"reflexio-user-{user}.json"
    exported = json.loads(Path(download.value.path()).read_text())
    assert exported["user_id"] == user and exported["format_version"] == 1
    assert [r["session_id"] for r in exported["requests"]] == [f"{user}-1"]
    assert CORRECTION in [i["content"] for i in exported["interactions"]]
    assert exported["user_playbooks"] and {p["user_id"] for p in exported["user_playbooks"]} == {user}
    assert all(other not in json.dumps(exported) for other in USERS if other != user)


@pytest.mark.refusals
def test_deleting_a_user_removes_them_everywhere(page: Any, org: Served) -> None:
    gone, kept = USERS[2], USERS[0]
    page.goto(org.url + f"/ui/users/{gone}")
    page.get_by_role("link", name="Delete everything").click()
    confirmation = page.locator("main").inner_text()
    assert "user playbook(s)" in confirmation and "session(s)" in confirmation

    page.get_by_label("Type the user id").fill("someone else")
    page.get_by_role("button", name="Delete everything of this user").click()
    assert "type the user id exactly" in page.locator("main").inner_text()

    page.goto(org.url + f"/ui/users/{gone}/delete")
    page.get_by_label("Type the user id").fill(gone)
    page.get_by_role("button", name="Delete everything of this user").click()
    assert f"User {gone} deleted" in page.locator("h1").inner_text()

    for path in ("/ui/users", "/ui/sessions", "/ui/learnings?kind=user_playbook"):
        page.goto(org.url + path)
        text = page.locator("main").inner_text()
        assert gone not in text, f"{path} still shows {gone}"
        assert kept in text, f"{path} lost {kept} too"
    with ReflexioClient(url_endpoint=org.url, timeout=10) as client:
        found = client.search(query=CORRECTION, user_id=gone, entity_types=["user_playbooks"], threshold=0.0)
    assert found.user_playbooks == []


def test_a_long_queue_is_worked_with_the_keyboard_and_in_bulk(page: Any, org: Served) -> None:
    org_id = org.core.settings.default_org_id
    by_key, first, second = (
        _add_pending(org.core, org_id, f"Queue item {n}: offer a callback when the line is busy.")
        for n in range(3)
    )
    page.goto(org.url + "/ui/review")
    page.keyboard.press("j")  # the first card (the newest: second)
    page.keyboard.press("j")
    page.keyboard.press("j")  # third card: by_key
    assert page.evaluate("document.activeElement.id") == f"playbook-{by_key}"
    page.keyboard.press("a")
    page.locator(f"#playbook-{by_key} .pill.approved").wait_for()

    page.get_by_label(f"Select playbook {first}").check()
    page.get_by_label(f"Select playbook {second}").check()
    assert page.locator("[data-bulk-count]").inner_text() == "2"
    page.get_by_role("button", name="Approve selected").click()
    rows = page.locator("main tbody").inner_text()
    assert f"#{first}\tnow approved" in rows and f"#{second}\tnow approved" in rows

    page.goto(org.url + "/ui/review?status=approved")  # retire from the approved tab, in bulk
    page.get_by_label(f"Select playbook {first}").check()
    page.locator("#bulk").get_by_label("Note").fill("superseded by the phone policy")
    page.get_by_role("button", name="Reject selected").click()
    assert f"#{first}\tnow rejected" in page.locator("main tbody").inner_text()


def test_a_revision_of_an_approved_playbook_is_shown_as_a_diff_and_approving_it_archives_the_old(
    page: Any, org: Served
) -> None:
    """The revision is recorded as aggregation records one (a proposal that ``revises`` the
    approved playbook), since when aggregation proposes one depends on its drafting."""
    org_id = org.core.settings.default_org_id
    approved = _add_pending(org.core, org_id, "Sign customer emails as the support team.")
    review(org.core, org_id, approved, Action.APPROVE, actor="local")
    revision = _add_pending(org.core, org_id, "Sign customer emails as 'The Acme Support Team'.")
    org.core.storage.add_proposals(
        [
            ProposalRecord(
                org_id=org_id,
                agent_playbook_id=revision,
                cluster_id=1,
                member_ids=(),
                user_ids=USERS,
                revises_id=approved,
            )
        ]
    )
    page.goto(org.url + "/ui/review")
    card = page.locator(f"#playbook-{revision}")
    assert f"revision of #{approved}" in card.inner_text()
    diff = card.locator("[data-revision] [data-diff=content]")
    assert "Acme" in " ".join(diff.locator("ins").all_inner_texts())
    assert "the support team" in " ".join(diff.locator("del").all_inner_texts()).lower()
    card.get_by_role("button", name="Approve").click()
    page.locator(f"#playbook-{revision} .pill.approved").wait_for()
    page.goto(org.url + f"/ui/learnings/agent_playbook/{approved}")
    assert "superseded" in page.locator("h1").inner_text()


def test_a_playbook_that_hurts_is_suspended_for_review_and_restored(page: Any, org: Served) -> None:
    from tests.api.test_evaluation import REPLIES, run_due_evaluations

    org_id = org.core.settings.default_org_id
    pid = _add_pending(org.core, org_id, "Apologise and offer a free express shipping upgrade.")
    page.goto(org.url + "/ui/review")
    page.locator(f"#playbook-{pid}").get_by_role("button", name="Approve").click()
    page.locator(f"#playbook-{pid} .pill.approved").wait_for()
    for n, reply in enumerate(REPLIES):
        turns = [
            InteractionData(role="User", content="My parcel is three days late, where is it?"),
            InteractionData(
                role="Agent",
                content="Sorry! I've added a free express shipping upgrade to your next order.",
                retrieved_learnings=[{"kind": "agent_playbook", "learning_id": str(pid)}],
            ),
            InteractionData(role="User", content=reply),
        ]
        req = PublishUserInteractionRequest(
            user_id=f"late-{n}", session_id=f"late-{n}", agent_version=AGENT, interaction_data_list=turns
        )
        publish.publish(org.core, org_id, req, flush=True)
    run_due_evaluations(org.core)

    page.goto(org.url + "/ui/review?status=suspended")
    card = page.locator(f"#playbook-{pid}")
    assert "Suspended for review by reflection" in card.inner_text()
    assert "hurt 3" in card.locator("[data-impact]").inner_text()
    assert card.get_by_role("button", name="Approve").count() == 1  # the reviewer may overrule it
    card.get_by_role("button", name="Restore").click()
    page.wait_for_url(f"**/ui/learnings/agent_playbook/{pid}#history")
    assert "approved" in page.locator("h1").inner_text()
    assert "reverted suspend" in page.locator("ol.timeline").inner_text()
    assert "hurt" in page.locator("[data-exposures]").inner_text()
    assert pid in _served_ids(org)
