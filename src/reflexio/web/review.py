"""The review queue: agent playbooks waiting for a human, and every decision a reviewer makes.

The queue's tabs are what waits for a person: pending agent playbooks (new ones and pending
revisions of approved ones, a revision shown as a diff against the text it would replace),
learnings reflection suspended or retired because they hurt (with the reason and the numbers
it acted on, and a restore), and the approved and rejected ones for a second look. Each card
shows the evidence recorded when it was proposed (``service.review_evidence``): the user
playbooks aggregation generalised, the interactions they came from, how many users, and its
impact in production so far.

Each decision goes through ``service.review`` with the state the reviewer saw (``expected``),
so a playbook another reviewer decided meanwhile is a 409 that names its new state instead of
a silent overwrite. Single decisions are htmx posts that swap the card in place; bulk
decisions post the selected ids and report what happened to each.
"""

from __future__ import annotations

from typing import TypedDict

from starlette.responses import Response
from starlette.routing import Route

from reflexio.errors import BadRequestError, ConflictError, ReflexioError
from reflexio.learn.review import Action, ReviewState, state_of
from reflexio.models import RevertReflectionActionRequest
from reflexio.records import Approval, Learning, LearningKind, LearningStatus
from reflexio.service import browse, reflection
from reflexio.service.review import current_state, require_reviewer, review
from reflexio.service.review_evidence import Evidence, evidence_for
from reflexio.web.filters import Filters, page_number
from reflexio.web.routing import Ask, Handler, action, page, redirect

__all__ = ["ROUTES", "Card", "card_context"]

_AGENT = (LearningKind.AGENT_PLAYBOOK,)
_LIVE = (LearningStatus.CURRENT, LearningStatus.PENDING)
#: The queue's tabs: (kinds, lifecycle statuses, approvals) each shows. Reflection suspends
#: and retires learnings of every kind; approval is a question for agent playbooks only.
_TABS: dict[str, tuple[tuple[LearningKind, ...], tuple[LearningStatus, ...], tuple[Approval, ...] | None]] = {
    "pending": (_AGENT, _LIVE, (Approval.PENDING,)),
    "suspended": ((), (LearningStatus.SUSPENDED,), None),
    "retired": ((), (LearningStatus.RETIRED,), None),
    "approved": (_AGENT, _LIVE, (Approval.APPROVED,)),
    "rejected": (_AGENT, _LIVE, (Approval.REJECTED,)),
}
#: What an empty tab says: where its learnings come from.
_EMPTY = {
    "pending": "Agent playbooks appear here when aggregation generalises user playbooks from several "
    "users (or proposes a revision of an approved one), or when one is added through the API.",
    "suspended": "Reflection suspends a learning here when the sessions it was served in show it hurts "
    "and the org requires approval; its rewrites wait here too.",
    "retired": "Reflection retires a learning that hurts, with its reason; restore one to serve it again.",
}
_PER_PAGE = 25
_NOTE_LIMIT = 2_000
_TEXT_LIMIT = 10_000


def _queue(ask: Ask) -> Response:
    filters = Filters.parse(ask.query)
    tab = filters.status or "pending"
    if tab not in _TABS:
        raise BadRequestError(f"status must be one of {', '.join(_TABS)}")
    kinds, statuses, approvals = _TABS[tab]
    query = browse.LearningQuery(
        kinds=kinds,
        text=filters.q,
        statuses=statuses,
        approvals=approvals,
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
            browse.LearningQuery(kinds=k, statuses=st, approvals=ap, agent_version=query.agent_version),
        )
        for name, (k, st, ap) in _TABS.items()
    }
    return ask.render(
        "review.html",
        filters=filters,
        tab=tab,
        listing=listing,
        evidence=evidence_for(ask.core, ask.org_id, [row for row, _ in listing.items]),
        state_of=state_of,
        EMPTY_TABS=_EMPTY,
        counts=counts,
        page_url=filters.pages("/ui/review"),
    )


class Card(TypedDict):
    """What a review card shows of a learning."""

    row: Learning
    state: ReviewState
    ev: Evidence


def card_context(ask: Ask, row: Learning) -> Card:
    """A learning's review card: its state and its recorded evidence."""
    evidence = evidence_for(ask.core, ask.org_id, [row])[row.id]
    return Card(row=row, state=state_of(row.approval, row.status), ev=evidence)


def _card(ask: Ask, playbook_id: int, message: str = "", *, failed: bool = False) -> Response:
    row, state = current_state(ask.core.storage, ask.org_id, playbook_id)
    if row is None:
        return ask.render("review_card.html", row=None, state=state, playbook_id=playbook_id, message=message)
    return ask.render(
        "review_card.html", playbook_id=playbook_id, message=message, failed=failed, **card_context(ask, row)
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


def _restore(ask: Ask) -> Response:
    """Undo the reflection action that suspended or retired a learning: served again as before."""
    raw = ask.arg("action_id")
    if not raw.isdigit():
        raise BadRequestError("a reflection action id is a number")
    require_reviewer(ask.viewer.reviewer, "restore")
    req = RevertReflectionActionRequest(action_id=int(raw), note=_note(ask))
    done = reflection.revert(ask.core, ask.org_id, req, actor=ask.viewer.actor)
    kind = LearningKind(done.action.kind)
    back = f"/ui/learnings/{kind.value}/{done.action.learning_id}"
    return redirect(str(ask.form.get("next") or back))


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
    Route("/review/actions/{action_id}/restore", action(_restore), methods=["POST"]),
]
