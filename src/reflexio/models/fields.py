"""Reusable field types for the wire models, and the bases that refuse or report unknown keys.

Reflexio's wire format carries a handful of recurring constraints: identifiers that must not
be blank, a lowercase ``source`` slug, request-side time filters that arrive either as epoch
seconds or as the ISO strings the 0.2.16 client sends, and payloads whose unknown keys must be
accepted (old plugins send extra bookkeeping) but reported back so a typo is not silently lost.
They live here once so every request and entity spells them the same way, and so every route
has the same limits: an identifier is at most :data:`MAX_ID_LENGTH` characters wherever it is
written or read, a page at most :data:`MAX_PAGE` rows, a search at most :data:`MAX_TOP_K` hits
per kind, a timestamp an epoch second before year 10000, and every other integer fits the
signed 64 bits both databases store.

Every constraint is one the generated JSON Schema states too (lengths, bounds, patterns), so
the OpenAPI document describes exactly what the server accepts. Integers, booleans and
identifiers are strict: ``"5"`` is not an integer and ``"yes"`` is not a boolean, as the
schema says.
"""

import functools
import ipaddress
import re
import time
from collections.abc import Generator
from datetime import UTC, datetime
from enum import IntEnum
from types import UnionType
from typing import Annotated, Any, Final, Literal, Self, Union, get_args, get_origin
from urllib.parse import urlparse

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    HttpUrl,
    ModelWrapValidatorHandler,
    PrivateAttr,
    StringConstraints,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

__all__ = [
    "DEFAULT_AGENT_VERSION",
    "INT64_MAX",
    "MAX_BULK_ITEMS",
    "MAX_BULK_TEXT",
    "MAX_EPOCH",
    "MAX_ID_LENGTH",
    "MAX_LEARNING_TEXT",
    "MAX_PAGE",
    "MAX_QUERY_LENGTH",
    "MAX_ROW_ID",
    "MAX_TOP_K",
    "NEVER_EXPIRES_TIMESTAMP",
    "CapturesUnknownFields",
    "Epoch",
    "FilterTime",
    "Flag",
    "Fraction",
    "Id",
    "ImageUrl",
    "Int64",
    "JsonTyped",
    "LearningText",
    "Name",
    "NonEmptyStr",
    "PageSize",
    "QueryText",
    "RequestModel",
    "RowId",
    "SafeHttpUrl",
    "SanitizedNonEmptyStr",
    "SessionOutcomeSource",
    "StrictModel",
    "TimeWindow",
    "TopK",
    "WireModel",
    "check_image_url",
    "check_time_range",
    "is_blank",
    "now_epoch",
]

#: The agent version a request gets when the caller names none (same as Reflexio's).
DEFAULT_AGENT_VERSION: Final = "agent-v0"

#: "Never expires" as an epoch second (2100-01-01T00:00:00Z), as Reflexio stores it.
NEVER_EXPIRES_TIMESTAMP: Final = 4_102_444_800

#: The largest integer the wire carries: what a BIGINT column (both databases) can hold.
INT64_MAX: Final = 2**63 - 1
#: The largest row id: the largest integer every JSON parser (JavaScript's too) holds exactly.
MAX_ROW_ID: Final = 2**53 - 1
#: The last epoch second of year 9999, the latest timestamp any field accepts.
MAX_EPOCH: Final = 253_402_300_799
#: The longest identifier (user, session, request, profile, experiment...) on any route.
MAX_ID_LENGTH: Final = 255
#: The most rows one page of any list route returns.
MAX_PAGE: Final = 1_000
#: The most hits per kind any search returns (Reflexio's bound on ``/api/search``).
MAX_TOP_K: Final = 100
#: The longest query text a search or filter takes (longer text only slows the embedder).
MAX_QUERY_LENGTH: Final = 10_000
#: The longest text of one learning written through the API (content, trigger, rationale...).
MAX_LEARNING_TEXT: Final = 10_000
#: The most learnings one bulk write (``add_user_profile``, ``add_*_playbook``) carries.
MAX_BULK_ITEMS: Final = 1_000
#: The most text, summed over its learnings, one bulk write carries: bounds the embedding work.
MAX_BULK_TEXT: Final = 1_000_000


