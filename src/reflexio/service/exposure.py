"""What search may serve, decided per session: the retrieval experiment and the per-learning holdout.

Two randomised exposures sit between ranking and the response (``learn.holdout`` has the
hashes):

* **A retrieval experiment** (Reflexio's, user-level): while one runs, a user in its holdout
  arm gets no learnings at all, and every response says which arm the user is in. A search
  without ``user_id`` cannot be assigned and is refused (422) while an experiment runs.
* **The per-learning holdout** (ours): each learning that would be served to a session is
  withheld from it with probability ``holdout_rate`` (for the kinds in ``holdout_kinds``,
  once the learning is ``holdout_warmup_seconds`` old), and the next-best learning takes its
  place. Every decision — served or withheld, with the
  user and the rate — is recorded, which is what each learning's lift is computed from.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from reflexio.errors import ValidationError
from reflexio.learn.holdout import experiment_arm, withheld
from reflexio.models import RetrievalExperimentAssignment
from reflexio.models.org_config import Config
from reflexio.records import ExposureRecord, Learning, now

__all__ = ["SPARE", "Holdout", "assignment"]

#: Extra candidates ranked per kind so a withheld learning can be replaced by the next best.
SPARE = 3


def assignment(
    config: Config, user_id: str | None, *, required: bool
) -> RetrievalExperimentAssignment | None:
    """The caller's arm of the active retrieval experiment, if one runs.

    Raises:
        ValidationError: An experiment runs, ``required`` is set and there is no ``user_id``.
    """
    active = config.retrieval_experiment_config
    if active is None:
        return None
    if not user_id:
        if required:
            raise ValidationError(
                f"user_id is required while retrieval experiment {active.experiment_id!r} runs",
                details={"fields": ["user_id"]},
            )
        return None
    arm = experiment_arm(active.experiment_id, user_id, active.holdout_percentage)
    return RetrievalExperimentAssignment(experiment_id=active.experiment_id, arm=arm)


@dataclass(slots=True)
class Holdout:
    """The per-learning holdout of one search: which of the ranked learnings to serve."""

    org_id: str
    session_id: str | None
    user_id: str | None
    rate: float
    kinds: frozenset[str]
    #: Learnings created after this time are not yet randomised (served, recorded at rate 0).
    eligible_before: float = 0.0
    decisions: list[ExposureRecord] = field(default_factory=list)

    @classmethod
    def of(cls, org_id: str, config: Config, session_id: str | None, user_id: str | None) -> Holdout:
        """The holdout a search runs under (inactive without a session to randomise)."""
        rate = config.holdout_rate if session_id else 0.0
        eligible_before = now() - config.holdout_warmup_seconds
        return cls(org_id, session_id, user_id, rate, frozenset(config.holdout_kinds), eligible_before)

    @property
    def active(self) -> bool:
        """Whether anything can be withheld (a session and a positive rate)."""
        return bool(self.session_id) and self.rate > 0 and bool(self.kinds)

    def serve(self, ranked: Sequence[tuple[Learning, float]], top_k: int) -> list[tuple[Learning, float]]:
        """The first ``top_k`` of ``ranked`` that are not withheld, recording each decision.

        Only learnings that would have been served are decided on: the ``top_k`` best, and in
        the place of each withheld one the next best (decided on in turn).
        """
        served: list[tuple[Learning, float]] = []
        for row, score in ranked:
            if len(served) >= top_k:
                break
            kind = row.kind.value
            randomised = kind in self.kinds and row.created_at <= self.eligible_before
            out = randomised and withheld(self.org_id, kind, row.wire_id, self.session_id or "", self.rate)
            if self.session_id:
                self.decisions.append(
                    ExposureRecord(
                        org_id=self.org_id,
                        session_id=self.session_id,
                        user_id=self.user_id,
                        kind=kind,
                        learning_id=row.wire_id,
                        withheld=out,
                        holdout_rate=self.rate if randomised else 0.0,
                    )
                )
            if not out:
                served.append((row, score))
        return served
