"""Turning retrieved learnings into prompt text within a token budget, with matching attribution.

An agent that injects learnings must later report exactly which ones it injected
(``retrieved_learnings`` on its next publish), or evaluation credits the wrong rules. The
safest way to keep the two in step is to produce both from one selection, here: whatever is
dropped for the budget is dropped from the attribution too. The rendering rules themselves live
in ``reflexio.prompt_text`` (standard library only, for hooks that must start fast).
"""

from collections.abc import Sequence

from pydantic import ConfigDict, Field

from reflexio.models.entities import RetrievedLearning
from reflexio.models.fields import WireModel
from reflexio.prompt_text import STANDING_TAG, PromptItem, estimate_tokens, pack, rule_line

__all__ = ["STANDING_TAG", "PromptBlock", "PromptItem", "estimate_tokens", "pack_prompt", "rule_line"]


class PromptBlock(WireModel):
    """Learnings rendered for a prompt, plus the references to publish for exactly those.

    ``tokens`` is ``estimate_tokens(text)``.
    """

    model_config = ConfigDict(frozen=True)

    text: str = ""
    retrieved_learnings: list[RetrievedLearning] = Field(default_factory=list)
    tokens: int = 0


def pack_prompt(items: Sequence[PromptItem], max_tokens: int | None = None) -> PromptBlock:
    """Keep the best-scored items that fit in ``max_tokens`` and render them (see ``prompt_text.pack``).

    Raises:
        ValueError: If ``max_tokens`` is negative.
    """
    kept, text = pack(items, max_tokens)
    return PromptBlock(
        text=text,
        retrieved_learnings=[
            RetrievedLearning(kind=item.kind, learning_id=item.learning_id) for item in kept
        ],
        tokens=estimate_tokens(text),
    )
