"""Shadow comparison: per turn, was the agent's answer better than its shadow answer?

An agent in shadow mode publishes, with each answer it gave (``content``, made with
Reflexio's learnings), the answer it would have given otherwise (``shadow_content``). Each such
turn gets a verdict: which is better and why.

With a model, one call compares all the shadow turns of a session (up to ``CHUNK_SIZE`` per
call) blind: for each turn a hash of its id decides whether the regular answer is shown as
Request 1 or Request 2, and the verdict records that mapping (``reflexio_is_request_1``), as
Reflexio does, so position bias cannot favour either side.

Without a model the verdict rests on explicit evidence only: the expert's ideal answer when
the turn carries one (the answer sharing more of its content words wins), otherwise the user's
next message (an answer it contradicts loses, an answer it restates wins). With neither, the
turn is a tie: no evidence is not a win.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from reflexio import ranking
from reflexio.learn import prompts
from reflexio.learn.evaluate import is_reaction
from reflexio.learn.holdout import unit_draw
from reflexio.learn.llm_extract import is_agent, is_user
from reflexio.learn.llm_schemas import ShadowComparisonOutput
from reflexio.learn.rules.compare import gist
from reflexio.learn.rules.signals import read_message
from reflexio.llm import LLM, Role
from reflexio.models.org_config import DEFAULT_SUCCESS_PROMPT, Config
from reflexio.records import InteractionRecord

__all__ = [
    "CHUNK_SIZE",
    "ShadowVerdict",
    "compare_offline",
    "compare_with_llm",
    "offline_answer",
    "shadow_turns",
]

#: Turns compared per model call.
CHUNK_SIZE: Final = 20
_MAX_CHARS: Final = 3000

Winner = Literal["regular", "shadow", "tie"]


@dataclass(frozen=True, slots=True)
class ShadowVerdict:
    """One turn's comparison, in Reflexio's terms plus the side that won."""

    interaction_id: int
    reflexio_is_request_1: bool
    better_request: Literal["1", "2", "tie"]
    is_significantly_better: bool
    comparison_reason: str
    judge: str = "rules"

    @property
    def winner(self) -> Winner:
        """Which side the verdict favours."""
        if self.better_request == "tie":
            return "tie"
        return "regular" if (self.better_request == "1") == self.reflexio_is_request_1 else "shadow"

    def result(self) -> dict[str, Any]:
        """The stored verdict (``ShadowComparisonVerdict.output`` and its mapping)."""
        return {
            "reflexio_is_request_1": self.reflexio_is_request_1,
            "output": {
                "better_request": self.better_request,
                "is_significantly_better": self.is_significantly_better,
                "comparison_reason": self.comparison_reason,
            },
            "winner": self.winner,
            "judge": self.judge,
        }


def shadow_turns(turns: Sequence[InteractionRecord]) -> list[int]:
    """Indexes of the agent turns that carry a shadow answer."""
    return [i for i, t in enumerate(turns) if is_agent(t) and t.shadow_content.strip() and t.content.strip()]


def _regular_first(interaction_id: int) -> bool:
    return unit_draw("shadow-position", str(interaction_id)) < 0.5


def _verdict(
    interaction_id: int, winner: Winner, strong: bool, reason: str, judge: str = "rules"
) -> ShadowVerdict:
    first = _regular_first(interaction_id)
    better: Literal["1", "2", "tie"] = "tie"
    if winner != "tie":
        better = "1" if (winner == "regular") == first else "2"
    return ShadowVerdict(interaction_id, first, better, strong and winner != "tie", reason, judge)


def _by_expert(turn: InteractionRecord) -> tuple[Winner, str] | None:
    expert = frozenset(ranking.word_set(turn.expert_content))
    if not expert:
        return None
    regular = ranking.jaccard(expert, frozenset(ranking.word_set(turn.content)))
    shadow = ranking.jaccard(expert, frozenset(ranking.word_set(turn.shadow_content)))
    if abs(regular - shadow) < 0.05:
        return "tie", "both answers are as close to the expert's ideal answer"
    winner: Winner = "regular" if regular > shadow else "shadow"
    return winner, f"the {winner} answer is closer to the expert's ideal answer"


def _by_reaction(turns: Sequence[InteractionRecord], at: int) -> tuple[Winner, str] | None:
    """The user's next message: it rejects what one answer offers, or asks for what it gives."""
    reply = next((t for t in turns[at + 1 :] if is_user(t)), None)
    if reply is None or not reply.content.strip():
        return None
    said = gist(reply.content)
    texts: dict[Winner, str] = {"regular": turns[at].content, "shadow": turns[at].shadow_content}
    rejected = {side: bool(said.avoid & frozenset(ranking.word_set(text))) for side, text in texts.items()}
    wanted = {
        side: bool(said.do & frozenset(ranking.word_set(text))) and not rejected[side]
        for side, text in texts.items()
    }
    pairs: tuple[tuple[Winner, Winner], ...] = (("regular", "shadow"), ("shadow", "regular"))
    for winner, loser in pairs:
        if rejected[loser] and not rejected[winner]:
            return winner, f"the user's reply rejects what the {loser} answer offers"
    correcting = is_reaction(read_message(reply.content, reacting=True))
    for winner, loser in pairs:
        if correcting and wanted[winner] and not wanted[loser]:
            return winner, f"the user asked for what the {winner} answer gave"
    return None


