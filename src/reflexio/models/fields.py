"""Reusable field types for the wire models, and the base that reports unknown keys.

Reflexio's wire format carries a handful of recurring constraints: identifiers that must not
be blank, a lowercase ``source`` slug, request-side time filters that arrive either as epoch
seconds or as the ISO strings the 0.2.16 client sends, and payloads whose unknown keys must be
accepted (old plugins send extra bookkeeping) but reported back so a typo is not silently lost.
They live here once so every request and entity spells them the same way.
"""

import ipaddress
import re
import time
from collections.abc import Generator
from datetime import UTC, datetime
from typing import Annotated, Any, Final, Literal, Self
from urllib.parse import urlparse

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    HttpUrl,
    ModelWrapValidatorHandler,
    PrivateAttr,
    StringConstraints,
    model_validator,
)

__all__ = [
    "DEFAULT_AGENT_VERSION",
    "NEVER_EXPIRES_TIMESTAMP",
    "CapturesUnknownFields",
    "FilterTime",
    "ImageUrl",
    "NonEmptyStr",
    "SafeHttpUrl",
    "SanitizedNonEmptyStr",
    "SessionOutcomeSource",
    "TimeWindow",
    "WireModel",
    "check_image_url",
    "check_time_range",
    "now_epoch",
]

#: The agent version a request gets when the caller names none (same as Reflexio's).
DEFAULT_AGENT_VERSION: Final = "agent-v0"

#: "Never expires" as an epoch second (2100-01-01T00:00:00Z), as Reflexio stores it.
NEVER_EXPIRES_TIMESTAMP: Final = 4_102_444_800


def now_epoch() -> int:
    """Return the current time in whole epoch seconds, the wire format of every timestamp."""
    return int(time.time())


def _strip_non_empty(value: str) -> str:
    stripped = value.strip()
    if not stripped:
        raise ValueError("String must not be empty or whitespace-only")
    return stripped


_CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _strip_control_chars(value: str) -> str:
    return _CONTROL_CHARS.sub("", value)


NonEmptyStr = Annotated[str, AfterValidator(_strip_non_empty)]
"""A string that is stripped and must not be blank (Reflexio's ``NonEmptyStr``)."""

SanitizedNonEmptyStr = Annotated[str, AfterValidator(_strip_control_chars), AfterValidator(_strip_non_empty)]
"""A non-blank string with control characters removed; used for prompts fed to an LLM."""

SOURCE_PATTERN: Final = r"^[a-z0-9][a-z0-9._:-]{0,127}$"

SessionOutcomeSource = Literal[""] | Annotated[str, StringConstraints(max_length=128, pattern=SOURCE_PATTERN)]
"""A producer label such as ``support-agent:v2``: empty, or a lowercase slug of at most 128."""


def _assume_utc(value: datetime) -> datetime:
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


FilterTime = Annotated[datetime, AfterValidator(_assume_utc)]
"""A time filter on a request: epoch seconds or an ISO 8601 string, always UTC-aware.

The 0.2.16 client declares its ``start_time``/``end_time`` filters as ``datetime`` and sends
them as ISO strings, so these fields cannot be plain ints; naive values are taken as UTC.
"""


def check_time_range(start: datetime | None, end: datetime | None) -> None:
    """Reject a filter window whose end is not after its start, as Reflexio does.

    Raises:
        ValueError: When both bounds are set and ``end <= start``.
    """
    if start is not None and end is not None and end <= start:
        raise ValueError("end_time must be after start_time")


_METADATA_HOSTS: Final = frozenset({"metadata.google.internal", "169.254.169.254", "fd00:ec2::254"})


def check_image_url(value: str) -> str:
    """Accept an empty value or an http(s)/data URL that does not name a cloud metadata host.

    Reflexio resolves the host name here too; we do not, because a model must not block on
    DNS. Anything that ever fetches the URL must check the resolved address at fetch time.

    Raises:
        ValueError: For another scheme or a metadata endpoint.
    """
    if not value:
        return value
    parsed = urlparse(value)
    if parsed.scheme not in ("http", "https", "data"):
        raise ValueError(f"Image URL scheme must be http, https, or data - got '{parsed.scheme}'")
    host = (parsed.hostname or "").lower()
    if host in _METADATA_HOSTS or _is_metadata_ip(host):
        raise ValueError(f"URL must not target cloud metadata: {host}")
    return value


