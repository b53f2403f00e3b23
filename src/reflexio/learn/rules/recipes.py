"""Success recipes: what the agent did, when the user confirms it fixed the problem.

A failed tool call teaches what not to repeat; a fix the user confirms ("that fixed it,
thanks", "works again, brilliant") teaches what to do next time the same problem comes up.
Only a *confirmed fix* counts: thanks after an ordinary task ("Great, thank you" for a booked
table) is politeness, not a recipe. A confirmation is an explicit fix phrase, or a statement
that things work now or again together with an appraisal ("It's printing now, perfect.").

The recipe is the agent's own account of what it did, as an instruction ("I flushed the DNS
cache" → "Flush the DNS cache"), followed by the successful calls with their arguments, which
are the concrete, reusable part.
"""

from __future__ import annotations

import re

from reflexio.learn.rules.evidence import as_instruction, call_text, tool_calls
from reflexio.learn.rules.lexicon import FIX_APPRAISALS, FIX_PHRASES, FIX_STATES, PROBLEM_CUES
from reflexio.learn.rules.phrasing import join_clauses
from reflexio.learn.rules.text import base_form, has_phrase, sentences, shorten, words
from reflexio.records import InteractionRecord

__all__ = ["confirms_fix", "recipe", "reports_problem"]

#: Longest recipe text; the calls are cut before the description is.
MAX_RECIPE_CHARS = 400
_NOT_FIXED = re.compile(
    r"\b(?:didn't|did not|hasn't|has not|doesn't|does not|isn't|is not|wasn't|not|never)\s+(?:\w+\s+){0,2}?"
    r"(?:fix|work|solve|help|sort|resolve)|\bstill\b.{0,25}\b(?:not|n't|broken|fail|same|crash|error)|"
    # a fix the user only imagines: "verify before claiming it's fixed", "until it works"
    r"\b(?:before|until|unless|claim(?:s|ing)?|say(?:s|ing)?|pretend(?:ing)?)\s+(?:\w+\s+){0,2}?"
    r"(?:it's |it is |that's |it |that |is )?(?:fixed|works|working|solved|resolved)\b",
    re.I,
)


def confirms_fix(text: str, *, problem: bool = True) -> bool:
    """Whether a user message says the agent's last action fixed their problem.

    Args:
        text: The user's reaction to the agent's turn.
        problem: The request was a problem report; only then does "works now, perfect"
            (a state and an appraisal, no fix phrase) count.
    """
    low = " ".join(words(text))
    if _NOT_FIXED.search(text.replace("\u2019", "'")):
        return False
    if has_phrase(low, FIX_PHRASES):
        return True
    return problem and has_phrase(low, FIX_STATES) and has_phrase(low, FIX_APPRAISALS)


def reports_problem(text: str) -> bool:
    """Whether a request describes something broken ("can't connect", "keeps timing out", "the
    dashboard shows yesterday's numbers") rather than asking for a task or a fact."""
    if has_phrase(" ".join(words(text)), PROBLEM_CUES):
        return True
    stripped = text.strip()
    tokens = words(stripped)
    asking = stripped.endswith("?") or not tokens or tokens[0] in {"i", "please", "can", "could", "would"}
    return not asking and base_form(tokens[0]) != tokens[0]


def recipe(agent: InteractionRecord) -> str | None:
    """The confirmed fix as an instruction with its successful calls; None without any."""
    good = [call for call in tool_calls(agent.tools_used, agent.id) if not call.failed]
    if not good:
        return None
    steps = [as_instruction(s) for s in sentences(agent.content)[:2]]
    said = join_clauses([s for s in steps if not s.startswith("Mention: ")])
    calls = " then ".join(call_text(c) for c in good)
    text = f"{said} ({calls})" if said else f"What fixed it: {calls}"
    return shorten(text, MAX_RECIPE_CHARS)
