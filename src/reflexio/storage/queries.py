"""Named SQL queries of each dialect, and the WHERE fragments compiled from filters.

Static SQL lives in ``sql/<dialect>/``: numbered migrations (``001_initial.sql``...),
``queries.sql`` (the queries the shared storage runs: both dialects define the same names)
and ``engine.sql`` (queries only that engine's own code runs: its search, its schema upkeep).
Each query starts with a ``-- name: <query_name>`` line, as in procrastinate. A few queries
are templates with ``{placeholders}`` filled with fixed SQL only: a WHERE fragment compiled
here (its values stay parameters), a sort direction, a validated vector dimension.

Filters are data, so their WHERE clauses are assembled here from fixed fragments; values
always travel as named parameters, never inside the SQL text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib import resources
from typing import Any

from reflexio.filters import InteractionFilter, LearningFilter, RequestFilter
from reflexio.records import JobStatus, LearningKind, Vector

__all__ = [
    "Dialect",
    "Queries",
    "Where",
    "migrations",
    "queries",
    "query_names",
    "where_evaluations",
    "where_events",
    "where_interactions",
    "where_jobs",
    "where_learnings",
    "where_requests",
    "where_stream_events",
]

_NAME = re.compile(r"^--\s*name:\s*(\w+)\s*$", re.MULTILINE)
#: The files of named queries in a dialect's folder: the shared names, and the engine's own.
_FILES = ("queries.sql", "engine.sql")


@dataclass(frozen=True, slots=True)
class Dialect:
    """How one engine spells what the shared SQL leaves open.

    Attributes:
        name: The folder of its ``.sql`` files ("sqlite", "postgres").
        placeholder: A named parameter, with ``{}`` where the name goes (``:{}``, ``%({})s``).
        bind_list: A Python list as one parameter (JSON text for ``json_each``, or an array).
        bind_vector: A float32 vector as one parameter (a BLOB, or a pgvector value).
        lone_writes: Whether a write statement run outside a transaction commits on its own,
            atomically (PostgreSQL in autocommit). Else (SQLite) writes must run inside
            ``Connector.transaction``, which is how they join the engine's write queue.
    """

    name: str
    placeholder: str
    bind_list: Callable[[Sequence[Any]], Any]
    bind_vector: Callable[[Vector], Any]
    lone_writes: bool = False

    def param(self, key: str) -> str:
        """The placeholder of the parameter named ``key``."""
        return self.placeholder.format(key)

    @property
    def queries(self) -> Queries:
        """This dialect's named queries."""
        return queries(self.name)


class Queries:
    """Named queries of one dialect, loaded once from its ``.sql`` files."""

    def __init__(self, dialect: str) -> None:
        shared, engine = (_parse(_read(dialect, file)) for file in _FILES)
        self._sql = self._merge(shared, engine, dialect)

    @staticmethod
    def _merge(shared: dict[str, str], engine: dict[str, str], dialect: str) -> dict[str, str]:
        """The shared queries and the engine's own, refusing a name both files define."""
        twice = shared.keys() & engine.keys()
        if twice:
            raise ValueError(f"queries {sorted(twice)} are defined twice for {dialect}")
        return shared | engine

    def __getitem__(self, name: str) -> str:
        return self._sql[name]

    def render(self, name: str, parts: dict[str, str]) -> str:
        """The query's text, its ``{placeholders}`` filled with ``parts`` (fixed SQL only)."""
        text = self._sql[name]
        return _filled(text, tuple(parts.items())) if parts else text


@lru_cache(maxsize=4096)
def _filled(text: str, parts: tuple[tuple[str, str], ...]) -> str:
    """A template filled in, kept: the same text object again is cheaper to hash and look up in
    the drivers' statement caches than a fresh copy (templates repeat with the filter shapes)."""
    return text.format(**dict(parts))


def _read(dialect: str, file: str) -> str:
    return resources.files("reflexio.storage").joinpath("sql", dialect, file).read_text()


def _parse(text: str) -> dict[str, str]:
    parts = _NAME.split(text)
    return {parts[i]: _body(parts[i + 1]) for i in range(1, len(parts), 2)}


def _body(chunk: str) -> str:
    """A query's text without its comment lines (they document the file, and a fragment is
    spliced into one line of a WHERE clause)."""
    lines = [line for line in chunk.strip().splitlines() if not line.lstrip().startswith("--")]
    return "\n".join(lines).strip()


@cache
def queries(dialect: str) -> Queries:
    """The cached named queries of a dialect."""
    return Queries(dialect)


def query_names(dialect: str, file: str = "queries.sql") -> list[str]:
    """The names one of a dialect's query files defines, in file order."""
    return list(_parse(_read(dialect, file)))


def migrations(dialect: str) -> list[tuple[int, str]]:
    """(version, script) for every numbered migration file of a dialect, in order."""
    folder = resources.files("reflexio.storage").joinpath("sql", dialect)
    out = []
    for entry in folder.iterdir():
        match = re.match(r"^(\d+)_.*\.sql$", entry.name)
        if match:
            out.append((int(match.group(1)), entry.read_text()))
    return sorted(out)


