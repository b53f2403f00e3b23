"""How a client method becomes HTTP: one description per call, run by a sync or an async loop.

Every public method of the two clients is written once, as a *plan*: a generator that yields
:class:`Call` (one HTTP exchange) or :class:`Sleep` steps and returns the method's result.
A plan does no I/O itself, so the sync client (:func:`run_sync`) and the async client
(:func:`run_async`) drive the very same plan, and a method with several round trips (polling
an operation until it finishes) is no harder to share than a method with one.

This module also owns the wire conventions the server expects: request models are validated
locally and sent as JSON-mode dumps (datetimes as ISO strings), ``None`` keyword arguments are
dropped before validation, redirects are never followed, and every non-2xx answer becomes the
same :class:`~reflexio.errors.ReflexioError` subclass the server raised.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Generator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, Generic, TypeAlias, TypeVar, cast

import httpx
import pydantic

from reflexio._version import __version__
from reflexio.errors import ReflexioError, ServiceUnavailableError, error_for_status

__all__ = [
    "Call",
    "Plan",
    "Sleep",
    "When",
    "build",
    "client_options",
    "dump",
    "parse_as",
    "run_async",
    "run_sync",
    "single",
    "single_if",
]

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)
M = TypeVar("M", bound=pydantic.BaseModel)

#: A request-side time filter: a datetime (naive = UTC), epoch seconds, or an ISO 8601 string.
When: TypeAlias = datetime | int | float | str

_PREVIEW_CHARS: Final = 200


@dataclass(frozen=True, slots=True)
class Call(Generic[T_co]):
    """One HTTP exchange and how to read its answer.

    Attributes:
        method: HTTP method (DELETE routes carry JSON bodies, as Reflexio's do).
        path: Path below the base URL, e.g. ``/api/search``.
        parse: Turns the decoded JSON body into the method's result.
        params: Query string values; ``None`` values are left out.
        json: The JSON body, or ``None`` for no body.
        answers: Non-2xx statuses whose body is still the answer (``/health`` answers 503
            with a readiness report when a dependency is down).
    """

    method: str
    path: str
    parse: Callable[[Any], T_co]
    params: Mapping[str, Any] | None = None
    json: Any = None
    answers: Collection[int] = ()


@dataclass(frozen=True, slots=True)
class Sleep:
    """Wait before the next step (polling); the loop running the plan decides how to wait."""

    seconds: float


Step: TypeAlias = Call[Any] | Sleep
#: A method body: yields steps, receives each call's parsed answer, returns the result.
Plan: TypeAlias = Generator[Step, Any, T]


def single(call: Call[T]) -> Plan[T]:
    """The plan of a method that is exactly one call."""
    result: T = yield call
    return result


def single_if(call: Call[T], wanted: bool) -> Plan[T | None]:
    """One call whose answer is returned only when ``wanted``.

    Reflexio's client sent these calls in the background and dropped the answer unless
    ``wait_for_response=True``; here the call is always made and its errors always raised, and
    only the answer is left out, so the signature and the ``None`` stay compatible.
    """
    result: T = yield call
    return result if wanted else None


def parse_as(model: type[M]) -> Callable[[Any], M]:
    """A parser that validates the body as ``model`` (unknown keys are ignored by the models)."""
    return model.model_validate


def build(model: type[M], request: M | Mapping[str, Any] | pydantic.BaseModel | None, **fields: Any) -> M:
    """Validate a request locally, before anything is sent.

    ``request`` may be the model itself, another pydantic model or a mapping; keyword fields
    whose value is ``None`` are dropped (so the model's defaults apply), and the remaining
    ones override ``request``. Reflexio's client ignored the keywords whenever ``request``
    was given; merging them instead means no argument is ever silently lost.

    Raises:
        pydantic.ValidationError: The request is malformed; nothing was sent.
    """
    given = {name: value for name, value in fields.items() if value is not None}
    if isinstance(request, model) and not given:
        return request
    if isinstance(request, pydantic.BaseModel):
        base: dict[str, Any] = request.model_dump(exclude_unset=True)
    else:
        base = dict(request or {})
    return model.model_validate({**base, **given})


def dump(model: pydantic.BaseModel) -> Any:
    """The JSON body of a request model: JSON mode, so datetimes travel as ISO 8601 strings."""
    return model.model_dump(mode="json")


def _user_agent() -> str:
    return f"reflexio-python/{__version__}"


def client_options(base_url: str, api_key: str, timeout: float) -> dict[str, Any]:
    """Keyword arguments for ``httpx.Client``/``httpx.AsyncClient``, the same for both.

    Redirects are never followed: a POST silently turned into a GET by a redirect once made
    publishes disappear, so any 3xx is reported as an error instead.
    """
    headers = {"Accept": "application/json", "User-Agent": _user_agent()}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    # Every request goes to base_url and redirects are refused, so a plain-http server is never
    # reached over TLS: loading the CA bundle for it would only add to every command's start-up
    # (bench/results/design-figures.md; the CLI's start-up times are bench/results/cli.json).
    verify = base_url.lower().startswith("https://")
    return {
        "base_url": base_url,
        "headers": headers,
        "timeout": timeout,
        "follow_redirects": False,
        "verify": verify,
    }


# ---------------------------------------------------------------------------------------------
# Running plans
# ---------------------------------------------------------------------------------------------


def run_sync(http: httpx.Client, plan: Plan[T]) -> T:
    """Drive ``plan`` to its result with blocking HTTP; errors of a call are thrown into it."""
    value: Any = None
    error: ReflexioError | None = None
    while True:
        try:
            step = plan.throw(error) if error is not None else plan.send(value)
        except StopIteration as stop:
            return cast(T, stop.value)
        value, error = None, None
        if isinstance(step, Sleep):
            time.sleep(step.seconds)
            continue
        try:
            value = _answer(step, _send_sync(http, step))
        except ReflexioError as exc:
            error = exc


async def run_async(http: httpx.AsyncClient, plan: Plan[T]) -> T:
    """Drive ``plan`` to its result with non-blocking HTTP; the async twin of :func:`run_sync`."""
    import asyncio  # already loaded by whoever awaits this; blocking callers never pay for it

    value: Any = None
    error: ReflexioError | None = None
    while True:
        try:
            step = plan.throw(error) if error is not None else plan.send(value)
        except StopIteration as stop:
            return cast(T, stop.value)
        value, error = None, None
        if isinstance(step, Sleep):
            await asyncio.sleep(step.seconds)
            continue
        try:
            value = _answer(step, await _send_async(http, step))
        except ReflexioError as exc:
            error = exc


def _query(call: Call[Any]) -> dict[str, Any] | None:
    if call.params is None:
        return None
    return {name: value for name, value in call.params.items() if value is not None}


def _send_sync(http: httpx.Client, call: Call[Any]) -> httpx.Response:
    try:
        return http.request(call.method, call.path, params=_query(call), json=call.json)
    except httpx.HTTPError as exc:
        raise _unreachable(http.base_url, call, exc) from exc


async def _send_async(http: httpx.AsyncClient, call: Call[Any]) -> httpx.Response:
    try:
        return await http.request(call.method, call.path, params=_query(call), json=call.json)
    except httpx.HTTPError as exc:
        raise _unreachable(http.base_url, call, exc) from exc


def _unreachable(base_url: httpx.URL, call: Call[Any], exc: httpx.HTTPError) -> ServiceUnavailableError:
    url = base_url.join(call.path)
    if isinstance(exc, httpx.TimeoutException):
        reason = f"no answer in time ({type(exc).__name__})"
    else:
        reason = str(exc) or type(exc).__name__
    fix = (
        "point REFLEXIO_URL (or --url) at a running server"
        if isinstance(exc, httpx.TimeoutException)
        else "is it running? Start it with `reflexio services start`, or point REFLEXIO_URL (or --url) at it"
    )
    return ServiceUnavailableError(
        f"cannot reach Reflexio at {url} ({call.method}): {reason}; {fix}",
        details={"url": str(url)},
    )


# ---------------------------------------------------------------------------------------------
# Reading answers
# ---------------------------------------------------------------------------------------------


def _answer(call: Call[T], response: httpx.Response) -> T:
    """The parsed result of a 2xx (or an accepted non-2xx) answer; otherwise the typed error."""
    if not response.is_success:
        if response.status_code not in call.answers:
            raise _error(response)
        try:  # a report that comes with a failure status, e.g. an unhealthy /health
            return call.parse(_json_body(response))
        except (ReflexioError, pydantic.ValidationError) as exc:
            raise _error(response) from exc
    body = _json_body(response)
    try:
        return call.parse(body)
    except pydantic.ValidationError as exc:
        raise ReflexioError(
            f"{response.request.method} {response.request.url} answered a body this client cannot"
            f" read ({exc.error_count()} problem(s)): {exc}",
        ) from exc


def _json_body(response: httpx.Response) -> Any:
    if not response.content:
        return {}
    content_type = response.headers.get("content-type", "").lower()
    try:
        if content_type and "json" not in content_type:
            raise ValueError(f"Content-Type is {content_type}")
        return response.json()
    except ValueError as exc:
        request = response.request
        raise ReflexioError(
            f"expected JSON from {request.method} {request.url} (status {response.status_code}) but"
            f" {exc}; body starts {response.text[:_PREVIEW_CHARS]!r}. Is REFLEXIO_URL the address of"
            " the Reflexio API?"
        ) from exc


def _error(response: httpx.Response) -> ReflexioError:
    """The typed error a non-2xx answer stands for (the server's ``error`` code wins)."""
    status = response.status_code
    request = response.request
    try:
        payload = response.json()
    except ValueError:
        payload = None
    code, message, details = _error_fields(payload)
    if response.is_redirect:
        target = response.headers.get("location", "?")
        message = (
            f"{request.method} {request.url} answered a redirect ({status}) to {target}; Reflexio never"
            " redirects API calls, so REFLEXIO_URL probably points at the wrong host or scheme"
        )
    elif not message:
        text = response.text.strip()[:_PREVIEW_CHARS]
        message = text or response.reason_phrase or "no message"
    retry_after = _retry_after(response.headers.get("retry-after"))
    error = error_for_status(status, message, code=code, details=details, retry_after=retry_after)
    if error.status_code != status:
        # The class does not say which status this was (502, ...): the message must.
        message = f"HTTP {status} from {request.method} {request.url}: {message}"
        error = type(error)(message, details=details, retry_after=retry_after)
    return error


def _retry_after(value: str | None) -> float | None:
    """``Retry-After`` in seconds (the delta form the server sends), or None."""
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _error_fields(payload: Any) -> tuple[str | None, str, dict[str, Any] | None]:
    """``(code, message, details)`` from an error body: ours, FastAPI's or a proxy's."""
    if not isinstance(payload, dict):
        return None, "", None
    code = payload.get("error") if isinstance(payload.get("error"), str) else None
    details = payload.get("details") if isinstance(payload.get("details"), dict) else None
    detail = payload.get("detail")
    message = payload.get("message")
    if not isinstance(message, str) or not message:
        message = detail if isinstance(detail, str) else ""
    if isinstance(detail, list):
        # FastAPI's request validation: a list of {loc, msg, type}; keep it for machines.
        details = {**(details or {}), "errors": detail}
        if not message:
            message = "; ".join(_describe(item) for item in detail) or "invalid request"
    return code, message, details


def _describe(item: Any) -> str:
    if not isinstance(item, dict):
        return str(item)
    location = ".".join(str(part) for part in item.get("loc", ()) if part != "body")
    text = str(item.get("msg", "invalid"))
    return f"{location}: {text}" if location else text
