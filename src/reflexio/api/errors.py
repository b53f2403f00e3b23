"""Every failure leaves the API as a real status code with one JSON shape.

The body is ``{success: false, error, detail, message}`` (``details`` when there is more),
so the 0.2.16 client, which raises on any 4xx/5xx, fails loudly, and anyone who reads the body
learns what was wrong. ``ReflexioError`` subclasses carry their own status (``reflexio.errors``,
shared with the client); :data:`FRAMEWORK_ERRORS` is the one table for everything else the
stack raises. Oversized bodies are refused here too, before any route reads them.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from reflexio.errors import (
    AuthenticationError,
    PayloadTooLargeError,
    ReflexioError,
    ValidationError,
    error_for_status,
)
from reflexio.service.org_config import describe_validation_errors

__all__ = ["FRAMEWORK_ERRORS", "BodySizeLimit", "error_response", "install"]

log = logging.getLogger(__name__)

#: Exceptions raised by FastAPI/Starlette rather than by our code, and the error they stand for.
FRAMEWORK_ERRORS: dict[type[Exception], type[ReflexioError]] = {
    RequestValidationError: ValidationError,
}

#: Where a request-validation error's location starts with one of these, it is dropped.
_LOCATION_ROOTS = ("body", "query", "path", "header")


def error_response(error: ReflexioError, status_code: int | None = None) -> JSONResponse:
    """The JSON response for a typed error (401s also say how to authenticate)."""
    headers = {"WWW-Authenticate": "Bearer"} if isinstance(error, AuthenticationError) else None
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
    if error.get("type") == "json_invalid":
        reason = (error.get("ctx") or {}).get("error", "")
        return {"type": "json_invalid", "loc": ["body"], "msg": f"body is not valid JSON ({reason})"}
    return {"type": error.get("type"), "loc": list(error.get("loc", ())), "msg": error.get("msg")}


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    """Starlette's own errors (unknown path, wrong method, 413) in our shape and status."""
    assert isinstance(exc, HTTPException)
    error = error_for_status(exc.status_code, str(exc.detail))
    body = error.to_body()
    if type(error) is ReflexioError:  # a status with no class of its own (405...)
        body["error"] = f"http_{exc.status_code}"
    return JSONResponse(body, status_code=exc.status_code, headers=exc.headers)


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    log.exception("%s %s crashed", request.method, request.url.path, exc_info=exc)
    return error_response(ReflexioError("internal server error; the server log has the details"))


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
    app.add_exception_handler(Exception, _unexpected)
    app.add_middleware(BodySizeLimit, max_bytes=max_body_bytes)
