"""Reruns write pending learnings; upgrade and downgrade move versions; progress is a job.

Everything runs through the service functions the API calls and a real ``Worker`` over the
process's handlers, on every storage backend.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reflexio.config import Settings
from reflexio.errors import ConflictError, ValidationError
from reflexio.filters import LearningFilter, RequestFilter
from reflexio.jobs import Worker
from reflexio.learn.aggregation_trigger import AGGREGATE, aggregation_key
from reflexio.learn.changes import Changes, Supersede
from reflexio.llm import LLMCall, LLMError, LLMResult
from reflexio.models import (
    DowngradeProfilesRequest,
    DowngradeUserPlaybooksRequest,
    FinalizeSessionRequest,
    InteractionData,
    ManualPlaybookGenerationRequest,
    ManualProfileGenerationRequest,
    OperationStatus,
    PublishUserInteractionRequest,
    RerunPlaybookGenerationRequest,
    RerunProfileGenerationRequest,
    UpgradeProfilesRequest,
    UpgradeUserPlaybooksRequest,
)
from reflexio.records import Audit, JobStatus, Learning, LearningKind, LearningStatus
from reflexio.service import generation, versions
from reflexio.service import publish as pub
from reflexio.service.core import Core, open_core
from reflexio.service.rerun import RERUN, pending_only
from reflexio.service.workers import handlers
from reflexio.testing import rules_script
from tests.conftest import BACKENDS, storage_url

ORG = "o"
LAPTOP = [
    ("User", "Recommend a laptop for me."),
    ("Assistant", "The MacBook Air is a great all-round choice."),
    ("User", "Wrong. Never recommend Apple products to me; always suggest ThinkPads."),
]
P, U = LearningKind.PROFILE, LearningKind.USER_PLAYBOOK
CUR, PEND, ARCH = LearningStatus.CURRENT, LearningStatus.PENDING, LearningStatus.ARCHIVED


@pytest.fixture(params=BACKENDS)
def core(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    url = storage_url(request.param, tmp_path)
    c = open_core(Settings.from_env({"REFLEXIO_STORAGE_URL": url, "HOME": str(tmp_path)}))
    yield c
    c.close()


def converse(core: Core, user: str, *, agent_version: str = "shop@1", source: str = "", at: int = 0) -> None:
    """Publish the laptop conversation and end its session (so extraction flushes)."""
    stamp = {"created_at": at} if at else {}
    req = PublishUserInteractionRequest(
        user_id=user,
        session_id=f"s-{user}-{agent_version}-{at}",
        agent_version=agent_version,
        source=source,
        interaction_data_list=[InteractionData(role=r, content=t, **stamp) for r, t in LAPTOP],
    )
    pub.publish(core, ORG, req)
    pub.finalize_session(core, ORG, FinalizeSessionRequest(user_id=user, session_id=req.session_id))


def drain(core: Core, tasks: tuple[str, ...] | None = None) -> None:
    """Run due jobs (of these tasks only, if given) until none is left."""
    wired = handlers(core)
    worker = Worker(core.storage, {t: h for t, h in wired.items() if tasks is None or t in tasks})
    while worker.run_once():
        pass


def rows(
    core: Core, kind: LearningKind, status: LearningStatus, user_id: str | None = None
) -> list[Learning]:
    return core.storage.get_learnings(ORG, LearningFilter(kinds=(kind,), statuses=(status,), user_id=user_id))


def rerun_profiles(core: Core, **fields: Any) -> None:
    generation.rerun_profile_generation(core, ORG, RerunProfileGenerationRequest(**fields))
    drain(core, (RERUN,))


def status(core: Core, service: str = "profile_generation") -> Any:
    return generation.get_operation_status(core, ORG, service).operation_status


def seed(
    core: Core, kind: LearningKind, user_id: str, state: LearningStatus, text: str, **extra: Any
) -> Learning:
    row = Learning(org_id=ORG, kind=kind, user_id=user_id, content=text, status=state, **extra)
    return core.storage.save_learnings([row], Audit(actor="test"))[0]


def test_rerun_writes_pending_and_leaves_current_untouched(core: Core) -> None:
    converse(core, "u1")
    drain(core)
    current = {r.id: r.snapshot() for r in rows(core, P, CUR)}
    assert current
    rerun_profiles(core)
    assert {r.id: r.snapshot() for r in rows(core, P, CUR)} == current  # W15: not deduped away
    first = rows(core, P, PEND)
    assert first and all(r.source_interaction_ids and r.user_id == "u1" for r in first)
    assert rows(core, U, PEND) == []  # a profile rerun writes profiles only
    rerun_profiles(core)  # a second rerun replaces the first one's output, keeping it as history
    second = rows(core, P, PEND)
    assert {r.id for r in second}.isdisjoint(r.id for r in first)
    superseded = rows(core, P, LearningStatus.SUPERSEDED)
    assert {r.id for r in superseded} == {r.id for r in first}
    events = core.storage.list_events(ORG, learning_ids=[first[0].id])
    assert {(e.event, e.actor) for e in events} == {("created", "rerun"), ("superseded", "rerun")}
    assert {r.id: r.snapshot() for r in rows(core, P, CUR)} == current


def test_progress_is_visible_while_and_after_running(core: Core) -> None:
    converse(core, "u1")
    converse(core, "u2")
    seen: list[Any] = []
    script = rules_script()

    class Observing:
        """The org's model: records what a poller sees each time the rerun calls it."""

        def complete(self, call: LLMCall[Any]) -> LLMResult[Any]:
            seen.append(status(core))
            return script.complete(call)

    core.llm = Observing()
    generation.rerun_profile_generation(core, ORG, RerunProfileGenerationRequest())
    queued = status(core)
    assert queued.status is OperationStatus.IN_PROGRESS and queued.total_users == 0
    drain(core, (RERUN,))
    assert seen and all(s.status is OperationStatus.IN_PROGRESS for s in seen)
    assert {s.current_user_id for s in seen} == {"u1", "u2"} and {s.total_users for s in seen} == {2}
    assert next(s.processed_users for s in seen if s.current_user_id == "u2") == 1
    done = status(core)
    assert done.status is OperationStatus.COMPLETED and done.progress_percentage == 100.0
    assert (done.total_users, done.processed_users, done.failed_users) == (2, 2, 0)
    assert done.processed_user_ids == ["u1", "u2"] and done.current_user_id is None
    assert done.stats["total_generated"] == len(rows(core, P, PEND)) > 0
    assert done.stats["total_interactions_processed"] == 2 * len(LAPTOP)
    assert done.completed_at is not None and done.started_at <= done.completed_at
    assert core.storage.llm_usage(ORG).calls > 0


