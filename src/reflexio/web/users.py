"""Users: find one, see what Reflexio knows about them, take it away (export) or delete it all.

Deleting is two steps: a confirmation page that names what will go (counts of every kind of
row) and asks for the user id to be typed, then the delete itself through
``service.users.clear_user_data`` (one storage transaction, search indexes included).
"""

from __future__ import annotations

import json

from starlette.responses import Response
from starlette.routing import Route

from reflexio.errors import BadRequestError
from reflexio.filters import ACTIVE_STATUSES, RequestFilter
from reflexio.models import ClearUserDataRequest
from reflexio.records import Learning, LearningKind
from reflexio.service import browse, users
from reflexio.web.filters import Filters
from reflexio.web.render import secure
from reflexio.web.routing import Ask, action, page

__all__ = ["ROUTES"]


def _list(ask: Ask) -> Response:
    filters = Filters.parse(ask.query)
    found = browse.recent_users(ask.core, ask.org_id, prefix=filters.q or filters.user_id, limit=100)
    return ask.render("users.html", filters=filters, found=found)


def _user(ask: Ask) -> Response:
    user_id = ask.arg("user_id")

    def of(kind: LearningKind) -> browse.Page[tuple[Learning, float | None]]:
        query = browse.LearningQuery(kinds=(kind,), user_id=user_id, statuses=ACTIVE_STATUSES)
        return browse.list_learnings(ask.core, ask.org_id, query, per_page=50)

    sessions = browse.list_sessions(ask.core, ask.org_id, RequestFilter(user_id=user_id), per_page=25)
    return ask.render(
        "user.html",
        user_id=user_id,
        profiles=of(LearningKind.PROFILE),
        playbooks=of(LearningKind.USER_PLAYBOOK),
        sessions=sessions,
    )


def _export(ask: Ask) -> Response:
    user_id = ask.arg("user_id")
    data = users.export_user_data(ask.core, ask.org_id, user_id)
    body = json.dumps(data.model_dump(mode="json"), indent=2, ensure_ascii=False)
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in user_id)[:80]
    response = Response(
        body,
        media_type="application/json",
        headers={"content-disposition": f'attachment; filename="reflexio-user-{safe}.json"'},
    )
    return secure(response)


def _confirm(ask: Ask) -> Response:
    footprint = browse.user_footprint(ask.core, ask.org_id, ask.arg("user_id"))
    return ask.render("user_delete.html", footprint=footprint)


def _delete(ask: Ask) -> Response:
    user_id = ask.arg("user_id")
    if str(ask.form.get("confirm", "")).strip() != user_id:
        raise BadRequestError("type the user id exactly to confirm the delete")
    result = users.clear_user_data(ask.core, ask.org_id, ClearUserDataRequest(user_id=user_id))
    return ask.render("user_deleted.html", user_id=user_id, result=result)


ROUTES = [
    Route("/users", page(_list), name="users"),
    Route("/users/{user_id}/export", page(_export)),
    Route("/users/{user_id}/delete", page(_confirm)),
    Route("/users/{user_id}/delete", action(_delete), methods=["POST"]),
    Route("/users/{user_id}", page(_user), name="user"),
]
