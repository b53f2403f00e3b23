"""Settings and Jobs in a real browser: the config form round-trips, secrets stay write-only,
bad values come back naming the field, dead jobs are retried, and keys are created and revoked.

The module's server starts with no key (loopback, the default org); the last test creates
the first key, which switches the server to keys, so it runs last.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from reflexio.embed import Embedder
from reflexio.jobs import Worker
from reflexio.records import Job, JobStatus
from tests.web.conftest import Served, serving

SECRET = "sk-test-very-secret-0123456789"


@pytest.fixture(scope="module")
def org(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> Iterator[Served]:
    with serving(tmp_path_factory.mktemp("settings"), embedder, demo=False) as server:
        yield server


def _config(org: Served) -> dict[str, Any]:
    return org.core.org_config(org.core.settings.default_org_id).model_dump(mode="json")


def _open_every_group(page: Any) -> None:
    page.evaluate("document.querySelectorAll('details.config-group').forEach(d => { d.open = true; })")


def _accept_confirms(page: Any) -> None:
    page.on("dialog", lambda dialog: dialog.accept())


def test_the_config_form_saves_what_changed_and_nothing_else(page: Any, org: Served) -> None:
    page.goto(org.url + "/ui/settings")
    form = page.locator("form[action='/ui/settings/config']")
    _open_every_group(page)
    form.locator("[name=session_idle_seconds]").fill("900")
    form.locator("[name=shadow_mode_enabled]").check()
    form.locator("[name=holdout_kinds]").fill('["agent_playbook"]')
    form.get_by_role("button", name="Save the configuration").click()
    assert "Configuration saved" in page.locator("[role=status]").inner_text()
    saved = _config(org)
    assert saved["session_idle_seconds"] == 900 and saved["shadow_mode_enabled"] is True
    assert saved["holdout_kinds"] == ["agent_playbook"]
    assert saved["window_size"] == 10  # untouched fields keep their values

    page.locator("form[action='/ui/settings/config']").get_by_role(
        "button", name="Save the configuration"
    ).click()
    assert "Nothing changed" in page.locator("[role=status]").inner_text()


@pytest.mark.refusals
def test_a_bad_value_comes_back_naming_the_field(page: Any, org: Served) -> None:
    before = _config(org)
    for name, bad in (("holdout_rate", "7"), ("holdout_kinds", "[not json")):
        page.goto(org.url + "/ui/settings")
        form = page.locator("form[action='/ui/settings/config']")
        _open_every_group(page)
        form.locator(f"[name={name}]").fill(bad)
        form.get_by_role("button", name="Save the configuration").click()
        assert name in page.locator("main").inner_text(), name
    after = _config(org)  # nothing stored was changed
    assert (after["holdout_rate"], after["holdout_kinds"]) == (
        before["holdout_rate"],
        before["holdout_kinds"],
    )


@pytest.mark.refusals
def test_a_provider_key_is_write_only_and_can_be_removed(page: Any, org: Served) -> None:
    _accept_confirms(page)
    page.goto(org.url + "/ui/settings")
    providers = page.locator("form[action='/ui/settings/provider']")
    providers.get_by_label("Provider").select_option("openai")
    providers.get_by_role("button", name="Save the key").click()  # no key typed
    assert "type the provider's key" in page.locator("main").inner_text()

    page.goto(org.url + "/ui/settings")
    providers = page.locator("form[action='/ui/settings/provider']")
    providers.get_by_label("Provider").select_option("openai")
    providers.get_by_label("Key").fill(SECRET)
    providers.get_by_role("button", name="Save the key").click()
    assert "Key for openai saved" in page.locator("[role=status]").inner_text()
    assert SECRET not in page.content() and "openai (set)" in page.content()
    assert _config(org)["api_key_config"]["openai"]["api_key"] == SECRET

    page.locator("form[action='/ui/settings/provider']").get_by_role("button", name="Remove").click()
    assert "openai (set)" not in page.content()
    assert not (_config(org).get("api_key_config") or {}).get("openai")


def test_the_review_policy_is_saved(page: Any, org: Served) -> None:
    page.goto(org.url + "/ui/settings")
    page.get_by_label("Approval required").check()
    page.get_by_role("button", name="Save the review policy").click()
    assert _config(org)["approval_required"] is True
    page.get_by_label("Approval required").uncheck()
    page.get_by_role("button", name="Save the review policy").click()
    assert _config(org)["approval_required"] is False


def _dead_job(org: Served, key: str) -> int:
    org_id = org.core.settings.default_org_id
    (job,) = org.core.storage.enqueue_jobs(
        [Job(org_id=org_id, task="web-test-fails", key=key, max_attempts=1)]
    )

    def fail(_: Any) -> None:
        raise RuntimeError("the provider is unreachable")

    Worker(org.core.storage, {"web-test-fails": fail}, name="web-test").run_once()
    found = org.core.storage.get_job(job.id)
    assert found is not None and found.status is JobStatus.DEAD
    return job.id


@pytest.mark.refusals
def test_dead_jobs_show_their_last_error_and_are_retried(page: Any, org: Served) -> None:
    _accept_confirms(page)
    first, second = _dead_job(org, "a"), _dead_job(org, "b")
    page.goto(org.url + "/ui/jobs")
    assert "the provider is unreachable" in page.locator("main").inner_text()
    page.get_by_label(f"Select job {first}").check()
    page.get_by_role("button", name="Retry selected").click()
    page.wait_for_url("**/ui/jobs?status=queued&retried=1")
    assert (org.core.storage.get_job(first) or Job(org_id="", task="")).status is JobStatus.QUEUED
    page.goto(org.url + "/ui/jobs")
    page.get_by_role("button", name="Retry all").click()
    page.wait_for_url("**/ui/jobs?status=queued&retried=1")
    assert (org.core.storage.get_job(second) or Job(org_id="", task="")).status is JobStatus.QUEUED
    page.goto(org.url + "/ui/jobs?status=finished")
    assert "status must be one of" in page.locator("main").inner_text()


def test_keys_are_created_shown_once_and_revoked(page: Any, org: Served) -> None:
    _accept_confirms(page)
    page.goto(org.url + "/ui/settings")
    keys = page.locator("#keys")
    keys.get_by_label("Name").fill("operator")
    keys.get_by_role("button", name="Create a key").click()
    first = page.locator("[data-new-key]").inner_text()
    assert first.startswith("rfx") or len(first) > 20
    page.goto(org.url + "/ui/settings")  # shown once: never again
    assert first not in page.content() and "(you)" in page.content()

    keys = page.locator("#keys")
    keys.get_by_label("Name").fill("support-agent prod")
    keys.get_by_role("button", name="Create a key").click()
    assert page.locator("[data-new-key]").count() == 1
    row = page.locator("tr", has_text="support-agent prod")
    row.get_by_role("button", name="Revoke").click()
    assert "Key revoked" in page.locator("[role=status]").inner_text()
    assert "revoked" in page.locator("tr", has_text="support-agent prod").inner_text()

    # Revoking one's own key signs one out; with no active key left the server is back to
    # answering this machine only, so the sign-in page sends the browser on to the overview.
    page.locator("tr", has_text="operator").get_by_role("button", name="Revoke").click()
    page.wait_for_load_state()
    assert page.url.endswith("/ui") and "Overview" in page.locator("h1").inner_text()
