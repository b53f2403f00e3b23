"""The Python SDK: ``ReflexioClient`` (blocking) and ``AsyncReflexioClient`` over httpx.

Installs and imports with nothing but httpx and pydantic: this package uses only
``reflexio.models``, ``reflexio.errors`` and ``reflexio.config.ClientSettings``, never the
server. Method names and arguments follow ``reflexio-client`` 0.2.16.
"""

from __future__ import annotations

from reflexio.client._clients import AsyncReflexioClient, ReflexioClient
from reflexio.client._system import JobView, ListJobsResponse, RetryJobsResponse

__all__ = [
    "AsyncReflexioClient",
    "JobView",
    "ListJobsResponse",
    "ReflexioClient",
    "RetryJobsResponse",
]
