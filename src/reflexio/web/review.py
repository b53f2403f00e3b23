"""The review queue: agent playbooks waiting for a human, and every decision a reviewer makes.

Each decision goes through ``service.review`` with the state the reviewer saw (``expected``),
so a playbook another reviewer decided meanwhile is a 409 that names its new state instead of
a silent overwrite. Single decisions are htmx posts that swap the card in place; bulk
decisions post the selected ids and report what happened to each.
"""

from __future__ import annotations

from starlette.responses import Response
from starlette.routing import Route

from reflexio.errors import BadRequestError, ConflictError, ReflexioError
from reflexio.learn.review import Action, ReviewState
from reflexio.records import Approval, LearningKind, LearningStatus
from reflexio.service import browse
from reflexio.service.review import current_state, require_reviewer, review
from reflexio.web.filters import Filters, page_number
from reflexio.web.routing import Ask, Handler, action, page, redirect

__all__ = ["ROUTES"]

_AGENT = (LearningKind.AGENT_PLAYBOOK,)
#: The queue's tabs: which review states each shows.
_TABS = {
    "pending": (Approval.PENDING,),
    "approved": (Approval.APPROVED,),
    "rejected": (Approval.REJECTED,),
}
_PER_PAGE = 25
_NOTE_LIMIT = 2_000
_TEXT_LIMIT = 10_000


def _queue(ask: Ask) -> Response:
    filters = Filters.parse(ask.query)
    tab = filters.status or "pending"
    if tab not in _TABS:
        raise BadRequestError(f"status must be one of {', '.join(_TABS)}")
    query = browse.LearningQuery(
        kinds=_AGENT,
        text=filters.q,
        statuses=(LearningStatus.CURRENT, LearningStatus.PENDING),
        approvals=_TABS[tab],
        agent_version=filters.agent_version or None,
        tag=filters.tag or None,
        created_after=filters.created_after,
    )
    listing = browse.list_learnings(
        ask.core, ask.org_id, query, page=page_number(ask.query), per_page=_PER_PAGE
    )
    counts = {
        name: browse.count_learnings(
            ask.core,
            ask.org_id,
            browse.LearningQuery(
                kinds=_AGENT, statuses=query.statuses, approvals=approvals, agent_version=query.agent_version
            ),
        )
        for name, approvals in _TABS.items()
    }
    return ask.render(
        "review.html",
        filters=filters,
        tab=tab,
        listing=listing,
        counts=counts,
        page_url=filters.pages("/ui/review"),
    )


def _card(ask: Ask, playbook_id: int, message: str = "", *, failed: bool = False) -> Response:
    row, state = current_state(ask.core.storage, ask.org_id, playbook_id)
    return ask.render(
        "review_card.html", row=row, state=state, playbook_id=playbook_id, message=message, failed=failed
    )


def _id(ask: Ask) -> int:
    raw = ask.arg("playbook_id")
    if not raw.isdigit():
        raise BadRequestError("an agent playbook id is a number")
    return int(raw)


def _expected(ask: Ask) -> ReviewState | None:
    raw = str(ask.form.get("expected", ""))
    if not raw:
        return None
    try:
        return ReviewState(raw)
    except ValueError as exc:
        raise BadRequestError(f"expected must be one of {', '.join(s.value for s in ReviewState)}") from exc


def _note(ask: Ask) -> str | None:
    note = str(ask.form.get("note", "")).strip()
    if len(note) > _NOTE_LIMIT:
        raise BadRequestError(f"a note is at most {_NOTE_LIMIT} characters")
    return note or None


def _decision(verb: Action, done: str) -> Handler:
    def decide(ask: Ask) -> Response:
        require_reviewer(ask.viewer.reviewer, verb.value)
        playbook_id = _id(ask)
        try:
            review(
                ask.core,
                ask.org_id,
                playbook_id,
                verb,
                actor=ask.viewer.actor,
                note=_note(ask),
                expected=_expected(ask),
            )
        except ConflictError as exc:  # decided by someone else meanwhile: show the card as it is now
            if not ask.htmx:
                raise
            return _card(ask, playbook_id, f"Not {done.lower()}: {exc.message}", failed=True)
        if not ask.htmx:
            return redirect(str(ask.form.get("next") or f"/ui/learnings/agent_playbook/{playbook_id}"))
        if verb is Action.DELETE:
            return ask.render(
                "review_card.html", row=None, state=ReviewState.DELETED, playbook_id=playbook_id, message=done
            )
        return _card(ask, playbook_id, done)

    decide.__name__ = f"{verb.value}_playbook"
    return decide


