"""The LLM seam: one narrow method, structured output, retries, and accounting.

Why it is shaped this way:

* **One method.** ``LLM.complete(call) -> result`` is all the learning code sees, so the
  LiteLLM adapter, the scripted model of ``reflexio.testing`` and anything else are
  interchangeable, and tests go through the same seam as production.
* **A call says what it wants, not which model.** An ``LLMCall`` names its *role* (gate,
  extraction, evaluation, query rewrite), its prompt and version, and the pydantic model its
  answer must fit. The adapter maps roles to models from the org's config (``resolve_llm``).
* **Output is validated, once repaired, then refused.** Free text is parsed as JSON and
  validated; on failure the validation error is sent back once; a second failure raises
  ``LLMOutputError`` rather than turning into "no result" (the original's W29).
* **Transient failures are retried, permanent ones are not.** Rate limits, timeouts, 5xx and
  connection errors back off exponentially with jitter; auth and bad-request errors raise at once.
* **Every call is accounted.** ``Metered`` reports tokens, cost and latency of each call,
  succeeded or failed, to a ``UsageLedger`` (``reflexio.learn.usage`` stores them per org and job).

LiteLLM is imported lazily: it takes seconds to import and is an optional dependency.
"""

from reflexio.llm.adapter import LiteLLMModel, RetryPolicy, open_llm
from reflexio.llm.calls import (
    LLM,
    LLMCall,
    LLMError,
    LLMOutputError,
    LLMRejectedError,
    LLMResult,
    LLMUnavailableError,
    Message,
    Metered,
    Role,
    Usage,
    UsageLedger,
    parse_output,
)
from reflexio.llm.routing import ModelRoles, ModelSpec, resolve_llm

__all__ = [
    "LLM",
    "LLMCall",
    "LLMError",
    "LLMOutputError",
    "LLMRejectedError",
    "LLMResult",
    "LLMUnavailableError",
    "LiteLLMModel",
    "Message",
    "Metered",
    "ModelRoles",
    "ModelSpec",
    "RetryPolicy",
    "Role",
    "Usage",
    "UsageLedger",
    "open_llm",
    "parse_output",
    "resolve_llm",
]
