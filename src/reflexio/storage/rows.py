"""Conversion between records and SQL rows, shared by the SQLite and PostgreSQL dialects.

JSON-shaped fields travel as JSON text on both; tags are a list parameter of the dialect (JSON
text on SQLite, a ``text[]`` on PostgreSQL for the ``&&`` operator); vectors are float32 BLOBs
on SQLite and pgvector values on PostgreSQL (``Dialect.bind_vector``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from reflexio.records import (
    ApiKeyRecord,
    Approval,
    Bookmark,
    ChangeLogRecord,
    ClusterRecord,
    EvaluationRecord,
    InteractionRecord,
    Job,
    JobStatus,
    Learning,
    LearningEvent,
    LearningKind,
    LearningStatus,
    LLMUsageRecord,
    ProposalRecord,
    RequestRecord,
    UsageTotals,
)
from reflexio.storage.queries import Dialect

if TYPE_CHECKING:
    from reflexio.storage.connector import Connector

__all__ = [
    "LEARNING_COLUMNS",
    "api_key_from",
    "bookmark_from",
    "change_log_from",
    "change_log_params",
    "cluster_from",
    "cluster_params",
    "evaluation_from",
    "event_from",
    "event_params",
    "interaction_from",
    "interaction_params",
    "job_from",
    "learning_from",
    "learning_params",
    "learnings",
    "learnings_by_ids",
    "request_from",
    "request_params",
    "usage_params",
    "usage_totals_from",
]

LEARNING_COLUMNS = (
    'id, org_id, kind, profile_id, user_id, agent_version, playbook_name, content, "trigger", '
    "rationale, pitfall, blocking_issue, status, approval, source, tags, custom_features, "
    "extractor_names, ttl, expires_at, request_id, source_interaction_ids, superseded_by, "
    "metadata, created_at, updated_at, embedding, embed_model, text_hash"
)


# Enum members by value: a dict lookup is ~10x cheaper than calling the enum (rows are decoded
# on every search).
_KINDS = {k.value: k for k in LearningKind}
_STATUSES = {s.value: s for s in LearningStatus}
_APPROVALS = {a.value: a for a in Approval}


def _dumps(value: Any) -> str | None:
    return None if value is None else json.dumps(value, separators=(",", ":"))


def _loads(value: Any) -> Any:
    if value is None or not isinstance(value, str | bytes):
        return value
    if value == "[]":  # most list columns are empty; json.loads costs ~1 us each
        return []
    return json.loads(value)


def learning_params(row: Learning, d: Dialect, *, seq: int) -> dict[str, Any]:
    """Named parameters for inserting or updating a learning."""
    return {
        "id": row.id,
        "org_id": row.org_id,
        "kind": row.kind.value,
        "profile_id": row.profile_id,
        "user_id": row.user_id,
        "agent_version": row.agent_version,
        "playbook_name": row.playbook_name,
        "content": row.content,
        "trigger": row.trigger,
        "rationale": row.rationale,
        "pitfall": row.pitfall,
        "blocking_issue": _dumps(row.blocking_issue),
        "status": row.status.value,
        "approval": row.approval.value if row.approval else None,
        "source": row.source,
        "tags": d.bind_list(list(row.tags)),
        "custom_features": _dumps(row.custom_features),
        "extractor_names": _dumps(row.extractor_names),
        "ttl": row.ttl,
        "expires_at": row.expires_at,
        "request_id": row.request_id,
        "source_interaction_ids": _dumps(list(row.source_interaction_ids)),
        "superseded_by": row.superseded_by,
        "metadata": row.metadata,
        "created_at": row.created_at,
        "updated_at": row.updated_at,
        "embedding": None if row.embedding is None else d.bind_vector(row.embedding),
        "embed_model": row.embed_model,
        "embed_dim": 0 if row.embedding is None else int(row.embedding.shape[0]),
        "text_hash": row.text_hash,
        "seq": seq,
    }


def _vector(value: Any) -> np.ndarray | None:
    if value is None:
        return None
    if isinstance(value, bytes | memoryview):
        return np.frombuffer(value, dtype=np.float32)
    return np.asarray(value, dtype=np.float32)


def learning_from(r: Mapping[str, Any]) -> Learning:
    """A learning from a row selected with ``LEARNING_COLUMNS``."""
    tags = r["tags"]
    return Learning(
        id=int(r["id"]),
        org_id=r["org_id"],
        kind=_KINDS[r["kind"]],
        profile_id=r["profile_id"],
        user_id=r["user_id"],
        agent_version=r["agent_version"],
        playbook_name=r["playbook_name"],
        content=r["content"],
        trigger=r["trigger"],
        rationale=r["rationale"],
        pitfall=r["pitfall"],
        blocking_issue=_loads(r["blocking_issue"]),
        status=_STATUSES[r["status"]],
        approval=_APPROVALS[r["approval"]] if r["approval"] else None,
        source=r["source"],
        tags=list(tags) if isinstance(tags, list) else (_loads(tags) or []),
        custom_features=_loads(r["custom_features"]),
        extractor_names=_loads(r["extractor_names"]),
        ttl=r["ttl"],
        expires_at=int(r["expires_at"]),
        request_id=r["request_id"],
        source_interaction_ids=_loads(r["source_interaction_ids"]) or [],
        superseded_by=r["superseded_by"],
        metadata=r["metadata"],
        created_at=int(r["created_at"]),
        updated_at=int(r["updated_at"]),
        embedding=_vector(r["embedding"]),
        embed_model=r["embed_model"],
        text_hash=r["text_hash"],
    )


def learnings(db: Connector, query: str, params: Mapping[str, Any], **parts: str) -> list[Learning]:
    """The learnings a named query selects (its ``{columns}`` filled with ``LEARNING_COLUMNS``)."""
    return [learning_from(r) for r in db.all(query, params, columns=LEARNING_COLUMNS, **parts)]


def learnings_by_ids(db: Connector, org_id: str, ids: Sequence[int]) -> list[Learning]:
    """An org's learnings with these ids (those that exist)."""
    if not ids:
        return []
    return learnings(db, "learnings_by_ids", {"org_id": org_id, "ids": db.dialect.bind_list(list(ids))})


