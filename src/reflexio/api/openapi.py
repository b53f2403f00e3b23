"""The OpenAPI document, completed with the rules every route enforces through ``api.inputs``.

FastAPI derives the document from the models and the routes' ``responses``; two rules apply to
every field of every route and live in ``api.inputs`` instead of in each model, so they are
added here to every schema they govern:

* a string never holds U+0000 (each string without a pattern of its own gets
  ``^[^\\u0000]*$``; the patterns of our own types exclude it already);
* an integer is a signed 64-bit number (each integer without bounds of its own gets them);
* an object's keys are strings too (free-form objects get ``propertyNames`` without U+0000).

Strings nested in free-form JSON values (``tool_data``, ``custom_features``) are refused with
NUL as well; the document's description says so, as JSON Schema has no way to say it of
"any value" short of a recursive schema generators handle poorly.

With them the document describes exactly what the server accepts, which the schemathesis run
in the test suite checks on every operation.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from reflexio.models.fields import INT64_MAX

__all__ = ["NUL_FREE_PATTERN", "install", "tightened"]

#: The pattern of a string with no pattern of its own: anything but U+0000.
NUL_FREE_PATTERN: Final = "^[^\\u0000]*$"

_RULES = (
    "Every string is refused (422) if it holds U+0000 or a lone surrogate; every integer must fit "
    "in 64 bits. Errors, whatever their status, have one body: `ErrorResponse`."
)


def install(app: FastAPI) -> None:
    """Serve the completed document at ``/openapi.json`` (built once, on first request)."""

    def document() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(
                title=app.title,
                version=app.version,
                description=f"{app.description}\n\n{_RULES}",
                routes=app.routes,
            )
            app.openapi_schema = tightened(schema)
        return app.openapi_schema

    app.openapi = document  # type: ignore[method-assign]


def tightened(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` with the NUL and 64-bit rules added to every schema they govern (in place)."""
    for schema in document.get("components", {}).get("schemas", {}).values():
        if "properties" in schema:  # a model with a wrap validator loses its type
            schema.setdefault("type", "object")
    for schema in _schemas(document):
        kind = schema.get("type")
        if kind == "string" and not ({"pattern", "enum", "const", "format"} & schema.keys()):
            schema["pattern"] = NUL_FREE_PATTERN
        elif kind == "object" and schema.get("additionalProperties", True) is not False:
            schema.setdefault("propertyNames", {"pattern": NUL_FREE_PATTERN})
        elif kind == "integer":
            if not ({"minimum", "exclusiveMinimum"} & schema.keys()):
                schema["minimum"] = -INT64_MAX - 1
            if not ({"maximum", "exclusiveMaximum"} & schema.keys()):
                schema["maximum"] = INT64_MAX
    return document


def _schemas(node: Any) -> Iterator[dict[str, Any]]:
    """Every JSON object in the document that is a schema (has a ``type``), depth first."""
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if isinstance(item.get("type"), str):
                yield item
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
