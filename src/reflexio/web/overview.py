"""The Overview: what the org learned, how sessions went, what is queued and what it cost."""

from __future__ import annotations

from starlette.responses import Response
from starlette.routing import Route

from reflexio.service.overview import overview
from reflexio.web.filters import Filters
from reflexio.web.routing import Ask, page

__all__ = ["ROUTES"]

#: Days the charts cover.
DAYS = 14


def _overview(ask: Ask) -> Response:
    filters = Filters.parse(ask.query)
    data = overview(ask.core, ask.org_id, days=DAYS, agent_version=filters.agent_version or None)
    return ask.render("overview.html", filters=filters, data=data, days=DAYS)


ROUTES = [Route("/", page(_overview), name="overview")]
