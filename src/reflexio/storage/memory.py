"""In-memory storage: the reference backend for tests, demos and the contract suite.

All state lives in dicts guarded by one lock. A transaction snapshots the dicts (rows are
treated as immutable values and always replaced, never mutated) and restores them on error,
so it has the same all-or-nothing behaviour as the SQL backends. Search uses the same
``LearningIndex`` the SQLite backend caches, rebuilt after a rollback.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from reflexio import ranking
from reflexio.embed import Embedder
from reflexio.errors import ConflictError, NotFoundError
from reflexio.filters import (
    Candidate,
    CandidateQuery,
    InteractionFilter,
    LearningFilter,
    RequestFilter,
)
from reflexio.records import (
    ApiKeyRecord,
    Audit,
    Bookmark,
    EvaluationRecord,
    InteractionRecord,
    Job,
    JobStatus,
    Learning,
    LearningEvent,
    LLMUsageRecord,
    RequestRecord,
    UsageSummary,
    UsageTotals,
    now,
)
from reflexio.storage import common
from reflexio.storage.index import IndexRow, LearningIndex

__all__ = ["MemoryStorage"]


@dataclass
class _State:
    requests: dict[tuple[str, str], RequestRecord] = field(default_factory=dict)
    interactions: dict[int, InteractionRecord] = field(default_factory=dict)
    learnings: dict[int, Learning] = field(default_factory=dict)
    profile_ids: dict[tuple[str, str], int] = field(default_factory=dict)
    events: list[LearningEvent] = field(default_factory=list)
    evaluations: list[EvaluationRecord] = field(default_factory=list)
    bookmarks: dict[tuple[str, str, str], Bookmark] = field(default_factory=dict)
    configs: dict[str, dict[str, Any]] = field(default_factory=dict)
    exposures: dict[tuple[str, str], set[tuple[str, str]]] = field(default_factory=dict)
    api_keys: dict[int, ApiKeyRecord] = field(default_factory=dict)
    jobs: dict[int, Job] = field(default_factory=dict)
    llm_usage: list[LLMUsageRecord] = field(default_factory=list)
    next_id: dict[str, int] = field(default_factory=dict)

    def new_id(self, table: str) -> int:
        self.next_id[table] = self.next_id.get(table, 0) + 1
        return self.next_id[table]

    def snapshot(self) -> _State:
        return _State(
            requests=dict(self.requests),
            interactions=dict(self.interactions),
            learnings=dict(self.learnings),
            profile_ids=dict(self.profile_ids),
            events=list(self.events),
            evaluations=list(self.evaluations),
            bookmarks=dict(self.bookmarks),
            configs=copy.deepcopy(self.configs),
            exposures={k: set(v) for k, v in self.exposures.items()},
            api_keys=dict(self.api_keys),
            jobs=dict(self.jobs),
            llm_usage=list(self.llm_usage),
            next_id=dict(self.next_id),
        )


class MemoryStorage:
    """The ``Storage`` protocol over Python dicts."""

    backend = "memory"

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self._lock = threading.RLock()
        self._state = _State()
        self._indexes: dict[str, LearningIndex] = {}
        self._in_tx = threading.local()

    # -- lifecycle ----------------------------------------------------------------------------
    @contextmanager
    def transaction(self) -> Iterator[MemoryStorage]:
        """All-or-nothing: the state is restored if the block raises."""
        with self._lock:
            if getattr(self._in_tx, "active", False):
                yield self
                return
            saved = self._state.snapshot()
            self._in_tx.active = True
            try:
                yield self
            except BaseException:
                self._state = saved
                self._indexes.clear()
                raise
            finally:
                self._in_tx.active = False

    def ping(self) -> None:
        """Always answers."""

    def close(self) -> None:
        """Nothing to release."""

    # -- log ----------------------------------------------------------------------------------
    def insert_request(
        self, request: RequestRecord, interactions: Sequence[InteractionRecord]
    ) -> list[InteractionRecord]:
        with self._lock:
            key = (request.org_id, request.request_id)
            if key in self._state.requests:
                raise ConflictError(f"request {request.request_id!r} already exists")
            self._state.requests[key] = copy.copy(request)
            stored = []
            for row in interactions:
                new = copy.copy(row)
                new.id = self._state.new_id("interactions")
                self._state.interactions[new.id] = new
                stored.append(copy.copy(new))
            return stored

    def get_request(self, org_id: str, request_id: str) -> RequestRecord | None:
        with self._lock:
            row = self._state.requests.get((org_id, request_id))
            return copy.copy(row) if row else None

    def list_requests(
        self, org_id: str, where: RequestFilter, *, limit: int, offset: int = 0
    ) -> list[RequestRecord]:
        with self._lock:
            rows = [r for (org, _), r in self._state.requests.items() if org == org_id and where.matches(r)]
        rows.sort(key=lambda r: (r.created_at, r.request_id), reverse=True)
        return [copy.copy(r) for r in rows[offset : offset + limit]]

    def list_interactions(
        self,
        org_id: str,
        where: InteractionFilter,
        *,
        limit: int | None = None,
        newest_first: bool = False,
    ) -> list[InteractionRecord]:
        with self._lock:
            rows = [r for r in self._state.interactions.values() if r.org_id == org_id and where.matches(r)]
        rows.sort(key=lambda r: r.id, reverse=newest_first)
        return [copy.copy(r) for r in rows[:limit]]

    def search_interactions(
        self, org_id: str, where: InteractionFilter, text: str, *, limit: int
    ) -> list[tuple[InteractionRecord, float]]:
        terms = set(ranking.query_terms(text))
        if not terms:
            return []
        scored = []
        for row in self.list_interactions(org_id, where):
            tokens = ranking.tokenize(f"{row.content}\n{row.user_action_description}")
            hits = sum(1 for t in tokens if t in terms)
            if hits:
                scored.append((row, hits / (len(tokens) + 1)))
        scored.sort(key=lambda pair: (-pair[1], -pair[0].id))
        return scored[:limit]

    def delete_log(
        self,
        org_id: str,
        *,
        requests: RequestFilter | None = None,
        interactions: InteractionFilter | None = None,
    ) -> tuple[int, int]:
        with self._lock:
            n_req = n_int = 0
            if requests is not None:
                doomed = [
                    k for k, r in self._state.requests.items() if k[0] == org_id and requests.matches(r)
                ]
                ids = {k[1] for k in doomed}
                for k in doomed:
                    del self._state.requests[k]
                n_req = len(doomed)
                n_int += self._drop_interactions(lambda r: r.org_id == org_id and r.request_id in ids)
            if interactions is not None:
                n_int += self._drop_interactions(lambda r: r.org_id == org_id and interactions.matches(r))
            return n_req, n_int

    def _drop_interactions(self, doomed: Any) -> int:
        ids = [i for i, r in self._state.interactions.items() if doomed(r)]
        for i in ids:
            del self._state.interactions[i]
        return len(ids)

    # -- learnings ----------------------------------------------------------------------------
    def save_learnings(self, rows: Sequence[Learning], audit: Audit) -> list[Learning]:
        prepared = common.prepare_learnings(rows, self.embedder)
        if not prepared:
            return []
        with self.transaction():
            index = self._index(prepared[0].org_id)
            before: dict[int, Learning] = {}
            saved = []
            for row in prepared:
                if row.id:
                    old = self._state.learnings.get(row.id)
                    if old is None or old.org_id != row.org_id:
                        raise NotFoundError(f"{row.kind.value} {row.id} not found")
                    before[row.id] = old
                    row = row.copy(created_at=old.created_at)
                else:
                    row = row.copy(id=self._state.new_id("learnings"))
                self._check_profile_id(row)
                self._state.learnings[row.id] = row
                saved.append(row)
            self._state.events.extend(self._numbered(common.save_events(saved, before, audit)))
            index.upsert(IndexRow.of(r) for r in saved)
            return [r.copy() for r in saved]

    def _check_profile_id(self, row: Learning) -> None:
        if row.profile_id is None:
            return
        key = (row.org_id, row.profile_id)
        owner = self._state.profile_ids.get(key)
        if owner is not None and owner != row.id and owner in self._state.learnings:
            raise ConflictError(f"profile_id {row.profile_id!r} is already used")
        self._state.profile_ids[key] = row.id

    def _numbered(self, events: list[LearningEvent]) -> list[LearningEvent]:
        for event in events:
            event.id = self._state.new_id("events")
        return events

    def _select(self, org_id: str, where: LearningFilter) -> list[Learning]:
        return [r for r in self._state.learnings.values() if r.org_id == org_id and where.matches(r)]

    def get_learnings(self, org_id: str, where: LearningFilter) -> list[Learning]:
        with self._lock:
            return [r.copy() for r in sorted(self._select(org_id, where), key=lambda r: r.id)]

    def list_learnings(
        self,
        org_id: str,
        where: LearningFilter,
        *,
        limit: int,
        offset: int = 0,
        newest_first: bool = True,
    ) -> list[Learning]:
        with self._lock:
            rows = sorted(
                self._select(org_id, where),
                key=lambda r: (r.updated_at, r.id),
                reverse=newest_first,
            )
        return [r.copy() for r in rows[offset : offset + limit]]

    def count_learnings(self, org_id: str, where: LearningFilter) -> int:
        with self._lock:
            return len(self._select(org_id, where))

    def update_learnings(
        self, org_id: str, where: LearningFilter, changes: dict[str, Any], audit: Audit
    ) -> list[int]:
        common.check_changes(changes)
        with self.transaction():
            rows = self._select(org_id, where)
            t = int(now())
            updated = [r.copy(**changes, updated_at=t) for r in rows]
            for row in updated:
                self._state.learnings[row.id] = row
            self._state.events.extend(self._numbered(common.change_events(rows, changes, audit)))
            self._index(org_id).upsert(IndexRow.of(r) for r in updated)
            return sorted(r.id for r in updated)

    def delete_learnings(self, org_id: str, where: LearningFilter, audit: Audit) -> int:
        with self.transaction():
            rows = self._select(org_id, where)
            for row in rows:
                del self._state.learnings[row.id]
            self._state.events.extend(self._numbered(common.delete_events(rows, audit)))
            self._index(org_id).remove(r.id for r in rows)
            return len(rows)

    def _index(self, org_id: str) -> LearningIndex:
        index = self._indexes.get(org_id)
        if index is None:
            index = self._indexes[org_id] = LearningIndex()
            index.upsert(IndexRow.of(r) for r in self._state.learnings.values() if r.org_id == org_id)
        return index

    def search_candidates(self, org_id: str, query: CandidateQuery) -> list[Candidate]:
        with self._lock:
            index = self._index(org_id)
            per_filter = index.search(query, int(now()))
            learnings = self._state.learnings
            return [
                hit.candidate(learnings[hit.id].copy(), i)
                for i, hits in enumerate(per_filter)
                for hit in hits
            ]

    def list_events(
        self,
        org_id: str,
        *,
        learning_ids: Sequence[int] | None = None,
        user_id: str | None = None,
        kinds: Sequence[str] | None = None,
        limit: int = 100,
    ) -> list[LearningEvent]:
        with self._lock:
            rows = [
                e
                for e in self._state.events
                if e.org_id == org_id
                and (learning_ids is None or e.learning_id in learning_ids)
                and (user_id is None or e.user_id == user_id)
                and (kinds is None or e.kind in kinds)
            ]
        return [copy.copy(e) for e in sorted(rows, key=lambda e: e.id, reverse=True)[:limit]]

    def add_exposures(self, org_id: str, session_id: str, refs: Sequence[tuple[str, str]]) -> None:
        with self._lock:
            self._state.exposures.setdefault((org_id, session_id), set()).update(refs)

    def list_exposures(self, org_id: str, session_id: str) -> set[tuple[str, str]]:
        with self._lock:
            return set(self._state.exposures.get((org_id, session_id), set()))

    # -- evaluations, bookmarks, configs --------------------------------------------------
    def add_evaluations(self, rows: Sequence[EvaluationRecord]) -> list[EvaluationRecord]:
        with self._lock:
            out = []
            for row in rows:
                new = copy.copy(row)
                new.id = self._state.new_id("evaluations")
                new.created_at = new.created_at or now()
                self._state.evaluations.append(new)
                out.append(copy.copy(new))
            return out

    def list_evaluations(
        self,
        org_id: str,
        *,
        kind: str,
        user_id: str | None = None,
        session_id: str | None = None,
        agent_version: str | None = None,
        created_after: float | None = None,
        created_before: float | None = None,
        limit: int = 100,
    ) -> list[EvaluationRecord]:
        with self._lock:
            rows = [
                e
                for e in self._state.evaluations
                if e.org_id == org_id
                and e.kind == kind
                and (user_id is None or e.user_id == user_id)
                and (session_id is None or e.session_id == session_id)
                and (agent_version is None or e.agent_version == agent_version)
                and (created_after is None or e.created_at >= created_after)
                and (created_before is None or e.created_at <= created_before)
            ]
        return [copy.copy(e) for e in sorted(rows, key=lambda e: e.id, reverse=True)[:limit]]

    def get_bookmark(self, org_id: str, user_id: str, extractor: str) -> Bookmark | None:
        with self._lock:
            row = self._state.bookmarks.get((org_id, user_id, extractor))
            return copy.copy(row) if row else None

    def put_bookmark(self, bookmark: Bookmark) -> None:
        with self._lock:
            new = copy.copy(bookmark)
            new.updated_at = now()
            self._state.bookmarks[(new.org_id, new.user_id, new.extractor)] = new

    def get_org_config(self, org_id: str) -> dict[str, Any] | None:
        with self._lock:
            config = self._state.configs.get(org_id)
            return copy.deepcopy(config) if config is not None else None

    def put_org_config(self, org_id: str, config: dict[str, Any]) -> None:
        with self._lock:
            self._state.configs[org_id] = copy.deepcopy(config)

    def clear_user(self, org_id: str, user_id: str) -> dict[str, int]:
        with self.transaction():
            sessions = {
                r.session_id
                for (o, _), r in self._state.requests.items()
                if o == org_id and r.user_id == user_id
            }
            for session_id in sessions:
                self._state.exposures.pop((org_id, session_id), None)
            n_req, n_int = self.delete_log(
                org_id,
                requests=RequestFilter(user_id=user_id),
                interactions=InteractionFilter(user_id=user_id),
            )
            doomed = self._select(org_id, LearningFilter(user_id=user_id))
            for row in doomed:
                del self._state.learnings[row.id]
            self._index(org_id).remove(r.id for r in doomed)
            counts = common.count_kinds(doomed)
            s = self._state
            before = len(s.events), len(s.evaluations), len(s.bookmarks)
            s.events = [e for e in s.events if not (e.org_id == org_id and e.user_id == user_id)]
            s.evaluations = [e for e in s.evaluations if not (e.org_id == org_id and e.user_id == user_id)]
            s.bookmarks = {k: b for k, b in s.bookmarks.items() if not (k[0] == org_id and k[1] == user_id)}
            after = len(s.events), len(s.evaluations), len(s.bookmarks)
            return {
                "requests": n_req,
                "interactions": n_int,
                **counts,
                "events": before[0] - after[0],
                "evaluations": before[1] - after[1],
                "bookmarks": before[2] - after[2],
            }

    # -- api keys ---------------------------------------------------------------------------
    def add_api_key(self, key: ApiKeyRecord) -> ApiKeyRecord:
        with self._lock:
            new = copy.copy(key)
            new.id = self._state.new_id("api_keys")
            new.created_at = new.created_at or now()
            self._state.api_keys[new.id] = new
            return copy.copy(new)

    def find_api_key(self, key_hash: str) -> ApiKeyRecord | None:
        with self._lock:
            for key in self._state.api_keys.values():
                if key.key_hash == key_hash and key.revoked_at is None:
                    return copy.copy(key)
            return None

    def list_api_keys(self, org_id: str | None = None) -> list[ApiKeyRecord]:
        with self._lock:
            keys = [k for k in self._state.api_keys.values() if org_id is None or k.org_id == org_id]
            return [copy.copy(k) for k in sorted(keys, key=lambda k: k.id)]

    def revoke_api_key(self, key_id: int) -> bool:
        with self._lock:
            key = self._state.api_keys.get(key_id)
            if key is None or key.revoked_at is not None:
                return False
            self._state.api_keys[key_id] = _revoked(key)
            return True

    def has_api_keys(self) -> bool:
        with self._lock:
            return any(k.revoked_at is None for k in self._state.api_keys.values())

    # -- jobs -------------------------------------------------------------------------------
    def enqueue_jobs(self, jobs: Sequence[Job], *, debounce: bool = False) -> list[Job]:
        with self._lock:
            return [self._enqueue_one(job, debounce) for job in jobs]

    def _enqueue_one(self, job: Job, debounce: bool) -> Job:
        t = now()
        if job.key is not None:
            for existing in self._state.jobs.values():
                if (existing.org_id, existing.task, existing.key, existing.status) == (
                    job.org_id, job.task, job.key, JobStatus.QUEUED,
                ):  # fmt: skip
                    if debounce:
                        existing = common.debounced(existing, job, t)
                        self._state.jobs[existing.id] = existing
                    return copy.copy(existing)
        new = common.new_job(job, t)
        new.id = self._state.new_id("jobs")
        self._state.jobs[new.id] = new
        return copy.copy(new)

    def claim_jobs(
        self,
        worker: str,
        *,
        limit: int,
        lease_seconds: float,
        tasks: Sequence[str] | None = None,
    ) -> list[Job]:
        with self._lock:
            t = now()
            running = {
                (j.org_id, j.task, j.key)
                for j in self._state.jobs.values()
                if j.status is JobStatus.RUNNING and j.key is not None
            }
            due = sorted(
                (
                    j
                    for j in self._state.jobs.values()
                    if common.claimable(j, t, running) and (tasks is None or j.task in tasks)
                ),
                key=lambda j: (j.run_at, j.id),
            )[:limit]
            claimed = []
            for job in due:
                if common.exhausted(job, t):
                    self._state.jobs[job.id] = common.finished(job, t, common.LEASE_EXPIRED, None)
                    continue
                leased = common.leased(job, worker, t, lease_seconds)
                self._state.jobs[job.id] = leased
                claimed.append(copy.copy(leased))
            return claimed

    def heartbeat_jobs(self, worker: str, job_ids: Sequence[int], lease_seconds: float) -> list[int]:
        with self._lock:
            held = []
            t = now()
            for job_id in job_ids:
                job = self._state.jobs.get(job_id)
                if job and job.status is JobStatus.RUNNING and job.lease_owner == worker:
                    job = copy.copy(job)
                    job.lease_expires_at = t + lease_seconds
                    job.updated_at = t
                    self._state.jobs[job_id] = job
                    held.append(job_id)
            return held

    def set_job_progress(self, job_id: int, worker: str, progress: dict[str, Any]) -> bool:
        with self._lock:
            job = self._state.jobs.get(job_id)
            if job is None or job.status is not JobStatus.RUNNING or job.lease_owner != worker:
                return False
            self._state.jobs[job_id] = replace(job, progress=copy.deepcopy(progress), updated_at=now())
            return True

    def finish_job(
        self,
        job_id: int,
        worker: str,
        *,
        error: str | None = None,
        retry_at: float | None = None,
    ) -> bool:
        with self._lock:
            job = self._state.jobs.get(job_id)
            if job is None or job.status is not JobStatus.RUNNING or job.lease_owner != worker:
                return False
            t = now()
            twin = self._queued_twin(job) if error is not None and retry_at is not None else None
            if twin is not None:
                self._state.jobs[twin.id] = common.absorbed(twin, retry_at or t)
                self._state.jobs[job_id] = common.finished(
                    job, t, common.merged_note(error, twin.id), None, done=True
                )
            else:
                self._state.jobs[job_id] = common.finished(job, t, error, retry_at)
            return True

    def _queued_twin(self, job: Job) -> Job | None:
        if job.key is None:
            return None
        for other in self._state.jobs.values():
            if other.id != job.id and other.status is JobStatus.QUEUED and (
                other.org_id, other.task, other.key) == (job.org_id, job.task, job.key):  # fmt: skip
                return other
        return None

    def release_jobs(self, worker: str, job_ids: Sequence[int]) -> int:
        with self._lock:
            n = 0
            for job_id in job_ids:
                job = self._state.jobs.get(job_id)
                if job and job.status is JobStatus.RUNNING and job.lease_owner == worker:
                    twin = self._queued_twin(job)
                    if twin is None:
                        self._state.jobs[job_id] = common.released(job, now())
                    else:  # the queued twin will do this work
                        note = f"released at shutdown; continues as job {twin.id}"
                        self._state.jobs[job_id] = common.finished(job, now(), note, None, done=True)
                    n += 1
            return n

    def get_job(self, job_id: int) -> Job | None:
        with self._lock:
            job = self._state.jobs.get(job_id)
            return copy.copy(job) if job else None

    def list_jobs(
        self,
        org_id: str,
        *,
        statuses: Sequence[JobStatus] | None = None,
        request_id: str | None = None,
        task: str | None = None,
        key: str | None = None,
        limit: int = 100,
    ) -> list[Job]:
        with self._lock:
            rows = [
                j
                for j in self._state.jobs.values()
                if j.org_id == org_id
                and (statuses is None or j.status in statuses)
                and (request_id is None or j.request_id == request_id)
                and (task is None or j.task == task)
                and (key is None or j.key == key)
            ]
        return [copy.copy(j) for j in sorted(rows, key=lambda j: j.id, reverse=True)[:limit]]

    def expedite_job(self, org_id: str, task: str, key: str) -> bool:
        with self._lock:
            for job in self._state.jobs.values():
                if (job.org_id, job.task, job.key, job.status) == (org_id, task, key, JobStatus.QUEUED):
                    t = now()
                    self._state.jobs[job.id] = replace(job, run_at=min(job.run_at, t), updated_at=t)
                    return True
            return False

    def retry_jobs(self, org_id: str, job_ids: Sequence[int] | None = None) -> int:
        with self._lock:
            n = 0
            t = now()
            for job in sorted(self._state.jobs.values(), key=lambda j: -j.id):  # newest first
                if (
                    job.org_id == org_id
                    and job.status is JobStatus.DEAD
                    and (job_ids is None or job.id in job_ids)
                    and self._queued_twin(job) is None  # one queued job per key: revive the newest
                ):
                    self._state.jobs[job.id] = common.revived(job, t)
                    n += 1
            return n

    def list_orgs(self) -> list[str]:
        with self._lock:
            return sorted({r.org_id for r in self._state.learnings.values()})

    # -- vectors ----------------------------------------------------------------------------
    def orgs_with_stale_vectors(self) -> list[str]:
        with self._lock:
            stale = {
                r.org_id for r in self._state.learnings.values() if common.vector_is_stale(r, self.embedder)
            }
        return sorted(stale)

    def refresh_vectors(self, org_id: str, *, limit: int) -> int:
        with self._lock:
            rows = [
                r for r in self._state.learnings.values()
                if r.org_id == org_id and common.vector_is_stale(r, self.embedder)
            ][:limit]  # fmt: skip
            refreshed = common.reembedded(rows, self.embedder)
            for row in refreshed:
                self._state.learnings[row.id] = row
            self._index(org_id).upsert(IndexRow.of(r) for r in refreshed)
            return len(refreshed)

    # -- LLM accounting ---------------------------------------------------------------------
    def add_llm_usage(self, rows: Sequence[LLMUsageRecord]) -> None:
        with self._lock:
            for row in rows:
                new = copy.copy(row)
                new.id = self._state.new_id("llm_usage")
                new.created_at = new.created_at or now()
                self._state.llm_usage.append(new)

    def llm_usage(
        self, org_id: str, *, job_id: int | None = None, since: float | None = None
    ) -> UsageSummary:
        by_role: dict[str, UsageTotals] = {}
        with self._lock:
            for row in self._state.llm_usage:
                if (
                    row.org_id == org_id
                    and (job_id is None or row.job_id == job_id)
                    and (since is None or row.created_at >= since)
                ):
                    by_role.setdefault(row.role, UsageTotals()).add(UsageTotals.of_row(row))
        return UsageSummary.of_roles(by_role)


def _revoked(key: ApiKeyRecord) -> ApiKeyRecord:
    new = copy.copy(key)
    new.revoked_at = now()
    return new
