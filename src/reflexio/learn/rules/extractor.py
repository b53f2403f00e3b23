"""The offline rule extractor: learning from explicit signals with no model and no API key.

The embedded default must learn before anyone configures an LLM, so this proposer and judge
learn only from what is said or shown outright, deterministically and cheaply next to storage
and embedding (``python -m bench.rules``; bench/results/rules.json):

* facts and tastes users state about themselves ("I only ever use Linux", "no Macs") become
  profiles, phrased in the third person with the user's key words and the request they were
  said in as context;
* corrections and instructions ("don't ...", "always ...", "you should have ...", "did you
  actually ...?", "stop X, just do Y") become user playbooks whose trigger is the situation of
  the request being corrected, whose content is the instruction and whose pitfall is what the
  agent did;
* an expert answer becomes a playbook of what it covered and the agent's answer did not;
* a failed tool call becomes a playbook naming the call that failed and what worked instead.

``RuleJudge`` compares each proposal with the user's most similar learnings by polarity and
topic (``rules.compare``): a reversal supersedes the old learning, a restatement keeps it (or,
for a profile that adds detail, rewrites it), anything else is added. Reading sentences lives
in ``rules.signals`` and ``rules.facts``, wording in ``rules.phrasing``, expert answers and
tool calls in ``rules.evidence``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from reflexio.learn.pipeline import Decision, LearnContext, Proposal, Verdict
from reflexio.learn.rules.compare import ANSWER_PREFIX, Gist, Relation, gist, novelty, relate
from reflexio.learn.rules.evidence import combine, expert_gap, tool_calls, tool_lessons
from reflexio.learn.rules.lexicon import RESTATEMENT_CUES, REVERSAL_CUES
from reflexio.learn.rules.phrasing import join_clauses, situation, summary
from reflexio.learn.rules.signals import Reading, Signal, read_message
from reflexio.learn.rules.text import has_phrase, informative, shorten
from reflexio.learn.windows import Window
from reflexio.records import InteractionRecord, Learning, LearningKind

__all__ = ["RuleJudge", "RuleProposer"]

_AGENT_ROLES = {"agent", "assistant"}


def is_user(role: str) -> bool:
    """Whether a free-form role names the user."""
    return role.strip().lower() == "user"


def is_agent(role: str) -> bool:
    """Whether a free-form role names the agent."""
    return role.strip().lower() in _AGENT_ROLES


@dataclass(slots=True)
class _Draft:
    """A proposal being built, with what the window pass needs besides the fields."""

    proposal: Proposal
    anchor: int | None = None  # the agent turn the lesson is about
    cues: str = ""  # the user's words, for restatement and reversal cues


@dataclass(slots=True)
class _Turns:
    """A window's turns with the lookups the extractor needs."""

    turns: tuple[InteractionRecord, ...]
    new_ids: frozenset[int] = field(default_factory=frozenset)

    def previous(self, i: int) -> InteractionRecord | None:
        """The turn before ``i`` in the same session."""
        if i <= 0 or self.turns[i - 1].session_id != self.turns[i].session_id:
            return None
        return self.turns[i - 1]

    def request_before(self, i: int) -> InteractionRecord | None:
        """The user turn the agent turn at ``i`` answered (the nearest earlier user turn)."""
        session = self.turns[i].session_id
        for j in range(i - 1, -1, -1):
            turn = self.turns[j]
            if turn.session_id != session:
                return None
            if is_user(turn.role) and turn.content.strip():
                return turn
        return None


class RuleProposer:
    """Proposes profiles and user playbooks from the explicit signals of a window."""

    def propose(self, window: Window, kinds: Sequence[LearningKind], ctx: LearnContext) -> list[Proposal]:
        """Proposals from the window's new turns (earlier turns are read as context only)."""
        turns = _Turns(window.turns, frozenset(t.id for t in window.new_turns))
        drafts: list[_Draft] = []
        for i, turn in enumerate(window.turns):
            if turn.id not in turns.new_ids:
                continue
            if is_user(turn.role) and turn.content.strip():
                drafts += _from_user(turns, i, kinds, ctx)
            elif is_agent(turn.role) and LearningKind.USER_PLAYBOOK in kinds:
                drafts += _from_expert(turns, i)
        if LearningKind.USER_PLAYBOOK in kinds:
            drafts += _from_tools(turns)
        return [d.proposal for d in _settle(_merge_expert(drafts), ctx)]