class Where:
    """AND-ed clauses with their named parameters, in one dialect."""

    def __init__(self, d: Dialect) -> None:
        self.d = d
        self.clauses: list[str] = []
        self.params: dict[str, Any] = {}

    def value(self, value: Any) -> str:
        """A fresh parameter holding ``value``; returns its placeholder."""
        key = f"w{len(self.params)}"
        self.params[key] = value
        return self.d.param(key)

    def add(self, sql: str) -> None:
        self.clauses.append(sql)

    def equal(self, column: str, value: Any, op: str = "=") -> None:
        """``column op value``, unless the value is None (no condition)."""
        if value is not None:
            self.add(f"{column} {op} {self.value(value)}")

    def among(self, column: str, values: Sequence[Any] | None) -> None:
        """``column IN (values)`` (an empty list matches nothing), unless None."""
        if values is None:
            return
        self.add(f"{column} IN ({self.values(values)})" if values else "FALSE")

    def values(self, values: Sequence[Any]) -> str:
        """Placeholders for ``values``, comma-separated (one parameter each)."""
        return ", ".join(self.value(v) for v in values)

    def compiled(self) -> tuple[str, dict[str, Any]]:
        """The fragment (``TRUE`` without clauses) and its parameters."""
        return " AND ".join(self.clauses) or "TRUE", self.params


def where_learnings(f: LearningFilter, d: Dialect) -> tuple[str, dict[str, Any]]:
    """Compile a learning filter to a WHERE fragment (without the org condition)."""
    w = Where(d)
    if f.kinds:
        w.among("kind", [k.value for k in f.kinds])
    w.among("id", f.ids)
    w.among("profile_id", f.profile_ids)
    for column in ("user_id", "agent_version", "playbook_name", "request_id"):
        w.equal(column, getattr(f, column))
    w.among("status", None if f.statuses is None else [s.value for s in f.statuses])
    if f.approvals is not None:
        approvals = [a.value for a in f.approvals]
        inner = f"approval IN ({w.values(approvals)})" if approvals else "FALSE"
        w.add(f"(kind <> {w.value(LearningKind.AGENT_PLAYBOOK.value)} OR {inner})")
    if f.source is not None:
        w.add(f"lower(coalesce(source, '')) = {w.value(f.source.lower())}")
    if f.tags is not None and not f.tags:
        w.add("FALSE")
    elif f.tags is not None:
        w.add(d.queries.render("tags_overlap", {"tags": w.value(d.bind_list(list(f.tags)))}))
    w.equal("created_at", f.created_after, ">=")
    w.equal("created_at", f.created_before, "<=")
    w.equal("updated_at", f.updated_after, ">=")
    w.equal("updated_at", f.updated_before, "<=")
    w.equal("expires_at", f.active_at, ">")
    w.equal("expires_at", f.expired_at, "<=")
    return w.compiled()


def where_interactions(f: InteractionFilter, d: Dialect) -> tuple[str, dict[str, Any]]:
    """Compile an interaction filter to a WHERE fragment (without the org condition)."""
    w = Where(d)
    w.among("id", f.ids)
    w.among("request_id", f.request_ids)
    w.equal("user_id", f.user_id)
    w.equal("session_id", f.session_id)
    w.equal("id", f.after_id, ">")
    w.equal("id", f.up_to_id, "<=")
    w.equal("created_at", f.created_after, ">=")
    w.equal("created_at", f.created_before, "<=")
    return w.compiled()


def where_requests(f: RequestFilter, d: Dialect) -> tuple[str, dict[str, Any]]:
    """Compile a request filter to a WHERE fragment (without the org condition)."""
    w = Where(d)
    w.among("request_id", f.request_ids)
    w.equal("user_id", f.user_id)
    w.equal("session_id", f.session_id)
    w.equal("agent_version", f.agent_version)
    w.equal("created_at", f.created_after, ">=")
    w.equal("created_at", f.created_before, "<=")
    if f.source is not None:
        w.add(f"lower(source) = {w.value(f.source.lower())}")
    return w.compiled()


def where_jobs(
    d: Dialect,
    *,
    statuses: Sequence[JobStatus] | None,
    request_id: str | None,
    task: str | None,
    key: str | None,
) -> tuple[str, dict[str, Any]]:
    """The WHERE fragment of ``Storage.list_jobs`` (without the org condition)."""
    w = Where(d)
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
    events: Sequence[str] | None = None,
) -> tuple[str, dict[str, Any]]:
    """The WHERE fragment of ``Storage.list_events`` (without the org condition)."""
    w = Where(d)
    w.among("learning_id", None if learning_ids is None else list(learning_ids))
    w.equal("user_id", user_id)
    w.among("kind", None if kinds is None else [str(k) for k in kinds])
    w.among("event", None if events is None else [str(e) for e in events])
    return w.compiled()


def where_stream_events(
    d: Dialect,
    *,
    types: Sequence[str] | None,
    kinds: Sequence[str] | None,
    user_id: str | None,
) -> tuple[str, dict[str, Any]]:
    """The WHERE fragment of ``Storage.list_stream_events`` (without the org and seq conditions)."""
    w = Where(d)
    w.among("type", None if types is None else list(types))
    w.among("kind", None if kinds is None else list(kinds))
    w.equal("user_id", user_id)
    return w.compiled()


def where_evaluations(d: Dialect, **equal: Any) -> tuple[str, dict[str, Any]]:
    """The WHERE fragment of ``Storage.list_evaluations``: each given column equals its value
    (is among them, for a list), ``created_after`` and ``created_before`` bound ``created_at``
    (without the org condition)."""
    w = Where(d)
    w.equal("created_at", equal.pop("created_after", None), ">=")
    w.equal("created_at", equal.pop("created_before", None), "<=")
    for column, value in equal.items():
        if isinstance(value, list):
            w.among(column, value)
        else:
            w.equal(column, value)
    return w.compiled()