def request_params(r: RequestRecord) -> dict[str, Any]:
    """Named parameters for inserting a request."""
    return {
        "org_id": r.org_id,
        "request_id": r.request_id,
        "user_id": r.user_id,
        "session_id": r.session_id,
        "source": r.source,
        "agent_version": r.agent_version,
        "created_at": r.created_at,
        "payload_hash": r.payload_hash,
        "skip_aggregation": r.skip_aggregation,
    }


def request_from(r: Mapping[str, Any]) -> RequestRecord:
    """A request record from a row."""
    return RequestRecord(
        org_id=r["org_id"],
        request_id=r["request_id"],
        user_id=r["user_id"],
        session_id=r["session_id"],
        source=r["source"],
        agent_version=r["agent_version"],
        created_at=int(r["created_at"]),
        payload_hash=r["payload_hash"],
        skip_aggregation=bool(r["skip_aggregation"]),
    )


def interaction_params(row: InteractionRecord) -> dict[str, Any]:
    """Named parameters for inserting an interaction."""
    return {
        "org_id": row.org_id,
        "request_id": row.request_id,
        "user_id": row.user_id,
        "session_id": row.session_id,
        "role": row.role,
        "content": row.content,
        "shadow_content": row.shadow_content,
        "expert_content": row.expert_content,
        "user_action": row.user_action,
        "user_action_description": row.user_action_description,
        "interacted_image_url": row.interacted_image_url,
        "image_encoding": row.image_encoding,
        "tools_used": _dumps(row.tools_used),
        "citations": _dumps(row.citations),
        "retrieved_learnings": _dumps(row.retrieved_learnings),
        "created_at": row.created_at,
    }


def interaction_from(r: Mapping[str, Any]) -> InteractionRecord:
    """An interaction record from a row."""
    return InteractionRecord(
        id=int(r["id"]),
        org_id=r["org_id"],
        request_id=r["request_id"],
        user_id=r["user_id"],
        session_id=r["session_id"],
        role=r["role"],
        content=r["content"],
        shadow_content=r["shadow_content"],
        expert_content=r["expert_content"],
        user_action=r["user_action"],
        user_action_description=r["user_action_description"],
        interacted_image_url=r["interacted_image_url"],
        image_encoding=r["image_encoding"],
        tools_used=_loads(r["tools_used"]) or [],
        citations=_loads(r["citations"]) or [],
        retrieved_learnings=_loads(r["retrieved_learnings"]) or [],
        created_at=int(r["created_at"]),
    )


def event_params(e: LearningEvent) -> dict[str, Any]:
    """Named parameters for inserting a learning event."""
    return {
        "org_id": e.org_id,
        "learning_id": e.learning_id,
        "kind": e.kind.value,
        "user_id": e.user_id,
        "event": e.event,
        "actor": e.actor,
        "reason": e.reason,
        "request_id": e.request_id,
        "job_id": e.job_id,
        "before": _dumps(e.before),
        "after": _dumps(e.after),
        "created_at": e.created_at,
    }


