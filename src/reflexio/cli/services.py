"""``reflexio services start | stop | status``: the API server with its job workers.

A server writes ``<home>/run/server-<port>.pid`` (its pid) and ``server-<port>.json`` (host,
port, URL, log) when it starts and removes them when it exits, whether it runs attached
(``--foreground``, for containers and supervisors) or in the background. Background start
spawns ``python -m reflexio services start --foreground ...`` in its own session with stdout
and stderr going to ``<home>/run/server-<port>.log``, then waits for ``/health/ready``. Stop
sends SIGTERM (the server finishes or releases the jobs in hand) and SIGKILL after a grace
period. A pid file whose process is gone is stale and is cleaned up wherever it is met.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from reflexio.cli import process
from reflexio.cli.options import JsonOpt, settings, wants_json
from reflexio.cli.output import Result, Table, run
from reflexio.config import Settings
from reflexio.errors import ConflictError, ServiceUnavailableError

__all__ = ["ServerFiles", "app", "start_unless_running"]

app = typer.Typer(
    help="Run the Reflexio server (API and job workers) in the background or attached.",
    no_args_is_help=True,
)

#: Seconds `stop` waits after SIGTERM before SIGKILL (the server gives its workers 20).
DEFAULT_GRACE_SECONDS = 30.0
#: Seconds `start` waits for the server to answer /health/ready and its workers to run.
DEFAULT_START_TIMEOUT_SECONDS = 120.0

HostOpt = Annotated[str | None, typer.Option("--host", help="Interface to bind (default 127.0.0.1).")]
PortOpt = Annotated[int | None, typer.Option("--port", help="Port to bind (default 8081).", min=1, max=65535)]


@dataclass(frozen=True, slots=True)
class ServerFiles:
    """Where the server on one port keeps its pid, its description and its log."""

    run_dir: Path
    port: int

    @property
    def pid_file(self) -> Path:
        """Holds the server's pid, nothing else (so ``kill $(cat ...)`` works)."""
        return self.run_dir / f"server-{self.port}.pid"

    @property
    def info_file(self) -> Path:
        """Host, port, URL and log of the server, for ``status`` and ``stop``."""
        return self.run_dir / f"server-{self.port}.json"

    @property
    def log_file(self) -> Path:
        """stdout and stderr of a server started in the background."""
        return self.run_dir / f"server-{self.port}.log"

    def pid(self) -> int | None:
        """The recorded pid, or None when there is no (readable) pid file."""
        try:
            return int(self.pid_file.read_text().strip())
        except (OSError, ValueError):
            return None

    def info(self) -> dict[str, Any]:
        """The recorded description (empty when missing)."""
        try:
            found = json.loads(self.info_file.read_text())
        except (OSError, ValueError):
            return {}
        return found if isinstance(found, dict) else {}

    def write(self, pid: int, host: str) -> None:
        """Record a running server."""
        self.run_dir.mkdir(parents=True, exist_ok=True)
        info = {"pid": pid, "host": host, "port": self.port, "url": _url(host, self.port)}
        info |= {"log_file": str(self.log_file), "started_at": time.time()}
        _write_atomically(self.info_file, json.dumps(info))
        _write_atomically(self.pid_file, f"{pid}\n")

    def remove(self) -> None:
        """Forget the server (its log stays)."""
        for path in (self.pid_file, self.info_file):
            path.unlink(missing_ok=True)


def _write_atomically(path: Path, text: str) -> None:
    """Write ``path`` so that a reader sees the old file or the whole new one, never a part."""
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    partial.write_text(text)
    partial.replace(path)


def _url(host: str, port: int) -> str:
    """The URL to reach a server bound to ``host`` from this machine."""
    probe = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)
    return f"http://[{probe}]:{port}" if ":" in probe else f"http://{probe}:{port}"


def _running_pid(files: ServerFiles) -> int | None:
    """The pid of the server on this port if it runs; stale files are removed."""
    pid = files.pid()
    if pid is None:  # none, or being written by a server that is starting
        return None
    if pid != os.getpid() and process.is_reflexio(pid):
        return pid
    files.remove()
    return None