def now_epoch() -> int:
    """Return the current time in whole epoch seconds, the wire format of every timestamp."""
    return int(time.time())


#: The characters ``str.strip()`` removes (exactly those for which ``str.isspace()`` holds),
#: spelled out so the schema's pattern means the same in Python, Rust and ECMAScript regexes,
#: whose ``\s`` classes differ.
SPACE_CLASS: Final = r"\t\n\v\f\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
#: Contains a character that is neither whitespace nor NUL (NUL is refused everywhere, see api.inputs).
NON_BLANK_PATTERN: Final = rf"^[^\x00]*[^\x00{SPACE_CLASS}][^\x00]*$"


def is_blank(value: str | None) -> bool:
    """Whether ``value`` is missing, empty or whitespace only (what the non-blank pattern refuses)."""
    return not value or not value.strip()


def _strip_blank(value: str) -> str:
    return value.strip()


_CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _strip_control_chars(value: str) -> str:
    return _CONTROL_CHARS.sub("", value)


NonEmptyStr = Annotated[str, StringConstraints(pattern=NON_BLANK_PATTERN), AfterValidator(_strip_blank)]
"""A string that must not be blank, stripped of surrounding whitespace (Reflexio's ``NonEmptyStr``).

The check runs on the value as sent, then it is stripped, so the schema's pattern describes
exactly what is accepted.
"""

SanitizedNonEmptyStr = Annotated[
    str,
    StringConstraints(pattern=rf"^[^\x00]*[^\x00-\x20\x7f{SPACE_CLASS}][^\x00]*$"),
    AfterValidator(_strip_control_chars),
    AfterValidator(_strip_blank),
]
"""A non-blank string with control characters removed; used for prompts fed to an LLM.

"Non-blank" here means it holds a printable character, so removing the control characters
can never leave it empty.
"""

Id = Annotated[
    str,
    StringConstraints(max_length=MAX_ID_LENGTH, pattern=NON_BLANK_PATTERN),
    AfterValidator(_strip_blank),
]
"""An identifier (user, session, request, profile...): non-blank, at most 255 characters.

The same on every route, written or read, so whatever can be stored can be searched for.
"""

Int64 = Annotated[int, Field(ge=-INT64_MAX - 1, le=INT64_MAX)]
"""Any integer: a real JSON integer (not ``"5"``) that fits in 64 bits."""

RowId = Annotated[int, Field(gt=0, le=MAX_ROW_ID)]
"""A numeric row id (interaction, playbook, job): positive, at most 2**53 - 1."""

Epoch = Annotated[int, Field(ge=0, le=MAX_EPOCH)]
"""A timestamp in epoch seconds, from 1970 to the end of year 9999."""

PageSize = Annotated[int, Field(gt=0, le=MAX_PAGE)]
"""How many rows one page of a list returns (1..1000)."""

TopK = Annotated[int, Field(gt=0, le=MAX_TOP_K)]
"""How many hits per kind a search returns (1..100)."""

Flag = bool
"""A JSON boolean (``"yes"`` and ``1`` are refused by :class:`JsonTyped`, as the schema says)."""

Fraction = Annotated[float, Field(ge=0.0, le=1.0)]
"""A JSON number from 0 to 1 (a threshold, a rate); ``false`` and ``"0.5"`` are refused."""

Name = Annotated[str, StringConstraints(max_length=MAX_ID_LENGTH)]
"""A short label that may be empty (agent version filter, playbook name, tag): at most 255."""

QueryText = Annotated[str, StringConstraints(max_length=MAX_QUERY_LENGTH)]
"""Free text a search or a filter matches against: at most 10,000 characters."""

LearningText = Annotated[str, StringConstraints(max_length=MAX_LEARNING_TEXT)]
"""One text field of a learning written through the API: at most 10,000 characters."""