def event_from(r: Mapping[str, Any]) -> LearningEvent:
    """A learning event from a row."""
    return LearningEvent(
        id=int(r["id"]),
        org_id=r["org_id"],
        learning_id=int(r["learning_id"]),
        kind=LearningKind(r["kind"]),
        event=r["event"],
        user_id=r["user_id"],
        actor=r["actor"],
        reason=r["reason"],
        request_id=r["request_id"],
        job_id=r["job_id"],
        before=_loads(r["before"]),
        after=_loads(r["after"]),
        created_at=float(r["created_at"]),
    )


def evaluation_params(e: EvaluationRecord, created_at: float) -> dict[str, Any]:
    """Named parameters for inserting an evaluation."""
    return {
        "org_id": e.org_id,
        "kind": e.kind,
        "user_id": e.user_id,
        "session_id": e.session_id,
        "agent_version": e.agent_version,
        "learning_kind": e.learning_kind,
        "learning_id": e.learning_id,
        "interaction_id": e.interaction_id,
        "result": _dumps(e.result),
        "created_at": created_at,
    }


def evaluation_from(r: Mapping[str, Any]) -> EvaluationRecord:
    """An evaluation record from a row."""
    return EvaluationRecord(
        id=int(r["id"]),
        org_id=r["org_id"],
        kind=r["kind"],
        user_id=r["user_id"],
        session_id=r["session_id"],
        agent_version=r["agent_version"],
        learning_kind=r["learning_kind"],
        learning_id=r["learning_id"],
        interaction_id=r["interaction_id"],
        result=_loads(r["result"]) or {},
        created_at=float(r["created_at"]),
    )


def bookmark_from(r: Mapping[str, Any]) -> Bookmark:
    """A bookmark from a row."""
    return Bookmark(
        org_id=r["org_id"],
        user_id=r["user_id"],
        extractor=r["extractor"],
        last_interaction_id=int(r["last_interaction_id"]),
        updated_at=float(r["updated_at"]),
    )


def api_key_from(r: Mapping[str, Any]) -> ApiKeyRecord:
    """An API key record from a row."""
    return ApiKeyRecord(
        id=int(r["id"]),
        org_id=r["org_id"],
        key_hash=r["key_hash"],
        prefix=r["prefix"],
        name=r["name"],
        created_at=float(r["created_at"]),
        revoked_at=None if r["revoked_at"] is None else float(r["revoked_at"]),
        reviewer=bool(r["reviewer"]),
    )


def job_params(job: Job, t: float) -> dict[str, Any]:
    """Named parameters for inserting a job."""
    return {
        "org_id": job.org_id,
        "task": job.task,
        "key": job.key,
        "payload": _dumps(job.payload),
        "run_at": job.run_at or t,
        "max_attempts": job.max_attempts,
        "request_id": job.request_id,
        "now": t,
        "trace_context": _dumps(job.trace_context or {}),
    }


def job_from(r: Mapping[str, Any]) -> Job:
    """A job from a ``SELECT *`` row."""
    return Job(
        id=int(r["id"]),
        org_id=r["org_id"],
        task=r["task"],
        key=r["key"],
        payload=_loads(r["payload"]) or {},
        status=JobStatus(r["status"]),
        run_at=float(r["run_at"]),
        attempts=int(r["attempts"]),
        max_attempts=int(r["max_attempts"]),
        lease_owner=r["lease_owner"],
        lease_expires_at=None if r["lease_expires_at"] is None else float(r["lease_expires_at"]),
        last_error=r["last_error"],
        request_id=r["request_id"],
        created_at=float(r["created_at"]),
        updated_at=float(r["updated_at"]),
        finished_at=None if r["finished_at"] is None else float(r["finished_at"]),
        progress=_loads(r["progress"]) or {},
        trace_context=_loads(r["trace_context"]) or {},
    )


def dumps(value: Any) -> str | None:
    """JSON text of a value (None stays None)."""
    return _dumps(value)


def loads(value: Any) -> Any:
    """Decode JSON text (non-text values pass through)."""
    return _loads(value)


def usage_params(row: LLMUsageRecord, created_at: float) -> dict[str, Any]:
    """Named parameters for inserting one LLM usage row (``ok`` is a bool on both backends)."""
    return {
        "org_id": row.org_id,
        "job_id": row.job_id,
        "role": row.role,
        "model": row.model,
        "prompt": row.prompt,
        "prompt_version": row.prompt_version,
        "prompt_tokens": row.prompt_tokens,
        "completion_tokens": row.completion_tokens,
        "cost_usd": row.cost_usd,
        "latency_ms": row.latency_ms,
        "ok": row.ok,
        "error": row.error,
        "created_at": created_at,
    }


