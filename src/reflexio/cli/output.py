"""How every command's result reaches the terminal: Rich tables for people, JSON for scripts.

Commands never print. Each returns a :class:`Result` (the data, plus how a person should see
it) through :func:`run`, which renders it as tables and key/value lines, or, with ``--json``,
as exactly one JSON document on stdout. Failures are rendered here too: one line on stderr
(or ``{"error": ..., "detail": ...}`` on stdout with ``--json``) and an exit code that says
what kind of failure it was, so scripts can branch on it without parsing text.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import typer

if TYPE_CHECKING:
    from rich.table import Table as RichTable

from reflexio.errors import (
    AuthenticationError,
    BadRequestError,
    ConflictError,
    NotFoundError,
    PermissionDeniedError,
    ReflexioError,
    ServiceUnavailableError,
    ValidationError,
)

__all__ = ["EXIT_CODES", "Result", "Table", "emit", "fail", "jsonable", "run"]

#: Exit status per error kind (the most specific class wins); anything else exits 1.
EXIT_CODES: Mapping[type[ReflexioError], int] = {
    BadRequestError: 2,
    ValidationError: 2,
    AuthenticationError: 3,
    PermissionDeniedError: 3,
    NotFoundError: 4,
    ConflictError: 5,
    ServiceUnavailableError: 6,
}

#: Longest text shown in a table cell; ``--json`` always carries the whole value.
_CELL_CHARS = 200
#: Headers for columns whose JSON key is long: a table must fit 80 columns without breaking a
#: header in the middle of a word, so headers are short single words and never narrower than
#: themselves (long values fold instead).
HEADERS: Mapping[str, str] = {
    "profile_id": "id",
    "user_playbook_id": "id",
    "agent_playbook_id": "id",
    "profile_time_to_live": "ttl",
    "last_modified_timestamp": "updated",
    "agent_version": "version",
    "playbook_status": "review",
    "created_at": "created",
    "updated_at": "updated",
    "revoked_at": "revoked",
    "run_at": "due",
    "max_attempts": "max",
    "last_error": "error",
    "log_file": "log",
    "user_id": "user",
    "org_id": "org",
}


@dataclass(frozen=True, slots=True)
class Table:
    """Rows a person reads as a table: one mapping per row, shown in ``columns`` order."""

    title: str
    columns: Sequence[str]
    rows: Sequence[Mapping[str, Any]]
    empty: str = "nothing found"


@dataclass(frozen=True, slots=True)
class Result:
    """What a command produced.

    Attributes:
        data: Printed as JSON with ``--json`` (models, dataclasses, paths and enums are converted).
        message: One line for a person, printed first.
        fields: Key/value lines for a person (a single object's interesting fields).
        tables: Tables for a person (lists of objects).
        document: The data is itself the output (an export): printed as JSON for people too.
        exit_code: Status to exit with after printing (a diagnosis that found errors).
    """

    data: Any
    message: str = ""
    fields: Mapping[str, Any] = field(default_factory=dict)
    tables: Sequence[Table] = ()
    document: bool = False
    exit_code: int = 0


def _pydantic() -> Any:
    """pydantic if something imported it already, else None.

    A value can only be a pydantic model (or a pydantic error) once pydantic is imported, and
    commands that never touch a model (``--help``, ``services``) should not pay to import it.
    """
    return sys.modules.get("pydantic")


def jsonable(data: Any) -> Any:
    """``data`` with pydantic models, dataclasses, enums, paths and times turned into JSON types."""
    pydantic = _pydantic()
    if pydantic is not None and isinstance(data, pydantic.BaseModel):
        return data.model_dump(mode="json")
    if dataclasses.is_dataclass(data) and not isinstance(data, type):
        return jsonable(dataclasses.asdict(data))
    if isinstance(data, Mapping):
        return {str(key): jsonable(value) for key, value in data.items()}
    if isinstance(data, list | tuple | set | frozenset):
        return [jsonable(item) for item in data]
    if isinstance(data, enum.Enum):
        return jsonable(data.value)
    if isinstance(data, Path):
        return str(data)
    if isinstance(data, dt.datetime | dt.date):
        return data.isoformat()
    return data


def print_json(data: Any) -> None:
    """Print one JSON document on stdout (plain text, never styled or wrapped)."""
    typer.echo(json.dumps(jsonable(data), indent=2, ensure_ascii=False))


def emit(result: Result, *, as_json: bool) -> None:
    """Render ``result`` as JSON or for a person."""
    if as_json or result.document:
        print_json(result.data)
        return
    from rich.console import Console

    console = Console(soft_wrap=True)
    if result.message:
        console.print(result.message, markup=False, highlight=False)
    for key, value in result.fields.items():
        if isinstance(value, list | tuple) and value and all(isinstance(item, str) for item in value):
            console.print(f"{key}:", markup=False, highlight=False)  # one line per item, uncut
            for item in value:
                console.print(f"  - {item}", markup=False, highlight=False)
        else:
            console.print(f"{key}: {_cell(key, value)}", markup=False, highlight=False)
    for table in result.tables:
        console.print(_rich_table(table))


def _rich_table(table: Table) -> RichTable | str:
    from rich.table import Table as RichTable

    if not table.rows:
        return f"{table.title}: {table.empty}" if table.title else table.empty
    rendered = RichTable(title=table.title or None, title_justify="left", show_lines=False)
    for column in table.columns:
        header = HEADERS.get(column, column)
        rendered.add_column(header, overflow="fold", min_width=len(header))
    for row in table.rows:
        rendered.add_row(*(_cell(column, row.get(column)) for column in table.columns))
    return rendered


def _cell(column: str, value: Any) -> str:
    """A value as a short string: epoch times as dates, lists joined, long text cut."""
    if value is None:
        return ""
    if isinstance(value, int | float) and not isinstance(value, bool) and _is_time(column):
        return _when(float(value))
    if isinstance(value, float):
        return f"{value:.3f}"
    if isinstance(value, list | tuple):
        text = ", ".join(_cell("", item) for item in value)
    elif isinstance(value, Mapping):
        text = json.dumps(jsonable(value), ensure_ascii=False)
    else:
        text = str(jsonable(value))
    return text if len(text) <= _CELL_CHARS else text[: _CELL_CHARS - 1] + "…"


def _is_time(column: str) -> bool:
    return column.endswith(("_at", "timestamp")) or column in {"created", "revoked", "started"}


def _when(epoch: float) -> str:
    if epoch <= 0:
        return ""
    return dt.datetime.fromtimestamp(epoch).astimezone().strftime("%Y-%m-%d %H:%M:%S")


#: What a person does about a failure of this kind, said after the problem.
_FIXES: Mapping[type[ReflexioError], str] = {
    AuthenticationError: (
        "set REFLEXIO_API_KEY or pass --api-key (an administrator creates keys with `reflexio keys create`)"
    ),
}


def _describe(exc: Exception) -> tuple[str, str, int]:
    """The JSON ``error`` code, the message (with its fix) and the exit status of a failure."""
    if isinstance(exc, ReflexioError):
        status = next((EXIT_CODES[cls] for cls in type(exc).__mro__ if cls in EXIT_CODES), 1)
        fix = next((_FIXES[cls] for cls in type(exc).__mro__ if cls in _FIXES), None)
        return exc.code, f"{exc.message}; {fix}" if fix else exc.message, status
    pydantic = _pydantic()
    if pydantic is not None and isinstance(exc, pydantic.ValidationError):
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'value'}: {e['msg']}" for e in exc.errors())
        return ValidationError.code, problems, EXIT_CODES[ValidationError]
    if isinstance(exc, ValueError):
        return ValidationError.code, str(exc), EXIT_CODES[ValidationError]
    if isinstance(exc, OSError):
        where = f" ({exc.filename})" if exc.filename else ""
        return "os_error", f"{exc.strerror or exc}{where}", 1
    return "internal_error", f"{type(exc).__name__}: {exc}", 1


def fail(exc: Exception, *, as_json: bool) -> NoReturn:
    """Report a failure in one line (or one JSON object) and exit with its status."""
    code, message, status = _describe(exc)
    if as_json:
        print_json({"error": code, "detail": message})
    else:
        from rich.console import Console

        Console(stderr=True, soft_wrap=True).print(f"Error: {message}", markup=False, highlight=False)
    raise typer.Exit(status)


#: The failures a command reports as an error line rather than a traceback (pydantic's
#: ValidationError is a ValueError).
_EXPECTED = (ReflexioError, ValueError, OSError)


def run(as_json: bool, action: Callable[[], Result]) -> None:
    """Run a command's action and render its result or its failure."""
    try:
        result = action()
    except _EXPECTED as exc:
        fail(exc, as_json=as_json)
    emit(result, as_json=as_json)
    if result.exit_code:
        raise typer.Exit(result.exit_code)
