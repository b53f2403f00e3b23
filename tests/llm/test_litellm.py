"""The LiteLLM adapter, offline: LiteLLM's own ``mock_response`` stands in for the provider.

The adapter is given a completion function that calls the real ``litellm.completion`` with the
next scripted ``mock_response`` (an answer or a LiteLLM exception), so response parsing, usage
and cost come from LiteLLM itself while the retry, repair and accounting policy is ours.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel

from reflexio.learn.usage import metered
from reflexio.llm import (
    LiteLLMModel,
    LLMCall,
    LLMOutputError,
    LLMRejectedError,
    LLMUnavailableError,
    ModelRoles,
    ModelSpec,
    RetryPolicy,
    Role,
    parse_output,
)
from reflexio.storage import Storage


class Verdict(BaseModel):
    learnable: bool
    reason: str = ""


def roles(**overrides: ModelSpec) -> ModelRoles:
    spec = ModelSpec("openai/gpt-4o-mini", api_key="sk-test", timeout_s=5.0)
    values = {"gate": spec, "extraction": spec, "evaluation": spec, "query_rewrite": spec, **overrides}
    return ModelRoles(**values)


def call(role: Role = Role.GATE, output: type[BaseModel] | None = Verdict) -> LLMCall[Any]:
    return LLMCall(
        role=role,
        prompt="gate",
        version="1.0.0",
        messages=({"role": "system", "content": "Decide."}, {"role": "user", "content": "hello there"}),
        output=output,
    )


class Provider:
    """A completion function answering with the next scripted mock response."""

    def __init__(self, litellm: Any, *answers: Any) -> None:
        self.litellm = litellm
        self.answers = list(answers)
        self.requests: list[dict[str, Any]] = []

    def __call__(self, **kwargs: Any) -> Any:
        self.requests.append(kwargs)
        return self.litellm.completion(**kwargs, mock_response=self.answers[len(self.requests) - 1])


def model(provider: Provider, *, sleeps: list[float] | None = None, **spec: ModelSpec) -> LiteLLMModel:
    record: Callable[[float], None] = sleeps.append if sleeps is not None else lambda _: None
    return LiteLLMModel(
        roles(**spec),
        retry=RetryPolicy(attempts=3, base_s=1.0, max_s=4.0),
        completion=provider,
        sleep=record,
        rng=random.Random(0),
    )


def rate_limited(litellm: Any) -> Exception:
    error: Exception = litellm.RateLimitError(message="slow down", llm_provider="openai", model="gpt-4o-mini")
    return error


def test_structured_answer_with_usage_and_cost(litellm: Any) -> None:
    provider = Provider(litellm, json.dumps({"learnable": True, "reason": "a correction"}))
    result = model(provider).complete(call())
    assert result.output == Verdict(learnable=True, reason="a correction")
    assert result.usage.model == "openai/gpt-4o-mini"
    assert result.usage.prompt_tokens > 0 and result.usage.completion_tokens > 0
    assert result.usage.cost_usd > 0 and result.usage.attempts == 1
    sent = provider.requests[0]
    assert sent["response_format"] == {"type": "json_object"} and sent["num_retries"] == 0
    assert sent["timeout"] == 5.0 and sent["api_key"] == "sk-test"
    assert "JSON Schema" in sent["messages"][0]["content"]  # the schema rides in the system message


def test_free_text_call(litellm: Any) -> None:
    result = model(Provider(litellm, "just words")).complete(call(output=None))
    assert (result.text, result.output) == ("just words", None)


def test_one_repair_after_an_invalid_answer(litellm: Any) -> None:
    provider = Provider(litellm, '{"learnable": "perhaps"}', '```json\n{"learnable": false}\n```')
    result = model(provider).complete(call())
    assert result.value == Verdict(learnable=False)
    repair = provider.requests[1]["messages"]
    assert repair[-2] == {"role": "assistant", "content": '{"learnable": "perhaps"}'}
    assert "learnable" in repair[-1]["content"]  # the validation error goes back to the model
    assert result.usage.attempts == 2 and result.usage.prompt_tokens > provider_tokens(litellm)


def provider_tokens(litellm: Any) -> int:
    return int(model(Provider(litellm, '{"learnable": true}')).complete(call()).usage.prompt_tokens)


def test_a_second_invalid_answer_raises_with_usage(litellm: Any) -> None:
    provider = Provider(litellm, "no json here", '{"reason": "still missing the flag"}')
    with pytest.raises(LLMOutputError) as info:
        model(provider).complete(call())
    assert len(provider.requests) == 2
    assert info.value.usage is not None and info.value.usage.attempts == 2


def test_rate_limits_and_timeouts_are_retried_with_backoff(litellm: Any) -> None:
    timeout = litellm.Timeout(message="too slow", model="gpt-4o-mini", llm_provider="openai")
    provider = Provider(litellm, rate_limited(litellm), timeout, '{"learnable": true}')
    sleeps: list[float] = []
    result = model(provider, sleeps=sleeps).complete(call())
    assert result.value.learnable and result.usage.attempts == 3
    assert len(sleeps) == 2 and 0.5 <= sleeps[0] < 1.5 and 1.0 <= sleeps[1] < 3.0


def test_server_errors_are_retried(litellm: Any) -> None:
    down = litellm.ServiceUnavailableError(message="down", llm_provider="openai", model="gpt-4o-mini")
    provider = Provider(litellm, down, '{"learnable": false}')
    assert model(provider).complete(call()).value.learnable is False


def test_retries_run_out(litellm: Any) -> None:
    provider = Provider(litellm, *[rate_limited(litellm)] * 3)
    with pytest.raises(LLMUnavailableError) as info:
        model(provider).complete(call())
    assert len(provider.requests) == 3 and info.value.usage is not None and info.value.usage.attempts == 3


def test_auth_errors_are_not_retried(litellm: Any) -> None:
    denied = litellm.AuthenticationError(message="bad key", llm_provider="openai", model="gpt-4o-mini")
    provider = Provider(litellm, denied, '{"learnable": true}')
    sleeps: list[float] = []
    with pytest.raises(LLMRejectedError):
        model(provider, sleeps=sleeps).complete(call())
    assert len(provider.requests) == 1 and sleeps == []


def test_bad_requests_are_not_retried(litellm: Any) -> None:
    bad = litellm.BadRequestError(message="context too long", model="gpt-4o-mini", llm_provider="openai")
    provider = Provider(litellm, bad)
    with pytest.raises(LLMRejectedError):
        model(provider).complete(call())
    assert len(provider.requests) == 1


def test_each_role_uses_its_model_and_server(litellm: Any) -> None:
    local = ModelSpec("openai/qwen2.5", api_key="none", api_base="http://127.0.0.1:8000/v1")
    provider = Provider(litellm, '{"learnable": true}', '{"learnable": true}')
    llm = model(provider, gate=local)
    llm.complete(call(Role.GATE))
    llm.complete(call(Role.EXTRACTION))
    assert provider.requests[0]["model"] == "openai/qwen2.5"
    assert provider.requests[0]["api_base"] == "http://127.0.0.1:8000/v1"
    assert provider.requests[1]["model"] == "openai/gpt-4o-mini" and "api_base" not in provider.requests[1]


def test_calls_are_accounted_per_org_and_job(litellm: Any, memory_storage: Storage) -> None:
    storage = memory_storage
    provider = Provider(litellm, '{"learnable": true}', rate_limited(litellm), *[rate_limited(litellm)] * 2)
    llm = metered(model(provider), storage, "org-a", job_id=42)
    llm.complete(call())
    with pytest.raises(LLMUnavailableError):
        llm.complete(call(Role.EXTRACTION))
    job = storage.llm_usage("org-a", job_id=42)
    assert (job.calls, job.failed) == (2, 1)
    assert job.by_role["gate"].prompt_tokens > 0 and job.by_role["gate"].cost_usd > 0
    assert job.by_role["gate"].latency_ms > 0 and job.by_role["extraction"].failed == 1
    assert storage.llm_usage("org-b").calls == 0 and storage.llm_usage("org-a", job_id=7).calls == 0


def test_parse_output_tolerates_prose_and_fences() -> None:
    assert parse_output('Sure! {"learnable": true} Hope it helps.', Verdict).learnable
    assert not parse_output('```json\n{"learnable": false}\n```', Verdict).learnable
    with pytest.raises(ValueError):
        parse_output("no object", Verdict)
