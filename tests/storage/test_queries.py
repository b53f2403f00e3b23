"""The SQL lives in ``.sql`` files, under one set of query names for both dialects."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

import pytest

from reflexio.storage.queries import Queries, query_names

STORAGE = Path(__file__).parents[2] / "src" / "reflexio" / "storage"
#: A string that opens like a SQL statement, keywords in capitals as our SQL writes them
#: (what must live in a .sql file instead).
SQL_STATEMENT = re.compile(
    r"^\s*(SELECT\s|INSERT\s+INTO\s|UPDATE\s+\w+\s+SET\s|DELETE\s+FROM\s|PRAGMA\s|CREATE\s|ALTER\s"
    r"|DROP\s|COPY\s|EXPLAIN\s|SET\s+\w|BEGIN\b|COMMIT\b|ROLLBACK\b|WITH\s+\w+\s+AS\s)"
)


def test_both_dialects_name_the_same_queries() -> None:
    sqlite, postgres = query_names("sqlite"), query_names("postgres")
    assert len(set(sqlite)) == len(sqlite) and len(set(postgres)) == len(postgres)
    assert set(sqlite) - set(postgres) == set(), "named on SQLite only"
    assert set(postgres) - set(sqlite) == set(), "named on PostgreSQL only"
    assert sqlite == postgres, "same order in both files, so they read side by side"


@pytest.mark.parametrize("dialect", ["sqlite", "postgres"])
def test_engine_queries_never_shadow_shared_ones(dialect: str) -> None:
    shared, engine = query_names(dialect), query_names(dialect, "engine.sql")
    assert set(shared) & set(engine) == set()
    assert len(set(engine)) == len(engine)
    Queries(dialect)  # loads both files into one namespace, refusing a name defined twice


def test_a_query_name_defined_twice_is_refused() -> None:
    assert "ping" in query_names("sqlite")
    with pytest.raises(ValueError, match="defined twice"):
        Queries._merge({"ping": "SELECT 1"}, {"ping": "SELECT 2"}, "sqlite")


def _sql_strings(path: Path) -> list[str]:
    found = []
    for token in tokenize.generate_tokens(io.StringIO(path.read_text()).readline):
        if token.type == tokenize.STRING and SQL_STATEMENT.match(token.string.lstrip("rbfRBF").strip("\"'")):
            found.append(f"{path.name}:{token.start[0]}: {token.string[:60]}")
    return found


def test_no_sql_statement_is_written_in_storage_python() -> None:
    found = [hit for path in sorted(STORAGE.glob("*.py")) for hit in _sql_strings(path)]
    assert found == []


def test_the_check_finds_a_statement_written_in_python(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text('QUERY = "SELECT id FROM learnings"\nTEXT = "selected learnings"\n')
    assert [hit.split(":")[1] for hit in _sql_strings(module)] == ["1"]
