"""The rerun job: learn again from every matching interaction, as PENDING learnings.

A rerun is a dry run of extraction over history (after a prompt or model change): its output
waits as ``pending`` until ``upgrade`` promotes it (``service.versions``). It is one durable
job (task ``rerun``, key = the extractor) that

* selects the users whose requests match the scope (user, source, agent version; the time
  range applies to each interaction's ``created_at``) and who have matching turns;
* per user, retires that user's previous pending output of the extractor (it becomes a
  ``superseded`` tombstone: nothing is hard-deleted) and cuts all matching turns into windows
  of the extractor's size and stride, flushing the tail; bookmarks are neither read nor moved;
* learns each window with the org's learner through a :class:`PendingLens`, so proposals are
  compared with, and merged into, the pending output of this rerun, never with CURRENT rows
  (Reflexio's rerun deduplicated against CURRENT profiles and deleted them, W15);
* writes new rows as ``pending``, each window in its own transaction under the job's lease;
* reports progress on the job row after each user, and finishes with the final report in the
  same transaction that completes the job.

A user whose learning fails is reported in ``failed_user_ids`` and the run goes on; if every
user fails the job fails as a whole, so it is retried (and finally dead-lettered) like any job.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

from reflexio.embed import Embedder
from reflexio.errors import ReflexioError
from reflexio.filters import (
    Candidate,
    CandidateQuery,
    InteractionFilter,
    LearningFilter,
    RequestFilter,
)
from reflexio.jobs import Handler, JobContext, LeaseLost, PermanentJobError
from reflexio.learn.changes import Changes, Supersede, apply_changes
from reflexio.learn.pipeline import KINDS_OF_EXTRACTOR, learn_window
from reflexio.learn.windows import enabled_extractors, plan_windows, window_params
from reflexio.models.org_config import Config
from reflexio.records import Audit, InteractionRecord, Learning, LearningKind, LearningStatus
from reflexio.service import quotas
from reflexio.service.core import Core
from reflexio.service.learners import Learner, learner_for
from reflexio.storage import Storage
from reflexio.storage.protocol import iter_chunks

__all__ = [
    "RERUN",
    "PendingLens",
    "Progress",
    "RerunScope",
    "matching_users",
    "pending_only",
    "rerun_handler",
    "turns",
]

#: The job task of a rerun; the job's key is the extractor, so one rerun per (org, extractor).
RERUN = "rerun"
#: Requests read per storage call while selecting users.
_PAGE = 1_000
#: Request ids per interaction query (SQL parameter limits).
_CHUNK = 500
#: At most this many user ids are listed in a progress report (the counts stay exact).
_LISTED_IDS = 1_000


@dataclass(frozen=True, slots=True)
class RerunScope:
    """Which interactions a rerun (or a manual run) learns from; ``None`` means any.

    Attributes:
        extractor: ``"profile"`` or ``"playbook"``.
        user_id: Only this user.
        source: Only requests with this source (within the extractor's allow-list).
        agent_version: Only requests of this agent version (playbooks).
        start: Only turns created at or after this epoch second.
        end: Only turns created at or before this epoch second.
    """

    extractor: str
    user_id: str | None = None
    source: str | None = None
    agent_version: str | None = None
    start: int | None = None
    end: int | None = None

    def payload(self) -> dict[str, Any]:
        """The scope as the job payload stores it."""
        return asdict(self)

    @classmethod
    def from_payload(cls, payload: dict[str, Any]) -> RerunScope:
        """The scope a job payload describes."""
        return cls(**payload)


def _sources(config: Config, scope: RerunScope) -> tuple[str, ...] | None:
    """Sources to read, lowercased: the requested one within the extractor's allow-list."""
    part = (
        config.profile_extractor_config
        if scope.extractor == "profile"
        else config.user_playbook_extractor_config
    )
    allowed = getattr(part, "request_sources_enabled", None)
    allow = tuple(s.lower() for s in allowed) if allowed else None
    if scope.source is None:
        return allow
    wanted = scope.source.lower()
    return (wanted,) if allow is None or wanted in allow else ()


def matching_users(
    storage: Storage, config: Config, org_id: str, scope: RerunScope
) -> dict[str, tuple[str, ...] | None]:
    """Users with requests in scope, each with its matching request ids (``None``: all of them).

    The time range is not applied to requests (a request may start before the range and
    go on inside it); ``turns`` applies it to each interaction.
    """
    sources = _sources(config, scope)
    where = RequestFilter(user_id=scope.user_id, agent_version=scope.agent_version, created_before=scope.end)
    found: dict[str, list[str]] = {}
    offset = 0
    while True:
        page = storage.list_requests(org_id, where, limit=_PAGE, offset=offset)
        for r in page:
            if sources is None or r.source.lower() in sources:
                found.setdefault(r.user_id, []).append(r.request_id)
        if len(page) < _PAGE:
            break
        offset += _PAGE
    by_request = sources is not None or scope.agent_version is not None
    return {user: tuple(dict.fromkeys(ids)) if by_request else None for user, ids in sorted(found.items())}


def turns(
    storage: Storage,
    org_id: str,
    user_id: str,
    request_ids: tuple[str, ...] | None,
    scope: RerunScope,
    limit: int | None = None,
) -> list[InteractionRecord]:
    """A user's turns in scope, oldest first (at most ``limit`` of them)."""
    where = InteractionFilter(user_id=user_id, created_after=scope.start, created_before=scope.end)
    if request_ids is None:
        return storage.list_interactions(org_id, where, limit=limit)
    out: list[InteractionRecord] = []
    for chunk in iter_chunks(request_ids, _CHUNK):
        out.extend(storage.list_interactions(org_id, replace(where, request_ids=tuple(chunk)), limit=limit))
        if limit is not None and len(out) >= limit:
            break
    return sorted(out, key=lambda t: t.id)[:limit]


class PendingLens:
    """Storage as a rerun's learning step sees it: "current" learnings are pending ones.

    ``learn.pipeline`` compares proposals with the user's CURRENT learnings. During a rerun
    the same step must compare them with the pending output of this rerun instead (and never
    rewrite or retire a CURRENT row), so every read that asks for current rows is answered
    with the pending rows of the rerun's scope. Everything else passes through unchanged.
    """

    def __init__(self, storage: Storage, agent_version: str | None) -> None:
        self._storage = storage
        self._agent_version = agent_version

    def __getattr__(self, name: str) -> Any:
        return getattr(self._storage, name)

    def _pending(self, where: LearningFilter) -> LearningFilter:
        if where.statuses != (LearningStatus.CURRENT,):
            return where
        return replace(
            where,
            statuses=(LearningStatus.PENDING,),
            agent_version=self._agent_version or where.agent_version,
        )

    def list_learnings(self, org_id: str, where: LearningFilter, **kwargs: Any) -> list[Learning]:
        """Pending rows where the caller asked for current ones."""
        return self._storage.list_learnings(org_id, self._pending(where), **kwargs)

    def get_learnings(self, org_id: str, where: LearningFilter) -> list[Learning]:
        """Pending rows where the caller asked for current ones."""
        return self._storage.get_learnings(org_id, self._pending(where))

    def count_learnings(self, org_id: str, where: LearningFilter) -> int:
        """Pending rows where the caller asked for current ones."""
        return self._storage.count_learnings(org_id, self._pending(where))

    def search_candidates(self, org_id: str, query: CandidateQuery) -> list[Candidate]:
        """Search pending rows where the caller asked for current ones."""
        filters = tuple(self._pending(f) for f in query.filters)
        return self._storage.search_candidates(org_id, replace(query, filters=filters))


@dataclass(slots=True)
class Progress:
    """What a rerun reports on its job row (read back by ``get_operation_status``)."""

    total_users: int = 0
    processed_users: int = 0
    failed_users: int = 0
    processed_user_ids: list[str] = field(default_factory=list)
    failed_user_ids: list[dict[str, Any]] = field(default_factory=list)
    current_user_id: str | None = None
    stats: dict[str, int] = field(
        default_factory=lambda: {"total_interactions_processed": 0, "total_generated": 0, "windows": 0}
    )

    def done(self, user_id: str, turns_read: int, generated: int, windows: int) -> None:
        """Count a user whose turns were all learned from."""
        self.processed_users += 1
        self.processed_user_ids = [*self.processed_user_ids, user_id][-_LISTED_IDS:]
        self.stats["total_interactions_processed"] += turns_read
        self.stats["total_generated"] += generated
        self.stats["windows"] += windows

    def failed(self, user_id: str, error: Exception) -> None:
        """Count a user whose learning failed (the run goes on)."""
        entry = {"user_id": user_id, "error": f"{type(error).__name__}: {error}"}
        self.failed_users += 1
        self.failed_user_ids = [*self.failed_user_ids, entry][-_LISTED_IDS:]

    def report(self) -> dict[str, Any]:
        """The JSON document stored on the job."""
        return asdict(self)


@dataclass
class _Run:
    """One attempt of a rerun job."""

    ctx: JobContext
    storage: Storage
    embedder: Embedder
    config: Config
    learner: Learner
    scope: RerunScope
    progress: Progress = field(default_factory=Progress)

    @property
    def org_id(self) -> str:
        return self.ctx.job.org_id

    def run(self) -> None:
        users = self._users()
        self.progress.total_users = len(users)
        for user_id, request_ids in users.items():
            self.progress.current_user_id = user_id
            self._report()
            try:
                self._rerun_user(user_id, request_ids)
            except LeaseLost:
                raise
            except Exception as exc:  # one user's failure is reported, the others still run
                self.progress.failed(user_id, exc)
        self.progress.current_user_id = None
        if users and self.progress.failed_users == len(users):
            raise ReflexioError(f"the rerun failed for every user; first: {self.progress.failed_user_ids[0]}")
        with self.ctx.effects() as tx:
            if not tx.set_job_progress(self.ctx.job.id, self.ctx.worker, self.progress.report()):
                raise LeaseLost(f"lost the lease of job {self.ctx.job.id}")

    def _users(self) -> dict[str, tuple[str, ...] | None]:
        """Matching users that have at least one turn in scope (so the total is exact)."""
        candidates = matching_users(self.storage, self.config, self.org_id, self.scope)
        return {
            user: ids
            for user, ids in candidates.items()
            if turns(self.storage, self.org_id, user, ids, self.scope, limit=1)
        }

    def _report(self) -> None:
        if not self.storage.set_job_progress(self.ctx.job.id, self.ctx.worker, self.progress.report()):
            raise LeaseLost(f"lost the lease of job {self.ctx.job.id}")

    def _audit(self, reason: str) -> Audit:
        return Audit(actor="rerun", reason=reason, job_id=self.ctx.job.id)

    def _rerun_user(self, user_id: str, request_ids: tuple[str, ...] | None) -> None:
        read = turns(self.storage, self.org_id, user_id, request_ids, self.scope)
        size, stride = window_params(self.config, self.scope.extractor)
        together = _asked_together(self.config, self.scope.extractor)
        windows = plan_windows(self.org_id, user_id, together, [], read, size=size, stride=stride, flush=True)
        kind = KINDS_OF_EXTRACTOR[self.scope.extractor]
        previous = LearningFilter(
            kinds=(kind,),
            user_id=user_id,
            agent_version=self.scope.agent_version,
            statuses=(LearningStatus.PENDING,),
        )
        with self.ctx.effects(final=False) as tx:
            reason = f"replaced by the output of rerun job {self.ctx.job.id}"
            tx.update_learnings(
                self.org_id, previous, {"status": LearningStatus.SUPERSEDED}, self._audit(reason)
            )
        lens: Storage = PendingLens(self.storage, self.scope.agent_version)
        generated = 0
        for window in windows:
            changes = learn_window(lens, self.config, window, self.learner.proposer, self.learner.judge)
            changes = pending_only(self.storage, self.org_id, changes, kind).with_vectors(self.embedder)
            with self.ctx.effects(final=False) as tx:
                generated += len(apply_changes(tx, self.org_id, changes, self._audit(changes.reason)))
        self.progress.done(user_id, len(read), generated, len(windows))


def _asked_together(config: Config, extractor: str) -> tuple[str, ...]:
    """The extractors normal extraction asks in the same window as ``extractor``.

    Extraction shares a window between extractors whose windows coincide, and a learner may
    answer differently when asked for several kinds at once (a stated taste is a profile when
    profiles are asked, else a rule). A rerun asks what extraction would ask and keeps its
    own kind only, so its output is what extraction would produce today.
    """
    params = window_params(config, extractor)
    others = tuple(e for e in enabled_extractors(config) if window_params(config, e) == params)
    return others if extractor in others else (extractor,)


def pending_only(storage: Storage, org_id: str, changes: Changes, kind: LearningKind) -> Changes:
    """What a rerun writes: new rows of its kind, as pending; rewrites and retirements only of
    rows of its kind that are pending in storage.

    The lens already keeps CURRENT rows out of the judge's reach; this is the guarantee at
    the write, whatever a learner returns.
    """
    keep = [i for i, row in enumerate(changes.added) if row.kind is kind]
    position = {old: new for new, old in enumerate(keep)}
    targets = (*(r.id for r in changes.updated), *(s.old_id for s in changes.superseded))
    mine = LearningFilter(ids=targets, kinds=(kind,), statuses=(LearningStatus.PENDING,))
    pending = {r.id for r in storage.get_learnings(org_id, mine)} if targets else set()
    return Changes(
        added=[changes.added[i].copy(status=LearningStatus.PENDING) for i in keep],
        updated=[r.copy(status=LearningStatus.PENDING) for r in changes.updated if r.id in pending],
        superseded=[
            Supersede(s.old_id, position[s.index], s.reason)
            for s in changes.superseded
            if s.index in position and s.old_id in pending
        ],
        reason=changes.reason,
    )


def rerun_handler(core: Core) -> Handler:
    """The ``rerun`` task handler: it learns with the org's LLM learner or the rule learner."""

    def handle(ctx: JobContext) -> None:
        org_id = ctx.job.org_id
        quotas.wait_while_paused(core, org_id)  # it learns with the org's LLM
        config = core.org_config(org_id)
        scope = RerunScope.from_payload(dict(ctx.job.payload["scope"]))
        if scope.extractor not in enabled_extractors(config):
            raise PermanentJobError(f"the {scope.extractor} extractor is turned off in this org's config")
        learner = learner_for(core, config, org_id, ctx.job.id)
        _Run(ctx, core.storage, core.embedder, config, learner, scope).run()

    return handle
