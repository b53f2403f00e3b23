"""Reflect's tables over the shared connector: outcomes, exposure decisions, verdict
replacement and reflection actions (migration 010).

A mixin of ``sql_storage.SqlStorage`` (which supplies ``self.db``), kept apart so each file
stays one subject. Every write runs in ``self.db.transaction()``, so inside a caller's
transaction (a job's effects) it joins it and commits or rolls back with it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from reflexio.errors import ConflictError
from reflexio.records import EvaluationRecord, ExposureRecord, OutcomeRecord, ReflectionActionRecord, now
from reflexio.storage import rows
from reflexio.storage.connector import Connector
from reflexio.storage.queries import Where, where_evaluations

__all__ = ["ReflectTables"]


class ReflectTables:
    """Session outcomes, exposure decisions, verdict replacement and reflection actions."""

    db: Connector

    # -- session outcomes ---------------------------------------------------------------------
    def add_outcome(self, row: OutcomeRecord) -> OutcomeRecord:
        created = row.created_at or now()
        params: dict[str, Any] = {
            "org_id": row.org_id,
            "outcome_id": row.outcome_id,
            "session_id": row.session_id,
            "user_id": row.user_id,
            "outcome": row.outcome,
            "occurred_at": row.occurred_at,
            "source": row.source,
            "label": row.label,
            "value": row.value,
            "metadata": rows.dumps(row.metadata),
            "created_at": created,
        }
        for attempt in range(3):  # two reports at once race for a revision number: retry
            try:
                with self.db.transaction() as db:
                    got = db.one("insert_outcome", params)
                break
            except ConflictError:
                if attempt == 2:
                    raise
        assert got is not None
        return OutcomeRecord(
            **{**_outcome_fields(row), "id": int(got["id"]), "revision": int(got["revision"])},
            created_at=created,
        )

    def list_outcomes(
        self,
        org_id: str,
        *,
        session_ids: Sequence[str] | None = None,
        user_id: str | None = None,
        source: str | None = None,
        outcome: str | None = None,
        label: str | None = None,
        occurred_after: int | None = None,
        occurred_before: int | None = None,
        latest_only: bool = True,
        limit: int = 100,
        offset: int = 0,
    ) -> list[OutcomeRecord]:
        w = Where(self.db.dialect)
        w.among("session_id", None if session_ids is None else list(session_ids))
        for column, value in (
            ("user_id", user_id),
            ("source", source),
            ("outcome", outcome),
            ("label", label),
        ):
            w.equal(column, value)
        w.equal("occurred_at", occurred_after, ">=")
        w.equal("occurred_at", occurred_before, "<=")
        if latest_only:
            w.add(self.db.dialect.queries.render("latest_outcome_only", {}))
        sql, params = w.compiled()
        params |= {"org_id": org_id, "limit": limit, "offset": offset}
        return [_outcome_from(r) for r in self.db.all("list_outcomes", params, where=sql)]

    # -- exposure decisions -------------------------------------------------------------------
    def record_exposures(self, decisions: Sequence[ExposureRecord], /) -> None:
        if not decisions:
            return
        t = now()
        params = [
            {
                "org_id": d.org_id,
                "session_id": d.session_id,
                "user_id": d.user_id,
                "kind": d.kind,
                "learning_id": d.learning_id,
                "withheld": d.withheld,
                "holdout_rate": d.holdout_rate,
                "served_at": d.served_at or t,
            }
            for d in decisions
        ]
        with self.db.transaction() as db:
            db.many("record_exposure", params)

    def learning_exposures(self, org_id: str, kind: str, learning_ids: Sequence[str]) -> list[ExposureRecord]:
        if not learning_ids:
            return []
        params = {"org_id": org_id, "kind": kind, "ids": self.db.dialect.bind_list(list(learning_ids))}
        return [
            ExposureRecord(
                org_id=org_id,
                session_id=r["session_id"],
                kind=r["kind"],
                learning_id=r["learning_id"],
                user_id=r["user_id"],
                withheld=bool(r["withheld"]),
                holdout_rate=float(r["holdout_rate"]),
                served_at=float(r["served_at"]),
            )
            for r in self.db.all("learning_exposures", params)
        ]

    def most_exposed(
        self, org_id: str, *, kind: str | None = None, limit: int = 100
    ) -> list[tuple[str, str, int]]:
        found = self.db.all("most_exposed", {"org_id": org_id, "kind": kind, "limit": limit})
        return [(r["kind"], r["learning_id"], int(r["sessions"])) for r in found]

    # -- verdicts -----------------------------------------------------------------------------
    def replace_evaluations(
        self,
        org_id: str,
        user_id: str,
        session_id: str,
        kinds: Sequence[str],
        rows_in: Sequence[EvaluationRecord],
    ) -> list[EvaluationRecord]:
        with self.db.transaction() as db:
            db.execute(
                "delete_session_evaluations",
                {
                    "org_id": org_id,
                    "user_id": user_id,
                    "session_id": session_id,
                    "kinds": self.db.dialect.bind_list(list(kinds)),
                },
            )
            t = now()
            params = [rows.evaluation_params(r, r.created_at or t) for r in rows_in]
            ids = db.insert("insert_evaluation", params) if params else []
        return [rows.evaluation_from({**p, "id": i}) for p, i in zip(params, ids, strict=True)]

    def find_evaluations(
        self,
        org_id: str,
        *,
        kind: str,
        session_ids: Sequence[str] | None = None,
        learning_kind: str | None = None,
        learning_ids: Sequence[str] | None = None,
        limit: int = 10_000,
    ) -> list[EvaluationRecord]:
        sql, params = where_evaluations(
            self.db.dialect,
            kind=kind,
            learning_kind=learning_kind,
            session_id=None if session_ids is None else list(session_ids),
            learning_id=None if learning_ids is None else list(learning_ids),
        )
        params |= {"org_id": org_id, "limit": limit}
        return [rows.evaluation_from(r) for r in self.db.all("list_evaluations", params, where=sql)]

    # -- reflection actions -------------------------------------------------------------------
    def add_reflection_actions(
        self, actions: Sequence[ReflectionActionRecord], /
    ) -> list[ReflectionActionRecord]:
        t = now()
        out = []
        with self.db.transaction() as db:
            for a in actions:
                params = _action_params(a, a.created_at or t)
                got = db.one("insert_reflection_action", params)
                assert got is not None
                out.append(_action_from({**params, "id": got["id"], "reverted_at": None}))
        return out

    def list_reflection_actions(
        self,
        org_id: str,
        *,
        ids: Sequence[int] | None = None,
        learning_ids: Sequence[int] | None = None,
        related_learning_ids: Sequence[int] | None = None,
        kind: str | None = None,
        include_reverted: bool = True,
        limit: int = 100,
    ) -> list[ReflectionActionRecord]:
        w = Where(self.db.dialect)
        w.among("id", None if ids is None else list(ids))
        w.among("learning_id", None if learning_ids is None else list(learning_ids))
        w.among("related_learning_id", None if related_learning_ids is None else list(related_learning_ids))
        w.equal("kind", kind)
        if not include_reverted:
            w.add("reverted_at IS NULL")
        sql, params = w.compiled()
        params |= {"org_id": org_id, "limit": limit}
        return [_action_from(r) for r in self.db.all("list_reflection_actions", params, where=sql)]

    def revert_reflection_action(self, org_id: str, action_id: int, *, by: str, note: str | None) -> bool:
        params = {
            "org_id": org_id,
            "id": action_id,
            "reverted_at": now(),
            "reverted_by": by,
            "revert_note": note,
        }
        with self.db.transaction() as db:
            return db.execute("revert_reflection_action", params) == 1


def _outcome_fields(row: OutcomeRecord) -> dict[str, Any]:
    return {
        "org_id": row.org_id,
        "session_id": row.session_id,
        "user_id": row.user_id,
        "outcome": row.outcome,
        "occurred_at": row.occurred_at,
        "outcome_id": row.outcome_id,
        "source": row.source,
        "label": row.label,
        "value": row.value,
        "metadata": row.metadata,
    }


def _outcome_from(r: Mapping[str, Any]) -> OutcomeRecord:
    return OutcomeRecord(
        id=int(r["id"]),
        org_id=r["org_id"],
        outcome_id=r["outcome_id"],
        session_id=r["session_id"],
        user_id=r["user_id"],
        revision=int(r["revision"]),
        outcome=r["outcome"],
        occurred_at=int(r["occurred_at"]),
        source=r["source"],
        label=r["label"],
        value=None if r["value"] is None else float(r["value"]),
        metadata=rows.loads(r["metadata"]),
        created_at=float(r["created_at"]),
    )


def _action_params(a: ReflectionActionRecord, created_at: float) -> dict[str, Any]:
    return {
        "org_id": a.org_id,
        "learning_id": a.learning_id,
        "kind": a.kind,
        "action": a.action,
        "reason": a.reason,
        "evidence": rows.dumps(a.evidence),
        "status_before": a.status_before,
        "status_after": a.status_after,
        "related_learning_id": a.related_learning_id,
        "actor": a.actor,
        "job_id": a.job_id,
        "created_at": created_at,
    }


def _action_from(r: Mapping[str, Any]) -> ReflectionActionRecord:
    return ReflectionActionRecord(
        id=int(r["id"]),
        org_id=r["org_id"],
        learning_id=int(r["learning_id"]),
        kind=r["kind"],
        action=r["action"],
        reason=r["reason"],
        evidence=rows.loads(r["evidence"]) or {},
        status_before=r["status_before"],
        status_after=r["status_after"],
        related_learning_id=r["related_learning_id"],
        actor=r["actor"],
        job_id=r["job_id"],
        created_at=float(r["created_at"]),
        reverted_at=None if r.get("reverted_at") is None else float(r["reverted_at"]),
        reverted_by=r.get("reverted_by"),
        revert_note=r.get("revert_note"),
    )
