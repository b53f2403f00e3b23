"""Signing in, signing out, forged posts and org isolation, in a real browser.

The server has API keys for two orgs, so every dashboard page needs a sign-in; each org has an
agent playbook and a user of its own. A forged post comes from a page of another site (served
to the browser by Playwright's router as ``http://evil.test``), the way an attacker's page
would make a signed-in reviewer's browser post a form.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from reflexio.embed import Embedder
from reflexio.models import (
    AddAgentPlaybookRequest,
    AddUserPlaybookRequest,
    AgentPlaybook,
    GetAgentPlaybooksRequest,
    UserPlaybook,
)
from reflexio.service import keys, playbooks
from reflexio.service.core import Core
from tests.web.conftest import Served, serving

EVIL = "http://evil.test/"


@dataclass(frozen=True)
class TwoOrgs:
    served: Served
    key_a: str
    key_b: str
    playbook_a: int
    playbook_b: int
    agent_a: str  # a key of org A that is not a reviewer's


def _seed(core: Core, org_id: str, lesson: str, user_id: str) -> int:
    row = AgentPlaybook(agent_version="agent@1", content=lesson)
    playbooks.add_agent_playbooks(core, org_id, AddAgentPlaybookRequest(agent_playbooks=[row]))
    mine = UserPlaybook(
        user_id=user_id, request_id=f"{user_id}-r1", agent_version="agent@1", content=f"{user_id}: {lesson}"
    )
    playbooks.add_user_playbooks(core, org_id, AddUserPlaybookRequest(user_playbooks=[mine]))
    listed = playbooks.get_agent_playbooks(core, org_id, GetAgentPlaybooksRequest()).agent_playbooks
    return listed[0].agent_playbook_id


@pytest.fixture(scope="module")
def orgs(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> Iterator[TwoOrgs]:
    with serving(tmp_path_factory.mktemp("access"), embedder, demo=False) as served:
        core = served.core
        playbook_a = _seed(core, "acme", "Quote prices in euros.", "alice.acme")
        playbook_b = _seed(core, "globex", "Never mention the merger.", "bob.globex")
        _, key_a = keys.create_key(core, "acme", "reviewer", reviewer=True)
        _, key_b = keys.create_key(core, "globex", "reviewer", reviewer=True)
        _, agent_a = keys.create_key(core, "acme", "support-agent")
        yield TwoOrgs(served, key_a, key_b, playbook_a, playbook_b, agent_a)


def _sign_in(page: Any, url: str, key: str, target: str = "/ui/") -> None:
    page.goto(url + target)
    page.wait_for_url("**/ui/login**")
    page.get_by_label("API key").fill(key)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(url + target)


def _exists(core: Core, org_id: str, playbook_id: int) -> bool:
    listed = playbooks.get_agent_playbooks(core, org_id, GetAgentPlaybooksRequest()).agent_playbooks
    return any(p.agent_playbook_id == playbook_id for p in listed)


@pytest.mark.refusals
def test_sign_in_starts_a_strict_http_only_session_and_sign_out_ends_it(page: Any, orgs: TwoOrgs) -> None:
    url = orgs.served.url
    page.goto(url + "/ui/review")
    page.wait_for_url("**/ui/login?next=/ui/review")
    page.get_by_label("API key").fill("rfx_not-a-key")
    page.get_by_role("button", name="Sign in").click()
    assert "not an active API key" in page.get_by_role("alert").inner_text()

    page.get_by_label("API key").fill(orgs.key_a)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(url + "/ui/review")  # back where the person was heading
    assert "Quote prices in euros." in page.locator("main").inner_text()
    (session,) = [c for c in page.context.cookies() if c["name"] == "rfx_session"]
    assert session["httpOnly"] and session["sameSite"] == "Strict" and session["path"] == "/ui"

    page.get_by_role("button", name="Sign out").click()
    page.wait_for_url("**/ui/login")
    page.goto(url + "/ui/review")
    page.wait_for_url("**/ui/login?next=/ui/review")


@pytest.mark.refusals
def test_a_forged_cross_site_post_is_refused(page: Any, orgs: TwoOrgs) -> None:
    url, core = orgs.served.url, orgs.served.core
    _sign_in(page, url, orgs.key_a)
    target = f"{url}/ui/review/{orgs.playbook_a}/delete"
    forged = f'<form method="post" action="{target}"><input name="expected" value="pending"></form>'
    page.route(
        EVIL,
        lambda route: route.fulfill(content_type="text/html", body=f"<html><body>{forged}</body></html>"),
    )
    page.goto(EVIL)
    with page.expect_navigation():
        page.evaluate("document.forms[0].submit()")
    assert "/ui/login" in page.url  # SameSite=Strict: the browser sent no session with it
    assert _exists(core, "acme", orgs.playbook_a)

    # A same-site post without the session's CSRF token (a script that got past SameSite).
    page.goto(url + "/ui/review")
    answer = page.request.post(target, form={"expected": "pending"})
    assert answer.status == 403 and "did not come from this dashboard" in answer.text()
    answer = page.request.post(
        target, form={"expected": "pending", "csrf_token": "0" * 64}, headers={"Origin": "http://evil.test"}
    )
    assert answer.status == 403 and "from another site" in answer.text()
    assert _exists(core, "acme", orgs.playbook_a)


@pytest.mark.refusals
def test_org_a_never_sees_org_b(page: Any, orgs: TwoOrgs) -> None:
    url = orgs.served.url
    _sign_in(page, url, orgs.key_a)
    for path in ("/ui/review", "/ui/learnings", "/ui/users", "/ui/learnings?q=merger"):
        page.goto(url + path)
        text = page.locator("main").inner_text()
        assert "merger" not in text and "bob.globex" not in text, f"{path} shows org B's data"
    page.goto(url + "/ui/learnings")
    assert "alice.acme: Quote prices in euros." in page.locator("main").inner_text()  # its own org's

    answer = page.goto(url + f"/ui/learnings/agent_playbook/{orgs.playbook_b}")
    assert answer is not None and answer.status == 404
    assert "merger" not in page.locator("main").inner_text()
    answer = page.goto(url + "/ui/users/bob.globex")
    assert answer is not None and "merger" not in page.locator("main").inner_text()

    # Org B's own reviewer sees it, in a browser of their own.
    other = page.context.browser.new_context()
    try:
        tab = other.new_page()
        _sign_in(tab, url, orgs.key_b, f"/ui/learnings/agent_playbook/{orgs.playbook_b}")
        assert "Never mention the merger." in tab.locator("main").inner_text()
    finally:
        other.close()


@pytest.mark.refusals
def test_a_key_that_is_not_a_reviewer_may_look_but_not_decide(page: Any, orgs: TwoOrgs) -> None:
    url, core = orgs.served.url, orgs.served.core
    _sign_in(page, url, orgs.agent_a, "/ui/review")
    assert "Quote prices in euros." in page.locator("main").inner_text()
    token = page.locator("input[name=csrf_token]").first.get_attribute("value")
    answer = page.request.post(
        f"{url}/ui/review/{orgs.playbook_a}/approve", form={"expected": "pending", "csrf_token": token}
    )
    assert answer.status == 403 and "keys create --reviewer" in answer.text()
    (row,) = [
        p
        for p in playbooks.get_agent_playbooks(core, "acme", GetAgentPlaybooksRequest()).agent_playbooks
        if p.agent_playbook_id == orgs.playbook_a
    ]
    assert row.playbook_status.value == "pending"  # as over REST: only a reviewer decides


@pytest.mark.refusals
def test_a_decision_with_bad_input_says_what_is_wrong_and_changes_nothing(page: Any, orgs: TwoOrgs) -> None:
    url, core = orgs.served.url, orgs.served.core
    _sign_in(page, url, orgs.key_a, "/ui/review")
    token = page.locator("input[name=csrf_token]").first.get_attribute("value")
    approve = f"{url}/ui/review/{orgs.playbook_a}/approve"

    answer = page.request.post(f"{url}/ui/review/first/approve", form={"csrf_token": token})
    assert answer.status == 400 and "an agent playbook id is a number" in answer.text()
    answer = page.request.post(approve, form={"expected": "maybe", "csrf_token": token})
    assert answer.status == 400 and "expected must be one of" in answer.text()
    answer = page.request.post(approve, form={"note": "x" * 2_001, "csrf_token": token})
    assert answer.status == 400 and "a note is at most 2000 characters" in answer.text()

    # Someone else decided meanwhile (the card was rendered as "approved"): a plain post is a
    # 409 naming the current state; from the card (htmx) the card comes back, as it is now.
    answer = page.request.post(approve, form={"expected": "approved", "csrf_token": token})
    assert answer.status == 409 and "pending" in answer.text()
    answer = page.request.post(
        approve, form={"expected": "approved", "csrf_token": token}, headers={"HX-Request": "true"}
    )
    assert answer.status == 200 and "Not approved:" in answer.text()
    (row,) = [
        p
        for p in playbooks.get_agent_playbooks(core, "acme", GetAgentPlaybooksRequest()).agent_playbooks
        if p.agent_playbook_id == orgs.playbook_a
    ]
    assert row.playbook_status.value == "pending"
