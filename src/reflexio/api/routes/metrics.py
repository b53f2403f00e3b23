"""``GET /metrics``: this process's metrics in the Prometheus text format, keyed like ``/api``.

Publish and search latency are recorded where they happen (this process); the numbers that live
in storage are read from it when scraped, so any API process tells the same truth about the
shared queue and the LLM spend. Without the ``otel`` extra the route says how to get it.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends
from fastapi.responses import Response

from reflexio import telemetry
from reflexio.api.auth import require_caller
from reflexio.errors import ServiceUnavailableError

__all__ = ["router"]

router = APIRouter(tags=["system"], dependencies=[Depends(require_caller)])

#: The Prometheus text exposition format.
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


@router.get("/metrics", response_class=Response, include_in_schema=True)
def metrics() -> Response:
    """Publish and search latency, queue depth and age, job failures, LLM tokens and cost per org."""
    text = telemetry.prometheus_text()
    if text is None:
        raise ServiceUnavailableError("metrics need the otel extra: pip install 'reflexio[otel]'")
    return Response(content=text, media_type=CONTENT_TYPE)
