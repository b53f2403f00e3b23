"""Helpers shared by the SQL backends: named queries from .sql files and filter compilation.

Static SQL lives in ``sql/<dialect>/*.sql``: numbered migrations (``001_initial.sql``...) and
``queries.sql``, where each query starts with a ``-- name: <query_name>`` line, as in
procrastinate. Filters are data, so their WHERE clauses are assembled here from fixed
fragments; values always travel as parameters, never inside the SQL text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from reflexio.storage.filters import InteractionFilter, LearningFilter, RequestFilter
from reflexio.storage.records import LearningKind

__all__ = [
    "Dialect",
    "Queries",
    "migrations",
    "where_interactions",
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


def where_learnings(f: LearningFilter, d: Dialect, now: int | None = None) -> tuple[str, list[Any]]:
    """Compile a learning filter to a WHERE fragment (without the org condition)."""
    clauses: list[str] = []
    params: list[Any] = []

    def add(sql: str, *values: Any) -> None:
        clauses.append(sql)
        params.extend(values)

    if f.kinds:
        add(f"kind IN ({d.params(len(f.kinds))})", *[k.value for k in f.kinds])
    if f.ids is not None:
        _in(add, "id", list(f.ids), d)
    if f.profile_ids is not None:
        _in(add, "profile_id", list(f.profile_ids), d)
    for column, value in (
        ("user_id", f.user_id),
        ("agent_version", f.agent_version),
        ("playbook_name", f.playbook_name),
        ("request_id", f.request_id),
    ):
        if value is not None:
            add(f"{column} = {d.param}", value)
    if f.statuses is not None:
        _in(add, "status", [s.value for s in f.statuses], d)
    if f.approvals is not None:
        approvals = [a.value for a in f.approvals]
        inner = f"approval IN ({d.params(len(approvals))})" if approvals else "FALSE"
        add(f"(kind <> {d.param} OR {inner})", LearningKind.AGENT_PLAYBOOK.value, *approvals)
    if f.source is not None:
        add(f"lower(coalesce(source, '')) = {d.param}", f.source.lower())
    if f.tags is not None:
        _tags(add, list(f.tags), d)
    _ranges(add, f, d)
    return " AND ".join(clauses) or "TRUE", params


def _in(add: Any, column: str, values: list[Any], d: Dialect) -> None:
    if not values:
        add("FALSE")
    else:
        add(f"{column} IN ({d.params(len(values))})", *values)


def _tags(add: Any, tags: list[str], d: Dialect) -> None:
    if not tags:
        add("FALSE")
    elif d is POSTGRES:
        add("tags && %s::text[]", tags)
    else:
        add(f"EXISTS (SELECT 1 FROM json_each(tags) WHERE value IN ({d.params(len(tags))}))", *tags)


def _ranges(add: Any, f: LearningFilter, d: Dialect) -> None:
    for column, op, value in (
        ("created_at", ">=", f.created_after),
        ("created_at", "<=", f.created_before),
        ("updated_at", ">=", f.updated_after),
        ("updated_at", "<=", f.updated_before),
        ("expires_at", ">", f.active_at),
        ("expires_at", "<=", f.expired_at),
    ):
        if value is not None:
            add(f"{column} {op} {d.param}", value)


def where_interactions(f: InteractionFilter, d: Dialect) -> tuple[str, list[Any]]:
    """Compile an interaction filter to a WHERE fragment (without the org condition)."""
    clauses: list[str] = []
    params: list[Any] = []

    def add(sql: str, *values: Any) -> None:
        clauses.append(sql)
        params.extend(values)

    if f.ids is not None:
        _in(add, "id", list(f.ids), d)
    if f.request_ids is not None:
        _in(add, "request_id", list(f.request_ids), d)
    for column, op, value in (
        ("user_id", "=", f.user_id),
        ("session_id", "=", f.session_id),
        ("id", ">", f.after_id),
        ("id", "<=", f.up_to_id),
        ("created_at", ">=", f.created_after),
        ("created_at", "<=", f.created_before),
    ):
        if value is not None:
            add(f"{column} {op} {d.param}", value)
    return " AND ".join(clauses) or "TRUE", params


def where_requests(f: RequestFilter, d: Dialect) -> tuple[str, list[Any]]:
    """Compile a request filter to a WHERE fragment (without the org condition)."""
    clauses: list[str] = []
    params: list[Any] = []

    def add(sql: str, *values: Any) -> None:
        clauses.append(sql)
        params.extend(values)

    if f.request_ids is not None:
        _in(add, "request_id", list(f.request_ids), d)
    for column, op, value in (
        ("user_id", "=", f.user_id),
        ("session_id", "=", f.session_id),
        ("agent_version", "=", f.agent_version),
        ("created_at", ">=", f.created_after),
        ("created_at", "<=", f.created_before),
    ):
        if value is not None:
            add(f"{column} {op} {d.param}", value)
    if f.source is not None:
        add(f"lower(source) = {d.param}", f.source.lower())
    return " AND ".join(clauses) or "TRUE", params