def compare_offline(turns: Sequence[InteractionRecord]) -> list[ShadowVerdict]:
    """Verdicts from the expert answer or the user's reply, one per shadow turn."""
    out = []
    for at in shadow_turns(turns):
        found = _by_expert(turns[at]) or _by_reaction(turns, at)
        winner, reason = found or ("tie", "no expert answer or user reply tells the two answers apart")
        out.append(
            _verdict(turns[at].id, winner, strong=found is not None and winner != "tie", reason=reason)
        )
    return out


def _render(turns: Sequence[InteractionRecord], at: int) -> str:
    turn = turns[at]
    request = next((t.content for t in reversed(turns[:at]) if is_user(t)), "(none)")
    reply = next((t.content for t in turns[at + 1 :] if is_user(t)), "(the conversation ended)")
    regular, shadow = turn.content[:_MAX_CHARS], turn.shadow_content[:_MAX_CHARS]
    first, second = (regular, shadow) if _regular_first(turn.id) else (shadow, regular)
    return (
        f"interaction_id {turn.id}\nUser asked: {request[:_MAX_CHARS]}\n"
        f"Request 1: {first}\nRequest 2: {second}\nUser then said: {reply[:_MAX_CHARS]}"
    )


def compare_with_llm(llm: LLM, config: Config, turns: Sequence[InteractionRecord]) -> list[ShadowVerdict]:
    """Blind verdicts from a model, ``CHUNK_SIZE`` turns per call; unanswered turns are left out.

    Raises:
        LLMError: A call failed.
    """
    indexes = shadow_turns(turns)
    success = config.agent_success_config
    out: list[ShadowVerdict] = []
    for start in range(0, len(indexes), CHUNK_SIZE):
        chunk = indexes[start : start + CHUNK_SIZE]
        values = {
            "agent_context": config.agent_context_prompt or "(not described)",
            "success_definition": success.success_definition_prompt if success else DEFAULT_SUCCESS_PROMPT,
            "turns": "\n\n".join(_render(turns, at) for at in chunk),
        }
        call = prompts.load("compare_shadow").call(
            Role.EVALUATION,
            values,
            output=ShadowComparisonOutput,
            inputs={"all_turns": tuple(turns), "indexes": tuple(chunk)},
            max_tokens=4096,
        )
        wanted = {turns[at].id for at in chunk}
        for item in llm.complete(call).value.comparisons:
            if item.interaction_id in wanted:
                wanted.discard(item.interaction_id)
                out.append(
                    ShadowVerdict(
                        item.interaction_id,
                        _regular_first(item.interaction_id),
                        item.better_request,
                        item.is_significantly_better,
                        item.comparison_reason or "",
                        judge="llm",
                    )
                )
    return out


def offline_answer(turns: Sequence[InteractionRecord], indexes: Sequence[int]) -> dict[str, Any]:
    """The offline verdicts in the model's answer shape (what a scripted model replies)."""
    wanted = {turns[at].id for at in indexes}
    return {
        "comparisons": [
            {
                "interaction_id": v.interaction_id,
                "better_request": v.better_request,
                "is_significantly_better": v.is_significantly_better,
                "comparison_reason": v.comparison_reason,
            }
            for v in compare_offline(turns)
            if v.interaction_id in wanted
        ]
    }
