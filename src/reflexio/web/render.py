"""Templates and the headers every dashboard page carries.

Pages are Jinja2 templates (autoescaped) under ``web/templates``. Every response gets a
Content-Security-Policy that allows this server's own scripts, styles and images only — no
inline script, no CDN — plus the usual framing and sniffing guards; pages are never cached
(they hold an org's data), static files are.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from reflexio.records import LearningKind
from reflexio.web.access import CSRF_FIELD, SESSION_COOKIE, SESSION_SECONDS, Viewer
from reflexio.web.diffs import word_diff

__all__ = ["CSP", "PAGE_HEADERS", "STATIC_DIR", "html", "secure", "set_session_cookie"]

HERE = Path(__file__).parent
STATIC_DIR = HERE / "static"

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; form-action 'self'; frame-ancestors 'none'; "
    "base-uri 'none'; object-src 'none'"
)
PAGE_HEADERS = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "same-origin",
    "cross-origin-resource-policy": "same-origin",
}

KIND_LABELS = {
    LearningKind.PROFILE.value: "profile",
    LearningKind.USER_PLAYBOOK.value: "user playbook",
    LearningKind.AGENT_PLAYBOOK.value: "agent playbook",
}


def _when(t: float | int | None) -> str:
    if not t:
        return "—"
    return dt.datetime.fromtimestamp(float(t), dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def _ago(t: float | int | None) -> str:
    if not t:
        return "—"
    seconds = dt.datetime.now(dt.UTC).timestamp() - float(t)
    for unit, size in (("d", 86_400), ("h", 3_600), ("min", 60)):
        if abs(seconds) >= size:
            return f"{int(seconds // size)} {unit} ago"
    return "just now"


def _percent(value: float | None) -> str:
    return "—" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.0%}"


def _chart_data(value: Any) -> Markup:
    """JSON for a ``<script type="application/json">`` block (read by app.js, never executed).

    A NaN (a day with nothing to measure) becomes null, which the chart draws as a gap.
    """
    text = json.dumps(_without_nan(value), allow_nan=False)
    return Markup(text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"))


def _without_nan(value: Any) -> Any:
    if isinstance(value, float):
        return None if math.isnan(value) or math.isinf(value) else value
    if isinstance(value, dict):
        return {k: _without_nan(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_without_nan(v) for v in value]
    return value


def _series(lines: Any) -> list[dict[str, Any]]:
    """Chart lines (objects with ``name`` and ``values``) as JSON-ready dicts."""
    return [{"name": line.name, "values": list(line.values)} for line in lines]


def _days(starts: Any) -> list[str]:
    return [dt.datetime.fromtimestamp(t, dt.UTC).strftime("%b %d") for t in starts]


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, default=str)


_ENV = Environment(
    loader=FileSystemLoader(HERE / "templates"),
    autoescape=select_autoescape(["html"]),
    trim_blocks=True,
    lstrip_blocks=True,
)
_ENV.filters.update(
    when=_when,
    ago=_ago,
    percent=_percent,
    chart_data=_chart_data,
    pretty=_pretty,
    word_diff=word_diff,
    series=_series,
    days=_days,
)
_ENV.globals.update(KIND_LABELS=KIND_LABELS, CSRF_FIELD=CSRF_FIELD)


def secure(response: Response, *, cache: bool = False) -> Response:
    """Add the dashboard's security headers (and no-store unless ``cache``)."""
    for name, value in PAGE_HEADERS.items():
        response.headers.setdefault(name, value)
    response.headers["cache-control"] = "public, max-age=3600" if cache else "no-store"
    return response


def set_session_cookie(response: Response, request: Request, value: str) -> None:
    """Set (or, with "", clear) the session cookie: HttpOnly, SameSite=Strict, path /ui."""
    https = request.url.scheme == "https"
    if value:
        response.set_cookie(
            SESSION_COOKIE,
            value,
            max_age=SESSION_SECONDS,
            path="/ui",
            httponly=True,
            samesite="strict",
            secure=https,
        )
    else:
        response.delete_cookie(SESSION_COOKIE, path="/ui", httponly=True, samesite="strict", secure=https)


def html(
    request: Request,
    template: str,
    context: Mapping[str, Any],
    *,
    viewer: Viewer | None = None,
    status_code: int = 200,
    headers: Mapping[str, str] | None = None,
) -> HTMLResponse:
    """Render a page (or an htmx fragment) for ``viewer``."""
    text = _ENV.get_template(template).render(
        request=request, viewer=viewer, path=request.url.path, **context
    )
    response = HTMLResponse(text, status_code=status_code, headers=dict(headers or {}))
    if viewer is not None and viewer.cookie:
        set_session_cookie(response, request, viewer.cookie)
    secure(response)
    return response
