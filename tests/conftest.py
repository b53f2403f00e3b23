"""Shared fixtures: the real bundled embedder and every storage engine.

The storage-backed suites run on SQLite and PostgreSQL, the two engines; ``memory://`` is
SQLite on a throwaway file (``tests/storage/test_memory.py`` checks it stays that). PostgreSQL
tests run when REFLEXIO_TEST_POSTGRES_URL is set (scripts/test starts a server and sets it);
each test gets its own schema, so tests never see each other's rows.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

from reflexio.embed import Embedder, open_embedder
from reflexio.storage import Storage, open_storage

POSTGRES_URL = os.environ.get("REFLEXIO_TEST_POSTGRES_URL", "")
BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
#: The search tests also run PostgreSQL with no in-process index (every search in SQL: what an
#: org past the memory budget gets, see storage.postgres_index).
SEARCH_BACKENDS = [*BACKENDS, pytest.param("postgres-sql", marks=pytest.mark.postgres)]


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    return open_embedder("wordllama")


_SCHEMAS: list[str] = []


def postgres_schema_url() -> str:
    """A URL whose connections use a fresh schema (pgvector stays in public)."""
    import psycopg

    schema = "t_" + uuid.uuid4().hex[:12]
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute(f"CREATE SCHEMA {schema}")
    _SCHEMAS.append(schema)
    sep = "&" if "?" in POSTGRES_URL else "?"
    return f"{POSTGRES_URL}{sep}options=-csearch_path%3D{schema},public"


def storage_url(backend: str, tmp_path: os.PathLike[str]) -> str:
    """A fresh store of ``backend`` ("sqlite" in ``tmp_path``, or "postgres"/"postgres-sql")."""
    if backend == "sqlite":
        return f"sqlite:///{os.fspath(tmp_path)}/reflexio.db"
    if not POSTGRES_URL:
        pytest.skip("REFLEXIO_TEST_POSTGRES_URL is not set")
    return postgres_schema_url()


def search_index_mb(backend: str) -> int:
    """The in-process search-index budget a backend of SEARCH_BACKENDS runs with."""
    return 0 if backend == "postgres-sql" else 1024


@pytest.fixture(params=BACKENDS)
def storage(
    request: pytest.FixtureRequest, tmp_path: os.PathLike[str], embedder: Embedder
) -> Iterator[Storage]:
    store = open_storage(storage_url(request.param, tmp_path), embedder)
    yield store
    store.close()


@pytest.fixture(params=SEARCH_BACKENDS)
def search_storage(
    request: pytest.FixtureRequest, tmp_path: os.PathLike[str], embedder: Embedder
) -> Iterator[Storage]:
    """``storage``, and PostgreSQL searching in SQL too (for the files that test search)."""
    url = storage_url(request.param, tmp_path)
    store = open_storage(url, embedder, search_index_mb=search_index_mb(request.param))
    yield store
    store.close()


@pytest.fixture
def memory_storage(embedder: Embedder) -> Iterator[Storage]:
    """A ``memory://`` store (SQLite on a throwaway file), closed after the test."""
    store = open_storage("memory://", embedder)
    yield store
    store.close()


@pytest.fixture(scope="session", autouse=True)
def _drop_postgres_schemas() -> Iterator[None]:
    """Drop this session's test schemas at the end so the throwaway server stays small."""
    yield
    if not (POSTGRES_URL and _SCHEMAS):
        return
    import psycopg

    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        for schema in _SCHEMAS:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
