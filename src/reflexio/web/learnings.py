"""The learnings browser: profiles, user playbooks and agent playbooks in one list, and each one's page.

The list is the real search when a query is typed (the scores are the ones ``/api/search``
gives the agent) and the most recently changed learnings otherwise. A learning's page shows
its text, scope, history (each event with who, why and a word diff of what changed),
provenance (the interactions it was learned from) and, for agent playbooks, the review
actions.
"""

from __future__ import annotations

from dataclasses import replace

from starlette.responses import Response
from starlette.routing import Route

from reflexio.errors import BadRequestError, NotFoundError
from reflexio.filters import ACTIVE_STATUSES
from reflexio.records import Approval, LearningKind, LearningStatus
from reflexio.service import browse
from reflexio.web.diffs import changed_fields
from reflexio.web.filters import Filters, page_number
from reflexio.web.review import card_context
from reflexio.web.routing import Ask, page

__all__ = ["ROUTES", "STATUS_CHOICES"]

#: The status filter's choices: value → (label, lifecycle statuses, approvals).
STATUS_CHOICES: dict[str, tuple[str, tuple[LearningStatus, ...] | None, tuple[Approval, ...] | None]] = {
    "": ("active", ACTIVE_STATUSES, None),
    "current": ("current", (LearningStatus.CURRENT,), None),
    "pending": ("pending review", ACTIVE_STATUSES, (Approval.PENDING,)),
    "approved": ("approved", ACTIVE_STATUSES, (Approval.APPROVED,)),
    "rejected": ("rejected", ACTIVE_STATUSES, (Approval.REJECTED,)),
    "archived": ("archived", (LearningStatus.ARCHIVED,), None),
    "superseded": ("superseded", (LearningStatus.SUPERSEDED, LearningStatus.MERGED), None),
    "expired": ("expired", (LearningStatus.EXPIRED,), None),
    "all": ("every state", None, None),
}
_KINDS = {kind.value: kind for kind in LearningKind}
_TEXT_FIELDS = ("trigger", "content", "rationale", "pitfall")
_PER_PAGE = 50


def _kinds(ask: Ask) -> tuple[LearningKind, ...]:
    chosen = ask.query.getlist("kind")
    unknown = [k for k in chosen if k not in _KINDS]
    if unknown:
        raise BadRequestError(f"kind must be one of {', '.join(_KINDS)}")
    return tuple(_KINDS[k] for k in chosen)


def _browse(ask: Ask) -> Response:
    filters = Filters.parse(ask.query)
    if filters.status not in STATUS_CHOICES:
        raise BadRequestError(f"status must be one of {', '.join(k for k in STATUS_CHOICES if k)}")
    kinds = _kinds(ask)
    _, statuses, approvals = STATUS_CHOICES[filters.status]
    query = browse.LearningQuery(
        kinds=kinds,
        text=filters.q,
        statuses=statuses,
        approvals=approvals,
        agent_version=filters.agent_version or None,
        user_id=filters.user_id or None,
        tag=filters.tag or None,
        created_after=filters.created_after,
    )
    if approvals is not None and not kinds:  # approval only means something for agent playbooks
        query = replace(query, kinds=(LearningKind.AGENT_PLAYBOOK,))
    listing = browse.list_learnings(
        ask.core, ask.org_id, query, page=page_number(ask.query), per_page=_PER_PAGE
    )
    template = (
        "learnings_rows.html"
        if ask.htmx and ask.request.headers.get("hx-target") == "results"
        else "learnings.html"
    )
    return ask.render(
        template,
        filters=filters,
        listing=listing,
        kinds=[k.value for k in kinds],
        status_choices=STATUS_CHOICES,
        page_url=filters.pages("/ui/learnings", [("kind", k.value) for k in kinds]),
    )


def _learning(ask: Ask) -> Response:
    kind = _KINDS.get(ask.arg("kind"))
    if kind is None:
        raise NotFoundError(f"no learning kind {ask.arg('kind')!r}")
    row = browse.find_learning(ask.core, ask.org_id, kind, ask.arg("learning_id"))
    story = browse.learning_story(ask.core, ask.org_id, row)
    history = [(event, changed_fields(event.before, event.after, _TEXT_FIELDS)) for event in story.history]
    card = card_context(ask, row)
    return ask.render(
        "learning.html",
        story=story,
        history=history,
        **card,
        open_evidence=card["ev"].recorded,
    )


ROUTES = [
    Route("/learnings", page(_browse), name="learnings"),
    Route("/learnings/{kind}/{learning_id}", page(_learning), name="learning"),
]