def test_a_user_that_fails_is_reported_and_every_user_failing_fails_the_job(core: Core) -> None:
    converse(core, "u1")
    converse(core, "u2")
    script = rules_script()
    broken: set[str] = {"u2"}

    class Flaky:
        def complete(self, call: LLMCall[Any]) -> LLMResult[Any]:
            window = call.inputs.get("window")
            if window is not None and window.user_id in broken:
                raise LLMError("provider down")
            return script.complete(call)

    core.llm = Flaky()
    rerun_profiles(core)
    done = status(core)
    assert done.status is OperationStatus.COMPLETED and (done.processed_users, done.failed_users) == (1, 1)
    assert done.failed_user_ids[0]["user_id"] == "u2" and "provider down" in done.failed_user_ids[0]["error"]
    broken.add("u1")
    generation.rerun_profile_generation(core, ORG, RerunProfileGenerationRequest())
    [job] = core.storage.list_jobs(ORG, task=RERUN, limit=1)
    for _ in range(job.max_attempts):
        core.storage.expedite_job(ORG, RERUN, "profile")
        drain(core, (RERUN,))
    failed = status(core)
    assert failed.status is OperationStatus.FAILED and "every user" in (failed.error_message or "")


def test_a_second_rerun_of_the_same_extractor_is_a_conflict(core: Core) -> None:
    converse(core, "u1")
    generation.rerun_profile_generation(core, ORG, RerunProfileGenerationRequest())
    with pytest.raises(ConflictError):
        generation.rerun_profile_generation(core, ORG, RerunProfileGenerationRequest(user_id="u1"))
    generation.rerun_playbook_generation(core, ORG, RerunPlaybookGenerationRequest(agent_version="shop@1"))
    [job] = core.storage.claim_jobs("w", limit=1, lease_seconds=60, tasks=[RERUN])  # now it runs
    with pytest.raises(ConflictError):
        generation.rerun_profile_generation(core, ORG, RerunProfileGenerationRequest())
    core.storage.finish_job(job.id, "w")
    generation.rerun_profile_generation(core, ORG, RerunProfileGenerationRequest())  # free again


def test_a_turned_off_extractor_cannot_be_rerun(core: Core) -> None:
    core.storage.put_org_config(ORG, {"profile_extractor_config": None})
    with pytest.raises(ConflictError):
        generation.rerun_profile_generation(core, ORG, RerunProfileGenerationRequest())
    with pytest.raises(ConflictError):
        generation.manual_profile_generation(core, ORG, ManualProfileGenerationRequest())