def _is_metadata_ip(host: str) -> bool:
    try:
        return str(ipaddress.ip_address(host)) in _METADATA_HOSTS
    except ValueError:
        return False


def _reject_metadata_host(url: HttpUrl) -> HttpUrl:
    host = (url.host or "").lower()
    if host in _METADATA_HOSTS or _is_metadata_ip(host.strip("[]")):
        raise ValueError(f"URL must not target cloud metadata: {host}")
    return url


SafeHttpUrl = Annotated[HttpUrl, AfterValidator(_reject_metadata_host)]
"""An http(s) URL the server will call (LLM endpoints), never a cloud metadata endpoint."""


class WireModel(BaseModel):
    """The base of every wire model: built on first use, and awaitable.

    ``defer_build``: pydantic compiles a model's validator when the class is created, which for
    ~150 wire models costs more than everything else a CLI command does; deferred, each model
    is compiled the first time it validates or serialises, so a command pays only for the
    models it uses.

    ``__await__``: Reflexio 0.2.7's README awaited the client's methods (``await
    client.publish_interaction(...)``). The blocking client's answers are these models, and
    awaiting one gives back the model itself, so that code runs unchanged inside
    ``asyncio.run`` (the call itself has already happened, synchronously).
    """

    model_config = ConfigDict(defer_build=True)

    def __await__(self) -> Generator[Any, None, Self]:
        yield from ()
        return self


class TimeWindow(WireModel):
    """Base for requests filtered by ``start_time``/``end_time``; the end must follow the start."""

    start_time: FilterTime | None = None
    end_time: FilterTime | None = None

    @model_validator(mode="after")
    def _end_after_start(self) -> Self:
        check_time_range(self.start_time, self.end_time)
        return self


ImageUrl = Annotated[str, AfterValidator(check_image_url)]
"""An image URL a caller attaches to a turn; see :func:`check_image_url`."""


class CapturesUnknownFields(WireModel):
    """Accept unknown keys, drop them, and remember their names so they can be reported.

    Rejecting unknown keys breaks first-party plugins that copy request-level bookkeeping
    (``user_id``) onto every turn; ignoring them silently hides typos such as ``Content``.
    So they are stripped (nothing unexpected reaches storage or ``model_dump``) and their
    names, never their values, are kept for the caller's ``warnings``.
    """

    model_config = ConfigDict(extra="ignore")

    _unknown_field_names: list[str] = PrivateAttr(default_factory=list)

    @model_validator(mode="wrap")
    @classmethod
    def _capture_unknown_keys(cls, data: Any, handler: ModelWrapValidatorHandler[Self]) -> Self:
        model = handler(data)
        if isinstance(data, dict):
            known = set(cls.model_fields) | {
                field.alias for field in cls.model_fields.values() if field.alias
            }
            model._unknown_field_names = sorted(str(key) for key in data if key not in known)
        return model

    def unknown_field_names(self) -> list[str]:
        """Names of the top-level keys the caller sent that this model does not know."""
        return list(self._unknown_field_names)

    def unknown_fields(self) -> list[str]:
        """Every stripped key as a sorted path, nested ones included (``tools_used[0].stat``).

        A path rather than a bare name, because a caller who typed ``stat`` inside one tool
        call would not recognise ``stat`` reported on its own.
        """
        paths = list(self._unknown_field_names)
        for name in type(self).model_fields:
            paths.extend(_nested_unknown_paths(name, getattr(self, name)))
        return sorted(paths)


def _nested_unknown_paths(name: str, value: object) -> list[str]:
    if isinstance(value, CapturesUnknownFields):
        return [f"{name}.{path}" for path in value.unknown_fields()]
    if isinstance(value, list):
        return [
            path
            for index, item in enumerate(value)
            for path in _nested_unknown_paths(f"{name}[{index}]", item)
        ]
    return []
