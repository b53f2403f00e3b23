"""Read and write an org's ``Config``: secrets are write-only and encrypted at rest, writes are
validated strictly.

Every read is masked (API keys, passwords in URLs, HMAC secrets), so ``get_config`` can be
shown on a dashboard or pasted into an issue. A write may send those masks back: they are
swapped for the stored secrets, so read → edit → write keeps every key; a mask that matches
nothing stored is refused rather than stored. The retrieval experiment fields have their own
lifecycle, so a config write may not change them (409). Stored, the secrets are encrypted
with the operator's key (``service.vault``, through ``Core.put_config``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pydantic

from reflexio.errors import ConflictError, ValidationError
from reflexio.models import SetConfigResponse
from reflexio.models.org_config import Config
from reflexio.service.core import Core
from reflexio.service.vault import seal_stored_configs

__all__ = ["describe_validation_errors", "get_config", "seal_secrets", "set_config", "update_config"]

_OWN_LIFECYCLE = ("retrieval_experiment_config", "retrieval_experiment_history")


def describe_validation_errors(errors: Iterable[Mapping[str, Any]], *, skip: tuple[str, ...] = ()) -> str:
    """One readable line per pydantic error, naming the field: ``window_size: Input should be > 0``.

    Shared by config writes and the API's request validation handler so every 422 reads alike.

    Args:
        errors: ``pydantic.ValidationError.errors()`` (or FastAPI's equivalent).
        skip: Leading location parts to drop (FastAPI prefixes ``body``/``query``).
    """
    lines = []
    for error in errors:
        loc = [str(part) for part in error.get("loc", ())]
        while loc and loc[0] in skip:
            loc = loc[1:]
        where = ".".join(loc) or "request"
        lines.append(f"{where}: {error.get('msg', 'invalid value')}")
    return "; ".join(lines) or "invalid request"


def get_config(core: Core, org_id: str) -> dict[str, Any]:
    """The org's config (its defaults when it never set one) with every secret masked."""
    return core.org_config(org_id).masked()


def set_config(core: Core, org_id: str, body: Mapping[str, Any]) -> SetConfigResponse:
    """Replace the org's config (experiment fields are kept when omitted).

    Raises:
        ValidationError: The config is invalid, has unknown keys, or holds an unknown mask.
        ConflictError: It tries to change the retrieval experiment fields.
    """
    try:
        current = core.org_config(org_id)
    except ValidationError:  # a damaged stored config must stay replaceable (its masks cannot be)
        current = Config()
    new = _merged(current, body, partial=False)
    core.put_config(org_id, new)
    return SetConfigResponse(success=True, msg="Configuration saved")


def update_config(core: Core, org_id: str, body: Mapping[str, Any]) -> SetConfigResponse:
    """Replace only the top-level keys sent (nested objects are replaced whole).

    Raises:
        ValidationError: The result is invalid, a key is unknown, or a mask is unknown.
        ConflictError: It tries to change the retrieval experiment fields.
    """
    current = core.org_config(org_id)
    new = _merged(current, body, partial=True)
    if new == current:
        return SetConfigResponse(success=True, msg="Configuration unchanged")
    core.put_config(org_id, new)
    return SetConfigResponse(success=True, msg="Configuration updated")


def _merged(current: Config, body: Mapping[str, Any], *, partial: bool) -> Config:
    try:
        new = current.merge_update(body, partial=partial)
        # What is stored must load back: a value valid as sent can grow past a limit once
        # normalised (a URL is percent-encoded), and would then break every later request.
        Config.from_stored(new.model_dump(mode="json"))
    except pydantic.ValidationError as exc:
        errors = exc.errors(include_url=False, include_context=False, include_input=False)
        raise ValidationError(
            f"invalid config: {describe_validation_errors(errors)}", details={"errors": errors}
        ) from exc
    except ValueError as exc:  # a masked secret that matches no stored secret
        raise ValidationError(str(exc)) from exc
    changed = [k for k in _OWN_LIFECYCLE if getattr(new, k) != getattr(current, k)]
    if changed:
        raise ConflictError(
            f"{', '.join(changed)} cannot be changed by a config write; use the retrieval experiment routes",
            details={"fields": changed},
        )
    return new


def seal_secrets(core: Core) -> int:
    """Encrypt (or re-encrypt with the first key) the secrets of every stored org config.

    Run by the server at start-up (secrets stored by older versions get encrypted) and by
    ``reflexio secrets rotate`` after a new key was put first. Returns how many configs changed.
    """
    owners = {core.settings.default_org_id, *(key.org_id for key in core.storage.list_api_keys())}
    orgs = sorted(owners | set(core.storage.list_orgs()))
    changed = seal_stored_configs(core.storage, core.vault, orgs)
    for org_id in orgs:
        core.forget_config(org_id)
    return changed
