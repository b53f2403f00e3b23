"""The one output layer: JSON for scripts, tables for people, one-line errors with exit codes."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest
import typer
from pydantic import BaseModel

from reflexio.cli.output import EXIT_CODES, Result, Table, jsonable, run
from reflexio.errors import (
    AuthenticationError,
    NotFoundError,
    ReflexioError,
    ServiceUnavailableError,
    StorageError,
    ValidationError,
)
from reflexio.models import PlaybookStatus


class _Model(BaseModel):
    name: str
    status: PlaybookStatus


@dataclass
class _Record:
    id: int
    where: Path


def test_jsonable_converts_models_dataclasses_enums_and_paths() -> None:
    data = {"m": _Model(name="a", status=PlaybookStatus.APPROVED), "r": _Record(1, Path("/x")), "t": (1, 2)}
    assert jsonable(data) == {
        "m": {"name": "a", "status": "approved"},
        "r": {"id": 1, "where": "/x"},
        "t": [1, 2],
    }


def test_json_output_is_exactly_the_data(capsys: pytest.CaptureFixture[str]) -> None:
    run(True, lambda: Result({"key": "rfx_1"}, message="ignored", tables=[Table("t", ("a",), [{"a": 1}])]))
    assert json.loads(capsys.readouterr().out) == {"key": "rfx_1"}


def test_people_get_the_message_fields_and_tables(capsys: pytest.CaptureFixture[str]) -> None:
    rows = [{"id": 7, "created_at": 0, "content": "x" * 500, "tags": ["a", "b"]}]
    run(
        False,
        lambda: Result(
            {}, message="hello", fields={"k": "v"}, tables=[Table("T", ("id", "tags", "content"), rows)]
        ),
    )
    out = capsys.readouterr().out
    assert out.startswith("hello\nk: v\n")
    assert "a, b" in out and "…" in out


def test_an_empty_table_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    run(False, lambda: Result([], tables=[Table("Jobs", ("id",), [], empty="no jobs")]))
    assert capsys.readouterr().out.strip() == "Jobs: no jobs"


@pytest.mark.parametrize(
    ("error", "code", "status"),
    [
        (ValidationError("bad"), "validation_error", 2),
        (AuthenticationError("who"), "authentication_required", 3),
        (NotFoundError("gone"), "not_found", 4),
        (StorageError("down"), "storage_error", 6),
        (ReflexioError("odd"), "internal_error", 1),
        (ValueError("plain"), "validation_error", 2),
        (FileNotFoundError(2, "No such file or directory", "/nope"), "os_error", 1),
    ],
)
def test_failures_print_one_json_object_and_exit_with_their_status(
    error: Exception, code: str, status: int, capsys: pytest.CaptureFixture[str]
) -> None:
    def action() -> Result:
        raise error

    with pytest.raises(typer.Exit) as exited:
        run(True, action)
    assert exited.value.exit_code == status
    body = json.loads(capsys.readouterr().out)
    assert body["error"] == code and set(body) == {"error", "detail"}


def test_people_get_one_line_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    def action() -> Result:
        raise ServiceUnavailableError("cannot reach Reflexio at http://127.0.0.1:8081")

    with pytest.raises(typer.Exit):
        run(False, action)
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.strip() == "Error: cannot reach Reflexio at http://127.0.0.1:8081"


def test_every_error_kind_has_a_distinct_meaning() -> None:
    assert EXIT_CODES[ServiceUnavailableError] == 6
    assert len(set(EXIT_CODES.values())) == 5  # bad input, auth, not found, conflict, unavailable


def test_a_result_can_ask_for_a_non_zero_exit(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(typer.Exit) as exited:
        run(True, lambda: Result({"ok": False}, exit_code=1))
    assert exited.value.exit_code == 1
    assert json.loads(capsys.readouterr().out) == {"ok": False}
