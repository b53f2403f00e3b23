"""Options every command shares, and how a command reaches the server or the local settings.

``--json``, ``--url`` and ``--api-key`` can be given before the command (``reflexio --json
jobs list``) or after it (``reflexio jobs list --json``); the command's own value wins. Data
commands talk to a server through :class:`~reflexio.ReflexioClient`, so they work against a
remote server too; server-side commands (``services``, ``worker``, ``keys``, ``doctor``) read
:class:`~reflexio.config.Settings`, which is the only place the environment is read.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated

import typer

from reflexio.config import ClientSettings, Settings

if TYPE_CHECKING:
    from reflexio.client import ReflexioClient

__all__ = [
    "GLOBALS",
    "ApiKeyOpt",
    "Globals",
    "JsonOpt",
    "UrlOpt",
    "client",
    "client_settings",
    "settings",
    "wants_json",
]

JsonOpt = Annotated[
    bool, typer.Option("--json", help="Print one JSON document instead of tables (for scripts).")
]
UrlOpt = Annotated[
    str,
    typer.Option(
        "--url",
        help="Server to talk to (default: $REFLEXIO_URL, then http://127.0.0.1:8081).",
        show_default=False,
    ),
]
ApiKeyOpt = Annotated[
    str,
    typer.Option("--api-key", help="API key to send (default: $REFLEXIO_API_KEY).", show_default=False),
]


@dataclass(frozen=True, slots=True)
class Globals:
    """Options given before the command name."""

    url: str = ""
    api_key: str = ""
    as_json: bool = False


#: The options given before the command of the invocation in progress (set by the root callback).
GLOBALS: ContextVar[Globals | None] = ContextVar("reflexio_cli_globals", default=None)


def _globals() -> Globals:
    return GLOBALS.get() or Globals()


def wants_json(as_json: bool) -> bool:
    """Whether to print JSON: the command's ``--json`` or the global one."""
    return as_json or _globals().as_json


def client_settings(url: str = "", api_key: str = "") -> ClientSettings:
    """Where data commands send requests: flags first, then global flags, then the environment."""
    env = ClientSettings.from_env()
    chosen = _globals()
    return ClientSettings(
        url=(url or chosen.url or env.url).rstrip("/"),
        api_key=api_key or chosen.api_key or env.api_key,
    )


def client(url: str = "", api_key: str = "", timeout: float = 300.0) -> ReflexioClient:
    """A client for the server the flags (or the environment) name."""
    from reflexio.client import ReflexioClient  # the client and its models load only when used

    chosen = client_settings(url, api_key)
    return ReflexioClient(api_key=chosen.api_key, url_endpoint=chosen.url, timeout=timeout)


def settings(**overrides: object) -> Settings:
    """Server settings from the environment, with the flags that were given (not None) applied."""
    given = {name: value for name, value in overrides.items() if value is not None}
    base = Settings.from_env()
    return base.replace(**given) if given else base