SOURCE_PATTERN: Final = r"^[a-z0-9][a-z0-9._:-]{0,127}$"

SessionOutcomeSource = Literal[""] | Annotated[str, StringConstraints(max_length=128, pattern=SOURCE_PATTERN)]
"""A producer label such as ``support-agent:v2``: empty, or a lowercase slug of at most 128."""


#: An ISO 8601 date-time as the 0.2.16 client sends it (``datetime.isoformat()``, offset optional).
_DATE = r"[1-9][0-9]{3}-((0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])|(0[13-9]|1[0-2])-(29|30)|(0[13578]|1[02])-31)"
_TIME = r"([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9](\.[0-9]{1,6})?)?"
_OFFSET = r"([Zz]|[+-]([01][0-9]|2[0-3]):[0-5][0-9])"
#: Years 1000-9999 and every valid day but February 29 (which the server still accepts in leap
#: years): a pattern all regex engines read alike, so whatever it admits parses.
ISO_DATETIME_PATTERN: Final = rf"^{_DATE}[Tt ]{_TIME}{_OFFSET}?$"
_LEAP_DAY = re.compile(rf"^[0-9]{{4}}-02-29[Tt ]{_TIME}{_OFFSET}?$")
_ISO_DATETIME = re.compile(ISO_DATETIME_PATTERN)


def _filter_time(value: object) -> datetime:
    """Epoch seconds (a JSON integer) or an ISO date-time string, as a UTC-aware datetime."""
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, int | float) and not isinstance(value, bool) and float(value).is_integer():
        value = int(value)
        if not 0 <= value <= MAX_EPOCH:
            raise ValueError(f"epoch seconds must be between 0 and {MAX_EPOCH}")
        parsed = datetime.fromtimestamp(value, UTC)
    elif isinstance(value, str) and (_ISO_DATETIME.match(value) or _LEAP_DAY.match(value)):
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
        except ValueError as exc:  # e.g. month 13: the pattern checks shape, not the calendar
            raise ValueError(f"not a valid date-time: {exc}") from None
    else:
        raise ValueError("must be epoch seconds (an integer) or an ISO 8601 date-time string")
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


FilterTime = Annotated[
    datetime,
    BeforeValidator(_filter_time),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "integer", "minimum": 0, "maximum": MAX_EPOCH},
                {"type": "string", "pattern": ISO_DATETIME_PATTERN},
            ],
            "description": "Epoch seconds, or an ISO 8601 date-time (no offset means UTC)",
        }
    ),
]
"""A time filter on a request: epoch seconds or an ISO 8601 string, always UTC-aware.

The 0.2.16 client declares its ``start_time``/``end_time`` filters as ``datetime`` and sends
them as ISO strings, so these fields cannot be plain ints; naive values are taken as UTC.
"""


def _json_type_problem(annotation: Any, value: Any) -> str | None:
    """Why ``value`` (parsed JSON) is not of the JSON type ``annotation`` stands for, or None.

    Only the JSON types are checked (integer, number, boolean, string, array, object); every
    other rule (bounds, enums, formats) is pydantic's. Unknown annotations pass.
    """
    origin = get_origin(annotation)
    if origin is Annotated:
        return _json_type_problem(get_args(annotation)[0], value)
    if origin in (Union, UnionType):
        problems = [_json_type_problem(member, value) for member in get_args(annotation)]
        return None if any(problem is None for problem in problems) else problems[0]
    if annotation is type(None):
        return None if value is None else "Input should be null"
    if annotation is bool:
        return None if isinstance(value, bool) else "Input should be a boolean (true or false)"
    if annotation is int:
        integral = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
        return None if integral and not isinstance(value, bool) else "Input should be an integer"
    if annotation is float:
        number = isinstance(value, int | float) and not isinstance(value, bool)
        return None if number else "Input should be a number"
    if annotation is str:
        return None if isinstance(value, str) else "Input should be a string"
    if isinstance(annotation, type) and issubclass(annotation, IntEnum):
        return (
            None if isinstance(value, int) and not isinstance(value, bool) else "Input should be an integer"
        )
    if origin is list and isinstance(value, list):
        (item,) = get_args(annotation) or (Any,)
        return next((p for p in (_json_type_problem(item, v) for v in value) if p), None)
    return None


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


