"""Who is calling: an org's API key, or (while no key exists) a client on this machine.

The rules, checked on every ``/api`` request (health, version and docs are public):

* once any API key exists, a valid ``Authorization: Bearer <key>`` is required (401 otherwise)
  and the org is the key's;
* while no key exists, only loopback clients are served, as the default org; anyone else gets
  a 403 that says how to create a key.

"Loopback" is strict, as in Reflexio: the peer address is loopback, the request was not
forwarded by a proxy, and its ``Host`` names this machine. A request from a web page on
another origin (``localhost:3000`` included: any page a local browser opens) is refused in
either mode unless the org's config allows that origin (``api.browsers``). Presented keys are
looked up in storage each time, so a key created or revoked while the server runs counts at
once; whether any key exists is re-read on every request until one does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, cast

from fastapi import Depends
from starlette.requests import Request

from reflexio.api.browsers import check_origin
from reflexio.api.throttles import AuthThrottle, TokenBuckets
from reflexio.errors import AuthenticationError, PermissionDeniedError
from reflexio.service import keys, review
from reflexio.service.callers import is_loopback_client
from reflexio.service.core import Core

__all__ = ["Caller", "CallerDep", "CoreDep", "get_core", "is_local", "require_caller", "require_reviewer"]

NO_KEYS_MESSAGE = (
    "this server has no API key yet, so it only answers clients on this machine; "
    "create one with `reflexio keys create` (for the default org, which holds what was published "
    "so far; --org <org> for another) and send it as `Authorization: Bearer <key>`"
)


@dataclass(frozen=True, slots=True)
class Caller:
    """The org a request acts for, and who to name in the history of what it changes.

    ``reviewer`` says whether this caller may review agent playbooks (approve, reject, add
    them already decided), over REST (``require_reviewer``) and on the MCP endpoint (which
    offers the review tools only then): the operator on this machine may, and so may a key
    created with ``reflexio keys create --reviewer``.
    """

    org_id: str
    actor: str
    reviewer: bool = False


async def get_core(request: Request) -> Core:
    """The process ``Core`` the app was created with.

    Dependencies are ``async`` on purpose: FastAPI runs sync dependencies in the threadpool,
    one thread hop each, which cost more than the quick checks they do.
    """
    return cast(Core, request.app.state.core)


CoreDep = Annotated[Core, Depends(get_core)]


def require_caller(request: Request, core: CoreDep) -> Caller:
    """Authenticate a request to ``/api`` (two indexed lookups).

    A plain function, so FastAPI runs it in its thread pool: the lookups read storage, and on
    the event loop a storage outage would hold every request (liveness too) behind each wait.

    Raises:
        AuthenticationError: Keys exist and the request has no valid one.
        PermissionDeniedError: No key exists and the client is not on this machine, or the
            request comes from a page on an origin the org does not allow.
        RateLimitedError: The caller is over its rate limit, or its address failed to
            authenticate too often (``api.throttles``).
    """
    caller = _authenticated(request, core)
    check_origin(request, core, caller.org_id)
    limits: TokenBuckets = request.app.state.rate_limits
    limits.take(caller.actor)
    return caller


def _authenticated(request: Request, core: Core) -> Caller:
    if core.keys_exist():
        throttle: AuthThrottle = request.app.state.auth_throttle
        address = request.client.host if request.client else "unknown"
        throttle.check(address)
        bearer = _bearer(request)
        key = keys.identify(core, bearer) if bearer else None
        if key is None:
            if bearer:  # a wrong key counts; a missing one is a mistake, not a guess
                throttle.failed(address)
            problem = "is not a valid API key" if bearer else "is missing"
            raise AuthenticationError(f"Authentication required: the Bearer token {problem}")
        throttle.succeeded(address)
        return Caller(org_id=key.org_id, actor=f"key:{key.prefix}", reviewer=key.reviewer)
    if is_local(request):
        return Caller(org_id=core.settings.default_org_id, actor="local", reviewer=True)
    raise PermissionDeniedError(NO_KEYS_MESSAGE)


CallerDep = Annotated[Caller, Depends(require_caller)]


def require_reviewer(caller: Caller, action: str) -> None:
    """Refuse a review ``action`` to a caller whose key is not a reviewer's.

    Raises:
        PermissionDeniedError: The caller's key was not created with ``--reviewer``.
    """
    review.require_reviewer(caller.reviewer, action)


def _bearer(request: Request) -> str:
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


def is_local(request: Request) -> bool:
    """Whether the request comes straight from this machine (``service.callers`` has the rule).

    Its ``Origin`` is held to the org's ``allowed_origins`` by :func:`check_origin` instead.
    """
    peer = request.client.host if request.client else None
    return is_loopback_client(peer, request.headers, local_origin=False)
