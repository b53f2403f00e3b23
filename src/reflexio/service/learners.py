"""Which proposer and judge an org learns with, and which LLM it calls.

Extraction (``service.workers``), reruns (``service.rerun``) and query rewriting in search all
ask the same question — does this org have an LLM? — and get the same answer here: the LLM
injected into the core (a ``ScriptedLLM``), else the org's configured provider, else none (the
offline rule extractor learns instead).
"""

from __future__ import annotations

from dataclasses import dataclass

from reflexio.learn.llm_extract import llm_learner
from reflexio.learn.pipeline import Judge, Proposer
from reflexio.learn.rules import RuleJudge, RuleProposer
from reflexio.learn.usage import metered
from reflexio.llm import LLM, open_llm
from reflexio.models.org_config import Config
from reflexio.service.core import Core

__all__ = ["Learner", "learner_for", "org_llm"]


@dataclass(frozen=True, slots=True)
class Learner:
    """The proposer and judge an org learns with; ``llm`` is None for the rule extractor."""

    name: str
    proposer: Proposer
    judge: Judge
    llm: LLM | None = None


def org_llm(core: Core, config: Config) -> LLM | None:
    """The org's LLM: one injected into the core (e.g. a ScriptedLLM), else its configured provider."""
    if core.llm is not None:
        return core.llm
    return open_llm(config, core.settings)


def learner_for(core: Core, config: Config, org_id: str, job_id: int | None = None) -> Learner:
    """LLM extraction when a provider is configured for the org, the rule extractor otherwise."""
    llm = org_llm(core, config)
    if llm is None:
        return Learner("rules", RuleProposer(), RuleJudge())
    accounted = metered(llm, core.storage, org_id, job_id)
    proposer, judge = llm_learner(accounted)
    return Learner("llm", proposer, judge, accounted)
