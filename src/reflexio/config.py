"""Settings: with its core ``reflexio.environment``, the only module that reads the environment.

Everything else receives values from a ``Settings`` (server side) or a ``ClientSettings``
(SDK side) built once at start-up, so behaviour never depends on when a variable was read.
Per-organisation behaviour (extractors, windows, thresholds, LLM models) is not here: it lives
in the org ``Config`` stored with the data (``reflexio.models.org_config``). The typed readers
and the Claude Code hooks' settings live in ``reflexio.environment`` (standard library ``os``
only, for the hooks' start-up time) and are re-exported here.
"""

from __future__ import annotations

import functools
import importlib.util
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Final

from reflexio.environment import (
    DEFAULT_HOST,
    DEFAULT_PORT,
    ClaudeCodeSettings,
    read_bool,
    read_float,
    read_int,
    reflexio_home,
    server_key,
    server_url,
)

__all__ = [
    "DEFAULT_HOST",
    "DEFAULT_ORG_ID",
    "DEFAULT_PORT",
    "LITELLM_MISSING",
    "PLAN_NAMES",
    "ClaudeCodeSettings",
    "ClientSettings",
    "Settings",
    "litellm_callbacks",
    "litellm_installed",
    "load_litellm",
]

DEFAULT_ORG_ID = "self-host-org"


#: The built-in plans (``models.plans.BUILTIN_PLANS`` holds their limits).
PLAN_NAMES: Final = ("free", "pro", "unlimited")


def _plan_name(environ: Mapping[str, str]) -> str:
    raw = (environ.get("REFLEXIO_DEFAULT_PLAN") or "unlimited").strip().lower()
    if raw not in PLAN_NAMES:
        raise ValueError(f"REFLEXIO_DEFAULT_PLAN must be one of {', '.join(PLAN_NAMES)}, got {raw!r}")
    return raw


def _env_value(value: object) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, tuple):
        return ",".join(str(item) for item in value)
    return str(value)


