"""Spans exported over OTLP/HTTP by a child process, received by a collector in the test.

The collector decodes what arrives with the OTLP protobuf definitions, so these tests read the
spans as a real collector would: what the child rebuilt from the pipe and the SDK's exporter
encoded.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry import trace
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider

from reflexio.span_export import EXPORT_NICENESS, ChildSpanProcessor
from tests.cli.conftest import free_port

ROOT = Path(__file__).resolve().parents[2]


class Collector:
    """An OTLP/HTTP collector on loopback that keeps every span it receives, decoded."""

    def __init__(self) -> None:
        self.spans: list[dict[str, Any]] = []
        self.paths: list[str] = []
        received, paths = self.spans, self.paths

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                paths.append(self.path)
                request = ExportTraceServiceRequest()
                if self.path == "/v1/traces":
                    request.ParseFromString(body)
                for resource_spans in request.resource_spans:
                    resource = _attributes(resource_spans.resource.attributes)
                    for scope_spans in resource_spans.scope_spans:
                        for span in scope_spans.spans:
                            received.append(
                                {"span": span, "resource": resource, "scope": scope_spans.scope.name}
                            )
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def named(self, name: str) -> list[Any]:
        return [s["span"] for s in self.spans if s["span"].name == name]

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return tuple(_value(v) for v in value.array_value.values)
    return getattr(value, kind) if kind else None


def _attributes(pairs: Any) -> dict[str, Any]:
    return {pair.key: _value(pair.value) for pair in pairs}


def wait_for(condition: Callable[[], bool], seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the spans did not arrive"
        time.sleep(0.05)


@pytest.fixture
def collector() -> Iterator[Collector]:
    sink = Collector()
    yield sink
    sink.close()


def traced(processor: ChildSpanProcessor) -> trace.Tracer:
    provider = TracerProvider(resource=Resource.create({"service.name": "export-test"}))
    provider.add_span_processor(processor)
    return provider.get_tracer("export-test-scope", "1.2")


def make_spans(processor: ChildSpanProcessor, count: int) -> list[str]:
    """End ``count`` spans through ``processor``; their names, in order."""
    tracer = traced(processor)
    names = [f"span {n}" for n in range(count)]
    for name in names:
        with tracer.start_as_current_span(name):
            pass
    return names


def fork() -> int:
    """``os.fork()``, in this multi-threaded process (the collector's and the processor's threads).

    Python 3.12+ warns that a child of such a process may deadlock on a lock another thread
    held; these children only run the at-fork hook, end a span and exit, which is the case the
    processor must handle.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "This process .* is multi-threaded", DeprecationWarning)
        return os.fork()


def received(collector: Collector) -> list[str]:
    return sorted(s["span"].name for s in collector.spans)


def test_a_span_arrives_whole_through_the_child(collector: Collector) -> None:
    processor = ChildSpanProcessor(
        f"{collector.url}/v1/traces", Resource.create({"service.name": "export-test"})
    )
    tracer = traced(processor)
    remote = trace.SpanContext(
        0x4BF92F3577B34DA6A3CE929D0E0E4736,
        0x00F067AA0BA902B7,
        is_remote=True,
        trace_flags=trace.TraceFlags(1),
        trace_state=trace.TraceState([("vendor", "value")]),
    )
    attributes: dict[str, Any] = {
        "text": "é ünïcode",
        "count": 3,
        "ratio": 0.25,
        "flag": False,
        "tags": ("a", "b"),
    }
    with tracer.start_as_current_span(
        "outer", context=trace.set_span_in_context(trace.NonRecordingSpan(remote)), kind=trace.SpanKind.SERVER
    ) as outer:
        outer.set_attributes(attributes)
        outer.add_link(remote, {"why": "caused by"})
        with tracer.start_as_current_span("inner"):
            pass
        outer.record_exception(ValueError("bad input"))
        outer.set_status(trace.StatusCode.ERROR, "it failed")
    assert processor.force_flush()

    (got,) = collector.named("outer")
    (inner,) = collector.named("inner")
    assert got.trace_id.hex() == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert got.parent_span_id.hex() == "00f067aa0ba902b7" and got.trace_state == "vendor=value"
    assert inner.parent_span_id == got.span_id and inner.trace_id == got.trace_id
    assert _attributes(got.attributes) == attributes
    assert got.kind == got.SPAN_KIND_SERVER and got.end_time_unix_nano > got.start_time_unix_nano > 0
    assert [e.name for e in got.events] == ["exception"]
    assert _attributes(got.events[0].attributes)["exception.message"] == "bad input"
    assert [link.span_id.hex() for link in got.links] == ["00f067aa0ba902b7"]
    assert _attributes(got.links[0].attributes) == {"why": "caused by"}
    assert got.status.code == got.status.STATUS_CODE_ERROR and got.status.message == "it failed"
    (first, *_) = collector.spans
    assert first["resource"]["service.name"] == "export-test" and first["scope"] == "export-test-scope"
    processor.shutdown()