def _from_user(turns: _Turns, i: int, kinds: Sequence[LearningKind], ctx: LearnContext) -> list[_Draft]:
    turn = turns.turns[i]
    answer = turns.previous(i)
    reacting = answer is not None and is_agent(answer.role)
    reading = read_message(turn.content, reacting=reacting)
    if not reading.signals:
        return []
    corrected = turns.request_before(i - 1) if reacting and answer is not None else None
    request = corrected.content if corrected is not None else " ".join(reading.request)
    ids = [t.id for t in (corrected, answer, turn) if t is not None and (t is not answer or reacting)]
    cues = f'The user said: "{shorten(turn.content, 300)}"'
    out: list[_Draft] = []
    if LearningKind.PROFILE in kinds:
        out += _profiles(reading, request, ids, cues, ctx)
    if LearningKind.USER_PLAYBOOK in kinds:
        anchor = answer.id if reacting and answer is not None else None
        pitfall = summary(answer.content) if reacting and answer is not None and answer.content else ""
        rules = _rules(reading, profiles_on=LearningKind.PROFILE in kinds)
        draft = _playbook(rules, request, pitfall, ids, cues, reacting)
        out += [_Draft(draft, anchor, cues)] if draft is not None else []
    return out


def _profiles(reading: Reading, request: str, ids: list[int], cues: str, ctx: LearnContext) -> list[_Draft]:
    """One profile per sentence of stated facts, with the tastes stated beside them."""
    # The request a fact was stated for helps find it for the next such request, unless the
    # fact only explains an instruction ("euros please, I live in Lyon"): then the rule is the lesson.
    explains = any(s.kind == "instruction" for s in reading.signals)
    features = {"context": shorten(request, 160)} if request.strip() and not explains else None
    return [
        _Draft(
            Proposal(
                kind=LearningKind.PROFILE,
                content=join_clauses([s.text for s in group]),
                rationale=cues,
                ttl=_ttl(group),
                custom_features=features,
                source_interaction_ids=list(ids),
                track="preference" if group[0].kind == "taste" else "fact",
            ),
            cues=cues,
        )
        for group in _fact_groups(reading, ctx)
    ]


def _fact_groups(reading: Reading, ctx: LearnContext) -> list[list[Signal]]:
    """Facts of one sentence go together; tastes join the facts next to them."""
    groups: list[list[Signal]] = []
    pending: list[Signal] = []
    for sig in reading.signals:
        if sig.kind == "indifferent" and not _reverses_aversion(sig, ctx):
            continue
        if sig.kind in {"fact", "indifferent"} and not _team_fact(sig, reading):
            if groups and groups[-1][0].kind != "taste" and groups[-1][-1].sentence == sig.sentence:
                groups[-1].append(sig)
            else:
                groups.append([sig, *pending])
                pending = []
        elif sig.kind == "taste":
            (groups[-1] if groups else pending).append(sig)
    return groups + [[taste] for taste in pending]


def _team_fact(sig: Signal, reading: Reading) -> bool:
    """ "We don't use os.path here": a team convention told to the agent is a rule for the agent."""
    return sig.text.startswith("They ") and (
        reading.reacting or any(s.kind == "instruction" for s in reading.signals)
    )


def _reverses_aversion(sig: Signal, ctx: LearnContext) -> bool:
    """ "I don't mind Macs" is worth keeping only when it retracts "no Macs"."""
    mine = informative(sig.text)
    return any(mine & gist(row.content).avoid for row in ctx.existing.get(LearningKind.PROFILE, []))


