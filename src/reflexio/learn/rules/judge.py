"""The rule extractor's judge: how a proposal relates to what the user's learnings already say.

``RuleJudge`` compares each proposal with the user's most similar learnings (``rules.compare``):
a reversal supersedes the old learning, a restatement keeps it (or, for a profile that adds
detail, rewrites it), anything else is added. A standing preference that gives a facet another
value ("Fahrenheit instead" after "prefers Celsius") supersedes whatever words they share.

A profile often holds several facts ("Lives in Oslo; works as a data engineer"). When only one
of them is overturned ("I live in Berlin now"), the others stay true: the decision supersedes
the learning but says what of it remains, and the pipeline rewrites it to that instead of
retiring it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from reflexio.learn import standing
from reflexio.learn.pipeline import Decision, Proposal, Verdict
from reflexio.learn.rules.compare import Relation, gist, gist_of, is_tool, novelty, relate
from reflexio.learn.rules.lexicon import RESTATEMENT_CUES, REVERSAL_CUES
from reflexio.learn.rules.phrasing import join_clauses
from reflexio.learn.rules.text import capitalize, has_phrase
from reflexio.records import Learning, LearningKind

__all__ = ["RuleJudge"]


class RuleJudge:
    """Decides add / keep / rewrite / supersede by polarity, topic overlap and standing facets."""

    def decide(self, proposals: Sequence[Proposal], similar: Sequence[Sequence[Learning]]) -> list[Decision]:
        """One decision per proposal, targets taken from ``similar``; no target is retired twice.

        A learning partly superseded by one proposal is seen by the later ones as what remains
        of it; when a later one overturns that too, the first decision retires it whole and the
        later proposal is simply added.
        """
        out: list[Decision] = []
        taken: set[int] = set()
        partial: dict[int, int] = {}  # learning id -> the decision that keeps part of it
        for p, near in zip(proposals, similar, strict=True):
            seen = [_remaining(row, out, partial) for row in near if row.id not in taken]
            decision = _decide(p, seen)
            target = decision.target
            if decision.verdict is Verdict.SUPERSEDE and target is not None and target in partial:
                out[partial[target]] = replace(out[partial[target]], remainder=decision.remainder)
                if decision.remainder is None:  # nothing of it is left: the first retires it
                    del partial[target]
                    taken.add(target)
                decision = Decision(Verdict.ADD, reason=f"also overturns learning {target}")
            elif decision.verdict is Verdict.SUPERSEDE and target is not None and decision.remainder:
                partial[target] = len(out)
            elif decision.verdict in {Verdict.SUPERSEDE, Verdict.UPDATE} and target is not None:
                taken.add(target)
            out.append(decision)
        return out


def _remaining(row: Learning, decided: Sequence[Decision], partial: dict[int, int]) -> Learning:
    """A learning as the next proposal sees it: what an earlier partial supersede left of it."""
    if row.id not in partial:
        return row
    return row.copy(content=decided[partial[row.id]].remainder or row.content)


def _decide(p: Proposal, near: Sequence[Learning]) -> Decision:
    if not near:
        return Decision(Verdict.ADD, reason="nothing similar is known")
    if p.track == "tool_failure":
        return _decide_tool(p, near)
    overridden = _standing_conflict(p, near)
    if overridden is not None:
        return overridden
    mine = gist_of(p)
    cues = p.rationale or ""
    restated = has_phrase(cues, RESTATEMENT_CUES)
    reversal = has_phrase(cues, REVERSAL_CUES)
    profile = p.kind is LearningKind.PROFILE

    def relation(text: str, row: Learning) -> Relation:
        old = gist(text, row.trigger, row.pitfall, avoids=not is_tool(row.blocking_issue))
        return relate(mine, old, restated=restated, reversal=reversal, profile=profile)

    for row in near:
        clauses = _clauses(row) if profile else [row.content]
        verdicts = [relation(c, row) for c in clauses]
        if Relation.CONTRADICTS in verdicts:
            kept = [c for c, v in zip(clauses, verdicts, strict=True) if v is Relation.UNRELATED]
            remainder = join_clauses([capitalize(c) for c in kept]) if kept and len(clauses) > 1 else None
            return Decision(
                Verdict.SUPERSEDE, target=row.id, remainder=remainder, reason=f"contradicts learning {row.id}"
            )
    same = next((row for row in near if relation(row.content, row) is Relation.SAME), None)
    if same is None:
        return Decision(Verdict.ADD, reason="no similar learning says the same")
    added = novelty(mine, gist_of(same))
    if profile and len(added) >= 2:
        content = join_clauses([same.content, p.content])
        return Decision(Verdict.UPDATE, target=same.id, content=content, reason="adds detail to a known fact")
    return Decision(Verdict.KEEP, target=same.id, reason=f"restates learning {same.id}")


def _clauses(row: Learning) -> list[str]:
    """The facts of a compound profile ("Lives in Oslo; works as a data engineer")."""
    parts = [part.strip() for part in row.content.split("; ") if part.strip()]
    return parts or [row.content]


def _standing_conflict(p: Proposal, near: Sequence[Learning]) -> Decision | None:
    """A standing preference that gives one of its facets another value supersedes the old one."""
    mine = standing.is_standing_text(p.kind.value, p.content, track=p.track, tool=is_tool(p.blocking_issue))
    if not mine:
        return None
    for row in near:
        clauses = _clauses(row) if row.kind is LearningKind.PROFILE else [row.content]
        tool = is_tool(row.blocking_issue)
        clashing = [
            bool(standing.conflicting(mine, standing.is_standing_text(row.kind.value, c, tool=tool)))
            for c in clauses
        ]
        if any(clashing):
            kept = [capitalize(c) for c, clash in zip(clauses, clashing, strict=True) if not clash]
            return Decision(
                Verdict.SUPERSEDE,
                target=row.id,
                remainder=join_clauses(kept) if kept else None,
                reason=f"a newer standing preference replaces {row.id}",
            )
    return None


def _decide_tool(p: Proposal, near: Sequence[Learning]) -> Decision:
    """A tool failing again is the same lesson, never a reversal; keep the lesson with a fix."""
    tool = (p.blocking_issue or {}).get("tool", "")
    for row in near:
        if tool and (row.blocking_issue or {}).get("tool") == tool:
            return Decision(Verdict.KEEP, target=row.id, reason=f"{tool} already has a lesson")
    return Decision(Verdict.ADD, reason="a new tool lesson")
