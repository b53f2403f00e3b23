"""What every request's input must be before a route reads it, checked once for all routes.

The models say what each field means; this says what any JSON the server accepts is:

* valid UTF-8 and strict JSON (no ``NaN``/``Infinity``, at most :data:`MAX_DEPTH` levels deep);
* no string (value or key) holding U+0000 or a lone surrogate such as ``\\ud800``: neither can
  be stored as text by both databases (PostgreSQL refuses NUL, SQLite keeps it; a surrogate
  cannot be encoded at all), so they are refused here, the same on every backend;
* no integer outside the signed 64 bits a ``BIGINT`` holds;
* query parameters without NUL either.

Each problem is a 422 in the API's validation shape whose ``loc`` names the field
(``["body", "interaction_data_list", 0, "content"]``), and a body that is not JSON says what
is wrong and where (line and column). The parsed body is handed to FastAPI, so it is parsed
once.
"""

from __future__ import annotations

import email.message
import json
from collections.abc import Callable, Coroutine
from typing import Any, Final

from fastapi.exceptions import RequestValidationError
from starlette.requests import Request
from starlette.responses import Response

from reflexio.models.fields import INT64_MAX

__all__ = ["MAX_DEPTH", "checked", "problems_in"]

#: How deeply a JSON body may nest objects and arrays.
MAX_DEPTH: Final = 64
_INT64_MIN: Final = -INT64_MAX - 1

Endpoint = Callable[[Request], Coroutine[Any, Any, Response]]


def checked(handler: Endpoint, *, has_body: bool) -> Endpoint:
    """Wrap a route's request handler so its input is checked (and parsed) first."""

    async def check_then_handle(request: Request) -> Response:
        problems = _query_problems(request)
        if has_body:
            problems.extend(await _body_problems(request))
        if problems:
            raise RequestValidationError(problems)
        return await handler(request)

    return check_then_handle


def _query_problems(request: Request) -> list[dict[str, Any]]:
    return [
        _problem(("query", _printable(name)), _NUL_MESSAGE, "string_nul_character")
        for name, value in request.query_params.multi_items()
        if "\x00" in value or "\x00" in name
    ]


async def _body_problems(request: Request) -> list[dict[str, Any]]:
    raw = await request.body()
    if not raw or not _is_json(request.headers.get("content-type")):
        return []
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return [_not_json(f"it is not valid UTF-8 (byte {exc.start} is {raw[exc.start]:#04x})")]
    try:
        body = json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as exc:
        return [_not_json(f"{exc.msg} at line {exc.lineno}, column {exc.colno}")]
    except ValueError as exc:  # NaN or Infinity
        return [_not_json(str(exc))]
    except RecursionError:
        return [_not_json(f"it nests deeper than {MAX_DEPTH} levels")]
    problems = problems_in(body)
    if not problems:
        request._json = body  # FastAPI reads the body through request.json(): parse it once
    return problems


def _is_json(content_type: str | None) -> bool:
    """FastAPI's own rule: no content type, or ``application/json`` / ``application/*+json``."""
    if not content_type:
        return True
    message = email.message.Message()
    message["content-type"] = content_type
    subtype = message.get_content_subtype()
    return message.get_content_maintype() == "application" and (
        subtype == "json" or subtype.endswith("+json")
    )


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _not_json(reason: str) -> dict[str, Any]:
    return {"type": "json_invalid", "loc": ["body"], "msg": f"the body is not valid JSON: {reason}"}


_NUL_MESSAGE: Final = "must not contain the NUL character (U+0000)"
_SURROGATE_MESSAGE: Final = "must not contain a lone surrogate such as \\ud800 (it is not valid Unicode)"
_INT_MESSAGE: Final = f"must be an integer between {_INT64_MIN} and {INT64_MAX} (64 bits)"


def problems_in(body: Any) -> list[dict[str, Any]]:
    """Every string with NUL or a lone surrogate and every integer beyond 64 bits in ``body``.

    Walked iteratively with an explicit stack, so a deeply nested body costs no recursion.
    """
    problems: list[dict[str, Any]] = []
    stack: list[tuple[tuple[str | int, ...], Any]] = [(("body",), body)]
    while stack:
        path, value = stack.pop()
        if len(path) > MAX_DEPTH + 1:
            problems.append(_problem(path, f"nests deeper than {MAX_DEPTH} levels", "too_deep"))
        elif isinstance(value, str):
            problems.extend(_text_problems(path, value))
        elif isinstance(value, bool):
            continue
        elif isinstance(value, int):
            if not _INT64_MIN <= value <= INT64_MAX:
                problems.append(_problem(path, _INT_MESSAGE, "int_out_of_range"))
        elif isinstance(value, dict):
            for key, item in value.items():
                where = (*path, _printable(key))
                problems.extend(_text_problems(where, key))
                stack.append((where, item))
        elif isinstance(value, list):
            stack.extend(((*path, index), item) for index, item in enumerate(value))
    return sorted(problems, key=lambda problem: [str(part) for part in problem["loc"]])


def _text_problems(path: tuple[str | int, ...], text: str) -> list[dict[str, Any]]:
    if "\x00" in text:
        return [_problem(path, _NUL_MESSAGE, "string_nul_character")]
    if _has_surrogate(text):
        return [_problem(path, _SURROGATE_MESSAGE, "string_lone_surrogate")]
    return []


def _has_surrogate(text: str) -> bool:
    """A lone surrogate: JSON's ``\\ud800`` escapes decode to one, and UTF-8 cannot hold it."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _printable(key: str) -> str:
    """A key as it can be named in an error body: NUL and lone surrogates escaped."""
    if "\x00" not in key and not _has_surrogate(key):
        return key
    return key.encode("utf-8", "backslashreplace").decode("utf-8").replace("\x00", "\\u0000")


def _problem(path: tuple[str | int, ...], message: str, kind: str) -> dict[str, Any]:
    return {"type": kind, "loc": list(path), "msg": message}
