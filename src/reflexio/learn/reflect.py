"""Reflection: what a learning's record says about it, and what to do about it.

The record of a learning is one row per session it was eligible for: served or withheld by the
holdout, whether the session succeeded, and (when served and judged) the learning's impact in
it. ``summarize`` turns those rows into its impact: sessions served, helped, hurt and neutral,
the share it helped with a Wilson interval, and — once the holdout has sessions on both sides —
its lift, the served minus withheld success rate with a 95 % interval clustered by user.

``decide`` applies the org's ``ReflectionPolicy`` to that impact. The only automatic action is
to stop serving a learning whose harm is established (see the policy's docstring): retire it,
or suspend it for a reviewer when the org requires approval. Helping wins every tie: a
learning that helped in more sessions than it hurt, or whose lift interval lies above zero, is
never acted on. What was decided, why, and the numbers it rested on travel together as the
action's evidence, so a reviewer can check and undo it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from reflexio.errors import ConflictError
from reflexio.learn import prompts
from reflexio.learn.llm_schemas import RevisionOutput
from reflexio.learn.rules.compare import Relation, gist, relate
from reflexio.learn.stats import Estimate, clustered_difference, wilson_interval
from reflexio.llm import LLM, Role
from reflexio.models.org_config import ReflectionPolicy
from reflexio.records import Learning, LearningStatus

__all__ = [
    "Action",
    "Decision",
    "ExposureRow",
    "Impact",
    "contradicts",
    "decide",
    "propose_revision",
    "replaces",
    "status_after",
    "summarize",
]


class Action(StrEnum):
    """What reflection does to a learning (each one is recorded and can be reverted)."""

    RETIRE = "retire"  # stop serving it, with the reason
    SUSPEND = "suspend"  # stop serving it until a reviewer decides (approval_required)
    SUPERSEDE = "supersede"  # a newer learning contradicts it: the newer one replaces it
    PROPOSE_REVISION = "propose_revision"  # a pending rewrite from its failure cases


@dataclass(frozen=True, slots=True)
class ExposureRow:
    """One session a learning was eligible for.

    Attributes:
        session_id: The session.
        user_id: Its user (the cluster of the lift's interval).
        served: False when the holdout withheld the learning from the session.
        success: The session's outcome (reported, else judged); None while unknown.
        impact: The learning's impact in the session when it was served and judged: the
            worst of its verdicts there ("negative" beats "positive" beats "neutral").
    """

    session_id: str
    user_id: str
    served: bool
    success: bool | None
    impact: str | None = None


@dataclass(frozen=True, slots=True)
class Impact:
    """A learning's record in numbers."""

    served_sessions: int = 0
    withheld_sessions: int = 0
    helped: int = 0
    hurt: int = 0
    neutral: int = 0
    unjudged: int = 0
    users_served: int = 0
    users_hurt: int = 0
    success_rate_served: float | None = None
    success_rate_withheld: float | None = None
    help_rate: tuple[float, float] | None = None
    lift: Estimate | None = None

    @property
    def helps(self) -> bool:
        """The evidence says it helps: more sessions helped than hurt, or a lift above zero."""
        return self.helped > self.hurt or (self.lift is not None and self.lift.above_zero)

    def evidence(self) -> dict[str, Any]:
        """JSON-ready numbers for audits and responses."""
        lift = self.lift
        return {
            "served_sessions": self.served_sessions,
            "withheld_sessions": self.withheld_sessions,
            "helped": self.helped,
            "hurt": self.hurt,
            "neutral": self.neutral,
            "unjudged": self.unjudged,
            "users_served": self.users_served,
            "users_hurt": self.users_hurt,
            "success_rate_served": self.success_rate_served,
            "success_rate_withheld": self.success_rate_withheld,
            "help_rate_interval": list(self.help_rate) if self.help_rate else None,
            "lift": None
            if lift is None
            else {
                "value": lift.value,
                "low": lift.low,
                "high": lift.high,
                "sessions": lift.n,
                "users": lift.clusters,
            },
        }


def _rate(values: Sequence[bool]) -> float | None:
    return sum(values) / len(values) if values else None


def summarize(rows: Sequence[ExposureRow]) -> Impact:
    """A learning's impact from its exposure rows (one per session; later rows win)."""
    by_session = {row.session_id: row for row in rows}
    served = [r for r in by_session.values() if r.served]
    withheld = [r for r in by_session.values() if not r.served]
    counts = {"positive": 0, "negative": 0, "neutral": 0}
    for row in served:
        if row.impact in counts:
            counts[row.impact] += 1
    helped, hurt = counts["positive"], counts["negative"]
    known = [r for r in by_session.values() if r.success is not None]
    lift = None
    if any(r.served for r in known) and any(not r.served for r in known):
        lift = clustered_difference(
            [float(bool(r.success)) for r in known], [r.served for r in known], [r.user_id for r in known]
        )
    return Impact(
        served_sessions=len(served),
        withheld_sessions=len(withheld),
        helped=helped,
        hurt=hurt,
        neutral=counts["neutral"],
        unjudged=len(served) - sum(counts.values()),
        users_served=len({r.user_id for r in served}),
        users_hurt=len({r.user_id for r in served if r.impact == "negative"}),
        success_rate_served=_rate([bool(r.success) for r in served if r.success is not None]),
        success_rate_withheld=_rate([bool(r.success) for r in withheld if r.success is not None]),
        help_rate=wilson_interval(helped, helped + hurt),
        lift=lift,
    )


@dataclass(frozen=True, slots=True)
class Decision:
    """An action reflection takes, with its reason and the numbers it rests on."""

    action: Action
    reason: str
    evidence: dict[str, Any]


def decide(impact: Impact, policy: ReflectionPolicy, *, approval_required: bool) -> Decision | None:
    """What the policy does with a learning's impact; None to leave it alone."""
    if not policy.enabled or impact.helps:
        return None
    reasons = []
    judged = impact.helped + impact.hurt
    if impact.hurt >= policy.min_negative_sessions and impact.helped <= policy.max_positive_share * judged:
        reasons.append(
            f"it hurt {impact.hurt} of the {impact.served_sessions} judged sessions it was served in "
            f"and helped {impact.helped}"
        )
    lift = impact.lift
    enough = min(impact.served_sessions, impact.withheld_sessions) >= policy.min_holdout_sessions
    if lift is not None and lift.below_zero and enough and lift.low is not None and lift.high is not None:
        reasons.append(
            f"sessions it was served in succeeded {-lift.value:.0%} less often than those it was withheld "
            f"from (95% interval {lift.low:+.0%} to {lift.high:+.0%}, clustered by user)"
        )
    if not reasons:
        return None
    action = Action.SUSPEND if approval_required else Action.RETIRE
    verb = "suspended for review" if approval_required else "retired"
    return Decision(action, f"{verb}: {'; and '.join(reasons)}", impact.evidence())


#: Where each reflection action moves a learning's status from (and back, on revert).
_MOVES = {
    Action.RETIRE: ({LearningStatus.CURRENT, LearningStatus.SUSPENDED}, LearningStatus.RETIRED),
    Action.SUSPEND: ({LearningStatus.CURRENT}, LearningStatus.SUSPENDED),
    Action.SUPERSEDE: ({LearningStatus.CURRENT, LearningStatus.SUSPENDED}, LearningStatus.SUPERSEDED),
}


def status_after(action: Action, status: LearningStatus) -> LearningStatus:
    """The status ``action`` gives a learning in ``status``.

    Raises:
        ConflictError: The learning is not in a state the action applies to (HTTP 409).
    """
    move = _MOVES.get(action)
    if move is None:
        raise ValueError(f"{action.value} does not change a learning's status")
    allowed, after = move
    if status not in allowed:
        raise ConflictError(
            f"cannot {action.value} a learning that is {status.value}",
            details={"action": action.value, "current_status": status.value},
        )
    return after


def contradicts(old: Learning, new: Learning) -> bool:
    """Whether ``new`` says the opposite of ``old`` on a shared topic (same kind)."""
    if old.kind is not new.kind or old.id == new.id:
        return False
    relation = relate(
        gist(new.content, new.trigger, new.pitfall), gist(old.content, old.trigger, old.pitfall)
    )
    return relation is Relation.CONTRADICTS


def replaces(old: Learning, new: Learning) -> bool:
    """Whether ``new``, extracted from a turn in which the user contradicted ``old``, takes its place.

    The judge already found that turn to contradict ``old`` on its topic, so ``new`` need not
    say the opposite in words the rule comparator can see ("in Fahrenheit" against "in
    Celsius" share no polar word): it replaces ``old`` when it says the opposite, or when it
    is about the same topic (two topic words in common, one for a topic of three words or
    fewer) without saying the same thing.
    """
    if contradicts(old, new):
        return True
    if old.kind is not new.kind or old.id == new.id:
        return False
    was, now = gist(old.content, old.trigger, old.pitfall), gist(new.content, new.trigger, new.pitfall)
    if relate(now, was) is Relation.SAME:
        return False
    shared = was.topic & now.topic
    return len(shared) >= 2 or (len(shared) == 1 and len(was.topic) <= 3)


def propose_revision(llm: LLM, row: Learning, failures: Sequence[str]) -> RevisionOutput:
    """Ask the model for a rewrite of a hurting playbook from the evidence of its failures.

    Raises:
        LLMError: The call failed.
    """
    values = {
        "playbook": f"When: {row.trigger or '(any situation)'}\nDo: {row.content}"
        + (f"\nRationale: {row.rationale}" if row.rationale else ""),
        "failures": "\n".join(f"- {f}" for f in failures[:20]) or "- (no details recorded)",
    }
    call = prompts.load("revise_learning").call(
        Role.EVALUATION,
        values,
        output=RevisionOutput,
        inputs={"learning": row, "failure_cases": tuple(failures)},
        max_tokens=2048,
    )
    return llm.complete(call).value
