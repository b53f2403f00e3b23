"""OpenTelemetry: the spans and instruments Reflexio records, and where they are sent.

Code records through the OpenTelemetry API only (``span``, the instruments below). The API is a
no-op until :func:`configure` installs the SDK (the ``otel`` extra), so a server without it, or
with nothing configured, pays next to nothing. :func:`configure` runs once per process (the API
server, the worker process, ``reflexio worker``):

* traces go to the OTLP/HTTP endpoint of ``Settings.otel_endpoint`` (exported by a child
  process, ``reflexio.span_export``), and nowhere when it is unset (no tracer provider is
  installed, spans stay no-ops);
* metrics are always readable as Prometheus text (``/metrics``, see :func:`prometheus_text`),
  and pushed over OTLP too when the endpoint is set.

A publish's trace continues in the worker that learns from it: :func:`carrier` serialises the
current context (W3C ``traceparent``) for the job row, and :func:`continued` restores it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import metrics, propagate, trace
from opentelemetry.metrics import Observation

from reflexio.records import JobStats, ModelUsage

__all__ = [
    "JOB_FAILURES",
    "PUBLISH_MS",
    "SEARCH_MS",
    "carrier",
    "configure",
    "continued",
    "current",
    "flush",
    "observe",
    "operation",
    "prometheus_text",
    "span",
    "tracing",
]

log = logging.getLogger(__name__)

_tracer = trace.get_tracer("reflexio")
_meter = metrics.get_meter("reflexio")

PUBLISH_MS = _meter.create_histogram(
    "reflexio.publish.duration", unit="ms", description="Time to store a publish and enqueue its jobs."
)
SEARCH_MS = _meter.create_histogram(
    "reflexio.search.duration", unit="ms", description="Time to answer a search."
)
JOB_FAILURES = _meter.create_counter(
    "reflexio.jobs.failures", description="Job attempts that failed in this process (outcome: retry or dead)."
)

#: Read at collection time from storage (see ``observe``): every process sees the same truth.
_sources: dict[str, Callable[[], Sequence[Any]]] = {}
_memo: dict[str, tuple[float, Sequence[Any]]] = {}
#: Seconds a storage reading serves the instruments of one collection.
_MEMO_SECONDS = 1.0


def observe(
    *, job_stats: Callable[[], Sequence[JobStats]], llm_usage: Callable[[], Sequence[ModelUsage]]
) -> None:
    """Read the queue and the LLM spend from these (a server's storage) when metrics are collected."""
    _sources.update(job_stats=job_stats, llm_usage=llm_usage)
    _memo.clear()


def _read(name: str) -> Sequence[Any]:
    source = _sources.get(name)
    if source is None:
        return ()
    cached = _memo.get(name)
    if cached is not None and time.monotonic() - cached[0] < _MEMO_SECONDS:
        return cached[1]
    try:
        value = source()
    except Exception:  # a scrape must not fail because storage did; the gauges are just absent
        log.exception("reading %s for metrics failed", name)
        return ()
    _memo[name] = (time.monotonic(), value)
    return value


def _jobs(_: Any) -> Iterator[Observation]:
    for s in _read("job_stats"):
        yield Observation(s.count, {"org": s.org_id, "task": s.task, "status": s.status.value})


def _lateness(_: Any) -> Iterator[Observation]:
    now = time.time()
    for s in _read("job_stats"):
        if s.oldest_due is not None:
            yield Observation(max(0.0, now - s.oldest_due), {"org": s.org_id, "task": s.task})


def _tokens(_: Any) -> Iterator[Observation]:
    for u in _read("llm_usage"):
        yield Observation(u.prompt_tokens, {"org": u.org_id, "model": u.model, "type": "input"})
        yield Observation(u.completion_tokens, {"org": u.org_id, "model": u.model, "type": "output"})


def _cost(_: Any) -> Iterator[Observation]:
    for u in _read("llm_usage"):
        yield Observation(u.cost_usd, {"org": u.org_id, "model": u.model})


_meter.create_observable_gauge("reflexio.jobs", [_jobs], description="Jobs queued, running and dead.")
_meter.create_observable_gauge(
    "reflexio.jobs.oldest_due_age",
    [_lateness],
    unit="s",
    description="How long the oldest due job has waited.",
)
_meter.create_observable_counter(
    "reflexio.llm.tokens", [_tokens], description="LLM tokens used (input, output)."
)
_meter.create_observable_counter("reflexio.llm.cost", [_cost], unit="USD", description="LLM cost.")

_configured = threading.Lock()
_state: dict[str, Any] = {}


def span(name: str, **attributes: Any) -> Any:
    """A span around a block, child of the current one (a no-op until tracing is configured).

    Once :func:`configure` has installed tracing, this goes straight to the SDK's tracer with
    a small context manager (no proxy tracer, no generator-based context managers: on the
    request path that indirection was measurable). When :func:`configure` ran without
    tracing, it is a shared no-op. Before :func:`configure`, it uses whatever tracer provider
    the host application installed, through the API.
    """
    clean = {k: v for k, v in attributes.items() if v is not None}
    tracer = _state.get("tracer")
    if tracer is not None:
        return _Span(tracer, name, clean)
    if _state:
        return _NO_SPAN
    return _tracer.start_as_current_span(name, attributes=clean)


def operation(name: str, **attributes: Any) -> Any:
    """The span of one service operation (a search, a publish): for its attributes and errors.

    Inside a traced HTTP request that is the request's own server span: the operation's
    attributes (``reflexio.operation`` naming it) and an exception that escapes it are recorded
    there. A child span would repeat the server span's timing and cost as much again: every
    span costs its start and end on the request path and its export, and a second span a
    request nearly doubled what tracing cost it (``bench/otel``). Under a span the sampler
    dropped (a request not sampled), nothing: a span of its own would be dropped too, since the
    standard samplers decide a trace as a whole. Anywhere else (the SDK in process, a worker,
    the CLI) it is a span of its own, as :func:`span`.
    """
    host = trace.get_current_span()
    recording, decided = host.is_recording(), host.get_span_context()
    if recording and getattr(host, "kind", None) is trace.SpanKind.SERVER:
        return _Annotated(host, {"reflexio.operation": name} | attributes)
    if not recording and decided.is_valid and not decided.is_remote:  # ours, dropped by the sampler
        return _NO_SPAN
    return span(name, **attributes)


class _Annotated:
    """``with``: add attributes to a span already current, and record an exception that escapes.

    The span's status is its owner's to set (a server span's is its HTTP status).
    """

    __slots__ = ("_attributes", "_span")

    def __init__(self, host: trace.Span, attributes: dict[str, Any]) -> None:
        self._span, self._attributes = host, attributes

    def __enter__(self) -> trace.Span:
        self._span.set_attributes({k: v for k, v in self._attributes.items() if v is not None})
        return self._span

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, _: object) -> None:
        if error is not None:
            self._span.record_exception(error)


