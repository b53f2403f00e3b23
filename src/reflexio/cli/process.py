"""Operating-system chores of ``services``: detached children, liveness, signals, ports, logs.

Kept apart from the commands so the rules live in one place: a pid counts as a Reflexio server
only if the process is alive (a zombie is not) and, where ``/proc`` exists, its command line
names reflexio, so a recycled pid is never signalled.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

__all__ = [
    "Stopped",
    "is_alive",
    "is_reflexio",
    "listening",
    "port_free",
    "signalled",
    "spawn_detached",
    "stop_on_signals",
    "tail",
    "terminate",
]

#: Children started by this process: holding them keeps ``Popen`` from warning about a live child.
_SPAWNED: list[subprocess.Popen[bytes]] = []


def spawn_detached(command: list[str], *, log: IO[bytes], env: Mapping[str, str]) -> subprocess.Popen[bytes]:
    """Start ``command`` in its own session (it outlives this process and its terminal)."""
    if sys.platform == "win32":
        flags = subprocess.CREATE_NEW_PROCESS_GROUP | subprocess.DETACHED_PROCESS
        child = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=dict(env),
            creationflags=flags,
        )  # fmt: skip
    else:
        child = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=dict(env),
            start_new_session=True,
        )  # fmt: skip
    _SPAWNED.append(child)
    return child


def is_alive(pid: int) -> bool:
    """Whether ``pid`` runs (our own exited children are reaped, zombies count as gone)."""
    if pid <= 0:
        return False
    if _reap(pid):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, owned by someone else
        return True
    return _state(pid) != "Z"


def _reap(pid: int) -> bool:
    """Reap ``pid`` if it is an exited child of this process; True when it was."""
    if sys.platform == "win32":
        return False
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:  # not our child
        return False
    return done == pid


def _state(pid: int) -> str:
    """The one-letter process state from ``/proc`` (empty where there is no ``/proc``)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return stat.rpartition(")")[2].strip()[:1]


def is_reflexio(pid: int) -> bool:
    """Whether ``pid`` is a live Reflexio process (not a recycled pid of another program)."""
    if not is_alive(pid):
        return False
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:  # no /proc (macOS) or no access: trust the pid file
        return True
    return b"reflexio" in cmdline


def terminate(pid: int, *, grace: float) -> bool:
    """SIGTERM ``pid``, then SIGKILL if it still runs after ``grace`` seconds.

    Returns:
        True when it had to be killed.
    """
    _signal(pid, signal.SIGTERM)
    if _wait_gone(pid, grace):
        return False
    _signal(pid, getattr(signal, "SIGKILL", signal.SIGTERM))
    _wait_gone(pid, 10.0)
    return True


def _signal(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def _wait_gone(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while is_alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def port_free(host: str, port: int) -> bool:
    """Whether a server could bind ``host:port`` now."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def listening(host: str, port: int, timeout: float = 1.0) -> bool:
    """Whether something accepts TCP connections on ``host:port``.

    Probing a port nobody listens on can connect the probe to itself (TCP self-connect: the
    kernel picks the destination port as the probe's own port), which would hold the port and
    make a server starting there fail to bind. So the probe binds its own port first, never
    the one probed, with ``SO_REUSEADDR`` so that it cannot block the server's bind either.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    for _ in range(3):
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.settimeout(timeout)
            sock.bind((host, 0))
            if sock.getsockname()[1] == port:
                continue
            try:
                sock.connect((host, port))
            except OSError:
                return False
            return True
    return False


def tail(path: Path, lines: int = 20) -> str:
    """The last ``lines`` lines of a text file (empty when it cannot be read)."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


#: The signals that ask a foreground process to shut down.
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class Stopped(BaseException):
    """SIGTERM or SIGINT arrived (a BaseException, so no ``except Exception`` swallows it)."""


@contextmanager
def _handlers(handler: Any) -> Iterator[None]:
    previous = {sig: signal.signal(sig, handler) for sig in _STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


@contextmanager
def signalled() -> Iterator[threading.Event]:
    """An event that SIGTERM or SIGINT sets while the block runs (for loops that poll it)."""
    stop = threading.Event()

    def handle(_signum: int, _frame: Any) -> None:
        stop.set()

    with _handlers(handle):
        yield stop


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """Raise :class:`Stopped` on SIGTERM or SIGINT while the block runs.

    For code that handles the signals itself while it runs (uvicorn) and re-raises them when
    done: the re-raised signal then ends the block with ``Stopped`` instead of killing the
    process before it has cleaned up.
    """

    def handle(_signum: int, _frame: Any) -> None:
        raise Stopped

    with _handlers(handle):
        yield
