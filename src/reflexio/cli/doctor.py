"""``reflexio doctor``: what is configured, what is missing, and what that means.

Each check answers on its own (one failing check never hides the others) with ``ok``,
``missing`` (works, with less: no LLM provider means the offline rule extractor learns),
``warn`` (probably not what you want) or ``error`` (Reflexio cannot run like this). The
command exits non-zero only when a check is an ``error``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from reflexio.cli.options import ApiKeyOpt, JsonOpt, UrlOpt, client, client_settings, settings, wants_json
from reflexio.cli.output import Result, Table, run
from reflexio.config import LITELLM_MISSING, Settings, litellm_installed

if TYPE_CHECKING:
    from reflexio.embed import Embedder
    from reflexio.storage import Storage

__all__ = ["Check", "doctor"]

_MIN_PYTHON = (3, 11)

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Check:
    """One finding: what was checked, how it went, and what to do about it."""

    name: str
    status: str  # ok | missing | warn | error
    detail: str


def doctor(
    org: Annotated[
        str | None, typer.Option("--org", help="Org whose LLM config to check (default: the local org).")
    ] = None,
    storage_url: Annotated[str | None, typer.Option("--storage-url", help="Storage to check.")] = None,
    as_json: JsonOpt = False,
    url: UrlOpt = "",
    api_key: ApiKeyOpt = "",
) -> None:
    """Check the installation: Python, storage, embedder, server, API keys and LLM provider.

    Says what is configured and what is missing, e.g. no LLM provider (then the offline rule
    extractor learns from explicit signals). Exits 1 only if something prevents Reflexio
    from running.
    """
    run(wants_json(as_json), lambda: _diagnose(settings(storage_url=storage_url), org, url, api_key))


def _diagnose(chosen: Settings, org: str | None, url: str, api_key: str) -> Result:
    embedder, embedder_check = _opened("embedder", lambda: _embedder(chosen))
    if embedder is None:
        storage, storage_check = None, Check("storage", "error", "not checked: the embedder did not load")
    else:
        storage, storage_check = _opened("storage", lambda: _storage(chosen, embedder))
    try:
        checks = [
            _python(),
            _home(chosen),
            embedder_check,
            storage_check,
            _guard("server", lambda: _server(url, api_key)),
            _guard("API keys", lambda: _api_keys(storage, url, api_key)),
            _guard("LLM provider", lambda: _llm(chosen, storage, org)),
        ]
    finally:
        if storage is not None:
            storage.close()
    return _report(checks)


def _opened(name: str, opener: Callable[[], tuple[T | None, Check]]) -> tuple[T | None, Check]:
    """Open a dependency; any failure becomes an ``error`` finding instead of a traceback."""
    try:
        return opener()
    except Exception as exc:  # a diagnosis reports every failure, whatever it is
        return None, Check(name, "error", f"{type(exc).__name__}: {exc}")


def _guard(name: str, check: Callable[[], Check]) -> Check:
    """Run a check; any failure becomes an ``error`` finding."""
    return _opened(name, lambda: (None, check()))[1]


def _python() -> Check:
    version = ".".join(map(str, sys.version_info[:3]))
    if sys.version_info[:2] < _MIN_PYTHON:
        return Check("python", "error", f"Python {version}; Reflexio needs 3.11 or newer")
    return Check("python", "ok", f"Python {version} ({sys.executable})")


def _home(chosen: Settings) -> Check:
    home = chosen.home
    existing = next((p for p in (home, *home.parents) if p.exists()), Path("/"))
    if not os.access(existing, os.W_OK):
        return Check("home", "error", f"{home} is not writable")
    state = "exists" if home.exists() else "will be created"
    return Check("home", "ok", f"{home} ({state})")


def _embedder(chosen: Settings) -> tuple[Embedder, Check]:
    from reflexio.embed import open_embedder

    embedder = open_embedder(chosen.embedder)
    embedder.embed(["doctor"])
    return embedder, Check("embedder", "ok", f"{embedder.name} ({embedder.dim} dimensions)")


def _storage(chosen: Settings, embedder: Embedder) -> tuple[Storage | None, Check]:
    from reflexio.models.secrets import mask_url
    from reflexio.storage import open_storage

    shown = mask_url(chosen.storage_url)
    if chosen.storage_url.startswith("sqlite:///"):
        path = Path(chosen.storage_url.removeprefix("sqlite:///"))
        if not path.exists():
            return None, Check("storage", "ok", f"{shown} (not created yet; created on first start)")
    storage = open_storage(chosen.storage_url, embedder, search_index_mb=chosen.search_index_mb)
    storage.ping()
    return storage, Check("storage", "ok", f"{shown} ({storage.backend}, opens)")


def _server(url: str, api_key: str) -> Check:
    target = client_settings(url, api_key).url
    with client(url, api_key, timeout=5.0) as api:
        try:
            health = api.health()
        except Exception:  # unreachable is a finding, not a failure of the doctor
            return Check("server", "missing", f"not reachable at {target}; start it: reflexio services start")
    if health.status != "healthy":
        return Check("server", "warn", f"{target} answers but is {health.status}")
    return Check("server", "ok", f"healthy at {target}")


def _api_keys(storage: Storage | None, url: str, api_key: str) -> Check:
    sent = (
        "REFLEXIO_API_KEY/--api-key is set" if client_settings(url, api_key).api_key else "no client key set"
    )
    if storage is None:
        return Check("API keys", "ok", f"no keys stored: the server answers only this machine; {sent}")
    active = [key for key in storage.list_api_keys(None) if key.revoked_at is None]
    if not active:
        return Check("API keys", "ok", f"none: the server answers only clients on this machine; {sent}")
    orgs = sorted({key.org_id for key in active})
    return Check(
        "API keys", "ok", f"{len(active)} active (orgs: {', '.join(orgs)}): a key is required; {sent}"
    )


def _llm(chosen: Settings, storage: Storage | None, org: str | None) -> Check:
    from reflexio.llm import resolve_llm
    from reflexio.models.org_config import Config

    stored = storage.get_org_config(org or chosen.default_org_id) if storage is not None else None
    config = Config.from_stored(stored) if stored is not None else Config()
    models = resolve_llm(config, chosen)
    env_keys = ", ".join(sorted(chosen.provider_keys())) or "none"
    if models is None:
        install = (
            "" if litellm_installed() else " (and LiteLLM is not installed: pip install 'reflexio[llm]')"
        )
        return Check(
            "LLM provider",
            "missing",
            "no provider key (OPENAI_API_KEY, ANTHROPIC_API_KEY, ...) or llm_config in the org config; "
            f"the offline rule extractor will be used{install}",
        )
    if not litellm_installed():
        return Check("LLM provider", "error", f"{LITELLM_MISSING}; until then every learning job fails")
    model = models.extraction.model
    return Check(
        "LLM provider", "ok", f"extraction with {model} (provider keys in the environment: {env_keys})"
    )


def _report(checks: list[Check]) -> Result:
    configured = [c.name for c in checks if c.status == "ok"]
    missing = [c.name for c in checks if c.status == "missing"]
    errors = [c.name for c in checks if c.status == "error"]
    summary = [f"configured: {', '.join(configured) or 'nothing'}"]
    summary += [f"missing: {c.name} ({c.detail})" for c in checks if c.status == "missing"]
    summary += [f"error: {c.name} ({c.detail})" for c in checks if c.status == "error"]
    rows: list[dict[str, Any]] = [{"name": c.name, "status": c.status, "detail": c.detail} for c in checks]
    data = {
        "ok": not errors,
        "checks": rows,
        "configured": configured,
        "missing": missing,
        "errors": errors,
    }
    return Result(
        data,
        message="\n".join(summary),
        tables=[Table("Reflexio doctor", ("name", "status", "detail"), rows)],
        exit_code=1 if errors else 0,
    )