def test_shutdown_exports_what_is_pending_and_the_child_exits(collector: Collector) -> None:
    processor = ChildSpanProcessor(f"{collector.url}/v1/traces", Resource.create({}), delay=60)
    names = make_spans(processor, 50)
    assert collector.spans == []  # nothing shipped yet: below the batch, within the delay
    processor.shutdown()
    assert received(collector) == sorted(names)
    assert processor._child.poll() == 0


def test_past_its_queue_the_oldest_pending_spans_are_dropped(collector: Collector) -> None:
    processor = ChildSpanProcessor(f"{collector.url}/v1/traces", Resource.create({}), delay=60, queue=5)
    names = make_spans(processor, 10)
    processor.shutdown()
    assert received(collector) == names[5:]


def test_a_full_batch_is_shipped_before_the_delay(collector: Collector) -> None:
    processor = ChildSpanProcessor(f"{collector.url}/v1/traces", Resource.create({}), batch=10, delay=60)
    names = make_spans(processor, 10)
    wait_for(lambda: received(collector) == sorted(names))  # the SDK's exporter in the child: its delay
    processor.shutdown()


def test_unsampled_spans_are_not_shipped(collector: Collector) -> None:
    from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

    processor = ChildSpanProcessor(f"{collector.url}/v1/traces", Resource.create({}))
    provider = TracerProvider(sampler=ALWAYS_OFF)
    provider.add_span_processor(processor)
    with provider.get_tracer("t").start_as_current_span("dropped"):
        pass
    assert processor.force_flush() and collector.spans == []
    processor.shutdown()


def test_the_child_exports_at_a_lower_cpu_priority(collector: Collector) -> None:
    processor = ChildSpanProcessor(f"{collector.url}/v1/traces", Resource.create({}))
    assert processor.force_flush()  # answered: the child is past its start, reading the pipe
    ours = os.getpriority(os.PRIO_PROCESS, 0)
    assert os.getpriority(os.PRIO_PROCESS, processor._child.pid) == min(19, ours + EXPORT_NICENESS)
    processor.shutdown()


def test_a_forked_process_ships_its_spans_through_a_child_of_its_own(collector: Collector) -> None:
    processor = ChildSpanProcessor(f"{collector.url}/v1/traces", Resource.create({}), delay=60)
    tracer = traced(processor)
    with tracer.start_as_current_span("before the fork"):  # pending in the parent as it forks
        pass
    pid = fork()
    if pid == 0:  # the forked process: its own span, shipped by its own child, then leave
        code = 1
        try:
            with tracer.start_as_current_span("in the fork"):
                pass
            processor.shutdown()
            code = 0 if processor._child.returncode == 0 else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    processor.shutdown()  # the parent's pending span, once, by the parent's child
    assert received(collector) == ["before the fork", "in the fork"]
    assert processor._child.returncode == 0


