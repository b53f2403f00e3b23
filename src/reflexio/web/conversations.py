"""Sessions: the conversations an org's agents had, turn by turn.

A session's page shows each turn with its tool calls, the learnings the agent reported having
injected into each answer (highlighted, linked to the learning's page, or marked gone when
deleted since), and the session's verdicts: success, failure type, corrections, escalation,
and the judgement of each injected learning.
"""

from __future__ import annotations

from starlette.responses import Response
from starlette.routing import Route

from reflexio.filters import RequestFilter
from reflexio.records import EvaluationRecord
from reflexio.service import browse
from reflexio.web.filters import Filters, page_number
from reflexio.web.routing import Ask, page

__all__ = ["ROUTES"]

_PER_PAGE = 50


def _list(ask: Ask) -> Response:
    filters = Filters.parse(ask.query)
    where = RequestFilter(
        user_id=filters.user_id or None,
        agent_version=filters.agent_version or None,
        created_after=filters.created_after,
    )
    listing = browse.list_sessions(
        ask.core, ask.org_id, where, page=page_number(ask.query), per_page=_PER_PAGE
    )
    return ask.render(
        "sessions.html", filters=filters, listing=listing, page_url=filters.pages("/ui/sessions")
    )


def _session(ask: Ask) -> Response:
    story = browse.session_story(ask.core, ask.org_id, ask.arg("session_id"))
    judged: dict[tuple[int | None, str | None, str | None], EvaluationRecord] = {}
    for verdict in story.learning_verdicts:
        key = (verdict.interaction_id, verdict.learning_kind, verdict.learning_id)
        judged.setdefault(key, verdict)  # newest first: the first is the current verdict
    return ask.render("session.html", story=story, judged=judged)


ROUTES = [
    Route("/sessions", page(_list), name="sessions"),
    Route("/sessions/{session_id:path}", page(_session), name="session"),
]
