"""The offline rule extractor: learning from explicit signals with no model and no API key.

``extractor`` holds the proposer and ``judge`` the judge the pipeline calls; reading sentences lives in
``signals`` and ``facts``, comparing a proposal with what is known in ``compare``, wording in
``phrasing`` and ``text``, expert answers and tool calls in ``evidence``, word lists in
``lexicon``.
"""

from reflexio.learn.rules.extractor import RuleProposer
from reflexio.learn.rules.judge import RuleJudge

__all__ = ["RuleJudge", "RuleProposer"]
