"""The API server's job workers, run in a child process that the server supervises.

Why a process and not threads beside the API: worker threads share the API's GIL, so a
learning step in pure Python (the rule extractor, tokenising for the embedder) makes a
publish wait for the interpreter: with worker threads in the API process the publish-ack
p95 is more than twice what it is with the worker process or with no workers at all
(``python -m bench.ingest``; bench/results/ingest-worker-threads.json against ingest.json
and ingest-no-workers.json). The child is
``python -m reflexio worker --niceness 10``: lowering its CPU priority makes the kernel run
API requests first and give learning the spare CPU, and both processes queue for SQLite
writes on one ``flock`` (see ``storage.sqlite``), which wakes a waiting publish the moment
a worker's write commits.

Supervision: a child that exits while the server runs is restarted, after a pause that
doubles from one second up to a minute while it keeps failing fast (a crash loop must not
spin). At shutdown the child gets SIGTERM and finishes or releases its jobs within the grace
period, then SIGKILL; leases make even that safe. A server killed outright cannot stop its
child, so the child is told the server's pid and stops itself when orphaned.

Threads stay available (``REFLEXIO_WORKER_PROCESS=0``) and are what ``in_background`` uses:
a memory store or an LLM injected into the core cannot be shared with another process.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from reflexio.config import Settings

__all__ = ["WORKER_NICENESS", "WorkerProcess"]

log = logging.getLogger(__name__)

#: How much lower the worker's CPU priority is than the API's (0 = same, 19 = lowest).
WORKER_NICENESS = 10
#: Pause before the first restart of a failed child; doubled per quick failure.
FIRST_RESTART_DELAY = 1.0
#: Longest pause between restarts.
MAX_RESTART_DELAY = 60.0
#: A child that ran this long failed "slowly": the next restart waits the shortest pause.
HEALTHY_AFTER_SECONDS = 60.0


class WorkerProcess:
    """One supervised ``reflexio worker`` child of the API server."""

    def __init__(
        self,
        settings: Settings,
        *,
        grace_seconds: float,
        niceness: int = WORKER_NICENESS,
        ready_file: Path | None = None,
    ) -> None:
        self._settings = settings
        self._ready_file = ready_file
        self._grace = grace_seconds
        self._niceness = niceness
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._child: subprocess.Popen[bytes] | None = None
        self._supervisor = threading.Thread(target=self._supervise, name="worker-process", daemon=True)

    def command(self) -> list[str]:
        """The child's command line."""
        return [
            sys.executable,
            "-m",
            "reflexio",
            "worker",
            "--concurrency",
            str(self._settings.workers),
            "--grace",
            str(self._grace),
            "--niceness",
            str(self._niceness),
            "--parent-pid",
            str(os.getpid()),
            *(["--ready-file", str(self._ready_file)] if self._ready_file is not None else []),
        ]

    def start(self) -> None:
        """Spawn the child and the thread that restarts it when it dies."""
        if self._ready_file is not None:
            self._ready_file.unlink(missing_ok=True)  # left by a previous server on this port
        self._spawn()
        self._supervisor.start()

    def begin_stop(self) -> None:
        """SIGTERM the child now (it starts its own grace period) and restart it no more."""
        self._stopping.set()
        with self._lock:
            child = self._child
        if child is not None and child.poll() is None:
            child.terminate()

    def stop(self, wait_seconds: float | None = None) -> None:
        """SIGTERM the child, wait for it (its grace period by default), then SIGKILL it."""
        self.begin_stop()
        with self._lock:
            child, self._child = self._child, None
        if self._ready_file is not None:
            self._ready_file.unlink(missing_ok=True)
        if child is not None and child.poll() is None:
            try:
                child.wait(self._grace + 5.0 if wait_seconds is None else wait_seconds)
            except subprocess.TimeoutExpired:
                log.warning("the worker process did not stop in time; killing it")
                child.kill()
                child.wait()
        if self._supervisor.is_alive():
            self._supervisor.join(timeout=5.0)

    def _spawn(self) -> None:
        with self._lock:
            if self._stopping.is_set():
                return
            env = self._settings.to_env()
            # Its log lines go to our stderr; its stdout (a final summary) must not mix into ours.
            # It stays in our session: with Linux's scheduler autogroups, a session of its own
            # would share the CPU with the API as an equal instead of as a low-priority process.
            self._child = subprocess.Popen(
                self.command(), env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL
            )
            log.info("started the job worker process (pid %s)", self._child.pid)

    def _supervise(self) -> None:
        delay = FIRST_RESTART_DELAY
        while not self._stopping.is_set():
            with self._lock:
                child = self._child
            if child is None:
                return
            started = time.monotonic()
            while child.poll() is None and not self._stopping.wait(0.5):
                pass
            if self._stopping.is_set():
                return
            if time.monotonic() - started >= HEALTHY_AFTER_SECONDS:
                delay = FIRST_RESTART_DELAY
            log.warning(
                "the job worker process (pid %s) exited with status %s; restarting it in %.0fs",
                child.pid,
                child.returncode,
                delay,
            )
            if self._stopping.wait(delay):
                return
            self._spawn()
            delay = min(delay * 2, MAX_RESTART_DELAY)
