"""The org config as a form: its masked JSON flattened into labelled fields, and back.

Each leaf of the config becomes one field named by its dotted path (``llm_config.
generation_model_name``): a checkbox for a flag, a number box for a number, a text box for
text, a JSON box for a list or an object. Secrets are password boxes that never show the
value: left empty, the stored secret is kept (the mask goes back and ``service.org_config``
restores it); typed in, it replaces it. A field left empty that was unset stays unset. The
result is written with ``update_config``, so validation errors come back naming the field.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from reflexio.errors import ValidationError
from reflexio.models.secrets import MASK, is_secret_field

__all__ = ["Field", "Section", "form_sections", "from_form"]

#: Fields not in the form: the review policy and provider keys have their own forms on the page,
#: the experiment fields their own routes, and an org's own storage (database URLs) is an
#: operator's change made through the API (``reflexio config``).
_ELSEWHERE = frozenset(
    {
        "approval_required",
        "api_key_config",
        "storage_config",
        "retrieval_experiment_config",
        "retrieval_experiment_history",
    }
)
#: Nesting below which objects are edited as JSON (a form three levels deep is unreadable).
_MAX_DEPTH = 2


@dataclass(frozen=True, slots=True)
class Field:
    """One input of the form.

    Attributes:
        path: Dotted path in the config (the input's name).
        label: What the person reads.
        widget: ``checkbox``, ``number``, ``text``, ``textarea``, ``json`` or ``secret``.
        value: The value as the input shows it ("" for a secret).
        is_set: For a secret: whether one is stored.
    """

    path: str
    label: str
    widget: str
    value: str
    is_set: bool = False


@dataclass(frozen=True, slots=True)
class Section:
    """Fields under one top-level key of the config."""

    name: str
    title: str
    fields: list[Field]


def _title(name: str) -> str:
    return name.replace("_", " ").strip().capitalize()


def _field(path: str, name: str, value: Any, depth: int) -> list[Field]:
    if isinstance(value, dict) and depth < _MAX_DEPTH:
        return [f for key, item in value.items() for f in _field(f"{path}.{key}", key, item, depth + 1)]
    label = _title(name)
    if is_secret_field(name):
        is_set = bool(value) and (MASK in json.dumps(value))
        return [Field(path, label, "secret", "", is_set=is_set)]
    if isinstance(value, bool):
        return [Field(path, label, "checkbox", "1" if value else "")]
    if isinstance(value, int | float):
        return [Field(path, label, "number", str(value))]
    if value is None:
        return [Field(path, label, "text", "")]
    if isinstance(value, str):
        widget = "textarea" if len(value) > 80 or "\n" in value else "text"
        return [Field(path, label, widget, value)]
    return [Field(path, label, "json", json.dumps(value, indent=2, ensure_ascii=False))]


def form_sections(masked: Mapping[str, Any]) -> list[Section]:
    """The form for a masked config: one section per object, the plain values under "General"."""
    general: list[Field] = []
    sections: list[Section] = []
    for key, value in masked.items():
        if key in _ELSEWHERE:
            continue
        fields = _field(key, key, value, 0)
        if isinstance(value, dict):
            sections.append(Section(key, _title(key), fields))
        else:
            general.extend(fields)
    return [Section("general", "General", general), *sections]


def _parsed(field: Field, sent: str | None, old: Any) -> Any:
    if field.widget == "checkbox":
        return sent == "1"
    text = (sent or "").strip()
    if field.widget == "secret":
        return text or old
    if field.widget == "number":
        try:
            return int(text) if text.lstrip("-").isdigit() else float(text)
        except ValueError:
            raise ValidationError(f"{field.path}: {text!r} is not a number") from None
    if field.widget == "json":
        try:
            return json.loads(text) if text else None
        except json.JSONDecodeError as exc:
            raise ValidationError(f"{field.path}: not valid JSON ({exc.msg})") from None
    if not text and old is None:
        return None
    if old is None:  # an unset field: numbers and flags typed in mean what they say
        try:
            parsed = json.loads(text)
        except json.JSONDecodeError:
            return text
        return parsed if isinstance(parsed, int | float | bool) else text
    return sent or ""


def from_form(masked: Mapping[str, Any], sent: Mapping[str, str]) -> dict[str, Any]:
    """The top-level keys the form changed, as an ``update_config`` body.

    Raises:
        ValidationError: A number or JSON field does not parse (naming the field).
    """
    changes: dict[str, Any] = {}
    for section in form_sections(masked):
        for field in section.fields:
            top, *rest = field.path.split(".")
            old = _get(masked, field.path)
            new = _parsed(field, sent.get(field.path), old)
            if new == old:
                continue
            target = changes.setdefault(top, json.loads(json.dumps(masked[top]))) if rest else changes
            _put(target, rest or [top], new)
    return changes


def _get(data: Mapping[str, Any], path: str) -> Any:
    value: Any = data
    for part in path.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    return value


def _put(target: dict[str, Any], parts: list[str], value: Any) -> None:
    for part in parts[:-1]:
        target = target.setdefault(part, {})
    target[parts[-1]] = value