def _describe(files: ServerFiles, pid: int | None) -> dict[str, Any]:
    info = files.info()
    url = str(info.get("url") or _url("127.0.0.1", files.port))
    return {
        "running": pid is not None,
        "pid": pid,
        "host": info.get("host"),
        "port": files.port,
        "url": url,
        "started_at": info.get("started_at") if pid is not None else None,
        "pid_file": str(files.pid_file),
        "log_file": str(files.log_file),
    }


def _health(url: str, timeout: float = 2.0) -> str:
    """``healthy``, ``unhealthy`` (answers 503) or ``unreachable``."""
    import httpx  # only the commands that probe a server pay for importing it

    parsed = httpx.URL(url)
    if not process.listening(parsed.host, parsed.port or 80):
        return "unreachable"
    try:
        response = httpx.get(f"{url}/health/ready", timeout=timeout)
    except httpx.HTTPError:
        return "unreachable"
    return "healthy" if response.status_code == 200 else "unhealthy"


def _refuse_if_running(files: ServerFiles, host: str) -> None:
    pid = _running_pid(files)
    if pid is not None:
        url = files.info().get("url", "")
        raise ConflictError(
            f"a Reflexio server is already running on port {files.port} (pid {pid}, {url}); "
            f"stop it with `reflexio services stop --port {files.port}`"
        )
    if not process.port_free(host, files.port):
        raise ConflictError(f"port {files.port} is in use by another program; choose one with --port")


# -- start ---------------------------------------------------------------------------------


@app.command()
def start(
    host: HostOpt = None,
    port: PortOpt = None,
    foreground: Annotated[
        bool,
        typer.Option("--foreground", help="Run attached until SIGTERM/Ctrl-C (containers, supervisors)."),
    ] = False,
    workers: Annotated[
        int | None, typer.Option("--workers", help="Job worker threads (default 2; 0 = none).", min=0)
    ] = None,
    timeout: Annotated[
        float,
        typer.Option("--timeout", help="Seconds to wait for the API and its job workers to be ready."),
    ] = DEFAULT_START_TIMEOUT_SECONDS,
    as_json: JsonOpt = False,
) -> None:
    """Start the API, the dashboard and the job workers on 127.0.0.1:8081, SQLite under ~/.reflexio.

    By default the server runs in the background (pid and log under ~/.reflexio/run) and this
    command says what it is doing, then returns once the API answers /health/ready and its job
    workers run ("ready": learning starts with the first publish); the dashboard is at /ui. Use
    --foreground to run it attached, as a container entrypoint or under a process supervisor.
    """
    chosen = settings(host=host, port=port, workers=workers)

    if foreground:
        run(wants_json(as_json), lambda: _serve_attached(chosen))
    else:
        say = _silent if wants_json(as_json) else _to_stderr
        run(wants_json(as_json), lambda: _start_background(chosen, timeout, say))


def _silent(_: str) -> None:
    return None


def _to_stderr(line: str) -> None:
    """Progress for a person (stderr, so stdout keeps only the result)."""
    typer.echo(line, err=True)


def _serve_attached(chosen: Settings) -> Result:
    from reflexio.api.server import serve  # the server's dependencies load only when serving
    from reflexio.cli.integrations import server_mounts
    from reflexio.web import with_dashboard

    files = ServerFiles(chosen.run_dir, chosen.port)
    _refuse_if_running(files, chosen.host)
    files.write(os.getpid(), chosen.host)
    try:
        with process.stop_on_signals():
            serve(chosen, mounts=server_mounts(), front=with_dashboard)
    except process.Stopped:  # uvicorn shut down gracefully, then re-raised the signal
        pass
    finally:
        if files.pid() == os.getpid():
            files.remove()
    return Result({"stopped": True, "port": chosen.port}, message=f"Reflexio on port {chosen.port} stopped")


