"""Settings: the org config as a form, the review policy, LLM provider keys and API keys.

Secrets are write-only: the form shows whether one is set, never its value. A new API key is
shown once, on the page that created it; after that only its prefix is ever shown. Creating
the first key switches the whole server from local-only mode to keys, so the dashboard signs
the creator in with the new key at once (they would otherwise be locked out of the page they
are on).
"""

from __future__ import annotations

from starlette.responses import Response
from starlette.routing import Route

from reflexio.errors import BadRequestError
from reflexio.service import keys, org_config
from reflexio.service.review import require_reviewer
from reflexio.web.access import issue_cookie
from reflexio.web.config_form import form_sections, from_form
from reflexio.web.render import set_session_cookie
from reflexio.web.routing import Ask, action, page, redirect

__all__ = ["PROVIDERS", "ROUTES"]

#: LLM providers whose key the Settings page sets (``api_key_config.<provider>.api_key``).
PROVIDERS = (
    "openai",
    "anthropic",
    "gemini",
    "openrouter",
    "deepseek",
    "xai",
    "minimax",
    "moonshot",
    "zai",
    "dashscope",
)
_NAME_LIMIT = 100


def _settings(ask: Ask, *, new_key: str = "", message: str = "", status_code: int = 200) -> Response:
    masked = org_config.get_config(ask.core, ask.org_id)
    providers = masked.get("api_key_config") or {}
    return ask.render(
        "settings.html",
        status_code=status_code,
        sections=form_sections(masked),
        approval_required=bool(masked.get("approval_required")),
        providers=[(p, bool((providers.get(p) or {}).get("api_key"))) for p in PROVIDERS],
        keys=keys.list_keys(ask.core, ask.org_id),
        new_key=new_key,
        message=message or ask.query.get("saved", ""),
    )


def _show(ask: Ask) -> Response:
    return _settings(ask)


def _save_config(ask: Ask) -> Response:
    masked = org_config.get_config(ask.core, ask.org_id)
    sent = {k: str(v) for k, v in ask.form.items() if isinstance(v, str)}
    changes = from_form(masked, sent)
    if changes:
        org_config.update_config(ask.core, ask.org_id, changes)
    return redirect(f"/ui/settings?saved={'Configuration saved' if changes else 'Nothing changed'}#config")


def _save_review(ask: Ask) -> Response:
    required = ask.form.get("approval_required") == "1"
    org_config.update_config(ask.core, ask.org_id, {"approval_required": required})
    return redirect("/ui/settings?saved=Review policy saved#review")


def _save_provider(ask: Ask) -> Response:
    provider = str(ask.form.get("provider", ""))
    secret = str(ask.form.get("api_key", "")).strip()
    if provider not in PROVIDERS:
        raise BadRequestError(f"provider must be one of {', '.join(PROVIDERS)}")
    masked = org_config.get_config(ask.core, ask.org_id)
    current = dict(masked.get("api_key_config") or {})
    if ask.form.get("remove") == "1":
        current.pop(provider, None)
    elif not secret:
        raise BadRequestError("api_key: type the provider's key")
    else:
        current[provider] = {**(current.get(provider) or {}), "api_key": secret}
    org_config.update_config(ask.core, ask.org_id, {"api_key_config": current or None})
    return redirect(f"/ui/settings?saved=Key for {provider} saved#providers")


def _create_key(ask: Ask) -> Response:
    name = str(ask.form.get("name", "")).strip()
    if len(name) > _NAME_LIMIT:
        raise BadRequestError(f"name is at most {_NAME_LIMIT} characters")
    first = not ask.core.keys_exist()
    # The first key is the operator's (they stay signed in with it); later ones review only
    # when asked, and only a reviewer may hand that right on.
    reviewer = first or ask.form.get("reviewer") == "on"
    if reviewer and not first:
        require_reviewer(ask.viewer.reviewer, "creating a reviewer key")
    record, plain = keys.create_key(ask.core, ask.org_id, name, reviewer=reviewer)
    response = _settings(ask, new_key=plain, message=f"Key {record.prefix}… created")
    if first:  # the server now demands keys: keep the creator signed in with theirs
        set_session_cookie(response, ask.request, issue_cookie(ask.core, record))
    return response


def _revoke_key(ask: Ask) -> Response:
    raw = ask.arg("key_id")
    if not raw.isdigit():
        raise BadRequestError("a key id is a number")
    keys.revoke_key(ask.core, int(raw), ask.org_id)
    if int(raw) == ask.viewer.key_id:
        return redirect("/ui/login?revoked=1")
    return redirect("/ui/settings?saved=Key revoked#keys")


ROUTES = [
    Route("/settings", page(_show), name="settings"),
    Route("/settings/config", action(_save_config), methods=["POST"]),
    Route("/settings/review", action(_save_review), methods=["POST"]),
    Route("/settings/provider", action(_save_provider), methods=["POST"]),
    Route("/settings/keys", action(_create_key), methods=["POST"]),
    Route("/settings/keys/{key_id}/revoke", action(_revoke_key), methods=["POST"]),
]