def _ttl(group: Sequence[Signal]) -> str:
    order = ["one_day", "one_week", "one_month", "one_quarter", "one_year", "infinity"]
    facts = [s.ttl for s in group if s.kind != "taste"] or ["one_year"]
    return min(facts, key=order.index)


def _rules(reading: Reading, *, profiles_on: bool) -> list[Signal]:
    out = [s for s in reading.signals if s.kind == "instruction" or _team_fact(s, reading)]
    if not profiles_on:
        out += [
            replace(s, kind="instruction", text=s.rule)
            for s in reading.signals
            if s.kind == "taste" and s.rule
        ]
    return out


def _playbook(
    rules: list[Signal], request: str, pitfall: str, ids: list[int], cues: str, reacting: bool
) -> Proposal | None:
    if not rules:
        return None
    avoided = [s.avoid for s in rules if s.negative or s.avoid]
    return Proposal(
        kind=LearningKind.USER_PLAYBOOK,
        content=join_clauses([s.text for s in rules]),
        trigger=situation(request) if request.strip() else None,
        rationale=cues,
        pitfall=join_clauses(avoided) or (f"{ANSWER_PREFIX} {pitfall}" if pitfall else None),
        source_interaction_ids=list(ids),
        track="correction" if reacting else "instruction",
    )


def _from_expert(turns: _Turns, i: int) -> list[_Draft]:
    turn = turns.turns[i]
    if not turn.expert_content.strip():
        return []
    request = turns.request_before(i)
    gap = expert_gap(request.content if request else "", turn.content, turn.expert_content)
    if not gap:
        return []
    proposal = Proposal(
        kind=LearningKind.USER_PLAYBOOK,
        content=join_clauses(gap),
        trigger=situation(request.content) if request else None,
        rationale="An expert's answer to this request covered this; the agent's answer did not.",
        pitfall=f"{ANSWER_PREFIX} {summary(turn.content)}" if turn.content.strip() else None,
        source_interaction_ids=[t.id for t in (request, turn) if t is not None],
        track="expert",
    )
    return [_Draft(proposal, anchor=turn.id)]


def _from_tools(turns: _Turns) -> list[_Draft]:
    lessons = [
        lesson
        for turn in turns.turns
        if turn.id in turns.new_ids and is_agent(turn.role)
        for lesson in tool_lessons(tool_calls(turn.tools_used, turn.id))
    ]
    out = []
    for lesson in lessons:
        i = next(k for k, t in enumerate(turns.turns) if t.id == lesson.turn_id)
        request = turns.request_before(i)
        proposal = Proposal(
            kind=LearningKind.USER_PLAYBOOK,
            content=lesson.content,
            trigger=situation(request.content) if request else f"When calling {lesson.tool}",
            rationale=f"The tool call failed: {lesson.details}",
            pitfall=lesson.pitfall,
            # A wire BlockingIssueKind (the LLM schema and exports accept no other); "tool"
            # marks it as a tool lesson for the judge.
            blocking_issue={"kind": "external_dependency", "details": lesson.details, "tool": lesson.tool},
            source_interaction_ids=[t.id for t in (request, turns.turns[i]) if t is not None],
            track="tool_failure",
        )
        out.append(_Draft(proposal, anchor=lesson.turn_id))
    return out


def _merge_expert(drafts: list[_Draft]) -> list[_Draft]:
    """An expert lesson about an answer the user also corrected joins that correction."""
    corrections = {d.anchor: d for d in drafts if d.proposal.track == "correction" and d.anchor is not None}
    out = []
    for d in drafts:
        target = corrections.get(d.anchor) if d.proposal.track == "expert" and d.anchor is not None else None
        if target is None:
            out.append(d)
            continue
        merged = combine(target.proposal.content, d.proposal.content.split("; "))
        target.proposal.content = merged
        ids = [*target.proposal.source_interaction_ids, *d.proposal.source_interaction_ids]
        target.proposal.source_interaction_ids = list(dict.fromkeys(ids))
    return out


