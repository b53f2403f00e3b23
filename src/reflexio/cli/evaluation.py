"""``reflexio eval``: how sessions went, how each learning fared, and what reflection did.

``eval overview`` shows success rates (regular vs shadow), corrections and escalations over a
window; ``eval session SID`` one session's verdict and the verdicts on every learning it was
given; ``eval learning ID`` a learning's exposures, outcome counts, effect intervals and the
actions taken on it. Tables keep few, short columns so they read at 80 columns; ``--json``
prints everything.
"""

from __future__ import annotations

import time
from typing import Annotated, Any

import typer

from reflexio.cli.options import ApiKeyOpt, JsonOpt, UrlOpt, client, wants_json
from reflexio.cli.output import Result, Table, run

__all__ = ["app"]

app = typer.Typer(help="Session verdicts, learning impact and reflection actions.", no_args_is_help=True)

Kind = Annotated[str, typer.Option("--kind", help="profile, user_playbook or agent_playbook.")]


def _pct(value: float | None) -> str:
    return "" if value is None else f"{value:.0%}"


def _interval(block: Any, *, points: bool = False) -> str:
    """``12% [3%, 40%]`` (a rate) or ``-25pp [-40, -10]`` (a lift), from an ``EffectInterval``."""
    if block is None:
        return ""
    value, low, high = float(block.value), block.low, block.high
    if points:
        text = f"{value * 100:+.0f}pp"
        return text + (
            f" [{low * 100:+.0f}, {high * 100:+.0f}]" if low is not None and high is not None else ""
        )
    return f"{value:.0%}" + (f" [{low:.0%}, {high:.0%}]" if low is not None and high is not None else "")


@app.command("overview")
def overview(
    days: Annotated[int, typer.Option("--days", help="Window: the last N days.", min=1)] = 7,
    weekly: Annotated[bool, typer.Option("--weekly", help="Weekly trend buckets instead of daily.")] = False,
    as_json: JsonOpt = False,
    url: UrlOpt = "",
    api_key: ApiKeyOpt = "",
) -> None:
    """Success rate (with and without learnings when shadow mode is on), corrections, escalations."""

    def action() -> Result:
        now = int(time.time())
        with client(url, api_key) as api:
            found = api.get_evaluation_overview(
                from_ts=now - days * 86_400, to_ts=now, bucket="week" if weekly else "day"
            )
        hero, tiles = found.hero, found.context_tiles
        fields = {
            "state": hero.state,
            "success rate": f"{hero.regular_success_rate_pp:.1f}% ({tiles.success.delta_pp:+.1f} pp)",
            "shadow success rate": ""
            if hero.shadow_success_rate_pp is None
            else f"{hero.shadow_success_rate_pp:.1f}%",
            "corrections per session": f"{tiles.corrections.current:.2f} ({tiles.corrections.delta:+.2f})",
            "escalation rate": f"{tiles.escalation.current:.1f}%",
        }
        buckets = [
            {
                "ts": b.ts,
                "sessions": b.regular_n,
                "success": _pct(b.regular_rate),
                "shadow": _pct(b.shadow_rate),
                "corrections": f"{b.avg_corrections:.2f}",
            }
            for b in hero.buckets
        ]
        recent = [
            {"session": r.session_id, "user": r.user_id, "ok": r.is_success, "failure": r.failure_type or ""}
            for r in found.recent_results
        ]
        return Result(
            found,
            message=f"Evaluation of the last {days} day(s)",
            fields=fields,
            tables=[
                Table(
                    "Trend",
                    ("ts", "sessions", "success", "shadow", "corrections"),
                    buckets,
                    empty="no judged sessions",
                ),
                Table("Recent sessions", ("session", "user", "ok", "failure"), recent, empty="none"),
            ],
        )

    run(wants_json(as_json), action)


