"""Helpers shared by the SQL backends: named queries from .sql files and filter compilation.

Static SQL lives in ``sql/<dialect>/*.sql``: numbered migrations (``001_initial.sql``...) and
``queries.sql``, where each query starts with a ``-- name: <query_name>`` line, as in
procrastinate. Filters are data, so their WHERE clauses are assembled here from fixed
fragments; values always travel as parameters, never inside the SQL text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from reflexio.filters import InteractionFilter, LearningFilter, RequestFilter
from reflexio.records import JobStatus, LearningKind

__all__ = [
    "Dialect",
    "Queries",
    "migrations",
    "where_events",
    "where_interactions",
    "where_jobs",
    "where_learnings",
    "where_requests",
]

_NAME = re.compile(r"^--\s*name:\s*(\w+)\s*$", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Dialect:
    """The few ways the SQL backends' syntax differs."""

    name: str
    param: str

    def params(self, n: int) -> str:
        """``n`` comma-separated placeholders."""
        return ", ".join([self.param] * n)


SQLITE = Dialect("sqlite", "?")
POSTGRES = Dialect("postgres", "%s")


class Queries:
    """Named queries of one dialect, loaded once from ``queries.sql``."""

    def __init__(self, dialect: str) -> None:
        text = resources.files("reflexio.storage").joinpath("sql", dialect, "queries.sql").read_text()
        parts = _NAME.split(text)
        self._sql = {parts[i]: _body(parts[i + 1]) for i in range(1, len(parts), 2)}

    def __getitem__(self, name: str) -> str:
        return self._sql[name]


def _body(chunk: str) -> str:
    """A query's text without the comment lines that introduce the next query."""
    lines = chunk.strip().splitlines()
    while lines and lines[-1].lstrip().startswith("--"):
        lines.pop()
    return "\n".join(lines).strip()


@cache
def queries(dialect: str) -> Queries:
    """The cached named queries of a dialect."""
    return Queries(dialect)


def migrations(dialect: str) -> list[tuple[int, str]]:
    """(version, script) for every numbered migration file of a dialect, in order."""
    folder = resources.files("reflexio.storage").joinpath("sql", dialect)
    out = []
    for entry in folder.iterdir():
        match = re.match(r"^(\d+)_.*\.sql$", entry.name)
        if match:
            out.append((int(match.group(1)), entry.read_text()))
    return sorted(out)


class _Where:
    """AND-ed clauses with their parameters, in one dialect."""

    def __init__(self, d: Dialect) -> None:
        self.d = d
        self.clauses: list[str] = []
        self.params: list[Any] = []

    def add(self, sql: str, *values: Any) -> None:
        self.clauses.append(sql)
        self.params.extend(values)

    def equal(self, column: str, value: Any, op: str = "=") -> None:
        """``column op value``, unless the value is None (no condition)."""
        if value is not None:
            self.add(f"{column} {op} {self.d.param}", value)

    def among(self, column: str, values: Sequence[Any] | None) -> None:
        """``column IN (values)`` (an empty list matches nothing), unless None."""
        if values is None:
            return
        if values:
            self.add(f"{column} IN ({self.d.params(len(values))})", *values)
        else:
            self.add("FALSE")

    def compiled(self) -> tuple[str, list[Any]]:
        return " AND ".join(self.clauses) or "TRUE", self.params


def where_learnings(f: LearningFilter, d: Dialect, now: int | None = None) -> tuple[str, list[Any]]:
    """Compile a learning filter to a WHERE fragment (without the org condition)."""
    w = _Where(d)
    if f.kinds:
        w.among("kind", [k.value for k in f.kinds])
    w.among("id", f.ids)
    w.among("profile_id", f.profile_ids)
    for column in ("user_id", "agent_version", "playbook_name", "request_id"):
        w.equal(column, getattr(f, column))
    w.among("status", None if f.statuses is None else [s.value for s in f.statuses])
    if f.approvals is not None:
        approvals = [a.value for a in f.approvals]
        inner = f"approval IN ({d.params(len(approvals))})" if approvals else "FALSE"
        w.add(f"(kind <> {d.param} OR {inner})", LearningKind.AGENT_PLAYBOOK.value, *approvals)
    if f.source is not None:
        w.add(f"lower(coalesce(source, '')) = {d.param}", f.source.lower())
    if f.tags is not None:
        _tags(w, list(f.tags))
    w.equal("created_at", f.created_after, ">=")
    w.equal("created_at", f.created_before, "<=")
    w.equal("updated_at", f.updated_after, ">=")
    w.equal("updated_at", f.updated_before, "<=")
    w.equal("expires_at", f.active_at, ">")
    w.equal("expires_at", f.expired_at, "<=")
    return w.compiled()


def _tags(w: _Where, tags: list[str]) -> None:
    if not tags:
        w.add("FALSE")
    elif w.d is POSTGRES:
        w.add("tags && %s::text[]", tags)
    else:
        w.add(f"EXISTS (SELECT 1 FROM json_each(tags) WHERE value IN ({w.d.params(len(tags))}))", *tags)


def where_interactions(f: InteractionFilter, d: Dialect) -> tuple[str, list[Any]]:
    """Compile an interaction filter to a WHERE fragment (without the org condition)."""
    w = _Where(d)
    w.among("id", f.ids)
    w.among("request_id", f.request_ids)
    w.equal("user_id", f.user_id)
    w.equal("session_id", f.session_id)
    w.equal("id", f.after_id, ">")
    w.equal("id", f.up_to_id, "<=")
    w.equal("created_at", f.created_after, ">=")
    w.equal("created_at", f.created_before, "<=")
    return w.compiled()


def where_requests(f: RequestFilter, d: Dialect) -> tuple[str, list[Any]]:
    """Compile a request filter to a WHERE fragment (without the org condition)."""
    w = _Where(d)
    w.among("request_id", f.request_ids)
    w.equal("user_id", f.user_id)
    w.equal("session_id", f.session_id)
    w.equal("agent_version", f.agent_version)
    w.equal("created_at", f.created_after, ">=")
    w.equal("created_at", f.created_before, "<=")
    if f.source is not None:
        w.add(f"lower(source) = {d.param}", f.source.lower())
    return w.compiled()


def where_jobs(
    d: Dialect,
    *,
    statuses: Sequence[JobStatus] | None,
    request_id: str | None,
    task: str | None,
    key: str | None,
) -> tuple[str, list[Any]]:
    """The WHERE fragment of ``Storage.list_jobs`` (without the org condition)."""
    w = _Where(d)
    w.among("status", None if statuses is None else [s.value for s in statuses])
    w.equal("request_id", request_id)
    w.equal("task", task)
    w.equal("key", key)
    return w.compiled()


def where_events(
    d: Dialect,
    *,
    learning_ids: Sequence[int] | None,
    user_id: str | None,
    kinds: Sequence[str] | None,
) -> tuple[str, list[Any]]:
    """The WHERE fragment of ``Storage.list_events`` (without the org condition)."""
    w = _Where(d)
    w.among("learning_id", None if learning_ids is None else list(learning_ids))
    w.equal("user_id", user_id)
    w.among("kind", None if kinds is None else [str(k) for k in kinds])
    return w.compiled()
