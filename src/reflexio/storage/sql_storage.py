"""The ``Storage`` protocol, written once over a ``Connector`` (SQLite, PostgreSQL, memory://).

Every method here runs the same named queries on every engine; the engines differ only in
their ``.sql`` text and in the connector's hooks (``storage.connector``). Learning writes
follow one order everywhere: bump the org's sequence (which serialises the org's learning
writers to commit), write the rows, then log the changed ids (``learning_changes``, which keeps
SQLite's in-process search index exact) and the history events.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from copy import copy
from dataclasses import replace
from typing import Any, Final

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
    ChangeLogRecord,
    ClusterRecord,
    EvaluationRecord,
    InteractionRecord,
    Learning,
    LearningEvent,
    LLMUsageRecord,
    ModelUsage,
    ProposalRecord,
    RequestRecord,
    SessionVerdictDay,
    StreamEventRecord,
    UsageSummary,
    now,
)
from reflexio.storage import learning_writes, rows, stream
from reflexio.storage.connector import Connector
from reflexio.storage.job_queue import SqlJobQueue
from reflexio.storage.queries import (
    where_evaluations,
    where_events,
    where_interactions,
    where_learnings,
    where_requests,
    where_stream_events,
)
from reflexio.storage.reflect_tables import ReflectTables

__all__ = ["SqlStorage"]

#: Keep this many sequence numbers of change log per org before pruning older entries.
_CHANGE_LOG_KEEP: Final = 200_000


class SqlStorage(ReflectTables, SqlJobQueue):
    """The ``Storage`` protocol over one connector (the job methods come from ``SqlJobQueue``,
    a complete job queue over the same connector).

    Args:
        db: The engine's connector; closed with the storage.
        embedder: Makes and names the vectors stored with learnings.
    """

    def __init__(self, db: Connector, embedder: Embedder) -> None:
        super().__init__(db)
        self.embedder = embedder
        self.backend = db.name

    # -- lifecycle ----------------------------------------------------------------------------
    @contextmanager
    def transaction(self) -> Iterator[SqlStorage]:
        """A write transaction; calls on the yielded storage (from any thread) or on this one
        from this thread join it."""
        with self.db.transaction() as db:
            if db is self.db:
                yield self
                return
            view = copy(self)
            view.db = db
            yield view

    def ping(self) -> None:
        self.db.ping()

    def close(self) -> None:
        self.db.close()

    # -- log ----------------------------------------------------------------------------------
    def insert_request(
        self, request: RequestRecord, interactions: Sequence[InteractionRecord]
    ) -> list[InteractionRecord]:
        with self.db.transaction() as db:
            try:
                db.execute("insert_request", rows.request_params(request))
            except ConflictError as exc:
                raise ConflictError(f"request {request.request_id!r} already exists") from exc
            ids = db.insert("insert_interaction", [rows.interaction_params(r) for r in interactions])
        return [replace(r, id=i) for r, i in zip(interactions, ids, strict=True)]

    def get_request(self, org_id: str, request_id: str) -> RequestRecord | None:
        r = self.db.one("get_request", {"org_id": org_id, "request_id": request_id})
        return rows.request_from(r) if r else None

    def list_requests(
        self, org_id: str, where: RequestFilter, *, limit: int, offset: int = 0
    ) -> list[RequestRecord]:
        sql, params = where_requests(where, self.db.dialect)
        params |= {"org_id": org_id, "limit": limit, "offset": offset}
        return [rows.request_from(r) for r in self.db.all("list_requests", params, where=sql)]

    def list_interactions(
        self,
        org_id: str,
        where: InteractionFilter,
        *,
        limit: int | None = None,
        newest_first: bool = False,
    ) -> list[InteractionRecord]:
        sql, params = where_interactions(where, self.db.dialect)
        params |= {"org_id": org_id, "limit": limit}
        found = self.db.all("list_interactions", params, where=sql, order=_order(newest_first))
        return [rows.interaction_from(r) for r in found]

    def search_interactions(
        self, org_id: str, where: InteractionFilter, text: str, *, limit: int
    ) -> list[tuple[InteractionRecord, float]]:
        terms = self.db.text_query(text)
        if terms is None:
            return []
        sql, params = where_interactions(where, self.db.dialect)
        params |= {"org_id": org_id, "terms": terms, "limit": max(0, limit)}
        found = self.db.all("search_interactions", params, where=sql)
        return [(rows.interaction_from(r), float(r["score"])) for r in found]

    def delete_log(
        self,
        org_id: str,
        *,
        requests: RequestFilter | None = None,
        interactions: InteractionFilter | None = None,
    ) -> tuple[int, int]:
        n_req = n_int = 0
        with self.db.transaction() as db:
            if requests is not None:
                sql, params = where_requests(requests, db.dialect)
                params["org_id"] = org_id
                n_int += db.execute("delete_request_interactions", params, where=sql)
                n_req += db.execute("delete_requests", params, where=sql)
            if interactions is not None:
                sql, params = where_interactions(interactions, db.dialect)
                n_int += db.execute("delete_interactions", {**params, "org_id": org_id}, where=sql)
        return n_req, n_int

    # -- learnings ----------------------------------------------------------------------------
    def save_learnings(self, rows_in: Sequence[Learning], /, audit: Audit) -> list[Learning]:
        if not rows_in:
            return []
        prepared = learning_writes.prepare_learnings(rows_in, self.embedder)
        org_id = prepared[0].org_id
        with self.db.transaction() as db:
            seq = self._bump_seq(db, org_id)
            old = rows.learnings_by_ids(db, org_id, [r.id for r in prepared if r.id])
            before = {r.id: r for r in old}
            saved = [_keep_created(row, before) for row in prepared]
            try:
                db.many("update_learning", [self._params(r, seq) for r in saved if r.id])
                saved = self._insert_new(db, saved, seq)
            except ConflictError as exc:
                raise ConflictError(f"profile_id is already used in the org: {exc}") from exc
            events = learning_writes.save_events(saved, before, audit)
            self._record(db, seq, org_id, [r.id for r in saved], events)
            return saved

    def _params(self, row: Learning, seq: int) -> dict[str, Any]:
        return rows.learning_params(row, self.db.dialect, seq=seq)

    def _insert_new(self, db: Connector, saved: list[Learning], seq: int) -> list[Learning]:
        """Insert the rows without an id in one batch; returns all rows, with ids."""
        fresh = [i for i, r in enumerate(saved) if not r.id]
        if not fresh:
            return saved
        params = [self._params(saved[i], seq) for i in fresh]
        ids = db.bulk_insert("learnings", params, returning_ids=True)
        saved = list(saved)
        for i, new_id in zip(fresh, ids, strict=True):
            saved[i] = saved[i].copy(id=new_id)
        return saved

    def _bump_seq(self, db: Connector, org_id: str) -> int:
        """Take the org's learning-write lock (to commit) and its next sequence number."""
        row = db.one("bump_seq", {"org_id": org_id})
        assert row is not None
        seq = int(row["learning_seq"])
        if seq % 1000 == 0 and seq > _CHANGE_LOG_KEEP:
            upto = {"org_id": org_id, "upto": seq - _CHANGE_LOG_KEEP}
            db.execute("prune_changes", upto)
            db.execute("set_pruned", upto)
        return seq

    def _record(
        self, db: Connector, seq: int, org_id: str, ids: Sequence[int], events: Sequence[LearningEvent]
    ) -> None:
        """Log the changed ids under ``seq`` and write the history events."""
        db.execute("insert_changes", {"org_id": org_id, "seq": seq, "ids": db.dialect.bind_list(list(ids))})
        if events:
            db.bulk_insert("learning_events", [rows.event_params(e) for e in events], returning_ids=False)
            stream.emit(db, stream.from_learning_events(events))

    def _select(self, db: Connector, org_id: str, where: LearningFilter) -> list[Learning]:
        sql, params = where_learnings(where, db.dialect)
        return rows.learnings(db, "get_learnings", {**params, "org_id": org_id}, where=sql)

    def get_learnings(self, org_id: str, where: LearningFilter) -> list[Learning]:
        return self._select(self.db, org_id, where)

    def list_learnings(
        self,
        org_id: str,
        where: LearningFilter,
        *,
        limit: int,
        offset: int = 0,
        newest_first: bool = True,
    ) -> list[Learning]:
        sql, params = where_learnings(where, self.db.dialect)
        params |= {"org_id": org_id, "limit": limit, "offset": offset}
        return rows.learnings(self.db, "list_learnings", params, where=sql, order=_order(newest_first))

    def count_learnings(self, org_id: str, where: LearningFilter) -> int:
        sql, params = where_learnings(where, self.db.dialect)
        row = self.db.one("count_learnings", {**params, "org_id": org_id}, where=sql)
        return int(row["n"]) if row else 0

    def update_learnings(
        self, org_id: str, where: LearningFilter, changes: dict[str, Any], audit: Audit
    ) -> list[int]:
        learning_writes.check_changes(changes)
        with self.db.transaction() as db:
            # The lock comes before the read, so a filtered update (``status = pending``) is a
            # compare-and-set: a racing writer's rows are re-read after its commit, not before.
            seq = self._bump_seq(db, org_id)
            before = self._select(db, org_id, where)
            if not before:
                return []
            params = self._params(before[0].copy(**changes), seq)
            ids = [r.id for r in before]
            values = {col: params[col] for col in changes}
            values |= {"updated_at": int(now()), "seq": seq, "org_id": org_id}
            # Column names come from learning_writes.MUTABLE_FIELDS (check_changes refused others).
            sets = ", ".join(f"{col} = {db.dialect.param(col)}" for col in changes)
            db.execute("update_learning_fields", {**values, "ids": db.dialect.bind_list(ids)}, sets=sets)
            self._record(db, seq, org_id, ids, learning_writes.change_events(before, changes, audit))
            return ids

    def delete_learnings(self, org_id: str, where: LearningFilter, audit: Audit) -> int:
        with self.db.transaction() as db:
            seq = self._bump_seq(db, org_id)  # before the read, as in update_learnings
            doomed = self._select(db, org_id, where)
            self._delete_rows(db, seq, org_id, doomed, learning_writes.delete_events(doomed, audit))
            return len(doomed)

    def _delete_rows(
        self,
        db: Connector,
        seq: int,
        org_id: str,
        doomed: Sequence[Learning],
        events: Sequence[LearningEvent],
    ) -> None:
        if not doomed:
            return
        ids = [r.id for r in doomed]
        db.execute("delete_learnings", {"org_id": org_id, "ids": db.dialect.bind_list(ids)})
        self._record(db, seq, org_id, ids, events)

    def search_candidates(self, org_id: str, query: CandidateQuery) -> list[Candidate]:
        return self.db.search_candidates(org_id, query)

    def warm_search(self) -> None:
        self.db.warm_search()

    def list_events(
        self,
        org_id: str,
        *,
        learning_ids: Sequence[int] | None = None,
        user_id: str | None = None,
        kinds: Sequence[str] | None = None,
        events: Sequence[str] | None = None,
        limit: int = 100,
    ) -> list[LearningEvent]:
        sql, params = where_events(
            self.db.dialect, learning_ids=learning_ids, user_id=user_id, kinds=kinds, events=events
        )
        params |= {"org_id": org_id, "limit": limit}
        return [rows.event_from(r) for r in self.db.all("list_events", params, where=sql)]

    def add_events(self, events: Sequence[LearningEvent], /) -> None:
        if not events:
            return
        t = now()
        stamped = [e if e.created_at else replace(e, created_at=t) for e in events]
        with self.db.transaction() as db:
            db.bulk_insert("learning_events", [rows.event_params(e) for e in stamped], returning_ids=False)

    def list_stream_events(
        self,
        org_id: str,
        *,
        after: int,
        types: Sequence[str] | None = None,
        kinds: Sequence[str] | None = None,
        user_id: str | None = None,
        limit: int = 500,
    ) -> list[StreamEventRecord]:
        sql, params = where_stream_events(self.db.dialect, types=types, kinds=kinds, user_id=user_id)
        params |= {"org_id": org_id, "after": after, "limit": limit}
        return [stream.stream_event_from(r) for r in self.db.all("list_stream_events", params, where=sql)]

    def last_stream_event(self, org_id: str) -> int:
        row = self.db.one("last_stream_event", {"org_id": org_id})
        return int(row["seq"]) if row else 0

    def add_exposures(self, org_id: str, session_id: str, refs: Sequence[tuple[str, str]]) -> None:
        if not refs:
            return
        t = now()
        params = [
            {"org_id": org_id, "session_id": session_id, "kind": k, "learning_id": i, "served_at": t}
            for k, i in refs
        ]
        with self.db.transaction() as db:
            db.many("add_exposure", params)

    def list_exposures(self, org_id: str, session_id: str) -> set[tuple[str, str]]:
        found = self.db.all("list_exposures", {"org_id": org_id, "session_id": session_id})
        return {(r["kind"], r["learning_id"]) for r in found}

    # -- aggregation state ----------------------------------------------------------------------
    def list_clusters(self, org_id: str, agent_version: str, playbook_name: str) -> list[ClusterRecord]:
        scope = {"org_id": org_id, "agent_version": agent_version, "playbook_name": playbook_name}
        return [rows.cluster_from(r) for r in self.db.all("list_clusters", scope)]

    def save_clusters(
        self,
        org_id: str,
        agent_version: str,
        playbook_name: str,
        upserts: Sequence[ClusterRecord],
        removed: Sequence[int] = (),
    ) -> list[ClusterRecord]:
        t = now()
        scope = {"org_id": org_id, "agent_version": agent_version, "playbook_name": playbook_name}
        # The scope comes from the arguments, never from the records: a record of another org
        # cannot be written through this call.
        scoped = [
            replace(c, org_id=org_id, agent_version=agent_version, playbook_name=playbook_name, updated_at=t)
            for c in upserts
        ]
        with self.db.transaction() as db:
            if removed:
                db.execute("delete_clusters", {**scope, "ids": db.dialect.bind_list(list(removed))})
            db.many("update_cluster", [rows.cluster_params(c, t) for c in scoped if c.id])
            fresh = [i for i, c in enumerate(scoped) if not c.id]
            ids = db.insert("insert_cluster", [rows.cluster_params(scoped[i], t) for i in fresh])
            for i, new_id in zip(fresh, ids, strict=True):
                scoped[i] = replace(scoped[i], id=new_id)
        return scoped

    def add_proposals(self, rows_in: Sequence[ProposalRecord], /) -> None:
        if not rows_in:
            return
        t = now()
        with self.db.transaction() as db:
            db.many("insert_proposal", [rows.proposal_params(p, p.created_at or t) for p in rows_in])

    def get_proposals(self, org_id: str, agent_playbook_ids: Sequence[int]) -> list[ProposalRecord]:
        if not agent_playbook_ids:
            return []
        params = {"org_id": org_id, "ids": self.db.dialect.bind_list(list(agent_playbook_ids))}
        return [rows.proposal_from(r) for r in self.db.all("get_proposals", params)]

    def add_change_log(self, row: ChangeLogRecord, /) -> ChangeLogRecord:
        t = row.created_at or now()
        with self.db.transaction() as db:
            (log_id,) = db.insert("insert_change_log", [rows.change_log_params(row, t)])
        return replace(row, id=log_id, created_at=t)

    def list_change_logs(
        self, org_id: str, agent_version: str, playbook_name: str, *, limit: int
    ) -> list[ChangeLogRecord]:
        params = {
            "org_id": org_id,
            "agent_version": agent_version,
            "playbook_name": playbook_name,
            "limit": max(0, limit),
        }
        return [rows.change_log_from(r) for r in self.db.all("list_change_logs", params)]

    # -- evaluations, bookmarks, configs ------------------------------------------------------
    def add_evaluations(self, rows_in: Sequence[EvaluationRecord], /) -> list[EvaluationRecord]:
        t = now()
        params = [rows.evaluation_params(r, r.created_at or t) for r in rows_in]
        with self.db.transaction() as db:
            ids = db.insert("insert_evaluation", params)
            stored = [rows.evaluation_from({**p, "id": i}) for p, i in zip(params, ids, strict=True)]
            stream.emit(db, stream.from_evaluations(stored))
        return stored

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
        sql, params = where_evaluations(
            self.db.dialect,
            kind=kind,
            user_id=user_id,
            session_id=session_id,
            agent_version=agent_version,
            created_after=created_after,
            created_before=created_before,
        )
        params |= {"org_id": org_id, "limit": limit}
        return [rows.evaluation_from(r) for r in self.db.all("list_evaluations", params, where=sql)]

    def session_verdict_days(
        self, org_id: str, *, since: float, day_seconds: int, agent_version: str | None = None
    ) -> list[SessionVerdictDay]:
        sql, params = where_evaluations(
            self.db.dialect, kind="session", agent_version=agent_version, created_after=since
        )
        params |= {"org_id": org_id, "start": since, "day": day_seconds}
        found = self.db.all("session_verdict_days", params, where=sql)
        return [SessionVerdictDay(**{k: int(v or 0) for k, v in r.items()}) for r in found]

    def get_bookmark(self, org_id: str, user_id: str, extractor: str) -> Bookmark | None:
        r = self.db.one("get_bookmark", {"org_id": org_id, "user_id": user_id, "extractor": extractor})
        return rows.bookmark_from(r) if r else None

    def put_bookmark(self, bookmark: Bookmark) -> None:
        params = {
            "org_id": bookmark.org_id,
            "user_id": bookmark.user_id,
            "extractor": bookmark.extractor,
            "last_interaction_id": bookmark.last_interaction_id,
            "updated_at": now(),
        }
        with self.db.transaction() as db:
            db.execute("put_bookmark", params)

    def get_org_config(self, org_id: str) -> dict[str, Any] | None:
        r = self.db.one("get_config", {"org_id": org_id})
        return rows.loads(r["config"]) if r else None

    def put_org_config(self, org_id: str, config: dict[str, Any]) -> None:
        params = {"org_id": org_id, "config": rows.dumps(config), "updated_at": now()}
        with self.db.transaction() as db:
            db.execute("put_config", params)

    # -- plans and quotas ---------------------------------------------------------------------
    def get_org_plan(self, org_id: str) -> dict[str, Any] | None:
        r = self.db.one("get_plan", {"org_id": org_id})
        return rows.loads(r["plan"]) if r else None

    def put_org_plan(self, org_id: str, plan: dict[str, Any] | None) -> None:
        with self.db.transaction() as db:
            if plan is None:
                db.execute("delete_plan", {"org_id": org_id})
            else:
                db.execute("put_plan", {"org_id": org_id, "plan": rows.dumps(plan), "updated_at": now()})

    def count_usage(
        self, org_id: str, period: str, meter: str, amount: int, *, limit: int | None
    ) -> int | None:
        if limit is not None and amount > limit:
            return None  # a first row would be inserted whatever the limit
        params = {"org_id": org_id, "period": period, "meter": meter, "amount": amount, "limit": limit}
        if self.db.dialect.lone_writes:  # every search is charged: spare it BEGIN and COMMIT
            counted = self.db.all("count_usage", params)
        else:
            with self.db.transaction() as db:
                counted = db.all("count_usage", params)  # all: SQLite steps RETURNING to the end
        return int(counted[0]["used"]) if counted else None

    def usage_of_period(self, org_id: str, period: str) -> dict[str, int]:
        found = self.db.all("usage_of_period", {"org_id": org_id, "period": period})
        return {str(r["meter"]): int(r["used"]) for r in found}

    def clear_user(self, org_id: str, user_id: str) -> dict[str, int]:
        who = {"org_id": org_id, "user_id": user_id}
        with self.transaction() as tx:
            db = tx.db
            db.execute("clear_user_exposures", who)
            n_req, n_int = tx.delete_log(
                org_id,
                requests=RequestFilter(user_id=user_id),
                interactions=InteractionFilter(user_id=user_id),
            )
            seq = self._bump_seq(db, org_id)
            doomed = self._select(db, org_id, LearningFilter(user_id=user_id))
            if doomed:
                ids = db.dialect.bind_list([row.id for row in doomed])
                db.execute("clear_user_reflection_actions", {"org_id": org_id, "ids": ids})
            # agent playbooks stay (they are everyone's), but no longer name the user as evidence
            gone = {row.id for row in doomed}
            for found in db.all("user_proposals", who):
                kept = rows.without_user(rows.proposal_from(found), user_id, gone)
                db.execute("update_proposal_evidence", rows.proposal_evidence_params(kept))
            self._delete_rows(db, seq, org_id, doomed, [])
            counts = {"requests": n_req, "interactions": n_int, **learning_writes.count_kinds(doomed)}
            for table in ("events", "stream_events", "evaluations", "bookmarks", "outcomes"):
                counts[table] = db.execute(f"clear_user_{table}", who)
            return counts

    # -- api keys -----------------------------------------------------------------------------
    def add_api_key(self, key: ApiKeyRecord) -> ApiKeyRecord:
        t = key.created_at or now()
        params = {
            "org_id": key.org_id,
            "key_hash": key.key_hash,
            "prefix": key.prefix,
            "name": key.name,
            "created_at": t,
            "reviewer": key.reviewer,
        }
        with self.db.transaction() as db:
            (key_id,) = db.insert("insert_api_key", [params])
        return replace(key, id=key_id, created_at=t, revoked_at=None)

    def find_api_key(self, key_hash: str) -> ApiKeyRecord | None:
        r = self.db.one("find_api_key", {"key_hash": key_hash})
        return rows.api_key_from(r) if r else None

    def list_api_keys(self, org_id: str | None = None) -> list[ApiKeyRecord]:
        return [rows.api_key_from(r) for r in self.db.all("list_api_keys", {"org_id": org_id})]

    def revoke_api_key(self, key_id: int) -> bool:
        with self.db.transaction() as db:
            return db.execute("revoke_api_key", {"id": key_id, "now": now()}) > 0

    def set_api_key_reviewer(self, key_id: int, reviewer: bool) -> bool:
        with self.db.transaction() as db:
            return db.execute("set_api_key_reviewer", {"id": key_id, "reviewer": reviewer}) > 0

    def has_api_keys(self) -> bool:
        row = self.db.one("has_api_keys")
        return bool(row and row["present"])

    # -- vectors ------------------------------------------------------------------------------
    def orgs_with_stale_vectors(self) -> list[str]:
        found = self.db.all("orgs_with_stale_vectors", {"model": self.embedder.name})
        return [str(r["org_id"]) for r in found]

    def refresh_vectors(self, org_id: str, *, limit: int) -> int:
        with self.db.transaction() as db:
            params = {"org_id": org_id, "model": self.embedder.name, "limit": limit}
            stale = rows.learnings(db, "stale_learnings", params)
            if not stale:
                return 0
            refreshed = learning_writes.with_current_vectors(stale, self.embedder)
            seq = self._bump_seq(db, org_id)
            db.many("set_vector", [self._params(r, seq) for r in refreshed])
            self._record(db, seq, org_id, [r.id for r in refreshed], [])
            return len(refreshed)

    # -- LLM accounting -----------------------------------------------------------------------
    def add_llm_usage(self, rows_in: Sequence[LLMUsageRecord], /) -> None:
        if not rows_in:
            return
        t = now()
        with self.db.transaction() as db:
            db.many("insert_llm_usage", [rows.usage_params(r, r.created_at or t) for r in rows_in])

    def llm_usage_by_org(self) -> list[ModelUsage]:
        return [
            ModelUsage(
                org_id=r["org_id"],
                model=r["model"],
                prompt_tokens=int(r["prompt_tokens"]),
                completion_tokens=int(r["completion_tokens"]),
                cost_usd=float(r["cost_usd"]),
            )
            for r in self.db.all("llm_usage_by_org")
        ]

    def llm_usage(
        self, org_id: str, *, job_id: int | None = None, since: float | None = None
    ) -> UsageSummary:
        found = self.db.all("llm_usage_by_role", {"org_id": org_id, "job_id": job_id, "since": since})
        return UsageSummary.of_roles({r["role"]: rows.usage_totals_from(r) for r in found})


def _order(newest_first: bool) -> str:
    return "DESC" if newest_first else "ASC"


def _keep_created(row: Learning, before: dict[int, Learning]) -> Learning:
    """An update keeps its creation time; an id outside the org is not found."""
    if not row.id:
        return row
    old = before.get(row.id)
    if old is None or old.org_id != row.org_id:
        raise NotFoundError(f"{row.kind.value} {row.id} not found")
    return row.copy(created_at=old.created_at)
