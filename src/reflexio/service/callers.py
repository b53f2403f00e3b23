"""Whether a caller is on this machine: the rule every surface (API, dashboard) applies alike.

While no API key exists, Reflexio serves clients on this machine only. "On this machine" is
strict, as in Reflexio: the peer address is loopback, the request was not forwarded by a proxy,
and its ``Host`` and ``Origin`` name this machine (so a web page on another origin cannot use
a browser on this machine to reach the server). The rule takes plain values, not a framework's
request, so the API and the dashboard share one copy of it.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from urllib.parse import urlsplit

__all__ = ["FORWARDING_HEADERS", "is_loopback", "is_loopback_client"]

#: Headers a proxy adds; their presence means the peer address is not the real client.
FORWARDING_HEADERS = ("forwarded", "x-forwarded-for", "x-real-ip")


def is_loopback_client(peer: str | None, headers: Mapping[str, str], *, local_origin: bool = True) -> bool:
    """Whether a request comes straight from this machine.

    Args:
        peer: The connected client's address (None when unknown).
        headers: The request headers, with lower-case names.
        local_origin: Whether a page's ``Origin`` must name this machine too. The API passes
            False: it holds every cross-origin request to the org's ``allowed_origins``
            instead (``api.browsers``), ``localhost:3000`` included.
    """
    if peer is None or not is_loopback(peer):
        return False
    if any(name in headers for name in FORWARDING_HEADERS):
        return False
    host = urlsplit(f"//{headers.get('host', '')}").hostname
    if host and not is_loopback(host):
        return False
    origin = headers.get("origin") if local_origin else None
    return not origin or is_loopback(urlsplit(origin).hostname or "")


def is_loopback(host: str) -> bool:
    """Whether a host name or address names this machine."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