def _rewrite(ask: Ask) -> Response:
    require_reviewer(ask.viewer.reviewer, Action.REWRITE.value)
    playbook_id = _id(ask)
    text = _text(ask)
    review(
        ask.core,
        ask.org_id,
        playbook_id,
        Action.REWRITE,
        actor=ask.viewer.actor,
        note=_note(ask),
        expected=_expected(ask),
        text=text,
    )
    return redirect(f"/ui/learnings/agent_playbook/{playbook_id}#history")


def _text(ask: Ask) -> dict[str, str | None]:
    content = str(ask.form.get("content", "")).strip()
    if not content:
        raise BadRequestError("content: a playbook needs an instruction")
    out: dict[str, str | None] = {"content": content}
    for name in ("trigger", "rationale"):
        value = str(ask.form.get(name, "")).strip()
        out[name] = value or None
    for name, text in out.items():
        if text and len(text) > _TEXT_LIMIT:
            raise BadRequestError(f"{name} is longer than {_TEXT_LIMIT} characters")
    return out


def _diff(ask: Ask) -> Response:
    """The rewrite's diff against the stored text (htmx preview; changes nothing)."""
    row = browse.find_learning(ask.core, ask.org_id, LearningKind.AGENT_PLAYBOOK, str(_id(ask)))
    text = _text(ask)
    fields = [
        (name, getattr(row, name) or "", text[name] or "") for name in ("trigger", "content", "rationale")
    ]
    return ask.render("diff_fragment.html", fields=fields)


def _evidence(ask: Ask) -> Response:
    """The user playbooks an agent playbook generalises, as search finds them (htmx, on opening)."""
    row = browse.find_learning(ask.core, ask.org_id, LearningKind.AGENT_PLAYBOOK, str(_id(ask)))
    return ask.render(
        "evidence_fragment.html", related=browse.related_user_playbooks(ask.core, ask.org_id, row)
    )


def _bulk(ask: Ask) -> Response:
    verbs = {"approve": Action.APPROVE, "reject": Action.REJECT, "delete": Action.DELETE}
    verb = verbs.get(str(ask.form.get("verb", "")))
    if verb is None:
        raise BadRequestError("verb must be approve, reject or delete")
    require_reviewer(ask.viewer.reviewer, f"bulk {verb.value}")
    raw_ids = ask.form.getlist("ids")
    if not raw_ids:
        raise BadRequestError("select at least one playbook")
    if len(raw_ids) > 500 or not all(str(i).isdigit() for i in raw_ids):
        raise BadRequestError("ids must be at most 500 playbook numbers")
    note = _note(ask)
    # Every selected card was in the tab's state when the reviewer chose: a playbook that
    # moved meanwhile is reported, not decided again.
    seen = None if verb is Action.DELETE else (_expected(ask) or ReviewState.PENDING)
    results: list[tuple[int, str]] = []
    for raw in raw_ids:
        playbook_id = int(str(raw))
        try:
            state = review(
                ask.core,
                ask.org_id,
                playbook_id,
                verb,
                actor=ask.viewer.actor,
                note=note,
                expected=seen,
            )
            results.append((playbook_id, f"now {state.value}"))
        except ReflexioError as exc:
            results.append((playbook_id, f"not changed: {exc.message}"))
    return ask.render(
        "bulk_result.html", verb=verb.value, results=results, back=str(ask.form.get("next") or "/ui/review")
    )


ROUTES = [
    Route("/review", page(_queue), name="review"),
    Route("/review/bulk", action(_bulk), methods=["POST"]),
    Route("/review/{playbook_id}/approve", action(_decision(Action.APPROVE, "Approved")), methods=["POST"]),
    Route("/review/{playbook_id}/reject", action(_decision(Action.REJECT, "Rejected")), methods=["POST"]),
    Route(
        "/review/{playbook_id}/reopen",
        action(_decision(Action.REOPEN, "Reopened for review")),
        methods=["POST"],
    ),
    Route("/review/{playbook_id}/delete", action(_decision(Action.DELETE, "Deleted")), methods=["POST"]),
    Route("/review/{playbook_id}/rewrite", action(_rewrite), methods=["POST"]),
    Route("/review/{playbook_id}/diff", action(_diff), methods=["POST"]),
    Route("/review/{playbook_id}/evidence", page(_evidence)),
]
