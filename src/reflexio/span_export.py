"""Span export in a child process: OTLP encoding off the GIL that requests need.

The SDK's ``BatchSpanProcessor`` encodes finished spans to protobuf on a thread of the process
that made them. In Python that encoding costs more than everything else tracing adds to a
request (creating the span, its context, its attributes), and while it runs it holds the GIL
that the requests being served need (``bench/otel``). So a process that exports traces here
keeps only the cheap half:

* :class:`ChildSpanProcessor` (a span processor) flattens each finished, sampled span into
  plain tuples and dicts, and a thread of its own ships them in batches down a pipe, in
  ``marshal`` format (the child runs the same interpreter);
* the child, ``python -m reflexio.span_export``, rebuilds them as the SDK's ``ReadableSpan``
  and hands them to the SDK's own ``BatchSpanProcessor`` and ``OTLPSpanExporter``: batching,
  retries, and every ``OTEL_EXPORTER_OTLP_*`` setting (headers, timeout, compression) are the
  SDK's, read from the environment the child inherits.

The child runs at a lower CPU priority (``EXPORT_NICENESS``, as the job workers' process): its
encoding is work that can wait, and on a busy machine the kernel then gives the cores to the
requests first. Its queue is bounded, so a child starved for long drops spans, as the SDK does.

No library moves spans between processes (the usual answer is a collector, which still needs
the spans encoded first), so this module is that move and nothing else. The child exits, after
exporting what it holds, when its pipe closes: when the processor shuts down, or when the
process that started it dies. Spans that cannot be shipped (the child is gone) are dropped with
one warning, as the SDK drops spans when its queue is full: tracing never fails a request.
"""

from __future__ import annotations

import contextlib
import logging
import marshal
import os
import select
import signal
import subprocess
import sys
import threading
import time
import weakref
from collections import deque
from collections.abc import Iterator, Sequence
from typing import IO, Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan, SpanProcessor
from opentelemetry.sdk.util.instrumentation import InstrumentationScope

__all__ = ["EXPORT_NICENESS", "ChildSpanProcessor"]

log = logging.getLogger(__name__)

#: Frame kinds on the pipe: a frame is its kind, a 4-byte big-endian length and the payload.
_RESOURCE, _SPANS, _FLUSH = b"R", b"S", b"F"
#: What the child writes back once a flush it was asked for is done.
_FLUSHED = b"\x01"

#: How much lower the exporting child's CPU priority is than its parent's (POSIX ``nice``).
EXPORT_NICENESS = 10

#: A span as plain data (see ``_flatten``): what crosses the pipe.
Flat = tuple[Any, ...]


