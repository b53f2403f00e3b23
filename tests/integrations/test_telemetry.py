"""OpenTelemetry: spans and metrics of a live server, read with the SDK's in-memory exporters.

The SDK is installed once per process (``telemetry.configure``), so this module configures it
with in-memory exporters before it starts its own server.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from reflexio import telemetry
from reflexio.api.server import in_background
from reflexio.service import keys
from reflexio.service.core import open_core
from reflexio.testing import ScriptedLLM
from tests.integrations.conftest import Live, live_settings

EXTRACTED = {
    "profiles": [
        {"content": "The user only uses Linux.", "type": "preference", "ttl": "one_year", "evidence": [3]}
    ],
    "playbooks": [],
}
SPANS = InMemorySpanExporter()
METRICS = InMemoryMetricReader()


@pytest.fixture(scope="module")
def traced(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    assert telemetry.configure(span_exporters=[SPANS], metric_readers=[METRICS]), "the otel extra is missing"
    if not telemetry.tracing():
        pytest.skip("another test configured telemetry in this process first, without in-memory exporters")
    home = tmp_path_factory.mktemp("traced")
    # Worker threads, which get a job's trace context from its row only; a scripted LLM.
    core = open_core(live_settings(home, REFLEXIO_WORKERS="1"))
    core.llm = ScriptedLLM().on("extract", EXTRACTED)
    telemetry.observe(job_stats=core.storage.job_stats, llm_usage=core.storage.llm_usage_by_org)
    with in_background(core) as url:
        yield Live(url=url, core=core, home=home)


def spans(name: str) -> list[Any]:
    return [s for s in SPANS.get_finished_spans() if s.name == name]


def metric_points(name: str) -> list[Any]:
    data = METRICS.get_metrics_data()
    assert data is not None
    return [
        point
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
        if metric.name == name
        for point in metric.data.data_points
    ]


def searched(traced: Live, method: str) -> None:
    """Search (with the client's ``method``) for a playbook, with only that search's spans kept."""
    with traced.client() as api:
        api.add_agent_playbooks([{"agent_version": "otel", "content": "Quote the invoice number in replies"}])
        SPANS.clear()
        getattr(api, method)(query="which invoice number is it", agent_version="otel")


def test_a_search_is_traced_with_its_arms(traced: Live) -> None:
    searched(traced, "search")
    (http,) = spans("POST /api/search")  # FastAPI's own server span
    # one span per request: the search's attributes and its arms are the server span's, not
    # spans of their own (every span costs the request path and the exporting thread: bench/otel)
    in_trace = [s.name for s in SPANS.get_finished_spans() if s.context.trace_id == http.context.trace_id]
    assert in_trace == ["POST /api/search"]
    arms: dict[str, Any] = dict(http.attributes or {})
    assert arms["reflexio.operation"] == "reflexio.search" and arms["reflexio.org"] == "self-host-org"
    assert arms["reflexio.search.fts_hits"] >= 1 and arms["reflexio.search.vector_hits"] >= 1
    assert arms["reflexio.search.mode"] == "hybrid" and arms["reflexio.search.degraded"] is False
    assert arms["reflexio.embedder"] == traced.core.embedder.name
    assert arms["reflexio.search.embed_ms"] > 0 and arms["reflexio.search.candidates_ms"] > 0
    assert [p.count for p in metric_points("reflexio.search.duration")] and all(
        p.attributes["org"] == "self-host-org" for p in metric_points("reflexio.search.duration")
    )


def test_a_one_kind_search_is_traced_with_its_arms(traced: Live) -> None:
    searched(traced, "search_agent_playbooks")
    (http,) = spans("POST /api/search_agent_playbooks")
    assert (http.attributes or {})["reflexio.search.fts_hits"] >= 1


def test_a_search_outside_a_request_has_a_span_of_its_own(traced: Live) -> None:
    from reflexio.models import UnifiedSearchRequest
    from reflexio.service import search

    SPANS.clear()
    search.search(traced.core, "self-host-org", UnifiedSearchRequest(query="which invoice number is it"))
    (own,) = spans("reflexio.search")
    assert own.parent is None and (own.attributes or {})["reflexio.search.mode"] == "hybrid"
    assert "reflexio.operation" not in (own.attributes or {})  # its name says it


def test_under_a_span_the_sampler_dropped_an_operation_starts_none(traced: Live) -> None:
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

    dropped = TracerProvider(sampler=ALWAYS_OFF).get_tracer("a server that samples nothing")
    with dropped.start_as_current_span("POST /api/search"), telemetry.operation("reflexio.search") as span:
        assert span is trace.INVALID_SPAN  # not a span started only to be dropped by the same rule
    remote = trace.SpanContext(0x4BF92F3577B34DA6A3CE929D0E0E4736, 0x00F067AA0BA902B7, is_remote=True)
    with trace.use_span(trace.NonRecordingSpan(remote)), telemetry.operation("reflexio.search") as span:
        assert span is not trace.INVALID_SPAN  # a caller's decision: this process's sampler decides


def test_an_error_in_an_operation_is_recorded_on_the_request_span(traced: Live) -> None:
    def publish(content: str) -> httpx.Response:
        body = {"user_id": "otel-user", "session_id": "s", "request_id": "otel-conflict"}
        return httpx.post(
            f"{traced.url}/api/publish_interaction",
            json=body | {"interaction_data_list": [{"content": content}]},
        )

    assert publish("hello there").status_code == 200
    SPANS.clear()
    assert publish("another payload under the same request id").status_code == 409
    (http,) = spans("POST /api/publish_interaction")
    assert [event.name for event in http.events] == ["exception"]
    assert (http.attributes or {})["http.response.status_code"] == 409
    assert http.status.status_code.name == "UNSET"  # a 4xx is the caller's error, not the server's


def test_a_publish_continues_the_callers_trace(traced: Live) -> None:
    trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"
    SPANS.clear()
    response = httpx.post(
        f"{traced.url}/api/publish_interaction",
        json={
            "user_id": "otel-user",
            "session_id": "s",
            "interaction_data_list": [{"content": "hello there"}],
        },
        headers={"traceparent": f"00-{trace_id}-00f067aa0ba902b7-01"},
    )
    assert response.status_code == 200, response.text
    (publish,) = spans("POST /api/publish_interaction")
    assert format(publish.context.trace_id, "032x") == trace_id
    assert publish.attributes["reflexio.operation"] == "reflexio.publish"
    assert publish.attributes["reflexio.turns"] == 1
    assert metric_points("reflexio.publish.duration")


def test_metrics_are_served_to_prometheus_behind_the_api_key(traced: Live, tmp_path: Path) -> None:
    with traced.client() as api:  # this test's own search: it may run alone, on any xdist worker
        api.search(query="anything at all", agent_version="otel")
    text = httpx.get(f"{traced.url}/metrics").text
    assert "reflexio_search_duration_milliseconds_bucket" in text or "reflexio_search_duration" in text
    record, plain = keys.create_key(traced.core, "otel-org")
    try:
        assert httpx.get(f"{traced.url}/metrics").status_code == 401
        scraped = httpx.get(f"{traced.url}/metrics", headers={"Authorization": f"Bearer {plain}"})
        assert scraped.status_code == 200 and scraped.headers["content-type"].startswith("text/plain")
        assert "reflexio_search_duration" in scraped.text
    finally:
        keys.revoke_key(traced.core, record.id, "otel-org")


def test_a_publish_trace_continues_in_the_job_that_learns_from_it(traced: Live) -> None:
    trace_id = "0af7651916cd43dd8448eb211c80319c"
    SPANS.clear()
    response = httpx.post(
        f"{traced.url}/api/publish_interaction",
        params={"wait_for_response": "true"},
        json={
            "user_id": "otel-learner",
            "session_id": "s1",
            "interaction_data_list": [
                {"role": "User", "content": "Recommend a laptop for me."},
                {"role": "Assistant", "content": "The MacBook Air is a great choice."},
                {"role": "User", "content": "I only ever use Linux. Please don't suggest Macs."},
            ],
        },
        headers={"traceparent": f"00-{trace_id}-b7ad6b7169203331-01"},
        timeout=60,
    )
    assert response.status_code == 200, response.text
    ours = [s for s in spans("reflexio.job extract") if format(s.context.trace_id, "032x") == trace_id]
    assert ours, "the job did not continue the publish's trace (it is carried on the job row)"
    job = ours[0]
    (publish,) = [
        s for s in spans("POST /api/publish_interaction") if s.context.trace_id == job.context.trace_id
    ]
    assert job.parent.span_id == publish.context.span_id
    in_job = [s for s in SPANS.get_finished_spans() if s.context.trace_id == job.context.trace_id]
    (llm,) = [s for s in in_job if s.name == "reflexio.llm extraction"]
    llm_attributes: dict[str, Any] = dict(llm.attributes or {})
    assert llm_attributes["reflexio.prompt"] == "extract" and "gen_ai.usage.input_tokens" in llm_attributes
    saves = [s for s in in_job if s.name == "reflexio.learnings.save"]
    assert saves
    save_attributes: dict[str, Any] = dict(saves[0].attributes or {})
    assert save_attributes["reflexio.learnings.added"] >= 1
    saved_at, answered_at = saves[0].start_time, llm.end_time
    assert saved_at is not None and answered_at is not None
    assert saved_at >= answered_at  # publish -> job -> LLM call -> learning saved


def test_metrics_read_the_queue_and_the_llm_spend_from_storage(traced: Live) -> None:
    from reflexio.records import Job, LLMUsageRecord

    traced.core.storage.enqueue_jobs([Job(org_id="metrics-org", task="later", key="k", run_at=1.0)])
    traced.core.storage.add_llm_usage(
        [LLMUsageRecord(org_id="metrics-org", role="extraction", model="m1", prompt="p", prompt_tokens=7)]
    )
    time.sleep(1.1)  # past the readings' memo
    lines = httpx.get(f"{traced.url}/metrics").text.splitlines()

    def value(metric: str, *labels: str) -> float:
        (line,) = [x for x in lines if x.startswith(metric + "{") and all(label in x for label in labels)]
        return float(line.rsplit(" ", 1)[1])

    assert value("reflexio_jobs", 'org="metrics-org"', 'status="queued"', 'task="later"') == 1.0
    assert value("reflexio_jobs_oldest_due_age_seconds", 'org="metrics-org"', 'task="later"') > 1e9
    assert value("reflexio_llm_tokens_total", 'org="metrics-org"', 'model="m1"', 'type="input"') == 7.0


def test_a_span_records_the_error_that_escapes_it_and_nests_its_children(traced: Live) -> None:
    attributes = {"reflexio.org": "o1", "reflexio.none": None}
    with (
        pytest.raises(ValueError, match="bad input"),
        telemetry.span("reflexio.test.outer", **attributes) as outer,
    ):
        assert outer.is_recording()
        with telemetry.span("reflexio.test.inner"):
            pass
        raise ValueError("bad input")
    (failed,) = spans("reflexio.test.outer")
    (inner,) = spans("reflexio.test.inner")
    assert inner.parent is not None and inner.parent.span_id == failed.context.span_id
    assert failed.status.status_code.name == "ERROR" and failed.status.description == "ValueError: bad input"
    assert [event.name for event in failed.events] == ["exception"]
    assert dict(failed.attributes or {}) == {"reflexio.org": "o1"}  # None attributes are left out


def test_traced_requests_leave_no_exemplars_on_the_latency_histograms(traced: Live) -> None:
    searched(traced, "search")
    points = metric_points("reflexio.search.duration")
    assert points and sum(p.count for p in points) >= 1
    assert all(not p.exemplars for p in points)  # the SDK's default would keep one per bucket
