"""Read and write an org's ``Config``: secrets are write-only and encrypted at rest, writes are
validated strictly.

Every read is masked (API keys, passwords in URLs, HMAC secrets), so ``get_config`` can be
shown on a dashboard or pasted into an issue. A write may send those masks back: they are
swapped for the stored secrets, so read → edit → write keeps every key; a mask that matches
nothing stored is refused rather than stored. The retrieval experiment fields have their own
lifecycle, so a config write may not change them (409). Stored, the secrets are encrypted
with the operator's key (``service.vault``, through ``Core.put_config``).

Reflexio's ``Config`` carries settings for features this server does not have. Accepting
them and doing nothing would let an operator believe, say, that an optimizer runs; so a write
that sets any of them to anything but its default is a 422 naming each one and why
(`NOT_SUPPORTED`). Their defaults stay accepted, so clients that send the whole document
(``set_config(get_config())``) keep working.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

import pydantic

from reflexio.config import LITELLM_MISSING, litellm_installed
from reflexio.errors import ConflictError, ValidationError
from reflexio.llm import resolve_llm
from reflexio.models import SetConfigResponse
from reflexio.models.org_config import Config
from reflexio.service.core import Core
from reflexio.service.vault import seal_stored_configs

__all__ = [
    "NOT_SUPPORTED",
    "accepted_values",
    "describe_validation_errors",
    "get_config",
    "seal_secrets",
    "set_config",
    "update_config",
]

_OWN_LIFECYCLE = ("retrieval_experiment_config", "retrieval_experiment_history")

#: Config fields this server accepts only at their defaults: dotted path → why.
NOT_SUPPORTED: Final[Mapping[str, str]] = {
    "storage_config": "storage is the server's (REFLEXIO_STORAGE_URL); an org cannot choose its own",
    "storage_config_test": "it is a status a server reports, not a setting; this server tests no org storage",
    "extraction_idle_timeout_seconds": (
        "a session's remaining turns are learned from once it has been idle for session_idle_seconds "
        "(default 600); set that instead"
    ),
    "llm_config.embedding_model_name": (
        "the embedder is the server's (REFLEXIO_EMBEDDER), shared by every org so one index serves search"
    ),
    "retrieval_floor": (
        "it needs a cross-encoder reranker, which this server does not run; "
        "search_threshold sets a minimum relevance"
    ),
    "playbook_optimizer_config": "this server has no playbook optimizer",
    "governance_retention": (
        "learning history is kept until the user's data is cleared (clear_user_data); "
        "this server has no retention sweep for it"
    ),
    "pending_tool_call_config": "extraction on this server never asks a person follow-up questions",
    "enable_document_expansion": "this server indexes learnings as written, without LLM expansion",
    "user_playbook_extractor_config.deduplication_config": (
        "similar playbooks are found by the learning pipeline's own search, which has no tunable thresholds"
    ),
    "user_playbook_extractor_config.tagging_definition_prompt": "the extractor does not tag playbooks",
}
#: Values equivalent to a field's default: SQLite at the server's default location is the
#: server's own store.
_ALSO_DEFAULT: Final[Mapping[str, tuple[Any, ...]]] = {
    "storage_config": ({"db_path": None},),
    "storage_config_test": (None,),
}


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


def _refuse_unusable_llm(core: Core, current: Config, new: Config) -> None:
    """A write that configures an LLM this server cannot call is refused, not stored.

    Otherwise every learning job of the org would die on the missing import. Only writes that
    change the LLM settings are checked, so an unrelated change is never blocked by a key in
    the server's environment.

    Raises:
        ValidationError: The new LLM settings name a provider and LiteLLM is missing.
    """
    changed = (new.api_key_config, new.llm_config) != (current.api_key_config, current.llm_config)
    if not changed or core.llm is not None or litellm_installed():
        return
    if resolve_llm(new, core.settings) is not None:
        raise ValidationError(LITELLM_MISSING, details={"fields": ["api_key_config", "llm_config"]})


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
    _refuse_unusable_llm(core, current, new)
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
    _refuse_unusable_llm(core, current, new)
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
    _refuse_unsupported(new)
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


def _refuse_unsupported(config: Config) -> None:
    """Raise when a setting this server cannot act on is set to anything but its default.

    Raises:
        ValidationError: Naming every such field and why it is not supported.
    """
    given, default = config.model_dump(mode="json"), Config().model_dump(mode="json")
    refused = [
        path
        for path in NOT_SUPPORTED
        if (value := _at(given, path)) != _at(default, path) and value not in _ALSO_DEFAULT.get(path, ())
    ]
    if refused:
        reasons = "; ".join(f"{path} ({NOT_SUPPORTED[path]})" for path in refused)
        raise ValidationError(
            f"not supported by this server: {reasons}. Leave these out or at their defaults.",
            details={"fields": refused},
        )


def accepted_values() -> dict[str, list[Any]]:
    """For each setting of `NOT_SUPPORTED`, every JSON value a write may give it.

    Its default, the values equivalent to it, and ``null`` where a null stands for the default:
    what `_refuse_unsupported` lets through, so the OpenAPI document can say exactly that.
    """
    default = Config().model_dump(mode="json")
    accepted = {}
    for path in NOT_SUPPORTED:
        values = [_at(default, path), *_ALSO_DEFAULT.get(path, ())]
        if None not in values and "." not in path and _null_means_default(path):
            values.append(None)
        accepted[path] = values
    return accepted


def _null_means_default(key: str) -> bool:
    try:
        return bool(getattr(Config.model_validate({key: None}), key) == getattr(Config(), key))
    except pydantic.ValidationError:
        return False


def _at(document: Mapping[str, Any], path: str) -> Any:
    node: Any = document
    for part in path.split("."):
        node = node.get(part) if isinstance(node, Mapping) else None
    return node
