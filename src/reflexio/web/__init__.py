"""The dashboard: Reflexio's screens for the people who review and evaluate what it learned.

Served by the Reflexio server itself at ``/ui`` — server-rendered Jinja2 templates, htmx for
in-place updates and Chart.js for charts, both vendored under ``static/`` (nothing is fetched
from a CDN). Every screen calls ``reflexio.service`` only, like the API.

``create_dashboard(core)`` is the dashboard's ASGI app; ``with_dashboard(api, core)`` puts it
in front of the API app: ``/ui/...`` goes to the dashboard, a browser asking for ``/`` is sent
to ``/ui``, and everything else reaches the API untouched. The composition root (``reflexio
services start``) does the wrapping, so the API never imports the dashboard.
"""

from __future__ import annotations

from reflexio.web.app import create_dashboard, with_dashboard

__all__ = ["create_dashboard", "with_dashboard"]