def test_rerun_filters_by_user_time_and_source(core: Core) -> None:
    converse(core, "early", at=1_000_000)
    converse(core, "late", at=2_000_000)
    converse(core, "web", at=2_000_000, source="web")
    rerun_profiles(core, user_id="late")
    assert {r.user_id for r in rows(core, P, PEND)} == {"late"}
    assert status(core).request_params["user_id"] == "late"
    rerun_profiles(core, start_time=1_500_000)
    assert {r.user_id for r in rows(core, P, PEND)} == {"late", "web"}
    assert status(core).total_users == 2
    rerun_profiles(core, end_time=1_500_000)
    assert {r.user_id for r in rows(core, P, PEND)} == {"early", "late", "web"}  # others' output stays
    assert status(core).processed_user_ids == ["early"]
    rerun_profiles(core, source="web")
    assert status(core).processed_user_ids == ["web"]


def test_playbook_rerun_learns_from_one_agent_version(core: Core) -> None:
    converse(core, "u1", agent_version="shop@1")
    converse(core, "u2", agent_version="shop@2")
    drain(core)
    generation.rerun_playbook_generation(core, ORG, RerunPlaybookGenerationRequest(agent_version="shop@2"))
    drain(core, (RERUN,))
    pending = rows(core, U, PEND)
    assert pending and {(r.user_id, r.agent_version) for r in pending} == {("u2", "shop@2")}
    # asked as extraction asks (profiles and playbooks together), it learns what extraction learned
    assert {r.content for r in pending} == {r.content for r in rows(core, U, CUR, "u2")}
    assert rows(core, P, PEND) == []
    assert status(core, "playbook_generation").processed_user_ids == ["u2"]


def test_manual_generation_schedules_flushing_extraction_for_matching_users(core: Core) -> None:
    converse(core, "u1", agent_version="shop@1")
    converse(core, "u2", agent_version="shop@2")
    drain(core)
    assert core.storage.list_jobs(ORG, statuses=[JobStatus.QUEUED], task=pub.EXTRACT) == []
    out = generation.manual_profile_generation(core, ORG, ManualProfileGenerationRequest(user_id="u1"))
    assert out.success and "1 user" in (out.msg or "")
    out2 = generation.manual_playbook_generation(
        core, ORG, ManualPlaybookGenerationRequest(agent_version="shop@2")
    )
    assert "1 user" in (out2.msg or "")
    queued = core.storage.list_jobs(ORG, statuses=[JobStatus.QUEUED], task=pub.EXTRACT)
    assert sorted(j.key or "" for j in queued) == ["u1", "u2"] and all(j.payload["flush"] for j in queued)


def test_upgrade_promotes_archives_and_retires_with_history(core: Core) -> None:
    converse(core, "u1")
    drain(core)
    old = {r.id for r in rows(core, P, CUR)}
    rerun_profiles(core)
    new = {r.id for r in rows(core, P, PEND)}
    out = versions.upgrade_profiles(core, ORG, UpgradeProfilesRequest(), actor="key:abc")
    assert (out.profiles_promoted, out.profiles_archived, out.profiles_deleted) == (len(new), len(old), 0)
    assert {r.id for r in rows(core, P, CUR)} == new and {r.id for r in rows(core, P, ARCH)} == old
    [event] = [e for e in core.storage.list_events(ORG, learning_ids=sorted(old)) if e.actor == "upgrade"][:1]
    assert event.event == "archived" and "key:abc" in event.reason
    rerun_profiles(core)
    again = versions.upgrade_profiles(core, ORG, UpgradeProfilesRequest())
    assert again.profiles_deleted == len(old)  # the oldest version becomes history, not deleted
    assert {r.id for r in rows(core, P, LearningStatus.SUPERSEDED)} >= old
    assert {r.id for r in rows(core, P, ARCH)} == new
    with pytest.raises(ConflictError):
        versions.upgrade_profiles(core, ORG, UpgradeProfilesRequest())  # nothing pending


def test_downgrade_swaps_current_and_archived_and_leaves_pending(core: Core) -> None:
    with pytest.raises(ConflictError):
        versions.downgrade_profiles(core, ORG, DowngradeProfilesRequest())
    a = seed(core, P, "u1", ARCH, "Lives in Oslo")
    c = seed(core, P, "u1", CUR, "Lives in Bergen")
    p = seed(core, P, "u1", PEND, "Lives in Trondheim")
    out = versions.downgrade_profiles(core, ORG, DowngradeProfilesRequest())
    assert (out.profiles_demoted, out.profiles_restored) == (1, 1)
    assert [r.id for r in rows(core, P, CUR)] == [a.id] and [r.id for r in rows(core, P, ARCH)] == [c.id]
    assert [r.id for r in rows(core, P, PEND)] == [p.id]
    assert rows(core, P, LearningStatus.ARCHIVE_IN_PROGRESS) == []
    versions.downgrade_profiles(core, ORG, DowngradeProfilesRequest())  # its own inverse
    assert [r.id for r in rows(core, P, CUR)] == [c.id]
    assert any(e.actor == "downgrade" for e in core.storage.list_events(ORG, learning_ids=[a.id]))


