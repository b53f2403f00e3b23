"""Randomised exposure: which learning is withheld from which session, and which user is in a
retrieval experiment's holdout.

The assignments are hashes, not coin flips, so they are the same in every process and on every
retry, need no shared state, and can be recomputed by anyone auditing a result:

* **Per-learning holdout** (the causal measure). When a learning would be served to a session,
  ``withheld(org, kind, learning_id, session_id, rate)`` decides whether this session is one of
  its controls. The unit is the pair (learning, session): a session keeps its assignment for
  every search it makes (so a learning is not served in turn 3 after being withheld in
  turn 1), different learnings are withheld independently of each other, and every learning
  gets its own control sessions. Outcomes of the withheld sessions against the served ones
  give the learning's lift.
* **Retrieval experiment** (Reflexio's user-level A/B). A user is in the holdout arm of an
  experiment when the hash of (experiment, user) falls below its percentage; holdout users get
  no learnings at all while it runs. Hashing the experiment id in means a new experiment draws
  a new holdout instead of punishing the same users again.
"""

from __future__ import annotations

import hashlib
from typing import Literal

__all__ = ["experiment_arm", "unit_draw", "withheld"]

_SCALE = float(2**64)


def unit_draw(*parts: str) -> float:
    """A uniform number in [0, 1) determined by ``parts`` (SHA-256 of them, NUL-separated)."""
    digest = hashlib.sha256("\0".join(parts).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / _SCALE


def withheld(org_id: str, kind: str, learning_id: str, session_id: str, rate: float) -> bool:
    """Whether this session is a control for this learning (probability ``rate``; 0 never)."""
    if rate <= 0:
        return False
    return unit_draw("holdout", org_id, kind, learning_id, session_id) < rate


def experiment_arm(
    experiment_id: str, user_id: str, holdout_percentage: float
) -> Literal["treatment", "holdout"]:
    """The arm of a retrieval experiment a user is in."""
    draw = unit_draw("experiment", experiment_id, user_id) * 100
    return "holdout" if draw < holdout_percentage else "treatment"
