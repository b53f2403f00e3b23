"""LLM accounting into storage: the ``UsageLedger`` that production wires around its model.

``reflexio.llm.Metered`` reports each call; this ledger turns the report into an
``LLMUsageRecord`` of the org (and of the job, when the call runs in one), written at once and
outside the job's effects transaction, so a call is accounted even when the job later fails.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from reflexio.llm import LLM, LLMCall, Metered, Usage
from reflexio.records import LLMUsageRecord
from reflexio.storage import Storage

__all__ = ["StorageLedger", "metered"]


@dataclass(frozen=True, slots=True)
class StorageLedger:
    """Writes one usage row per LLM call for an org (and optionally a job)."""

    storage: Storage
    org_id: str
    job_id: int | None = None

    def record(self, call: LLMCall[Any], usage: Usage, error: str | None) -> None:
        """Store the call's tokens, cost, latency and outcome (``/metrics`` reads them back per org)."""
        self.storage.add_llm_usage(
            [
                LLMUsageRecord(
                    org_id=self.org_id,
                    job_id=self.job_id,
                    role=call.role.value,
                    model=usage.model,
                    prompt=call.prompt,
                    prompt_version=call.version,
                    prompt_tokens=usage.prompt_tokens,
                    completion_tokens=usage.completion_tokens,
                    cost_usd=usage.cost_usd,
                    latency_ms=usage.latency_ms,
                    ok=error is None,
                    error=error,
                )
            ]
        )


def metered(llm: LLM, storage: Storage, org_id: str, job_id: int | None = None) -> Metered:
    """``llm`` with every call accounted to ``org_id`` (and ``job_id``) in ``storage``."""
    return Metered(llm, StorageLedger(storage, org_id, job_id))