@dataclass(frozen=True, slots=True)
class Settings:
    """How this server process runs.

    Attributes:
        home: Folder for the embedded defaults (SQLite file, pid and log files).
        storage_url: ``sqlite:///path``, ``postgresql://...`` or ``memory://``.
        embedder: Embedder spec (see ``reflexio.embed.open_embedder``).
        host: Interface the API binds to.
        port: Port the API binds to.
        default_org_id: Org that loopback clients act as while no API key exists.
        max_body_bytes: Largest request body the API reads.
        workers: Job worker threads started with the API (0 = none).
        worker_process: Run those workers in a child process of the API server (the
            default) instead of threads inside it; see ``reflexio.api.worker_process``.
        job_poll_seconds: How long an idle worker sleeps between claim attempts.
        job_lease_seconds: How long a claimed job stays leased without a heartbeat.
        llm_timeout_seconds: Per-call timeout for LLM requests.
        shutdown_grace_seconds: How long a stopping server gives requests in flight and the
            jobs in hand to finish; after it the rest is cancelled or released, so a stop
            never takes (much) longer.
        secret_keys: Fernet keys that encrypt secrets at rest (``REFLEXIO_SECRET_KEYS``,
            comma-separated): the first encrypts, every one decrypts, so a new key goes first
            and the old one stays listed until ``reflexio secrets rotate`` has run. Empty:
            the key in ``secret_key_file`` (created, owner-only, on first start).
        secret_key_file: Where the generated key lives when no key is given.
        rate_limit_per_minute: Requests per minute each caller (API key, or the local client)
            may make, per API process (0: no limit, the self-host default).
        rate_limit_burst: How many requests a caller may make at once above that pace.
        default_plan: The plan of an org the operator assigned none (``REFLEXIO_DEFAULT_PLAN``:
            ``unlimited``, the self-host default, ``free`` or ``pro``); see ``models.plans``.
        auth_max_failures: Failed authentications from one address (within
            ``auth_failure_window_seconds``) after which it is locked out (0: never).
        auth_failure_window_seconds: The window those failures are counted in.
        auth_lockout_seconds: How long a locked-out address is refused.
        log_level: Python logging level name.
        search_index_mb: PostgreSQL only: the memory this process's in-process learning search
            indexes may take (``reflexio.storage.postgres_index``); orgs that do not fit are
            searched in SQL, 0 searches every org in SQL. SQLite always keeps its index.
        otel_endpoint: OTLP/HTTP endpoint traces and metrics are pushed to (empty: none);
            ``REFLEXIO_OTEL_ENDPOINT``, else the standard ``OTEL_EXPORTER_OTLP_ENDPOINT``.
        otel_service_name: The ``service.name`` telemetry carries (``OTEL_SERVICE_NAME``).
        environ: The mapping the settings were read from, kept for provider keys
            that LiteLLM reads itself (never logged).
    """

    home: Path
    storage_url: str
    embedder: str = "auto"
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    default_org_id: str = DEFAULT_ORG_ID
    max_body_bytes: int = 10 * 1024 * 1024
    workers: int = 2
    worker_process: bool = True
    job_poll_seconds: float = 0.5
    job_lease_seconds: float = 60.0
    llm_timeout_seconds: float = 60.0
    shutdown_grace_seconds: float = 20.0
    secret_keys: tuple[str, ...] = field(default=(), repr=False)
    secret_key_file: Path | None = None
    rate_limit_per_minute: float = 0.0
    rate_limit_burst: int = 60
    default_plan: str = "unlimited"
    auth_max_failures: int = 10
    auth_failure_window_seconds: float = 60.0
    auth_lockout_seconds: float = 300.0
    log_level: str = "INFO"
    search_index_mb: int = 1024
    otel_endpoint: str = ""
    otel_service_name: str = "reflexio"
    environ: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Read settings from the environment (or a given mapping, for tests and the CLI)."""
        env = dict(os.environ if environ is None else environ)
        home = Path(reflexio_home(env))
        default_db = home / "data" / "reflexio.db"
        return cls(
            home=home,
            storage_url=env.get("REFLEXIO_STORAGE_URL") or f"sqlite:///{default_db}",
            embedder=env.get("REFLEXIO_EMBEDDER") or "auto",
            host=env.get("REFLEXIO_HOST") or DEFAULT_HOST,
            port=read_int(env, "REFLEXIO_PORT", DEFAULT_PORT),
            default_org_id=env.get("REFLEXIO_DEFAULT_ORG_ID") or DEFAULT_ORG_ID,
            max_body_bytes=read_int(env, "REFLEXIO_MAX_BODY_BYTES", 10 * 1024 * 1024),
            workers=read_int(env, "REFLEXIO_WORKERS", 2),
            worker_process=read_bool(env, "REFLEXIO_WORKER_PROCESS", True),
            job_poll_seconds=read_float(env, "REFLEXIO_JOB_POLL_SECONDS", 0.5),
            job_lease_seconds=read_float(env, "REFLEXIO_JOB_LEASE_SECONDS", 60.0),
            llm_timeout_seconds=read_float(env, "REFLEXIO_LLM_TIMEOUT_SECONDS", 60.0),
            shutdown_grace_seconds=read_float(env, "REFLEXIO_SHUTDOWN_GRACE_SECONDS", 20.0),
            secret_keys=tuple(k.strip() for k in env.get("REFLEXIO_SECRET_KEYS", "").split(",") if k.strip()),
            secret_key_file=Path(env["REFLEXIO_SECRET_KEY_FILE"]).expanduser()
            if env.get("REFLEXIO_SECRET_KEY_FILE")
            else home / "secret.key",
            rate_limit_per_minute=read_float(env, "REFLEXIO_RATE_LIMIT_PER_MINUTE", 0.0),
            rate_limit_burst=read_int(env, "REFLEXIO_RATE_LIMIT_BURST", 60),
            default_plan=_plan_name(env),
            auth_max_failures=read_int(env, "REFLEXIO_AUTH_MAX_FAILURES", 10),
            auth_failure_window_seconds=read_float(env, "REFLEXIO_AUTH_FAILURE_WINDOW_SECONDS", 60.0),
            auth_lockout_seconds=read_float(env, "REFLEXIO_AUTH_LOCKOUT_SECONDS", 300.0),
            log_level=env.get("REFLEXIO_LOG_LEVEL") or "INFO",
            search_index_mb=read_int(env, "REFLEXIO_SEARCH_INDEX_MB", 1024),
            otel_endpoint=env.get("REFLEXIO_OTEL_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_ENDPOINT") or "",
            otel_service_name=(
                env.get("REFLEXIO_OTEL_SERVICE_NAME") or env.get("OTEL_SERVICE_NAME") or "reflexio"
            ),
            environ=env,
        )

    def replace(self, **changes: object) -> Settings:
        """Return a copy with some fields changed (CLI flags override the environment)."""
        from dataclasses import replace

        return replace(self, **changes)  # type: ignore[arg-type]

    def to_env(self) -> dict[str, str]:
        """The environment that makes a child process read these same settings.

        The original environment (provider keys included) plus every field, so values given
        as CLI flags reach a child, such as the worker process the server starts, too.
        """
        values = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in {"home", "environ"}}
        derived = {
            f"REFLEXIO_{name.upper()}": _env_value(value)
            for name, value in values.items()
            if value is not None
        }  # every field is read from REFLEXIO_<NAME> (see from_env)
        return {**self.environ, "REFLEXIO_HOME": str(self.home), **derived}

    @property
    def run_dir(self) -> Path:
        """Folder for pid and log files of background services."""
        return self.home / "run"

    @property
    def workers_ready_file(self) -> Path:
        """Written by the server on this port once its job workers claim jobs (learning can start)."""
        return self.run_dir / f"workers-{self.port}.ready"

    def provider_keys(self) -> dict[str, str]:
        """LLM provider credentials present in the environment, by variable name."""
        names = (
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "GEMINI_API_KEY",
            "OPENROUTER_API_KEY",
            "DEEPSEEK_API_KEY",
            "AZURE_API_KEY",
            "MISTRAL_API_KEY",
            "GROQ_API_KEY",
        )
        return {name: self.environ[name] for name in names if self.environ.get(name)}


@dataclass(frozen=True, slots=True)
class ClientSettings:
    """Where the SDK and CLI send requests, and with which key."""

    url: str
    api_key: str

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ClientSettings:
        """Read ``REFLEXIO_URL`` and ``REFLEXIO_API_KEY`` (default: our local server)."""
        env = os.environ if environ is None else environ
        return cls(url=server_url(env), api_key=server_key(env))


#: What to do when an LLM is configured but LiteLLM is not installed (said the same everywhere).
LITELLM_MISSING = (
    "an LLM provider is configured but LiteLLM is not installed on this server: install it with "
    "`pip install 'reflexio[llm]'` (./scripts/serve does) and restart the server"
)


def litellm_installed() -> bool:
    """Whether LiteLLM can be imported here, without importing it (that takes seconds)."""
    try:
        return importlib.util.find_spec("litellm") is not None
    except (ImportError, ValueError):  # a blocked import (sys.modules entry set to None)
        return False


def bool_env(name: str, default: bool = False) -> bool:
    """Read one boolean flag from the process environment (used by scripts and benches)."""
    return read_bool(os.environ, name, default)


@functools.cache
def load_litellm() -> Any:
    """Import litellm on first use (it takes seconds; most deployments never need it).

    Importing litellm fetches its model price map from GitHub unless told to use the copy its
    wheel bundles; this ``setdefault`` is Reflexio's only environment *write*, and an operator
    who set the variable keeps their value. ``REFLEXIO_LITELLM_CALLBACKS`` turns on LiteLLM's
    own callbacks (Langfuse and the others LiteLLM supports, configured as LiteLLM documents).

    Raises:
        ImportError: litellm is not installed (the ``llm`` extra).
    """
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        import litellm
    except ImportError as exc:
        raise ImportError(f"{LITELLM_MISSING} ({exc})", name=exc.name) from exc

    litellm.suppress_debug_info = True
    callbacks = litellm_callbacks(os.environ)
    if callbacks:  # e.g. "langfuse": LiteLLM then reports every call there itself
        litellm.success_callback = [*litellm.success_callback, *callbacks]
        litellm.failure_callback = [*litellm.failure_callback, *callbacks]
    return litellm


def litellm_callbacks(environ: Mapping[str, str]) -> list[str]:
    """LiteLLM callbacks to turn on (``REFLEXIO_LITELLM_CALLBACKS=langfuse,otel``), in order."""
    raw = environ.get("REFLEXIO_LITELLM_CALLBACKS", "")
    return [name.strip() for name in raw.split(",") if name.strip()]
