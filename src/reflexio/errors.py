"""Typed errors shared by the server and the client.

Domain, storage and service code raise these; the API maps each class to one HTTP status in a
single table (``reflexio.api.errors``), and the client maps responses back to the same classes.
A caller therefore catches ``NotFoundError`` the same way in-process or over HTTP.
"""

from __future__ import annotations

from typing import Any, ClassVar

__all__ = [
    "AuthenticationError",
    "BadRequestError",
    "ConflictError",
    "NotFoundError",
    "PayloadTooLargeError",
    "PermissionDeniedError",
    "QuotaExceededError",
    "RateLimitedError",
    "ReflexioError",
    "RequestCancelledError",
    "ServiceUnavailableError",
    "StorageError",
    "ValidationError",
    "error_for_status",
]


class ReflexioError(Exception):
    """Root of every error Reflexio raises on purpose.

    Attributes:
        message: What went wrong, in words a caller can act on.
        details: Optional structured context (field names, ids) for machines.
        status_code: The HTTP status this error travels as.
        code: A stable machine-readable name for the error kind.
    """

    status_code: ClassVar[int] = 500
    code: ClassVar[str] = "internal_error"

    def __init__(
        self, message: str, *, details: dict[str, Any] | None = None, retry_after: float | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.details = details or {}
        #: Seconds after which the same request may succeed (sent as ``Retry-After``).
        self.retry_after = retry_after

    def to_body(self) -> dict[str, Any]:
        """Render the JSON body the API sends (and the client parses back)."""
        body: dict[str, Any] = {
            "success": False,
            "error": self.code,
            "detail": self.message,
            "message": self.message,
        }
        if self.details:
            body["details"] = self.details
        return body


class ValidationError(ReflexioError):
    """The request is well-formed JSON but its content is not acceptable."""

    status_code = 422
    code = "validation_error"


class BadRequestError(ReflexioError):
    """The request cannot be understood (bad query parameters, malformed body)."""

    status_code = 400
    code = "bad_request"


class AuthenticationError(ReflexioError):
    """No valid API key was presented where one is required."""

    status_code = 401
    code = "authentication_required"


class PermissionDeniedError(ReflexioError):
    """The caller is known but may not do this (another org's data, a non-loopback client)."""

    status_code = 403
    code = "permission_denied"


class NotFoundError(ReflexioError):
    """The addressed object does not exist in the caller's org."""

    status_code = 404
    code = "not_found"


class ConflictError(ReflexioError):
    """The request contradicts stored state, e.g. a reused request_id with another payload."""

    status_code = 409
    code = "conflict"


class PayloadTooLargeError(ReflexioError):
    """The request body or one of its lists exceeds a size limit."""

    status_code = 413
    code = "payload_too_large"


class RateLimitedError(ReflexioError):
    """Too many requests (a rate limit, or failed authentications): retry after ``retry_after``."""

    status_code = 429
    code = "rate_limited"


class QuotaExceededError(RateLimitedError):
    """The org's plan allows no more of this until its quota resets (``details`` say which)."""

    code = "quota_exceeded"


class ServiceUnavailableError(ReflexioError):
    """A dependency (storage, embedder, LLM provider) cannot serve the request right now."""

    status_code = 503
    code = "service_unavailable"


class StorageError(ServiceUnavailableError):
    """The storage backend failed; nothing was half-written."""

    code = "storage_error"


class RequestCancelledError(ServiceUnavailableError):
    """Long work stopped before it wrote anything: the client left or the server is stopping."""

    code = "cancelled"


_BY_STATUS_CLASSES: tuple[type[ReflexioError], ...] = (
    BadRequestError,
    AuthenticationError,
    PermissionDeniedError,
    NotFoundError,
    ConflictError,
    PayloadTooLargeError,
    ValidationError,
    RateLimitedError,
    ServiceUnavailableError,
)
_BY_STATUS: dict[int, type[ReflexioError]] = {cls.status_code: cls for cls in _BY_STATUS_CLASSES}
_ALL_CLASSES: tuple[type[ReflexioError], ...] = (
    *_BY_STATUS_CLASSES,
    StorageError,
    QuotaExceededError,
    RequestCancelledError,
    ReflexioError,
)
_BY_CODE: dict[str, type[ReflexioError]] = {cls.code: cls for cls in _ALL_CLASSES}


def error_for_status(
    status_code: int,
    message: str,
    *,
    code: str | None = None,
    details: dict[str, Any] | None = None,
    retry_after: float | None = None,
) -> ReflexioError:
    """Rebuild the typed error a response stands for (used by the client).

    Args:
        status_code: The HTTP status of the response.
        message: The human-readable message from the body.
        code: The ``error`` field of the body, when present; it wins over the status.
        details: Structured details from the body.
        retry_after: Seconds from the ``Retry-After`` header, when there was one.

    Returns:
        An instance of the most specific ``ReflexioError`` subclass that matches.
    """
    cls = _BY_CODE.get(code or "") or _BY_STATUS.get(status_code) or ReflexioError
    return cls(message, details=details, retry_after=retry_after)