def test_a_fork_mid_write_does_not_send_the_parents_frame_twice(collector: Collector) -> None:
    import marshal

    from reflexio.span_export import _SPANS

    processor = ChildSpanProcessor(f"{collector.url}/v1/traces", Resource.create({}), delay=60)
    make_spans(processor, 1)
    stdin = processor._child.stdin
    assert stdin is not None
    with processor._pipe:  # as the shipping thread does, stopped between its write and its flush
        payload = marshal.dumps([processor._pending.popleft()])
        stdin.write(_SPANS + len(payload).to_bytes(4, "big") + payload)
        pid = fork()
        if pid == 0:  # the at-fork hook has run; leave without anything else
            os._exit(0)
        os.waitpid(pid, 0)
        stdin.flush()
    processor.shutdown()
    assert received(collector) == ["span 0"]


def test_when_the_child_is_gone_spans_are_dropped_with_one_warning(
    collector: Collector, caplog: pytest.LogCaptureFixture
) -> None:
    processor = ChildSpanProcessor(f"{collector.url}/v1/traces", Resource.create({}))
    tracer = traced(processor)
    processor._child.kill()
    processor._child.wait()
    with caplog.at_level(logging.WARNING, logger="reflexio.span_export"):
        for n in range(3):
            with tracer.start_as_current_span(f"lost {n}"):  # never raises into the traced code
                pass
            assert not processor.force_flush()
    assert [r.message for r in caplog.records] == [
        f"the span export process exited (code {-9}): spans are dropped"
    ]
    processor.shutdown()
    assert collector.spans == []


def _children_exporting_to(url: str) -> list[int]:
    """Processes whose command line names ``url``: the span export children still running."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                command = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if b"reflexio.span_export" in command and url.encode() in command:
                found.append(int(entry.name))
    return found


@pytest.mark.slow
def test_a_server_exports_its_request_spans_through_the_child(collector: Collector, tmp_path: Path) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REFLEXIO_", "OTEL_"))}
    env |= {
        "REFLEXIO_HOME": str(tmp_path),
        "REFLEXIO_STORAGE_URL": f"sqlite:///{tmp_path}/reflexio.db",
        "REFLEXIO_PORT": str(port),
        "REFLEXIO_WORKERS": "0",
        "REFLEXIO_EMBEDDER": "wordllama",
        "REFLEXIO_LOG_LEVEL": "WARNING",
        "REFLEXIO_OTEL_ENDPOINT": collector.url,
    }
    url = f"http://127.0.0.1:{port}"
    server = subprocess.Popen([sys.executable, "-m", "reflexio.api.server"], env=env, cwd=ROOT)
    try:
        wait_for(lambda: _ready(url), seconds=120)
        trace_id = "0af7651916cd43dd8448eb211c80319c"
        answer = httpx.post(
            f"{url}/api/search",
            json={"query": "which invoice number is it"},
            headers={"traceparent": f"00-{trace_id}-b7ad6b7169203331-01"},
        )
        assert answer.status_code == 200, answer.text
        assert _children_exporting_to(collector.url)
    finally:
        server.terminate()  # at once: the span is still pending in the server (shipped each second)
        server.wait(timeout=60)
    # uvicorn ends a process stopped by a signal by raising it again, past exit handlers: the
    # server flushed as it stopped, or this span would be lost
    (search,) = collector.named("POST /api/search")
    assert search.trace_id.hex() == trace_id and search.parent_span_id.hex() == "b7ad6b7169203331"
    assert _attributes(search.attributes)["reflexio.operation"] == "reflexio.search"
    assert "/v1/metrics" in collector.paths  # the metrics pushed as it stopped, too
    wait_for(lambda: not _children_exporting_to(collector.url), seconds=30)  # no orphan left behind


def _ready(url: str) -> bool:
    try:
        return httpx.get(f"{url}/health/ready", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False
