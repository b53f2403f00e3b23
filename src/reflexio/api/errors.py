"""Every failure leaves the API as a real status code with one JSON shape, documented.

The body is ``{success: false, error, detail, message}`` (``details`` when there is more;
``models.ErrorResponse``), so the 0.2.16 client, which raises on any 4xx/5xx, fails loudly,
and anyone who reads the body learns what was wrong. ``ReflexioError`` subclasses carry their
own status (``reflexio.errors``, shared with the client); :data:`FRAMEWORK_ERRORS` is the one
table for everything else the stack raises. Oversized bodies are refused here too, before any
route reads them.

Every route documents the statuses it can answer with (:func:`documented`), so the OpenAPI
document lists each one with this body. An unexpected exception becomes a 500 in the same
shape *and stops there* (:class:`CatchAll`): letting it reach the server would make uvicorn
close the keep-alive connection after the response, failing the client's next request on it.
"""

from __future__ import annotations

import logging
import math
import re
from typing import Any

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.routing import compile_path
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from reflexio.errors import (
    AuthenticationError,
    PayloadTooLargeError,
    ReflexioError,
    ValidationError,
    error_for_status,
)
from reflexio.models import ErrorResponse
from reflexio.models.fields import NON_BLANK_PATTERN
from reflexio.service.org_config import describe_validation_errors

__all__ = [
    "API_ERRORS",
    "FRAMEWORK_ERRORS",
    "BodySizeLimit",
    "CatchAll",
    "documented",
    "error_response",
    "install",
]

log = logging.getLogger(__name__)

#: Exceptions raised by FastAPI/Starlette rather than by our code, and the error they stand for.
FRAMEWORK_ERRORS: dict[type[Exception], type[ReflexioError]] = {
    RequestValidationError: ValidationError,
}

#: Where a request-validation error's location starts with one of these, it is dropped.
_LOCATION_ROOTS = ("body", "query", "path", "header")

#: What each error status means, as the OpenAPI document says it.
_STATUS_MEANINGS: dict[int, str] = {
    400: "The request cannot be understood",
    401: "API keys exist and the request carries no valid one (`Authorization: Bearer <key>`)",
    403: "No API key exists and the client is not on this machine, or the caller may not do this",
    404: "The addressed object does not exist in the caller's org",
    409: "The request contradicts stored state (a reused id with other content)",
    413: "The request body is larger than the server accepts",
    422: "The request is not valid: `details.errors` lists each problem and the field it is in",
    429: "A quota or rate limit is reached: `Retry-After` says when to try again",
    500: "The server failed unexpectedly; the server log has the details",
    503: "A dependency (storage, embedder) cannot serve right now: retry after `Retry-After`",
}

#: What any ``/api`` route can answer besides its own success: auth, size, input, load, failure.
API_ERRORS: tuple[int, ...] = (401, 403, 413, 422, 429, 500, 503)