def usage_totals_from(r: Mapping[str, Any]) -> UsageTotals:
    """Per-role totals from a row of the ``llm_usage_by_role`` query."""
    return UsageTotals(
        calls=int(r["calls"]),
        failed=int(r["failed"]),
        prompt_tokens=int(r["prompt_tokens"]),
        completion_tokens=int(r["completion_tokens"]),
        cost_usd=float(r["cost_usd"]),
        latency_ms=float(r["latency_ms"]),
    )


def cluster_params(c: ClusterRecord, updated_at: float) -> dict[str, Any]:
    """Named parameters for inserting or updating an aggregation cluster."""
    return {
        "id": c.id,
        "org_id": c.org_id,
        "agent_version": c.agent_version,
        "playbook_name": c.playbook_name,
        "member_ids": _dumps(list(c.member_ids)),
        "fingerprint": c.fingerprint,
        "decided_fingerprint": c.decided_fingerprint,
        "agent_playbook_id": c.agent_playbook_id,
        "revision_id": c.revision_id,
        "basis": c.basis,
        "updated_at": updated_at,
    }


def cluster_from(r: Mapping[str, Any]) -> ClusterRecord:
    """An aggregation cluster from a row."""
    return ClusterRecord(
        id=int(r["id"]),
        org_id=r["org_id"],
        agent_version=r["agent_version"],
        playbook_name=r["playbook_name"],
        member_ids=tuple(int(i) for i in _loads(r["member_ids"])),
        fingerprint=r["fingerprint"],
        decided_fingerprint=r["decided_fingerprint"],
        agent_playbook_id=_int_or_none(r["agent_playbook_id"]),
        revision_id=_int_or_none(r["revision_id"]),
        basis=r["basis"],
        updated_at=float(r["updated_at"]),
    )


def proposal_params(p: ProposalRecord, created_at: float) -> dict[str, Any]:
    """Named parameters for inserting an agent playbook's proposal."""
    return {
        "org_id": p.org_id,
        "agent_playbook_id": p.agent_playbook_id,
        "cluster_id": p.cluster_id,
        "member_ids": _dumps(list(p.member_ids)),
        "user_ids": _dumps(list(p.user_ids)),
        "revises_id": p.revises_id,
        "follows_rejection_id": p.follows_rejection_id,
        "job_id": p.job_id,
        "created_at": created_at,
    }


def without_user(p: ProposalRecord, user_id: str, member_ids: AbstractSet[int]) -> ProposalRecord:
    """A proposal's evidence with a cleared user and their user playbooks taken out."""
    return replace(
        p,
        member_ids=tuple(i for i in p.member_ids if i not in member_ids),
        user_ids=tuple(u for u in p.user_ids if u != user_id),
    )


def proposal_evidence_params(p: ProposalRecord) -> dict[str, Any]:
    """Named parameters for rewriting a proposal's evidence (members and users)."""
    return {
        "org_id": p.org_id,
        "agent_playbook_id": p.agent_playbook_id,
        "member_ids": _dumps(list(p.member_ids)),
        "user_ids": _dumps(list(p.user_ids)),
    }


def proposal_from(r: Mapping[str, Any]) -> ProposalRecord:
    """An agent playbook's proposal from a row."""
    return ProposalRecord(
        org_id=r["org_id"],
        agent_playbook_id=int(r["agent_playbook_id"]),
        cluster_id=int(r["cluster_id"]),
        member_ids=tuple(int(i) for i in _loads(r["member_ids"])),
        user_ids=tuple(str(u) for u in _loads(r["user_ids"])),
        revises_id=_int_or_none(r["revises_id"]),
        follows_rejection_id=_int_or_none(r["follows_rejection_id"]),
        job_id=_int_or_none(r["job_id"]),
        created_at=float(r["created_at"]),
    )


def change_log_params(c: ChangeLogRecord, created_at: float) -> dict[str, Any]:
    """Named parameters for inserting an aggregation change log."""
    return {
        "org_id": c.org_id,
        "agent_version": c.agent_version,
        "playbook_name": c.playbook_name,
        "run_mode": c.run_mode,
        "added": _dumps(c.added),
        "removed": _dumps(c.removed),
        "updated": _dumps(c.updated),
        "job_id": c.job_id,
        "created_at": created_at,
    }


def change_log_from(r: Mapping[str, Any]) -> ChangeLogRecord:
    """An aggregation change log from a row."""
    return ChangeLogRecord(
        id=int(r["id"]),
        org_id=r["org_id"],
        agent_version=r["agent_version"],
        playbook_name=r["playbook_name"],
        run_mode=r["run_mode"],
        added=_loads(r["added"]),
        removed=_loads(r["removed"]),
        updated=_loads(r["updated"]),
        job_id=_int_or_none(r["job_id"]),
        created_at=float(r["created_at"]),
    )


def _int_or_none(value: Any) -> int | None:
    return None if value is None else int(value)
