"""The environment's typed readers, and the settings of the hooks that must start in milliseconds.

``config`` builds every setting on these readers and re-exports what is defined here: the two
modules are one configuration, and nothing else reads the environment. They are split so that
the Claude Code prompt hook, which runs before every prompt, reads its settings without
importing ``dataclasses`` (which brings ``inspect``, ``ast`` and ``dis``), ``pathlib`` or
``typing``: on this machine those cost more of its start-up than its search does
(``bench/hooks``). So this module imports ``os`` only, and paths here are strings.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # ``typing`` itself costs start-up time; type checkers read this as True
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import TypeVar

    _N = TypeVar("_N", int, float)

__all__ = [
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "ClaudeCodeSettings",
    "read_bool",
    "read_float",
    "read_int",
    "reflexio_home",
    "server_key",
    "server_url",
]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8081


def reflexio_home(environ: Mapping[str, str]) -> str:
    """Reflexio's folder on this machine: ``REFLEXIO_HOME``, else ``~/.reflexio``."""
    explicit = environ.get("REFLEXIO_HOME")
    if explicit:
        return os.path.expanduser(explicit)
    return os.path.join(environ.get("HOME") or os.path.expanduser("~"), ".reflexio")


def server_url(environ: Mapping[str, str]) -> str:
    """The server a client talks to: ``REFLEXIO_URL``, else our local server (no trailing slash)."""
    url = environ.get("REFLEXIO_URL") or f"http://{DEFAULT_HOST}:{DEFAULT_PORT}"
    return url.rstrip("/")


def server_key(environ: Mapping[str, str]) -> str:
    """The API key a client sends (``REFLEXIO_API_KEY``; empty: none)."""
    return environ.get("REFLEXIO_API_KEY", "")


def read_int(environ: Mapping[str, str], name: str, default: int) -> int:
    """An integer setting; ``default`` when unset or blank.

    Raises:
        ValueError: The variable is set to something that is not an integer (says which).
    """
    raw = environ.get(name)
    return default if raw is None or raw.strip() == "" else _parsed(int, name, raw, "an integer")


def read_float(environ: Mapping[str, str], name: str, default: float) -> float:
    """A number setting; ``default`` when unset or blank.

    Raises:
        ValueError: The variable is set to something that is not a number (says which).
    """
    raw = environ.get(name)
    return default if raw is None or raw.strip() == "" else _parsed(float, name, raw, "a number")


def _parsed(kind: Callable[[str], _N], name: str, raw: str, what: str) -> _N:
    try:
        return kind(raw)
    except ValueError as exc:
        raise ValueError(f"{name} must be {what}, got {raw!r}") from exc


def read_bool(environ: Mapping[str, str], name: str, default: bool) -> bool:
    """A flag: ``1``, ``true``, ``yes`` or ``on`` (any case) is true; ``default`` when unset."""
    raw = environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    return raw.strip().lower() in {"1", "true", "yes", "on"}


class ClaudeCodeSettings:
    """How the Claude Code hooks reach Reflexio, and where they keep what could not be sent.

    A plain class rather than a dataclass: see the module docstring.

    Attributes:
        url: The server (``REFLEXIO_URL``).
        api_key: Its key (``REFLEXIO_API_KEY``).
        home: Reflexio's folder on this machine; the outbox lives in ``claude-code/`` under it.
        user_id: Whose learnings these are (``REFLEXIO_USER_ID``, else the login name).
        agent_version: What the turns are published as (``REFLEXIO_AGENT_VERSION``).
        timeout_seconds: Longest a hook waits for the server (``REFLEXIO_HOOK_TIMEOUT_SECONDS``).
        top_k: Learnings per kind a prompt is given (``REFLEXIO_HOOK_TOP_K``).
        max_tokens: Size cap of the injected block (``REFLEXIO_HOOK_MAX_TOKENS``).
    """

    __slots__ = (
        "agent_version",
        "api_key",
        "home",
        "max_tokens",
        "timeout_seconds",
        "top_k",
        "url",
        "user_id",
    )

    def __init__(
        self,
        *,
        url: str,
        api_key: str,
        home: str,
        user_id: str = "claude-code",
        agent_version: str = "claude-code",
        timeout_seconds: float = 2.0,
        top_k: int = 5,
        max_tokens: int = 800,
    ) -> None:
        self.url = url
        self.api_key = api_key
        self.home = home
        self.user_id = user_id
        self.agent_version = agent_version
        self.timeout_seconds = timeout_seconds
        self.top_k = top_k
        self.max_tokens = max_tokens

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ClaudeCodeSettings:
        """Read the hooks' settings (the client's, plus the ``REFLEXIO_HOOK_*`` knobs)."""
        env = os.environ if environ is None else environ
        return cls(
            url=server_url(env),
            api_key=server_key(env),
            home=reflexio_home(env),
            user_id=env.get("REFLEXIO_USER_ID") or env.get("USER") or env.get("USERNAME") or "claude-code",
            agent_version=env.get("REFLEXIO_AGENT_VERSION") or "claude-code",
            timeout_seconds=read_float(env, "REFLEXIO_HOOK_TIMEOUT_SECONDS", 2.0),
            top_k=read_int(env, "REFLEXIO_HOOK_TOP_K", 5),
            max_tokens=read_int(env, "REFLEXIO_HOOK_MAX_TOKENS", 800),
        )

    @property
    def folder(self) -> str:
        """Where the outbox and the hooks' log live."""
        return os.path.join(self.home, "claude-code")

    def __repr__(self) -> str:  # never shows the key
        return f"ClaudeCodeSettings(url={self.url!r}, user_id={self.user_id!r}, home={self.home!r})"