class ChildSpanProcessor(SpanProcessor):
    """Ships finished spans to a child process that exports them over OTLP/HTTP.

    A process forked from this one (a pre-forking server that imported its app first) starts
    an exporting child of its own for its spans, as the SDK's processors restart their threads.

    Args:
        endpoint: The OTLP/HTTP traces URL (``http://collector:4318/v1/traces``).
        resource: The resource every span of this process carries.
        batch: Spans pending that wake the shipping thread before its delay is up.
        delay: Seconds between shipments when fewer than ``batch`` spans are pending.
        queue: Spans kept pending at most (the oldest are dropped past it, as when the pipe
            is slower than the spans come).
    """

    def __init__(
        self, endpoint: str, resource: Resource, *, batch: int = 512, delay: float = 1.0, queue: int = 8192
    ) -> None:
        self._endpoint, self._resource = endpoint, resource
        self._pending: deque[Flat] = deque(maxlen=queue)
        self._batch, self._delay = batch, delay
        self._closed = False
        self._start()
        if hasattr(os, "register_at_fork"):  # weakly, as the SDK's processors: not kept alive by it
            reinit = weakref.WeakMethod(self._after_fork)
            os.register_at_fork(after_in_child=lambda: _call(reinit))

    def _start(self) -> None:
        """Start the exporting child, tell it the resource, and start the shipping thread."""
        self._child = subprocess.Popen(
            [sys.executable, "-m", "reflexio.span_export", self._endpoint],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            close_fds=True,
        )
        self._wake = threading.Event()
        self._pipe = threading.Lock()  # one writer at a time: the thread, a flush, the shutdown
        self._broken = False
        self._flushes = 0  # flushes asked of the child, and answered: a late answer is not lost
        self._flushed = 0
        resource = self._resource
        self._send(_RESOURCE, marshal.dumps((dict(resource.attributes), resource.schema_url)))
        self._thread = threading.Thread(target=self._run, name="reflexio-span-export", daemon=True)
        self._thread.start()

    def _after_fork(self) -> None:
        """In a forked process: an exporting child and a thread of its own.

        The parent's pipe is the parent's (two writers would interleave their frames, and the
        parent's child would not see its pipe close while this process holds it open), its
        pending spans are the parent's to ship, and its thread did not survive the fork.
        """
        if self._closed:
            return
        self._pending.clear()
        # Closing the inherited pipe ends would flush into the parent's pipe what its buffer held
        # at the fork (a frame another thread was writing): they are pointed at /dev/null first.
        null = os.open(os.devnull, os.O_RDWR)
        for stream in (self._child.stdin, self._child.stdout):
            if stream is not None:
                os.dup2(null, stream.fileno())
                stream.close()
        os.close(null)
        self._start()

    def on_start(self, span: Any, parent_context: Context | None = None) -> None:
        return None

    def on_end(self, span: ReadableSpan) -> None:
        if self._closed or self._broken or span.context is None or not span.context.trace_flags.sampled:
            return
        self._pending.append(_flatten(span))  # deque.append is atomic: no lock on the request path
        if len(self._pending) >= self._batch:
            self._wake.set()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Ship what is pending and wait until the child has exported it (False on timeout)."""
        with self._pipe:
            self._ship()
            if not self._send(_FLUSH, b""):
                return False
            self._flushes += 1
            stdout = self._child.stdout
            assert stdout is not None
            deadline = time.monotonic() + timeout_millis / 1000
            while self._flushed < self._flushes:
                ready, _, _ = select.select([stdout], [], [], max(0.0, deadline - time.monotonic()))
                answer = os.read(stdout.fileno(), 64) if ready else b""
                if not answer:  # timed out, or the child is gone
                    return False
                self._flushed += answer.count(_FLUSHED)
            return True

    def shutdown(self) -> None:
        """Ship what is pending, close the pipe and wait for the child to export it."""
        if self._closed:
            return
        self._closed = True
        self._wake.set()
        self._thread.join(timeout=5)
        with self._pipe:
            self._ship()
            stdin = self._child.stdin
            assert stdin is not None
            with contextlib.suppress(OSError):  # a broken pipe: the child is already gone
                stdin.close()
        try:
            self._child.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._child.kill()
        if self._child.stdout is not None:  # where flushes were answered
            self._child.stdout.close()

    def _run(self) -> None:
        while not self._closed:
            self._wake.wait(self._delay)
            self._wake.clear()
            with self._pipe:
                try:
                    self._ship()
                except Exception:  # a batch that cannot be written is dropped; the thread goes on
                    log.exception("shipping spans to the export process failed")

    def _ship(self) -> None:
        """Send the pending spans (the caller holds ``_pipe``)."""
        pending = self._pending
        if not pending:
            return
        spans = [pending.popleft() for _ in range(len(pending))]  # what on_end adds meanwhile waits
        self._send(_SPANS, marshal.dumps(spans))

    def _send(self, kind: bytes, payload: bytes) -> bool:
        stdin = self._child.stdin
        if self._broken or stdin is None:
            return False
        try:
            stdin.write(kind + len(payload).to_bytes(4, "big") + payload)
            stdin.flush()
        except (OSError, ValueError):  # the child is gone (or the pipe closed): spans are dropped
            self._broken = True
            log.warning("the span export process exited (code %s): spans are dropped", self._child.poll())
            return False
        return True


def _call(method: weakref.WeakMethod[Any]) -> None:
    """Call a weakly held method, unless its object is gone."""
    bound = method()
    if bound is not None:
        bound()


def _flatten(span: ReadableSpan) -> Flat:
    """A finished span as tuples, dicts and scalars (what ``marshal`` writes)."""
    context, parent, status, scope = span.context, span.parent, span.status, span.instrumentation_scope
    assert context is not None
    return (
        span.name,
        _context(context),
        _context(parent) if parent is not None else None,
        span.kind.value,
        span.start_time,
        span.end_time,
        dict(span.attributes or {}),
        tuple((e.name, e.timestamp, dict(e.attributes or {})) for e in span.events),
        tuple((_context(link.context), dict(link.attributes or {})) for link in span.links),
        (status.status_code.value, status.description),
        (scope.name, scope.version, scope.schema_url) if scope is not None else None,
    )


def _context(c: trace.SpanContext) -> tuple[int, int, bool, int, str]:
    return (c.trace_id, c.span_id, c.is_remote, int(c.trace_flags), c.trace_state.to_header())


def _span_context(flat: Sequence[Any]) -> trace.SpanContext:
    trace_id, span_id, is_remote, flags, state = flat
    return trace.SpanContext(
        trace_id,
        span_id,
        is_remote,
        trace.TraceFlags(flags),
        trace.TraceState.from_header([state]) if state else None,
    )


def _readable(flat: Flat, resource: Resource) -> ReadableSpan:
    """The span ``_flatten`` made ``flat`` from, as the SDK's exporters read it."""
    name, context, parent, kind, start, end, attributes, events, links, status, scope = flat
    return ReadableSpan(
        name=name,
        context=_span_context(context),
        parent=_span_context(parent) if parent is not None else None,
        resource=resource,
        attributes=attributes,
        events=[Event(n, a, timestamp=t) for n, t, a in events],
        links=[trace.Link(_span_context(c), a) for c, a in links],
        kind=trace.SpanKind(kind),
        status=trace.Status(trace.StatusCode(status[0]), status[1]),
        start_time=start,
        end_time=end,
        instrumentation_scope=InstrumentationScope(*scope) if scope is not None else None,
    )