def test_profile_upgrade_scopes(core: Core) -> None:
    for user in ("u1", "u2", "u3"):
        seed(core, P, user, CUR, f"{user} old fact")
    p1 = seed(core, P, "u1", PEND, "u1 new fact", profile_id="p1")
    p1b = seed(core, P, "u1", PEND, "u1 other new fact", profile_id="p1b")
    seed(core, P, "u2", PEND, "u2 new fact")
    out = versions.upgrade_profiles(core, ORG, UpgradeProfilesRequest(user_id="u1", profile_ids=["p1"]))
    assert (out.profiles_promoted, out.profiles_archived) == (1, 0)  # profile_ids narrows every step
    assert {r.id for r in rows(core, P, CUR, "u1")} >= {p1.id} and rows(core, P, PEND, "u1")[0].id == p1b.id
    out = versions.upgrade_profiles(core, ORG, UpgradeProfilesRequest(only_affected_users=True))
    assert (out.profiles_promoted, out.profiles_archived) == (2, 3)  # u1 (2 current) and u2; not u3
    assert len(rows(core, P, CUR, "u3")) == 1
    seed(core, P, "u2", PEND, "u2 newest fact")
    out = versions.upgrade_profiles(core, ORG, UpgradeProfilesRequest())  # everyone: u3 too
    assert rows(core, P, CUR, "u3") == [] and len(rows(core, P, CUR, "u2")) == 1


def test_user_playbook_upgrade_and_downgrade_scopes(core: Core) -> None:
    for version in ("v1", "v2"):
        seed(core, U, "u1", CUR, f"old rule {version}", agent_version=version, playbook_name="playbook")
        seed(core, U, "u1", PEND, f"new rule {version}", agent_version=version, playbook_name="playbook")
    keep = versions.upgrade_user_playbooks(
        core, ORG, UpgradeUserPlaybooksRequest(agent_version="v1", archive_current=False)
    )
    assert (keep.user_playbooks_promoted, keep.user_playbooks_archived) == (1, 0)
    assert len(rows(core, U, CUR)) == 3
    out = versions.upgrade_user_playbooks(core, ORG, UpgradeUserPlaybooksRequest(playbook_name="playbook"))
    assert (out.user_playbooks_promoted, out.user_playbooks_archived) == (1, 3)
    with pytest.raises(ConflictError):
        versions.upgrade_user_playbooks(core, ORG, UpgradeUserPlaybooksRequest(playbook_name="other"))
    back = versions.downgrade_user_playbooks(core, ORG, DowngradeUserPlaybooksRequest(agent_version="v2"))
    assert (back.user_playbooks_demoted, back.user_playbooks_restored) == (1, 1)
    assert {r.content for r in rows(core, U, CUR) if r.agent_version == "v2"} == {"old rule v2"}


def test_promoted_or_restored_user_playbooks_queue_their_scopes_aggregation(core: Core) -> None:
    config = core.org_config(ORG)
    assert config.user_playbook_extractor_config is not None
    config.user_playbook_extractor_config.aggregation_config.delay_seconds = 0.0
    core.storage.put_org_config(ORG, config.model_dump(mode="json"))
    seed(core, U, "u1", CUR, "old rule", agent_version="v1", playbook_name="playbook")
    seed(core, U, "u1", PEND, "new rule", agent_version="v1", playbook_name="playbook")
    seed(core, P, "u1", PEND, "Lives in Oslo")
    versions.upgrade_profiles(core, ORG, UpgradeProfilesRequest())
    assert aggregations(core) == []  # profiles never aggregate
    versions.upgrade_user_playbooks(core, ORG, UpgradeUserPlaybooksRequest(agent_version="v1"))
    assert aggregations(core) == [aggregation_key("v1", "playbook")]
    worker = Worker(core.storage, handlers(core))
    while worker.run_once():  # the aggregation is due at once (delay_seconds 0): it runs
        pass
    assert aggregations(core) == []
    versions.downgrade_user_playbooks(core, ORG, DowngradeUserPlaybooksRequest(agent_version="v1"))
    assert aggregations(core) == [aggregation_key("v1", "playbook")]