@app.command("session")
def session(
    session_id: Annotated[str, typer.Argument(help="The session to show.")],
    as_json: JsonOpt = False,
    url: UrlOpt = "",
    api_key: ApiKeyOpt = "",
) -> None:
    """A session's verdict, its reported outcomes and the verdict on each learning it was given."""

    def action() -> Result:
        with client(url, api_key) as api:
            learnings = api.get_retrieved_learning_evaluation_results(
                session_id=session_id, limit=1000
            ).results
            sessions = api.get_agent_success_evaluation_results(limit=1000).agent_success_evaluation_results
            outcomes = api.get_session_outcomes(
                session_ids=[session_id], include_history=True
            ).session_outcomes
        verdict = next((s for s in sessions if s.session_id == session_id), None)
        fields: dict[str, Any] = {}
        if verdict is not None:
            fields = {
                "user": verdict.user_id,
                "success": verdict.is_success,
                "judged by": verdict.evaluation_name,
                "failure": f"{verdict.failure_type or ''} {verdict.failure_reason or ''}".strip(),
                "corrections": verdict.number_of_correction_per_session,
                "escalated": verdict.is_escalated,
            }
        rows = [
            {
                "kind": r.kind,
                "id": r.learning_id,
                "turn": r.interaction_id,
                "relevant": r.is_relevant,
                "impact": r.impact or "",
                "why": r.impact_reason,
            }
            for r in learnings
        ]
        reported = [
            {
                "rev": o.outcome_revision,
                "outcome": o.outcome.value,
                "label": o.label or "",
                "at": o.occurred_at,
            }
            for o in outcomes
        ]
        message = f"Session {session_id}" + ("" if verdict else " (not judged yet)")
        return Result(
            {"session": verdict, "learnings": learnings, "outcomes": outcomes},
            message=message,
            fields=fields,
            tables=[
                Table(
                    "Learnings given", ("kind", "id", "turn", "relevant", "impact", "why"), rows, empty="none"
                ),
                Table(
                    "Reported outcomes", ("rev", "outcome", "label", "at"), reported, empty="none reported"
                ),
            ],
        )

    run(wants_json(as_json), action)


@app.command("learning")
def learning(
    learning_id: Annotated[str, typer.Argument(help="The learning's id (profile_id for profiles).")],
    kind: Kind = "agent_playbook",
    as_json: JsonOpt = False,
    url: UrlOpt = "",
    api_key: ApiKeyOpt = "",
) -> None:
    """A learning's exposures, outcomes, effect intervals and the reflection actions on it."""

    def action() -> Result:
        with client(url, api_key) as api:
            impacts = api.get_learning_impact(kind=kind, learning_ids=[learning_id]).impacts  # type: ignore[arg-type]
            actions = api.get_reflection_actions(kind=kind, learning_id=learning_id).actions  # type: ignore[arg-type]
        impact = impacts[0] if impacts else None
        fields: dict[str, Any] = {}
        if impact is not None:
            fields = {
                "sessions served": impact.sessions_served,
                "sessions withheld": impact.sessions_withheld,
                "helped / hurt / neutral": f"{impact.helped} / {impact.hurt} / {impact.neutral}",
                "help rate (95%)": _interval(impact.help_rate),
                "lift (95%, by user)": _interval(impact.lift, points=True),
                "success served / withheld": (
                    f"{_pct(impact.success_rate_served)} / {_pct(impact.success_rate_withheld)}"
                ),
            }
        rows = [
            {
                "id": a.action_id,
                "action": a.action,
                "at": a.created_at,
                "reverted": "yes" if a.reverted_at else "",
                "reason": a.reason,
            }
            for a in actions
        ]
        return Result(
            {"impact": impact, "actions": actions},
            message=f"{kind} {learning_id}",
            fields=fields,
            tables=[
                Table("Reflection actions", ("id", "action", "at", "reverted", "reason"), rows, empty="none")
            ],
        )

    run(wants_json(as_json), action)


@app.command("revert")
def revert(
    action_id: Annotated[int, typer.Argument(help="The reflection action to undo.")],
    note: Annotated[str | None, typer.Option("--note", help="Why (kept in the history).")] = None,
    as_json: JsonOpt = False,
    url: UrlOpt = "",
    api_key: ApiKeyOpt = "",
) -> None:
    """Undo a reflection action: the learning gets its earlier status back."""

    def action() -> Result:
        with client(url, api_key) as api:
            done = api.revert_reflection_action(action_id, note=note)
        return Result(
            done, message=f"reverted action {action_id}: {done.action.action} of {done.action.learning_id}"
        )

    run(wants_json(as_json), action)