def _settle(drafts: list[_Draft], ctx: LearnContext) -> list[_Draft]:
    """Within a window a later statement overrides an earlier one; known lessons are not repeated."""
    kept: list[_Draft] = []
    for d in drafts:
        mine = _gist_of(d.proposal)
        kept = [
            k
            for k in kept
            if k.proposal.kind is not d.proposal.kind
            or relate(mine, _gist_of(k.proposal), reversal=True) is not Relation.CONTRADICTS
        ]
        kept.append(d)
    return [d for d in kept if not _known_elsewhere(d, ctx)]


def _known_elsewhere(d: _Draft, ctx: LearnContext) -> bool:
    """A lesson already stored as a learning of the other kind (a profile restated as a rule)."""
    mine = _gist_of(d.proposal)
    others = [rows for kind, rows in ctx.existing.items() if kind is not d.proposal.kind]
    return any(relate(mine, _gist_of_row(row)) is Relation.SAME for rows in others for row in rows)


def _gist_of(p: Proposal) -> Gist:
    return gist(p.content, p.trigger, p.pitfall, avoids=not _is_tool(p.blocking_issue))


def _gist_of_row(row: Learning) -> Gist:
    return gist(row.content, row.trigger, row.pitfall, avoids=not _is_tool(row.blocking_issue))


def _is_tool(blocking_issue: dict[str, Any] | None) -> bool:
    """A tool lesson names its tool (older rows also used the kind ``tool_failure``)."""
    return bool((blocking_issue or {}).get("tool"))


class RuleJudge:
    """Decides add / keep / rewrite / supersede by polarity and topic overlap."""

    def decide(self, proposals: Sequence[Proposal], similar: Sequence[Sequence[Learning]]) -> list[Decision]:
        """One decision per proposal, targets taken from ``similar``; no target is retired twice."""
        out: list[Decision] = []
        taken: set[int] = set()
        for p, near in zip(proposals, similar, strict=True):
            decision = _decide(p, [row for row in near if row.id not in taken])
            if decision.verdict in {Verdict.SUPERSEDE, Verdict.UPDATE} and decision.target is not None:
                taken.add(decision.target)
            out.append(decision)
        return out


def _decide(p: Proposal, near: Sequence[Learning]) -> Decision:
    if not near:
        return Decision(Verdict.ADD, reason="nothing similar is known")
    if p.track == "tool_failure":
        return _decide_tool(p, near)
    mine = _gist_of(p)
    cues = p.rationale or ""
    restated = has_phrase(cues, RESTATEMENT_CUES)
    reversal = has_phrase(cues, REVERSAL_CUES)
    relations = [(row, relate(mine, _gist_of_row(row), restated=restated, reversal=reversal)) for row in near]
    for row, relation in relations:
        if relation is Relation.CONTRADICTS:
            return Decision(Verdict.SUPERSEDE, target=row.id, reason=f"contradicts learning {row.id}")
    same = next((row for row, relation in relations if relation is Relation.SAME), None)
    if same is None:
        return Decision(Verdict.ADD, reason="no similar learning says the same")
    added = novelty(mine, _gist_of_row(same))
    if p.kind is LearningKind.PROFILE and len(added) >= 2:
        content = join_clauses([same.content, p.content])
        return Decision(Verdict.UPDATE, target=same.id, content=content, reason="adds detail to a known fact")
    return Decision(Verdict.KEEP, target=same.id, reason=f"restates learning {same.id}")


def _decide_tool(p: Proposal, near: Sequence[Learning]) -> Decision:
    """A tool failing again is the same lesson, never a reversal; keep the lesson with a fix."""
    tool = (p.blocking_issue or {}).get("tool", "")
    for row in near:
        if tool and (row.blocking_issue or {}).get("tool") == tool:
            return Decision(Verdict.KEEP, target=row.id, reason=f"{tool} already has a lesson")
    return Decision(Verdict.ADD, reason="a new tool lesson")