def _frames(stream: IO[bytes]) -> Iterator[tuple[bytes, bytes]]:
    """The frames on ``stream`` as (kind, payload), until it closes."""
    while True:
        head = stream.read(5)
        if len(head) < 5:
            return
        size = int.from_bytes(head[1:], "big")
        yield head[:1], stream.read(size)


def _child(endpoint: str, stdin: IO[bytes], stdout: IO[bytes]) -> None:
    """Export the spans on ``stdin`` to ``endpoint`` until it closes, then what is left."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    processor = BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint))
    resource = Resource.create({})
    try:
        for kind, payload in _frames(stdin):
            if kind == _RESOURCE:
                attributes, schema_url = marshal.loads(payload)
                resource = Resource(attributes, schema_url)
            elif kind == _SPANS:
                for flat in marshal.loads(payload):
                    processor.on_end(_readable(flat, resource))
            elif kind == _FLUSH:
                processor.force_flush()
                stdout.write(_FLUSHED)
                stdout.flush()
    finally:
        processor.shutdown()  # type: ignore[no-untyped-call]  # the SDK's is unannotated


if __name__ == "__main__":
    # Ctrl-C in a terminal, or a service manager stopping the server's process group, reaches
    # this process too: it leaves when its parent closes the pipe (or dies), after exporting
    # what the parent shipped last, which the parent flushes as it stops.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if hasattr(os, "nice"):  # POSIX only; elsewhere the child keeps its parent's priority
        os.nice(EXPORT_NICENESS)
    logging.basicConfig(level=logging.WARNING)
    _child(sys.argv[1], sys.stdin.buffer, sys.stdout.buffer)