def _start_background(chosen: Settings, timeout: float, say: Callable[[str], None]) -> Result:
    from reflexio.models.secrets import mask_url

    files = ServerFiles(chosen.run_dir, chosen.port)
    _refuse_if_running(files, chosen.host)
    url = _url(chosen.host, chosen.port)
    deadline = time.monotonic() + timeout
    say(f"Starting Reflexio at {url} (storage {mask_url(chosen.storage_url)}; log {files.log_file})...")
    child = _spawn(chosen, files)
    _await_ready(child, url, files, timeout)
    workers_ready = True
    if chosen.workers > 0:
        say("The API answers; waiting for the job workers to start (they load the embedding model)...")
        workers_ready = _await_workers(child, chosen.workers_ready_file, deadline)
    data = _describe(files, child.pid) | {
        "started": True,
        "pid": child.pid,
        "health": "healthy",
        "workers_ready": workers_ready,
        "dashboard": f"{url}/ui",
    }
    fields: dict[str, Any] = {
        "log": files.log_file,
        "stop with": f"reflexio services stop --port {chosen.port}",
    }
    fields |= _command_hint()
    if not workers_ready:
        message = (
            f"Reflexio answers at {url} (pid {child.pid}), but its job workers did not start within "
            f"{timeout:.0f}s: publishes are stored, learning waits for them; see {files.log_file}"
        )
        return Result(data, message=message, fields=fields, exit_code=1)
    learning = (
        "learning starts with the first publish" if chosen.workers > 0 else "no job workers (--workers 0)"
    )
    message = f"Reflexio is ready at {url} (pid {child.pid}): {learning}; the dashboard is at {url}/ui"
    return Result(data, message=message, fields=fields)


def _await_workers(child: subprocess.Popen[bytes], ready_file: Path, deadline: float) -> bool:
    """Wait until the server's workers announce they claim jobs (or the server dies, or time runs out)."""
    while time.monotonic() < deadline:
        if ready_file.exists():
            return True
        if child.poll() is not None:
            return False
        time.sleep(0.2)
    return ready_file.exists()


def _command_hint() -> dict[str, str]:
    """Where the ``reflexio`` command is, when the shell would not find it (a fresh clone's .venv)."""
    here = Path(sys.executable).parent / "reflexio"
    found = shutil.which("reflexio")
    if not here.exists() or (found is not None and Path(found).resolve() == here.resolve()):
        return {}
    return {"reflexio command": f"{here} (or `source {here.parent / 'activate'}` to put it on PATH)"}


def start_unless_running(chosen: Settings, *, quiet: bool = False) -> Result:
    """Start a background server on ``chosen.port``, or describe the one already running there.

    Progress goes to stderr unless ``quiet`` (JSON output keeps stdout for the result alone).
    """
    files = ServerFiles(chosen.run_dir, chosen.port)
    pid = _running_pid(files)
    if pid is None:
        return _start_background(chosen, DEFAULT_START_TIMEOUT_SECONDS, _silent if quiet else _to_stderr)
    data = _describe(files, pid)
    url = data["url"]
    return Result(
        data | {"dashboard": f"{url}/ui"},
        message=f"Reflexio is already running at {url} (pid {pid}); the dashboard is at {url}/ui",
    )


def _spawn(chosen: Settings, files: ServerFiles) -> subprocess.Popen[bytes]:
    """Start the attached server as a detached child writing to the log file."""
    command = [sys.executable, "-m", "reflexio", "services", "start", "--foreground"]
    command += ["--host", chosen.host, "--port", str(chosen.port), "--workers", str(chosen.workers)]
    files.run_dir.mkdir(parents=True, exist_ok=True)
    with files.log_file.open("ab") as log:
        log.write(
            f"--- {dt.datetime.now().astimezone().isoformat()} starting: {' '.join(command)}\n".encode()
        )
        log.flush()
        return process.spawn_detached(command, log=log, env=dict(chosen.environ))


