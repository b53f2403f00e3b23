"""``reflexio services``: pid files, stale state, refusals, and the real thing over a real socket.

The end-to-end test runs the installed CLI in subprocesses exactly as a user would: start in
the background, status, publish and search, create a key while the server runs, stop.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.cli.conftest import Cli, free_port, home_env

#: Shell variables that would point the CLI under test somewhere else.
_OUTSIDE = ("REFLEXIO_API_KEY", "REFLEXIO_STORAGE_URL", "REFLEXIO_URL", "REFLEXIO_PORT", "REFLEXIO_HOST")


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@pytest.fixture
def local(tmp_path: Path) -> Cli:
    """A CLI whose home is empty (no server has ever run there)."""
    return Cli(home_env(tmp_path, COLUMNS="200"))


def _run_dir(cli: Cli) -> Path:
    return Path(cli.env["REFLEXIO_HOME"]) / "run"


def test_status_and_stop_when_nothing_runs(local: Cli) -> None:
    status = local.json("services", "status")
    assert (status["running"], status["port"], status["pid"]) == (False, 8081, None)
    assert "not running" in local("services", "status").stdout
    stopped = local.json("services", "stop")
    assert stopped == {"stopped": False, "ports": [], "services": stopped["services"]}


def test_a_stale_pid_file_is_cleaned_up(local: Cli) -> None:
    run_dir = _run_dir(local)
    run_dir.mkdir(parents=True)
    port = free_port()
    (run_dir / f"server-{port}.pid").write_text(f"{_dead_pid()}\n")
    status = local.json("services", "status")
    assert (status["port"], status["running"]) == (port, False)
    assert not (run_dir / f"server-{port}.pid").exists()


def test_a_recycled_pid_is_never_signalled(local: Cli) -> None:
    if not Path("/proc/self/cmdline").exists():
        pytest.skip("needs /proc to tell programs apart")
    stranger = subprocess.Popen(["sleep", "30"])
    try:
        run_dir = _run_dir(local)
        run_dir.mkdir(parents=True)
        port = free_port()
        (run_dir / f"server-{port}.pid").write_text(f"{stranger.pid}\n")
        assert local.json("services", "stop", "--port", str(port))["stopped"] is False
        assert stranger.poll() is None
        assert not (run_dir / f"server-{port}.pid").exists()
    finally:
        stranger.kill()
        stranger.wait()


def test_start_refuses_a_port_another_program_uses(local: Cli) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        failed = local("services", "start", "--port", str(port), "--json", ok=False)
        assert failed.exit_code == 5
        assert "in use" in json.loads(failed.stdout)["detail"]
        attached = local("services", "start", "--foreground", "--port", str(port), ok=False)
        assert attached.exit_code == 5 and "in use" in attached.stderr


def test_a_server_that_cannot_start_points_at_its_log(local: Cli) -> None:
    broken = Cli({**local.env, "REFLEXIO_STORAGE_URL": "bogus://nowhere"})
    port = free_port()
    failed = broken("services", "start", "--port", str(port), "--timeout", "60", "--json", ok=False)
    assert failed.exit_code == 6
    detail = json.loads(failed.stdout)["detail"]
    log = _run_dir(local) / f"server-{port}.log"
    assert str(log) in detail
    assert "bogus" in log.read_text()
    assert not (_run_dir(local) / f"server-{port}.pid").exists()


# -- end to end, in subprocesses --------------------------------------------------------------


class Shell:
    """Runs ``python -m reflexio`` in a subprocess with a private home."""

    def __init__(self, home: Path, port: int) -> None:
        base = {k: v for k, v in os.environ.items() if k not in _OUTSIDE and not k.endswith("_API_KEY")}
        self.env = {**base, **home_env(home), "REFLEXIO_URL": f"http://127.0.0.1:{port}"}
        del self.env["REFLEXIO_STORAGE_URL"]  # the default: SQLite under $REFLEXIO_HOME
        self.port = port

    def __call__(self, *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [sys.executable, "-m", "reflexio", *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=240,  # a guard against a hang, not a timing: `demo` seeds and aggregates
            check=False,
        )
        if ok and done.returncode != 0:
            raise AssertionError(
                f"reflexio {' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
            )
        return done

    def json(self, *args: str, ok: bool = True) -> Any:
        return json.loads(self(*args, "--json", ok=ok).stdout)


@pytest.fixture
def shell(tmp_path: Path) -> Iterator[Shell]:
    sh = Shell(tmp_path, free_port())
    yield sh
    sh("services", "stop", "--port", str(sh.port), "--grace", "5", ok=False)  # whatever the test did


@pytest.mark.slow
def test_services_in_the_background_end_to_end(shell: Shell, tmp_path: Path) -> None:
    port = str(shell.port)
    started = shell.json("services", "start", "--port", port)
    assert (started["running"], started["port"], started["health"]) == (True, shell.port, "healthy")
    run_dir = tmp_path / ".reflexio" / "run"
    pid_file = run_dir / f"server-{port}.pid"
    assert int(pid_file.read_text()) == started["pid"]
    assert (tmp_path / ".reflexio" / "data" / "reflexio.db").exists(), "SQLite under the home folder"

    status = shell.json("services", "status", "--port", port)
    assert (status["running"], status["pid"], status["health"]) == (True, started["pid"], "healthy")
    again = shell("services", "start", "--port", port, ok=False)
    assert again.returncode == 5 and "already running" in again.stderr

    turn = ("--user-message", "I prefer metric units", "--agent-response", "Noted")
    published = shell.json("publish", "--user", "alice", "--session", "s1", *turn)
    assert published["success"] is True
    shell("profiles", "add", "--user", "alice", "--content", "alice prefers metric units")
    found = shell.json("search", "metric units", "--user", "alice")
    assert "alice prefers metric units" in [p["content"] for p in found["profiles"]]

    key = shell.json("keys", "create", "--org", "acme")["key"]
    url = f"http://127.0.0.1:{port}/api/search"
    assert httpx.post(url, json={"query": "metric"}).status_code == 401
    with_key = httpx.post(url, json={"query": "metric"}, headers={"Authorization": f"Bearer {key}"})
    assert with_key.status_code == 200
    assert shell.json("search", "metric units", "--api-key", key)["success"] is True
    refused = shell("search", "metric units", "--json", ok=False)
    assert (refused.returncode, json.loads(refused.stdout)["error"]) == (3, "authentication_required")

    stopped = shell.json("services", "stop", "--port", port)
    assert (stopped["stopped"], stopped["ports"]) == (True, [shell.port])
    assert not pid_file.exists()
    assert _port_free(shell.port)
    assert shell.json("services", "status", "--port", port)["running"] is False
    log = (run_dir / f"server-{port}.log").read_text()
    assert "Application shutdown complete" in log


@pytest.mark.slow
def test_foreground_server_stops_cleanly_on_sigterm(shell: Shell, tmp_path: Path) -> None:
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "reflexio",
            "services",
            "start",
            "--foreground",
            "--port",
            str(shell.port),
            "--json",
        ],
        env=shell.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while shell.json("services", "status", "--port", str(shell.port))["health"] != "healthy":
            if server.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the attached server did not start:\n{(tmp_path / 'server.err').read_text()}")
            time.sleep(0.3)
        server.send_signal(signal.SIGTERM)
        out, _ = server.communicate(timeout=60)
    finally:
        if server.poll() is None:
            server.kill()
    assert server.returncode == 0
    assert json.loads(out) == {"stopped": True, "port": shell.port}
    assert not (tmp_path / ".reflexio" / "run" / f"server-{shell.port}.pid").exists()
    assert _port_free(shell.port)


@pytest.mark.slow
def test_start_says_what_it_does_and_ready_means_learning_runs(shell: Shell, tmp_path: Path) -> None:
    port = str(shell.port)
    started = shell("services", "start", "--port", port)
    assert "Starting Reflexio at" in started.stderr and "waiting for the job workers" in started.stderr
    assert f"Reflexio is ready at http://127.0.0.1:{port}" in started.stdout
    assert "learning starts with the first publish" in started.stdout
    ready = tmp_path / ".reflexio" / "run" / f"workers-{port}.ready"
    worker_pid = int(ready.read_text())
    assert worker_pid != int((tmp_path / ".reflexio" / "run" / f"server-{port}.pid").read_text())
    os.kill(worker_pid, 0)  # the worker process that announced itself is alive
    began = time.monotonic()
    turn = ("--user-message", "I live in Oslo", "--agent-response", "Noted", "--wait")
    learned = shell.json("publish", "--user", "u-ready", *turn)
    assert learned["learning_status"] == "done" and learned["profiles_added"] == 1
    assert time.monotonic() - began < 60
    shell("services", "stop", "--port", port)
    assert not ready.exists()


@pytest.mark.slow
def test_scripts_serve_says_each_step_and_where_the_command_is(tmp_path: Path) -> None:
    """The install steps are skipped (a stamp says pyproject.toml is installed); the rest runs."""
    root = Path(__file__).resolve().parents[2]
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    for name in ("python", "reflexio"):
        (venv / "bin" / name).symlink_to(Path(sys.executable).parent / name)
    digest = hashlib.sha256((root / "pyproject.toml").read_bytes()).hexdigest()[:16]
    (venv / f".serve-installed-{digest}").touch()
    port = str(free_port())
    home = tmp_path / "home"
    env = {**Shell(home, int(port)).env, "VENV": str(venv), "PATH": "/usr/bin:/bin"}
    try:
        done = subprocess.run(
            [str(root / "scripts" / "serve"), "--port", port],
            env=env, capture_output=True, text=True, timeout=180, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert "is up to date with pyproject.toml" in done.stderr and "starting the server" in done.stderr
        assert f"Reflexio is ready at http://127.0.0.1:{port}" in done.stdout
        command = Path(sys.executable).parent / "reflexio"  # where the symlinked script really is
        assert f"reflexio command: {command}" in done.stdout and "bin/activate" in done.stdout
    finally:
        Shell(home, int(port))("services", "stop", "--port", port, ok=False)


@pytest.mark.slow
def test_demo_seeds_an_org_and_serves_its_dashboard(shell: Shell) -> None:
    port = str(shell.port)
    demo = shell.json("demo", "--port", port)
    seeded = demo["seeded"]
    assert seeded["users"] >= 10 and seeded["sessions"] > seeded["users"] and seeded["agent_playbooks"] >= 5
    assert demo["dashboard"] == f"http://127.0.0.1:{port}/ui" and demo["running"] is True

    with httpx.Client(base_url=demo["dashboard"], timeout=30) as browser:
        overview = browser.get("/")
        assert overview.status_code == 200 and "waiting for review" in overview.text
        queue = browser.get("/review")
        assert queue.status_code == 200 and "If the carrier API times out" in queue.text
        assert "ana.silva" in browser.get("/users").text

    again = shell.json("demo", "--port", port)  # the server keeps running; a second copy is added
    assert again["pid"] == demo["pid"] and again["seeded"]["sessions"] == seeded["sessions"]