class _Span:
    """``with``: start a span, make it current, end it (recording an exception that escapes)."""

    __slots__ = ("_attributes", "_name", "_span", "_token", "_tracer")

    def __init__(self, tracer: trace.Tracer, name: str, attributes: dict[str, Any]) -> None:
        self._tracer, self._name, self._attributes = tracer, name, attributes

    def __enter__(self) -> trace.Span:
        self._span = self._tracer.start_span(self._name, attributes=self._attributes)
        self._token = otel_context.attach(trace.set_span_in_context(self._span))
        return self._span

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, _: object) -> None:
        otel_context.detach(self._token)
        if error is not None:  # as the SDK's start_as_current_span does
            self._span.record_exception(error)
            self._span.set_status(trace.Status(trace.StatusCode.ERROR, f"{type(error).__name__}: {error}"))
        self._span.end()


class _NoSpan:
    """The span of a process whose tracing is off: nothing to start, end or record."""

    __slots__ = ()

    def __enter__(self) -> trace.Span:
        return trace.INVALID_SPAN

    def __exit__(self, *_: object) -> None:
        return None


_NO_SPAN = _NoSpan()


def current() -> trace.Span:
    """The current span, to add attributes to (a non-recording one when nothing is traced).

    Callers check ``is_recording()`` before building attributes, so an untraced request
    builds none.
    """
    return trace.get_current_span()


def tracing() -> bool:
    """Whether spans are recorded in this process (callers may skip building costly attributes)."""
    return bool(_state.get("tracing"))