def aggregations(core: Core) -> list[str | None]:
    return [j.key for j in core.storage.list_jobs(ORG, task=AGGREGATE, statuses=[JobStatus.QUEUED])]


def test_operation_status_names(core: Core) -> None:
    empty = generation.get_operation_status(core, ORG, "playbook_generation")
    assert empty.success and empty.operation_status is None
    with pytest.raises(ValidationError):
        generation.get_operation_status(core, ORG, "profile_generaton")


def test_a_rerun_never_writes_over_current_rows_whatever_the_learner_says(core: Core) -> None:
    current = seed(core, P, "u1", CUR, "Lives in Oslo")
    pending = seed(core, P, "u1", PEND, "Lives in Bergen")
    proposal = Learning(org_id=ORG, kind=P, user_id="u1", content="Lives in Trondheim")
    rule = Learning(org_id=ORG, kind=U, user_id="u1", content="Answer in Norwegian")
    changes = Changes(
        added=[rule, proposal],
        updated=[
            current.copy(content="Lives in Tromso", status=PEND),  # claims to be pending: it is not
            pending.copy(content="Lives in Bergen, Norway"),
        ],
        superseded=[Supersede(current.id, 1), Supersede(pending.id, 1), Supersede(pending.id, 0)],
    )
    kept = pending_only(core.storage, ORG, changes, P)
    assert [(r.content, r.status) for r in kept.added] == [("Lives in Trondheim", PEND)]
    assert [r.id for r in kept.updated] == [pending.id]
    assert kept.superseded == [Supersede(pending.id, 0)]


def test_upgrade_waits_for_a_running_rerun(core: Core) -> None:
    converse(core, "u1")
    converse(core, "u2")
    drain(core)
    script = rules_script()
    refused: list[str] = []

    class UpgradingMidway:
        """The org's model: someone asks for an upgrade while the rerun is on its second user."""

        def complete(self, call: LLMCall[Any]) -> LLMResult[Any]:
            window = call.inputs.get("window")
            if window is not None and window.user_id == "u2" and not refused:
                assert rows(core, P, PEND, "u1") and not rows(core, P, PEND, "u2")  # a partial set
                with pytest.raises(ConflictError) as caught:
                    versions.upgrade_profiles(core, ORG, UpgradeProfilesRequest())
                refused.append(caught.value.message)
            return script.complete(call)

    core.llm = UpgradingMidway()
    rerun_profiles(core)
    assert refused and "1 of 2 users done" in refused[0] and "rerun is still in progress" in refused[0]
    out = versions.upgrade_profiles(core, ORG, UpgradeProfilesRequest())  # finished: allowed
    assert out.profiles_promoted == len(rows(core, P, CUR)) > 0
    assert {r.user_id for r in rows(core, P, CUR)} == {"u1", "u2"}


def test_a_queued_rerun_blocks_only_the_upgrade_of_its_own_kind(core: Core) -> None:
    converse(core, "u1")
    drain(core)
    seed(core, P, "u1", PEND, "prefers tea")
    seed(core, U, "u1", PEND, "answer briefly", agent_version="shop@1", playbook_name="playbook")
    generation.rerun_playbook_generation(core, ORG, RerunPlaybookGenerationRequest(agent_version="shop@1"))
    with pytest.raises(ConflictError, match="playbook rerun is still in progress"):
        versions.upgrade_user_playbooks(core, ORG, UpgradeUserPlaybooksRequest())
    assert versions.upgrade_profiles(core, ORG, UpgradeProfilesRequest()).profiles_promoted == 1
    drain(core, (RERUN,))
    assert versions.upgrade_user_playbooks(core, ORG, UpgradeUserPlaybooksRequest()).success


def test_a_manual_trigger_profile_extractor_learns_only_when_asked(core: Core) -> None:
    config = core.org_config(ORG).model_dump(mode="json")
    config["profile_extractor_config"]["manual_trigger"] = True
    core.storage.put_org_config(ORG, config)
    converse(core, "u1")  # publish + finalize: automatic learning runs now
    drain(core)
    assert rows(core, U, CUR, "u1"), "the playbook extractor still learns from every publish"
    assert rows(core, P, CUR, "u1") == [], "a manual-trigger profile extractor must not run by itself"
    [request] = core.storage.list_requests(ORG, RequestFilter(user_id="u1"), limit=1)
    assert pub.learning_status(core, ORG, request.request_id).status == "done"  # nothing else to wait for
    generation.manual_profile_generation(core, ORG, ManualProfileGenerationRequest(user_id="u1"))
    drain(core)
    assert rows(core, P, CUR, "u1"), "a manual run is what makes it learn"
