"""The filter bar every screen shares: agent version, user, status, tag and time, from the query.

One parse for all screens, so a link copied from one screen's filter bar means the same on
another, and a bad value is a clear 400 naming the field rather than a silently empty page.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from urllib.parse import urlencode

from starlette.datastructures import QueryParams

from reflexio.errors import BadRequestError

__all__ = ["SINCE_CHOICES", "Filters", "page_number"]

#: The time windows the bar offers: query value → (label, seconds; 0 = all time).
SINCE_CHOICES: dict[str, tuple[str, int]] = {
    "": ("any time", 0),
    "1d": ("last 24 hours", 86_400),
    "7d": ("last 7 days", 7 * 86_400),
    "30d": ("last 30 days", 30 * 86_400),
    "90d": ("last 90 days", 90 * 86_400),
}
_MAX_TEXT = 200


@dataclass(frozen=True, slots=True)
class Filters:
    """What the bar selects; empty strings mean "any"."""

    agent_version: str = ""
    user_id: str = ""
    status: str = ""
    tag: str = ""
    since: str = ""
    q: str = ""

    @classmethod
    def parse(cls, query: QueryParams) -> Filters:
        """Read the bar from a query string.

        Raises:
            BadRequestError: A value is too long or the time window is unknown.
        """
        values = {name: query.get(name, "").strip() for name in cls.__dataclass_fields__}
        for name, value in values.items():
            if len(value) > _MAX_TEXT:
                raise BadRequestError(f"{name} is longer than {_MAX_TEXT} characters")
        if values["since"] not in SINCE_CHOICES:
            raise BadRequestError(f"since must be one of {', '.join(k for k in SINCE_CHOICES if k)}")
        return cls(**values)

    @property
    def created_after(self) -> int | None:
        """The start of the time window (epoch seconds), or None for all time."""
        seconds = SINCE_CHOICES[self.since][1]
        return int(time.time()) - seconds if seconds else None

    def url(self, path: str, extra: Sequence[tuple[str, str]] = (), **changes: str | int) -> str:
        """This filter's URL on ``path``, with some values changed (empty values dropped).

        Args:
            path: The screen.
            extra: Repeated parameters the bar does not hold (``kind=...``), kept as given.
            changes: Values to change (``page=2``).
        """
        values: dict[str, str | int] = {name: getattr(self, name) for name in self.__dataclass_fields__}
        values.update(changes)
        kept = [(k, str(v)) for k, v in values.items() if v != "" and not (k == "page" and v == 1)]
        kept += list(extra)
        return f"{path}?{urlencode(kept)}" if kept else path

    def pages(self, path: str, extra: Sequence[tuple[str, str]] = ()) -> Callable[[int], str]:
        """The URL of each page of a listing under these filters."""
        return lambda n: self.url(path, extra, page=n)


def page_number(query: QueryParams) -> int:
    """The ``page`` query parameter (1 when absent).

    Raises:
        BadRequestError: It is not a positive number below 10,000.
    """
    raw = query.get("page", "1")
    if not raw.isdigit() or not 1 <= int(raw) < 10_000:
        raise BadRequestError("page must be a number from 1 to 9999")
    return int(raw)