def documented(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The OpenAPI ``responses`` entries of these error statuses, each with the error body."""
    return {status: {"model": ErrorResponse, "description": _STATUS_MEANINGS[status]} for status in statuses}


def error_response(error: ReflexioError, status_code: int | None = None) -> JSONResponse:
    """The JSON response for a typed error.

    401s say how to authenticate; an error that knows when a retry may succeed (a rate
    limit, a quota, an outage) says so in ``Retry-After`` (whole seconds, at least 1).
    """
    headers: dict[str, str] = {}
    if isinstance(error, AuthenticationError):
        headers["WWW-Authenticate"] = "Bearer"
    if error.retry_after is not None:
        headers["Retry-After"] = str(max(1, math.ceil(error.retry_after)))
    return JSONResponse(error.to_body(), status_code=status_code or error.status_code, headers=headers)


async def _reflexio_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ReflexioError)
    if exc.status_code >= 500:
        log.warning("%s %s failed: %s", request.method, request.url.path, exc.message)
    return error_response(exc)


async def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = [_plain(e) for e in exc.errors()]
    message = describe_validation_errors(errors, skip=_LOCATION_ROOTS)
    return error_response(FRAMEWORK_ERRORS[RequestValidationError](message, details={"errors": errors}))


def _plain(error: Any) -> dict[str, Any]:
    """A validation error without the input (it may hold secrets) or non-JSON context."""
    kind = error.get("type")
    if kind == "json_invalid" and "ctx" in error:
        reason = (error.get("ctx") or {}).get("error", "")
        return {"type": "json_invalid", "loc": ["body"], "msg": f"the body is not valid JSON ({reason})"}
    message = error.get("msg")
    if kind == "string_pattern_mismatch" and (error.get("ctx") or {}).get("pattern") == NON_BLANK_PATTERN:
        kind, message = "string_blank", "must not be empty or blank"
    elif kind == "extra_forbidden":
        message = "is not a field of this request (check its spelling)"
    return {"type": kind, "loc": list(error.get("loc", ())), "msg": message}


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    """Starlette's own errors (unknown path, wrong method, 413) in our shape and status."""
    assert isinstance(exc, HTTPException)
    error = error_for_status(exc.status_code, str(exc.detail))
    body = error.to_body()
    if type(error) is ReflexioError:  # a status with no class of its own (405...)
        body["error"] = f"http_{exc.status_code}"
    headers = dict(exc.headers or {})
    allowed = _allowed_methods(request) if exc.status_code == 405 else []
    if allowed:
        headers["Allow"] = ", ".join(allowed)
    return JSONResponse(body, status_code=exc.status_code, headers=headers)


def _allowed_methods(request: Request) -> list[str]:
    """Every method the OpenAPI document lists for this path (RFC 9110's ``Allow``).

    Starlette's own 405 names only the methods of the first route at the path, so a path that
    two routes share (``GET`` and ``POST /api/retrieval_experiments``) would advertise one;
    the document is the contract, so its list is the answer. Empty for an undocumented path.
    """
    app = request.app
    table: list[tuple[re.Pattern[str], list[str]]] | None = getattr(app.state, "allowed_methods", None)
    if table is None:
        paths = app.openapi().get("paths", {})
        table = [(compile_path(path)[0], sorted(m.upper() for m in paths[path])) for path in paths]
        app.state.allowed_methods = table
    return next((methods for pattern, methods in table if pattern.match(request.url.path)), [])


class CatchAll:
    """Answer any exception nothing else handled with a 500 in the error shape, and stop it.

    Starlette's own handler re-raises after answering, so the server closes the connection;
    this sits inside it and does not. If the response had already started there is nothing
    to answer with, so the exception goes on and the server closes the connection, the only
    honest end of a half-sent response.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracked(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracked)
        except Exception as exc:
            log.exception("%s %s crashed", scope.get("method"), scope.get("path"), exc_info=exc)
            if started:
                raise
            response = error_response(ReflexioError("internal server error; the server log has the details"))
            await response(scope, receive, send)


class BodySizeLimit:
    """Refuse request bodies over ``max_bytes`` with a 413: by Content-Length, and while streaming.

    A declared length is refused before reading anything; a chunked body is counted as it
    arrives and refused as soon as it passes the limit, so no route ever holds more.
    """

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.max_bytes:
            await error_response(self._too_large(declared))(scope, receive, send)
            return
        received = 0

        async def counted() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise HTTPException(413, detail=self._too_large(received).message)
            return message

        await self.app(scope, counted, send)

    def _too_large(self, size: int) -> PayloadTooLargeError:
        return PayloadTooLargeError(
            f"request body of {size}+ bytes exceeds the limit of {self.max_bytes} bytes",
            details={"max_body_bytes": self.max_bytes},
        )


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


def install(app: FastAPI, *, max_body_bytes: int) -> None:
    """Register the error handlers and the body size limit on ``app``."""
    app.add_exception_handler(ReflexioError, _reflexio_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(HTTPException, _http_error)
    app.add_middleware(BodySizeLimit, max_bytes=max_body_bytes)
    app.add_middleware(CatchAll)  # the outermost but one: it sees every failure of the others