def carrier() -> dict[str, str]:
    """The current trace context as W3C headers (``traceparent``), for a job row; empty when none."""
    out: dict[str, str] = {}
    if tracing():
        propagate.inject(out)
    return out


@contextmanager
def continued(headers: Mapping[str, str] | None) -> Iterator[None]:
    """Make the trace context in ``headers`` current for the block (a job continuing a publish)."""
    if not headers:
        yield
        return
    token = otel_context.attach(propagate.extract(dict(headers)))
    try:
        yield
    finally:
        otel_context.detach(token)


def configure(
    *,
    service_name: str = "reflexio",
    otlp_endpoint: str = "",
    span_exporters: Sequence[Any] = (),
    metric_readers: Sequence[Any] = (),
) -> bool:
    """Install the OpenTelemetry SDK for this process, once; False when the SDK is missing.

    Args:
        service_name: The ``service.name`` resource attribute.
        otlp_endpoint: OTLP/HTTP base URL (``http://collector:4318``); empty sends nothing.
        span_exporters: More span exporters (tests pass the SDK's in-memory one).
        metric_readers: More metric readers (tests pass the SDK's in-memory one).
    """
    with _configured:
        if _state:
            return bool(_state.get("sdk"))
        try:
            _install(service_name, otlp_endpoint, span_exporters, metric_readers)
        except ImportError as exc:
            log.info("OpenTelemetry SDK not installed (%s): metrics and traces are off", exc.name)
            _state["sdk"] = False
            return False
        return True


def flush(timeout_seconds: float = 10.0) -> None:
    """Export now what this process's spans and metrics hold (a server or worker about to stop).

    The SDK flushes at interpreter exit, but a server uvicorn stopped on a signal never gets
    there: uvicorn ends the process by raising the signal again once it has shut down. So the
    server flushes as its lifespan ends, and a worker as it stops.
    """
    for provider in _state.get("providers", ()):
        provider.force_flush(int(timeout_seconds * 1000))


def _install(service_name: str, endpoint: str, exporters: Sequence[Any], readers: Sequence[Any]) -> None:
    from opentelemetry.sdk.metrics import AlwaysOffExemplarFilter, MeterProvider
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    resource = Resource.create({"service.name": service_name})
    all_readers = [*readers, *_prometheus_reader()]
    span_processors: list[SpanProcessor] = [SimpleSpanProcessor(e) for e in exporters]
    if endpoint:
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
        from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

        from reflexio.span_export import ChildSpanProcessor

        base = endpoint.rstrip("/")
        # exported from a child process: the OTLP encoding would hold this one's GIL
        span_processors.append(ChildSpanProcessor(f"{base}/v1/traces", resource))
        all_readers.append(PeriodicExportingMetricReader(OTLPMetricExporter(endpoint=f"{base}/v1/metrics")))
    # No exemplars: with tracing on, the SDK's default samples one per histogram bucket from
    # every traced request, which was the largest single cost tracing added to a request
    # (``bench/otel``); the Prometheus text format does not carry them anyway.
    meter_provider = MeterProvider(
        resource=resource, metric_readers=all_readers, exemplar_filter=AlwaysOffExemplarFilter()
    )
    metrics.set_meter_provider(meter_provider)
    _state["providers"] = [meter_provider]
    if span_processors:
        provider = TracerProvider(resource=resource)
        for processor in span_processors:
            provider.add_span_processor(processor)
        trace.set_tracer_provider(provider)
        _state["tracer"] = provider.get_tracer("reflexio")
        _state["providers"].append(provider)
    _state.update(sdk=True, tracing=bool(span_processors), prometheus=bool(_state.get("registry")))


def _prometheus_reader() -> list[Any]:
    try:
        from opentelemetry.exporter.prometheus import PrometheusMetricReader
        from prometheus_client import CollectorRegistry
    except ImportError:
        return []
    registry = CollectorRegistry()
    _state["registry"] = registry
    return [PrometheusMetricReader(registry=registry)]


def prometheus_text() -> bytes | None:
    """Every metric of this process in the Prometheus text format; None without the SDK."""
    registry = _state.get("registry")
    if registry is None:
        return None
    from prometheus_client import generate_latest

    text: bytes = generate_latest(registry)
    return text