def _await_ready(child: subprocess.Popen[bytes], url: str, files: ServerFiles, timeout: float) -> None:
    """Poll /health/ready until it answers 200; fail (pointing at the log) if it never does."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        code = child.poll()
        if code is not None:
            raise ServiceUnavailableError(
                f"the server exited with status {code} while starting; see {files.log_file}:\n"
                + process.tail(files.log_file)
            )
        if _health(url, timeout=1.0) == "healthy":
            return
        time.sleep(0.2)
    process.terminate(child.pid, grace=5.0)
    files.remove()
    raise ServiceUnavailableError(
        f"the server did not become ready at {url} within {timeout:.0f}s and was stopped; "
        f"see {files.log_file}"
    )


# -- status and stop ------------------------------------------------------------------------


def _targets(chosen: Settings, port: int | None) -> list[ServerFiles]:
    """The given port, else every server recorded under the run folder, else the default port."""
    if port is not None:
        return [ServerFiles(chosen.run_dir, port)]
    ports = sorted(
        int(p.stem.removeprefix("server-"))
        for p in chosen.run_dir.glob("server-*.pid")
        if p.stem.removeprefix("server-").isdigit()
    )
    return [ServerFiles(chosen.run_dir, p) for p in ports] or [ServerFiles(chosen.run_dir, chosen.port)]


@app.command()
def status(
    port: Annotated[
        int | None,
        typer.Option("--port", help="Only the server on this port (default: every one started here)."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Show whether the server runs, its pid, URL, health and log file.

    Without --port every server started from this Reflexio home is shown. The JSON has
    "running" and the first server's fields at the top, and all of them under "services".
    """
    run(wants_json(as_json), lambda: _status(settings(), port))


def _status(chosen: Settings, port: int | None) -> Result:
    services = []
    for files in _targets(chosen, port):
        entry = _describe(files, _running_pid(files))
        entry["health"] = _health(entry["url"])
        services.append(entry)
    running = [s for s in services if s["running"]]
    data = {**(running or services)[0], "running": bool(running), "services": services}
    message = (
        "Reflexio is running" if running else "Reflexio is not running (start it: reflexio services start)"
    )
    columns = ("port", "running", "pid", "health", "url", "log_file")
    return Result(data, message=message, tables=[Table("", columns, services)])


@app.command()
def stop(
    port: Annotated[
        int | None,
        typer.Option("--port", help="Only the server on this port (default: every one started here)."),
    ] = None,
    grace: Annotated[
        float, typer.Option("--grace", help="Seconds to wait after SIGTERM before SIGKILL.")
    ] = DEFAULT_GRACE_SECONDS,
    as_json: JsonOpt = False,
) -> None:
    """Stop the server: SIGTERM lets workers finish or release their jobs, SIGKILL after --grace.

    Stopping a server that is not running is not an error; stale pid files are removed.
    """
    run(wants_json(as_json), lambda: _stop(settings(), port, grace))


def _stop(chosen: Settings, port: int | None, grace: float) -> Result:
    services = [_stop_one(files, grace) for files in _targets(chosen, port)]
    stopped = [s["port"] for s in services if s["stopped"]]
    message = (
        f"stopped the server on port(s) {', '.join(map(str, stopped))}"
        if stopped
        else "no server was running"
    )
    data = {"stopped": bool(stopped), "ports": stopped, "services": services}
    table = Table("", ("port", "pid", "stopped", "forced"), [s for s in services if s["stopped"]])
    return Result(data, message=message, tables=[table] if stopped else [])


def _stop_one(files: ServerFiles, grace: float) -> dict[str, Any]:
    pid = _running_pid(files)
    if pid is None:
        return {"port": files.port, "pid": None, "stopped": False, "forced": False}
    host = str(files.info().get("host") or "127.0.0.1")
    forced = process.terminate(pid, grace=grace)
    _await(lambda: process.port_free(host, files.port), seconds=5.0)
    files.remove()
    return {"port": files.port, "pid": pid, "stopped": True, "forced": forced}


def _await(condition: Callable[[], bool], *, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True
