"""Who is looking at the dashboard, and whether a form they sent is really theirs.

The rules follow the API's (``api.auth``):

* **No API key exists**: only browsers on this machine are served (``service.callers``), as
  the default org, acting as ``local``.
* **Keys exist**: a person signs in with an API key; the dashboard then sets a session cookie
  (HttpOnly, SameSite=Strict, Secure over HTTPS, path ``/ui``) scoped to that key's org. The
  cookie is ``payload.mac``: the payload names the org, the key's id, a random nonce and an
  expiry, and the MAC is an HMAC keyed with the key's stored hash. So the cookie is checked
  with one indexed read and no table of its own, holds nothing secret, cannot be forged
  without the key (or the database), works across server processes, and dies the moment its
  key is revoked. Signing out clears it; a copy taken before then stays valid until it
  expires (``SESSION_SECONDS``).
* In local mode the cookie is signed with a per-process secret instead (there is no key); it
  carries only the CSRF nonce and is issued again whenever it does not verify.

Every state-changing request must carry the session's CSRF token (a form field or the
``X-CSRF-Token`` header htmx sends), and a request whose ``Origin`` is another site is
refused outright. Sign-in itself is protected by a double-submit token.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from reflexio.records import ApiKeyRecord
from reflexio.service import keys
from reflexio.service.callers import is_loopback_client
from reflexio.service.core import Core

__all__ = [
    "CSRF_FIELD",
    "CSRF_HEADER",
    "LOGIN_COOKIE",
    "SESSION_COOKIE",
    "SESSION_SECONDS",
    "Viewer",
    "cross_site",
    "issue_cookie",
    "tokens_match",
    "viewer_of",
]

SESSION_COOKIE = "rfx_session"
#: The double-submit token of the sign-in form (there is no session to bind it to yet).
LOGIN_COOKIE = "rfx_login"
CSRF_FIELD = "csrf_token"
CSRF_HEADER = "x-csrf-token"
#: How long a sign-in lasts.
SESSION_SECONDS = 12 * 3600
#: Signs local-mode cookies; they carry no authority, only the CSRF nonce.
_LOCAL_SECRET = secrets.token_bytes(32)


@dataclass(frozen=True, slots=True)
class Viewer:
    """The person behind a dashboard request.

    Attributes:
        org_id: The org everything they see and do is scoped to.
        actor: Who the history names for their actions (``key:<prefix>`` or ``local``).
        key_id: The API key they signed in with (0 in local mode).
        csrf: The token their forms must send back.
        signed_in: Whether they signed in (so a sign-out makes sense).
        cookie: A fresh cookie to set on the response (local mode's first visit), else "".
        reviewer: Whether they may approve, reject, rewrite and delete agent playbooks (the
            operator on this machine, or a key created with ``--reviewer``), as over REST.
    """

    org_id: str
    actor: str
    key_id: int
    csrf: str
    signed_in: bool
    cookie: str = ""
    reviewer: bool = True


def issue_cookie(core: Core, key: ApiKeyRecord | None) -> str:
    """A new session cookie value: for a key's org, or (None) for local mode."""
    payload = {
        "o": key.org_id if key else core.settings.default_org_id,
        "k": key.id if key else 0,
        "n": secrets.token_urlsafe(16),
        "e": int(time.time()) + SESSION_SECONDS,
    }
    body = base64.urlsafe_b64encode(json.dumps(payload, separators=(",", ":")).encode()).decode()
    return f"{body}.{_mac(_secret(key), body)}"


def viewer_of(
    core: Core, cookies: Mapping[str, str], peer: str | None, headers: Mapping[str, str]
) -> Viewer | None:
    """The viewer a request speaks for, or None when it must sign in (or may not look at all).

    Without keys, a request not from this machine gets None; with keys, one without a valid
    session cookie does.
    """
    value = cookies.get(SESSION_COOKIE, "")
    if core.keys_exist():
        return _signed_in(core, value)
    if not is_loopback_client(peer, headers):
        return None
    payload = _verified(value, None)
    if payload is None or payload.get("k") != 0:
        value = issue_cookie(core, None)
        payload = _verified(value, None)
        assert payload is not None
        fresh = value
    else:
        fresh = ""
    csrf = _mac(_LOCAL_SECRET, f"csrf:{payload['n']}")
    return Viewer(core.settings.default_org_id, "local", 0, csrf, signed_in=False, cookie=fresh)


def _signed_in(core: Core, value: str) -> Viewer | None:
    body = _payload(value)
    org, key_id = (body or {}).get("o"), (body or {}).get("k")
    if not isinstance(org, str) or not isinstance(key_id, int):
        return None
    key = keys.active_key(core, org, key_id)
    payload = _verified(value, key) if key is not None else None
    if key is None or payload is None:
        return None
    csrf = _mac(_secret(key), f"csrf:{payload['n']}")
    return Viewer(key.org_id, f"key:{key.prefix}", key.id, csrf, signed_in=True, reviewer=key.reviewer)


def _secret(key: ApiKeyRecord | None) -> bytes:
    return bytes.fromhex(key.key_hash) if key is not None else _LOCAL_SECRET


def _mac(secret: bytes, text: str) -> str:
    return hmac.new(secret, text.encode(), hashlib.sha256).hexdigest()


def _payload(value: str) -> dict[str, object] | None:
    """The cookie's payload, unverified (to find which key verifies it)."""
    body, _, _ = value.partition(".")
    try:
        data = json.loads(base64.urlsafe_b64decode(body.encode()))
    except (ValueError, UnicodeDecodeError):
        return None
    return data if isinstance(data, dict) else None


def _verified(value: str, key: ApiKeyRecord | None) -> dict[str, object] | None:
    body, _, mac = value.partition(".")
    if not mac or not hmac.compare_digest(mac, _mac(_secret(key), body)):
        return None
    data = _payload(value)
    if data is None or not isinstance(data.get("e"), int) or data["e"] < time.time():  # type: ignore[operator]
        return None
    return data


def tokens_match(sent: str | None, expected: str) -> bool:
    """Whether a form's CSRF token is the session's (in constant time)."""
    return bool(sent) and hmac.compare_digest(str(sent), expected)


def cross_site(headers: Mapping[str, str], scheme: str) -> bool:
    """Whether a request was sent by a page of another site (its ``Origin`` is not ours).

    Browsers send ``Origin`` on every cross-site POST; ``Sec-Fetch-Site`` says the same in
    modern browsers and is checked too when present.
    """
    fetch_site = headers.get("sec-fetch-site")
    if fetch_site is not None and fetch_site not in ("same-origin", "none"):
        return True
    origin = headers.get("origin")
    if origin is None:
        return False
    parts = urlsplit(origin)
    return f"{parts.scheme}://{parts.netloc}" != f"{scheme}://{headers.get('host', '')}"
