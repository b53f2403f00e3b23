"""The OpenAPI document, completed with the rules every route enforces through ``api.inputs``.

FastAPI derives the document from the models and the routes' ``responses``; two rules apply to
every field of every route and live in ``api.inputs`` instead of in each model, so they are
added here to every schema they govern:

* a string never holds U+0000 (each string without a pattern of its own gets
  ``^[^\\u0000]*$``; the patterns of our own types exclude it already);
* an integer is a signed 64-bit number (each integer without bounds of its own gets them);
* an object's keys are strings too (free-form objects get ``propertyNames`` without U+0000).

Free-form JSON values (``tool_data``, ``custom_features``) are held to the same rules at any
depth: their values refer to one recursive ``JsonValue`` schema.

And a config setting this server does not support (``service.org_config.NOT_SUPPORTED``) is
held to its default, as the server holds it.

With them the document describes exactly what the server accepts, which the schemathesis run
in the test suite checks on every operation.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final, cast

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from reflexio.models.fields import INT64_MAX
from reflexio.service.org_config import NOT_SUPPORTED, accepted_values

__all__ = ["JSON_VALUE", "NUL_FREE_PATTERN", "install", "only_defaults", "tightened"]

#: The component every free-form object's values refer to (``_json_value``).
JSON_VALUE: Final = "JsonValue"

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
            app.openapi_schema = tightened(only_defaults(schema))
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
            if schema.get("additionalProperties") is True and "properties" not in schema:
                schema["additionalProperties"] = {"$ref": f"#/components/schemas/{JSON_VALUE}"}
        elif kind == "integer":
            if not ({"minimum", "exclusiveMinimum"} & schema.keys()):
                schema["minimum"] = -INT64_MAX - 1
            if not ({"maximum", "exclusiveMaximum"} & schema.keys()):
                schema["maximum"] = INT64_MAX
    document.setdefault("components", {}).setdefault("schemas", {})[JSON_VALUE] = _json_value()
    return document


def _json_value() -> dict[str, Any]:
    """Any JSON value under the same rules, to any depth: what a free-form object holds.

    A number that is not an integer is any float; an integer (JSON Schema counts ``2.0`` as
    one) fits in 64 bits, as ``api.inputs`` holds every integer of a body to.
    """
    value = {"$ref": f"#/components/schemas/{JSON_VALUE}"}
    return {
        "description": "Any JSON value; strings and keys without U+0000, integers within 64 bits.",
        "anyOf": [
            {"type": "null"},
            {"type": "boolean"},
            {"type": "integer", "minimum": -INT64_MAX - 1, "maximum": INT64_MAX},
            {"type": "number", "not": {"type": "integer"}},
            {"type": "string", "pattern": NUL_FREE_PATTERN},
            {"type": "array", "items": value},
            {"type": "object", "additionalProperties": value, "propertyNames": {"pattern": NUL_FREE_PATTERN}},
        ],
    }


def only_defaults(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` with each setting this server does not support held to its default (in place).

    A config write that sets one of them to anything else is a 422 (``service.org_config``);
    the schema says so, field by field, with the reason in its description.
    """
    schemas = document.get("components", {}).get("schemas", {})
    config = schemas.get("Config-Input")
    if config is None:
        return document
    for path, values in accepted_values().items():
        *parents, name = path.split(".")
        owner = config
        for parent in parents:  # the model the parent field holds (or null)
            owner = _referenced(schemas, owner["properties"][parent])
        described = owner["properties"][name]
        kept = {key: described[key] for key in ("title", "default") if key in described}
        restricted = [_only(value) for value in values]
        owner["properties"][name] = {
            **kept,
            **(restricted[0] if len(restricted) == 1 else {"anyOf": restricted}),
            "description": f"Not supported here, so only its default is accepted: {NOT_SUPPORTED[path]}.",
        }
    return document


def _referenced(schemas: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    for option in [schema, *schema.get("anyOf", ())]:
        if "$ref" in option:
            return cast(dict[str, Any], schemas[option["$ref"].rsplit("/", 1)[-1]])
    return schema


def _only(value: Any) -> dict[str, Any]:
    """A schema only ``value`` (or an object equal to it once defaults are filled in) satisfies."""
    if value is None:
        return {"type": "null"}
    if isinstance(value, dict):
        return {
            "type": "object",
            "properties": {key: _only(item) for key, item in value.items()},
            "additionalProperties": False,
        }
    if isinstance(value, list) and not value:
        return {"type": "array", "maxItems": 0}
    return {"enum": [value]}


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