class JsonTyped(WireModel):
    """A model whose fields take exactly their JSON type, as the JSON Schema states it.

    Pydantic's lax mode turns ``"5"`` into 5, ``"yes"`` into True and ``false`` into 0.0;
    JSON Schema calls all three invalid. This check runs before each field is validated and
    refuses them, naming the field (``5.0`` stays an integer, as JSON Schema says).
    """

    @field_validator("*", mode="before")
    @classmethod
    def _json_type(cls, value: Any, info: ValidationInfo) -> Any:
        field = cls.model_fields.get(info.field_name or "")
        if field is not None and (problem := _json_type_problem(field.annotation, value)):
            raise PydanticCustomError("json_type", problem)
        return value


class StrictModel(JsonTyped):
    """Exact JSON types and no unknown key: the base of request bodies and of config parts.

    An unknown key is refused with an error that names it, so a typo in a setting or a
    request field is an error, not a silent no-op.
    """

    model_config = ConfigDict(extra="forbid")


class RequestModel(StrictModel):
    """Base of request bodies: an unknown key is refused with a 422 that names it.

    A typo such as ``top_K`` would otherwise be dropped silently and the request would run
    with the default. (Publish is the exception: it accepts unknown keys and reports them,
    see :class:`CapturesUnknownFields`, because first-party plugins send extra bookkeeping.)
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


#: An http(s) URL of printable ASCII, the characters a URL needs without percent-encoding.
URL_PATTERN: Final = r"^https?://[A-Za-z0-9._~:/?#\[\]@!$&'()*+,;=%-]+$"
_URL = re.compile(URL_PATTERN)
_MAX_URL: Final = 2_048


def _plain_url(value: object) -> object:
    if isinstance(value, str) and not (len(value) <= _MAX_URL and _URL.match(value)):
        raise ValueError(f"must be an http(s) URL of at most {_MAX_URL} printable ASCII characters")
    return value


@functools.cache
def _http_url() -> TypeAdapter[HttpUrl]:
    return TypeAdapter(HttpUrl)


def _checked_url(value: str) -> str:
    """Parse ``value`` as an http(s) URL and refuse metadata hosts, keeping the text as sent.

    Pydantic's ``HttpUrl`` normalises (a bare host gains a trailing slash), so a URL valid at
    its length limit would be stored one character longer and no longer load back; keeping
    the text makes what is stored exactly what was sent and what the schema allows.
    """
    try:
        url = _http_url().validate_python(value)
    except ValidationError as exc:
        raise ValueError(f"must be an http(s) URL: {exc.errors()[0]['msg']}") from None
    _reject_metadata_host(url)
    return value


SafeHttpUrl = Annotated[
    str,
    BeforeValidator(_plain_url),
    AfterValidator(_checked_url),
    WithJsonSchema({"type": "string", "format": "uri", "maxLength": _MAX_URL, "pattern": URL_PATTERN}),
]
"""An http(s) URL the server will call (LLM endpoints), never a cloud metadata endpoint.

Printable ASCII only and at most 2,048 characters, stored as sent (see
:func:`_checked_url`), so a stored config always loads back.
"""


class TimeWindow(RequestModel):
    """Base for requests filtered by ``start_time``/``end_time``; the end must follow the start."""

    start_time: FilterTime | None = None
    end_time: FilterTime | None = None

    @model_validator(mode="after")
    def _end_after_start(self) -> Self:
        check_time_range(self.start_time, self.end_time)
        return self


ImageUrl = Annotated[str, AfterValidator(check_image_url)]
"""An image URL a caller attaches to a turn; see :func:`check_image_url`."""


class CapturesUnknownFields(JsonTyped):
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
