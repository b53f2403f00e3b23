"""The offline rule extractor's proposer: learning from explicit signals with no model.

The embedded default must learn before anyone configures an LLM, so this proposer learns only
from what is said or shown outright, deterministically and cheaply next to storage and
embedding (``python -m bench.rules``; bench/results/rules.json):

* facts and tastes users state about themselves ("I only ever use Linux", "no Macs", "Japan
  time, please", "mornings don't work for me any more") become profiles, phrased in the third
  person with the user's key words and the request they were said in as context;
* corrections and instructions ("don't ...", "always ...", "you should have ...", "did you
  actually ...?", "stop X, just do Y") and corrected facts ("No, refunds are only allowed
  within 30 days") become user playbooks whose trigger is the situation of the request being
  corrected, whose content is the instruction and whose pitfall is what the agent did;
* an expert answer becomes a playbook of what it covered and the agent's answer did not;
* a failed tool call becomes a playbook naming the call that failed and what worked instead,
  and a fix the user confirms ("that fixed it, thanks") a recipe of the calls that worked;
* standing preferences (language, units, time zone, length, tone, format, accessibility)
  carry the standing tag, so search serves them for every query of their user.

``rules.judge`` relates each proposal to what is known. Reading sentences lives in
``rules.signals``, ``rules.facts``, ``rules.tastes`` and ``rules.corrections``, wording in
``rules.phrasing``, expert answers and tool calls in ``rules.evidence`` and ``rules.recipes``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from reflexio.learn import standing
from reflexio.learn.pipeline import LearnContext, Proposal
from reflexio.learn.rules.compare import ANSWER_PREFIX, Relation, gist, gist_of, is_tool, relate
from reflexio.learn.rules.evidence import combine, expert_gap, tool_calls, tool_lessons
from reflexio.learn.rules.lexicon import REVERSAL_CUES
from reflexio.learn.rules.phrasing import join_clauses, situation, summary
from reflexio.learn.rules.recipes import confirms_fix, recipe, reports_problem
from reflexio.learn.rules.signals import Reading, Signal, read_message
from reflexio.learn.rules.text import has_phrase, informative, shorten
from reflexio.learn.windows import Window
from reflexio.records import InteractionRecord, LearningKind

__all__ = ["RuleProposer"]

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
        return [_marked(d.proposal) for d in _settle(_merge_expert(drafts), ctx)]


def _marked(p: Proposal) -> Proposal:
    """A standing preference (language, units, time zone, length, tone, format, accessibility)
    carries the standing tag, so search serves it whatever the query."""
    if standing.is_standing_text(p.kind.value, p.content, track=p.track, tool=is_tool(p.blocking_issue)):
        p.tags = list(dict.fromkeys([*p.tags, standing.STANDING_TAG]))
    return p


def _from_user(turns: _Turns, i: int, kinds: Sequence[LearningKind], ctx: LearnContext) -> list[_Draft]:
    turn = turns.turns[i]
    answer = turns.previous(i)
    reacting = answer is not None and is_agent(answer.role)
    corrected = turns.request_before(i - 1) if reacting and answer is not None else None
    context = " ".join(t.content for t in (corrected, answer) if t is not None and reacting)
    reading = read_message(turn.content, reacting=reacting, context=context)
    out: list[_Draft] = []
    if reacting and answer is not None and LearningKind.USER_PLAYBOOK in kinds:
        out += _recipe(answer, corrected, turn)
    if not reading.signals:
        return out
    request = corrected.content if corrected is not None else " ".join(reading.request)
    ids = [t.id for t in (corrected, answer, turn) if t is not None and (t is not answer or reacting)]
    cues = f'The user said: "{shorten(turn.content, 300)}"'
    if LearningKind.PROFILE in kinds:
        profiles = _profiles(reading, request, ids, cues, ctx)
        rules_on = LearningKind.USER_PLAYBOOK in kinds
        out += [_reversing_rule(d, request, ctx) if rules_on else d for d in profiles]
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


_TASTE_AS_RULE = (
    (re.compile(r"^(?:wants|prefers)\s+", re.I), "Give the user "),
    (re.compile(r"^(?:does not want|no longer likes)\s+", re.I), "Do not give the user "),
)


def _reversing_rule(d: _Draft, request: str, ctx: LearnContext) -> _Draft:
    """A taste that reverses a known rule ("Google Docs links instead of Word files" after "send
    notes as a Word document") is stated as a rule, so it supersedes that rule."""
    p = d.proposal
    if p.track != "preference":
        return d
    mine, reversal = gist_of(p), has_phrase(d.cues, REVERSAL_CUES)
    rules = ctx.existing.get(LearningKind.USER_PLAYBOOK, [])
    if not any(relate(mine, gist_of(row), reversal=reversal) is Relation.CONTRADICTS for row in rules):
        return d
    content = p.content
    for lead, replacement in _TASTE_AS_RULE:
        content = lead.sub(replacement, content, count=1)
    rule = Proposal(
        kind=LearningKind.USER_PLAYBOOK,
        content=content,
        trigger=situation(request) if request.strip() else None,
        rationale=p.rationale,
        source_interaction_ids=list(p.source_interaction_ids),
        track="correction",
    )
    return _Draft(rule, d.anchor, d.cues)


def _fact_groups(reading: Reading, ctx: LearnContext) -> list[list[Signal]]:
    """Facts of one sentence go together; tastes join the facts next to them, except standing
    ones ("wants Fahrenheit"), which stand alone."""
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
        elif sig.kind == "taste" and standing.facets(sig.text):
            groups.append([sig])  # a standing preference stands alone: it is served for every query
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


def _recipe(
    answer: InteractionRecord, request: InteractionRecord | None, turn: InteractionRecord
) -> list[_Draft]:
    """The fix the user confirms ("that fixed it, thanks") after the agent's tool calls."""
    problem = reports_problem(request.content) if request is not None else False
    content = recipe(answer) if confirms_fix(turn.content, problem=problem) else None
    if content is None:
        return []
    proposal = Proposal(
        kind=LearningKind.USER_PLAYBOOK,
        content=content,
        trigger=situation(request.content) if request is not None else None,
        rationale=f'The user confirmed it worked: "{shorten(turn.content, 200)}"',
        source_interaction_ids=[t.id for t in (request, answer, turn) if t is not None],
        track="recipe",
    )
    return [_Draft(proposal, anchor=answer.id)]


def _rules(reading: Reading, *, profiles_on: bool) -> list[Signal]:
    """What the agent should do: instructions, team conventions and corrected facts."""
    out = [s for s in reading.signals if s.kind in {"instruction", "world"} or _team_fact(s, reading)]
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
        mine = gist_of(d.proposal)
        kept = [
            k
            for k in kept
            if k.proposal.kind is not d.proposal.kind
            or relate(mine, gist_of(k.proposal), reversal=True) is not Relation.CONTRADICTS
        ]
        kept.append(d)
    return [d for d in kept if not _known_elsewhere(d, ctx)]


def _known_elsewhere(d: _Draft, ctx: LearnContext) -> bool:
    """A lesson already stored as a learning of the other kind (a profile restated as a rule)."""
    mine = gist_of(d.proposal)
    others = [rows for kind, rows in ctx.existing.items() if kind is not d.proposal.kind]
    return any(relate(mine, gist_of(row)) is Relation.SAME for rows in others for row in rows)
