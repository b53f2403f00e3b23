"""Every screen renders in a real browser on the demo org, with its scripts and charts allowed.

Each visit also takes the screenshot the README shows: into ``docs/screenshots/`` when
``REFLEXIO_SCREENSHOTS`` names that folder (``scripts/screenshots`` does), into a temporary
folder otherwise. A console error (a script failing, the Content-Security-Policy blocking
one of our own files) fails the test through the ``page`` fixture.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from reflexio.cli.demo_org import AGENT_VERSION
from tests.web.conftest import Served

#: The narrow width every screen must fit (a common phone).
NARROW = 390

SCREENS = [
    ("overview", "/ui/", "Overview"),
    ("review", "/ui/review", "Review queue"),
    ("review-retired", "/ui/review?status=retired", "Review queue"),
    ("learnings", "/ui/learnings?q=refund+payment+method", "Learnings"),
    ("learning", None, None),
    ("users", "/ui/users", "Users"),
    ("user", "/ui/users/emma.novak", "User emma.novak"),  # a profile and two playbooks
    ("sessions", "/ui/sessions", "Sessions"),
    ("session", "/ui/sessions/ana-2", "Session ana-2"),
    ("session-reported", "/ui/sessions/pia-late", "Session pia-late"),  # a reported failure
    ("evaluation", "/ui/evaluation", "Evaluation"),
    ("jobs", "/ui/jobs?status=done", "Jobs"),
    ("settings", "/ui/settings", "Settings"),
]


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    chosen = os.environ.get("REFLEXIO_SCREENSHOTS")
    folder = Path(chosen) if chosen else tmp_path_factory.mktemp("screenshots")
    (folder / "narrow").mkdir(parents=True, exist_ok=True)
    return folder


def _approved_playbook(served: Served) -> int:
    from reflexio.models import GetAgentPlaybooksRequest, PlaybookStatus
    from reflexio.service import playbooks

    req = GetAgentPlaybooksRequest(
        agent_version=AGENT_VERSION, playbook_status_filter=PlaybookStatus.APPROVED
    )
    found = playbooks.get_agent_playbooks(served.core, served.core.settings.default_org_id, req)
    return found.agent_playbooks[0].agent_playbook_id


@pytest.mark.parametrize(("name", "path", "heading"), SCREENS, ids=[s[0] for s in SCREENS])
def test_every_screen_renders_on_demo_data(
    page: Any, served: Served, shots: Path, name: str, path: str | None, heading: str | None
) -> None:
    if path is None:  # a learning's own page: an approved agent playbook, with history
        playbook_id = _approved_playbook(served)
        path, heading = f"/ui/learnings/agent_playbook/{playbook_id}", f"Agent playbook {playbook_id}"
    page.goto(served.url + path)
    assert heading in page.locator("h1").inner_text()
    if name == "review":  # the first card's recorded evidence, opened as a reviewer would
        page.locator("[data-review-card] summary").first.click()
    assert page.locator("nav[aria-label=Screens] a[aria-current=page]").count() == 1
    if page.locator("canvas").count():  # charts drew (Chart.js marks each canvas it rendered)
        page.wait_for_function("document.querySelectorAll('canvas[data-drawn]').length > 0")
    page.screenshot(path=str(shots / f"{name}.png"), full_page=True)
    assert (shots / f"{name}.png").stat().st_size > 10_000
    page.set_viewport_size({"width": NARROW, "height": 900})  # a phone: nothing may overflow the page
    page.screenshot(path=str(shots / "narrow" / f"{name}.png"), full_page=True)
    overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 0, f"{path} is {overflow} px wider than a {NARROW} px screen"


def test_browsers_at_the_root_are_sent_to_the_dashboard(page: Any, served: Served) -> None:
    page.goto(served.url + "/")
    assert page.url.endswith("/ui/") or page.url.endswith("/ui")
    assert "Overview" in page.locator("h1").inner_text()


def test_every_field_is_labelled_and_reachable_by_keyboard(page: Any, served: Served) -> None:
    for path in ("/ui/settings", "/ui/review", "/ui/learnings", "/ui/users/ana.silva/delete"):
        page.goto(served.url + path)
        unlabelled = page.evaluate(
            """() => [...document.querySelectorAll('input:not([type=hidden]), select, textarea')]
                .filter(el => !el.closest('[hidden]'))
                .filter(el => !(el.labels && el.labels.length) && !el.getAttribute('aria-label'))
                .map(el => el.name || el.outerHTML.slice(0, 80))"""
        )
        assert unlabelled == [], f"{path}: fields without a label: {unlabelled}"
    page.goto(served.url + "/ui/review")
    page.keyboard.press("Tab")  # the skip link comes first
    assert page.evaluate("document.activeElement.textContent") == "Skip to content"
