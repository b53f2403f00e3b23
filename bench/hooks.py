"""What the Claude Code hooks add to a prompt: wall time of the hook commands, as Claude Code runs them.

``python -m bench.hooks --out bench/results/claude-code-hooks.json [--runs 200]``

A real server (SQLite, the default embedder, no workers) holds learnings for the user: user
playbooks and agent playbooks of a coding agent. Each round runs, as separate processes with
the recorded hook JSON on stdin, exactly the commands ``reflexio integrations claude-code
install`` writes:

* ``prompt`` (UserPromptSubmit): the time Claude Code waits before it sends the prompt, i.e.
  what the hooks add to a prompt (goal: p95 <= 50 ms), for a one-line prompt;
* ``prompt-long``: the same for a prompt of about 1,000 characters (a request with a pasted
  traceback): the query embedding grows with the prompt's tokens, up to the 64 of a query
  that MiniLM reads (``reflexio.embed.minilm.QUERY_TOKENS``);
* ``stop`` (Stop): read the transcript since the last publish, queue it, start the background
  send (Claude Code waits for this at the end of a turn, not before a prompt);

and, interleaved with them, where the prompt hook's time goes:

* ``python``: ``python -I -S -c pass``, the interpreter starting as the hooks start it;
* ``imports``: that interpreter importing the hook's module and everything it needs;
* ``search``: the server answering a search like the hook's (the same fields, a prompt of its
  own, sent from this process over a kept-alive connection: the server's share of the prompt
  hook, its query embedding included);

Every prompt differs (the server caches query vectors; a repeated prompt would time a cache
hit, which a user's next prompt never is).
* with ``--baseline SRC`` (a ``src`` folder of an earlier commit, e.g. from ``git archive``):
  ``prompt-baseline``, that commit's prompt hook run as it was installed then
  (``python -I -m reflexio.integrations.claude_code prompt``), for a before/after in one run.

Rounds alternate the commands, so a noisy neighbour slows them alike.

The rounds are fair to the prompt hook: after each stop hook the bench waits until the
background send it started is over (the outbox's backlog marker gone, the flush process
exited; polled, with a timeout) before it times anything else. That is how Claude Code meets
the prompt hook: a turn ends, the send runs while the user reads and types, then the next
prompt. Run back to back instead, the next prompt hook would share the cores with that send
(the SDK starting, an HTTP publish, the server storing it) and measure it. How long the sends
took is reported as ``send_wait_ms``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench.ingest import machine, percentiles
from reflexio import ReflexioClient
from reflexio.api.server import in_background
from reflexio.config import Settings
from reflexio.integrations.claude_code.install import HOOK_SCRIPT, hook_command
from reflexio.integrations.claude_code.outbox import has_backlog
from reflexio.service.core import open_core

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "integrations" / "data" / "claude_code"
USER = "bench-user"
TOPICS = [
    "refund",
    "invoice",
    "deploy",
    "migration",
    "login",
    "billing",
    "export",
    "search",
    "cache",
    "queue",
]


def seed(url: str, count: int) -> None:
    """User playbooks for the user and agent playbooks for the agent, on many topics."""
    with ReflexioClient(url_endpoint=url) as api:
        for start in range(0, count, 100):
            api.add_user_playbook(
                [
                    {
                        "user_id": USER,
                        "agent_version": "claude-code",
                        "request_id": f"seed-{i}",
                        "trigger": f"the {TOPICS[i % len(TOPICS)]} code fails in module {i}",
                        "content": f"Run the {TOPICS[i % len(TOPICS)]} tests of module {i} before editing it",
                    }
                    for i in range(start, min(count, start + 100))
                ]
            )
        api.add_agent_playbooks(
            [
                {"agent_version": "claude-code", "content": f"Explain the {t} change before making it"}
                for t in TOPICS
            ]
        )


def run(command: list[str], stdin: str, env: dict[str, str]) -> tuple[float, float]:
    """Milliseconds from spawning ``command`` to its exit (it must exit 0), wall and CPU.

    CPU is the child's user + system time: what the command costs whatever else the machine
    runs, where wall time on a shared machine is mostly waiting for a core.
    """
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, input=stdin, env=env, capture_output=True, text=True, check=False)
    elapsed = (time.perf_counter() - started) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"{command} exited {done.returncode}: {done.stderr}")
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    return elapsed, cpu


def search(server: httpx.Client, body: dict[str, Any]) -> tuple[float, float]:
    """Milliseconds the server takes to answer one search (the connection is already open).

    CPU is this process's (the server runs in it, in a thread): the server's work plus the
    small cost of the client sending the request and reading the answer.
    """
    cpu_started, started = time.process_time(), time.perf_counter()
    server.post("/api/search", json=body).raise_for_status()
    return (time.perf_counter() - started) * 1000, (time.process_time() - cpu_started) * 1000


def flushes(home: str) -> list[int]:
    """The background sends of the hooks of ``home`` still running (read from Linux's ``/proc``).

    A send is ``python -I -m reflexio.integrations.claude_code flush`` with our ``REFLEXIO_HOME``
    (other benchmarks and tests on the machine run their own); an exited one that nobody reaped
    has an empty command line and is not counted.
    """
    ours = f"REFLEXIO_HOME={home}".encode()
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            argv = Path(entry.path, "cmdline").read_bytes().split(b"\0")
            if b"flush" not in argv or b"reflexio.integrations.claude_code" not in argv:
                continue
            if ours in Path(entry.path, "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except OSError:  # it exited meanwhile
            continue
    return found


def wait_for_send(home: str, timeout: float = 60.0) -> float:
    """Wait until the send the stop hook started is over; milliseconds waited (``home``: the
    hooks' ``REFLEXIO_HOME``).

    Over means the outbox told the prompt hook nothing waits (its backlog marker is gone) and
    the flush process has exited.

    Raises:
        RuntimeError: It is not over after ``timeout`` seconds (the server refused the publish,
            or the send hangs): the rounds after it would not be fair.
    """
    outbox = Path(home, "claude-code", "outbox.db")
    started = time.perf_counter()
    while has_backlog(outbox) or flushes(home):
        if time.perf_counter() - started > timeout:
            raise RuntimeError(
                f"the hooks' send did not finish in {timeout} s (see {outbox.parent}/hooks.log)"
            )
        time.sleep(0.01)
    return (time.perf_counter() - started) * 1000


def _prompt_text(i: int) -> str:
    """A different prompt for every hook run: the server caches query vectors, and a user
    does not send the same prompt twice, so a repeated one would time a cache hit instead of
    the query's embedding."""
    return f"The {TOPICS[i % len(TOPICS)]} script fails on order {1000 + i}, can you fix it?"


#: What a long prompt pastes after its request: a traceback of about 900 characters.
_PASTED = "\n".join(
    [
        "Traceback (most recent call last):",
        *(
            f'  File "/srv/app/{t}/handlers.py", line {40 + n * 7}, in handle_{t}\n'
            f"    result = {t}_service.process(request, retries=3)"
            for n, t in enumerate(TOPICS[:6])
        ),
        "RuntimeError: upstream returned 502 Bad Gateway after 3 retries",
    ]
)


def _long_prompt_text(i: int) -> str:
    """A different prompt of about 1,000 characters: a request, then a pasted traceback."""
    return f"{_prompt_text(i)} It started after yesterday's deploy, here is the log:\n{_PASTED}"


def _prompt_event(recorded: str, session_id: str, text: str) -> str:
    """The recorded UserPromptSubmit payload with its own session and prompt."""
    event = json.loads(recorded)
    event |= {"session_id": session_id, "prompt": text}
    return json.dumps(event)


def baseline_command(src: Path) -> list[str]:
    """An earlier commit's prompt hook from its ``src`` folder, as ``python -I -m`` ran it then."""
    code = (
        f"import runpy, sys; sys.path.insert(0, {str(src)!r}); sys.argv[1:] = ['prompt']; "
        "runpy.run_module('reflexio.integrations.claude_code', run_name='__main__')"
    )
    return [sys.executable, "-I", "-c", code]


def measure(url: str, home: Path, runs: int, baseline: Path | None = None) -> dict[str, Any]:
    """Interleaved rounds of the prompt hook, the stop hook and the bare interpreter."""
    transcript = home / "session.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.startswith("REFLEXIO_")}
    env |= {"REFLEXIO_URL": url, "REFLEXIO_HOME": str(home / ".reflexio"), "REFLEXIO_USER_ID": USER}
    prompt = (DATA / "user-prompt-submit.json").read_text().replace("TRANSCRIPT", str(transcript))
    stop = (DATA / "stop.json").read_text().replace("TRANSCRIPT", str(transcript))
    turn = (DATA / "transcript-1.jsonl").read_text()
    names = (
        "prompt",
        "prompt-long",
        "stop",
        "python",
        "imports",
        "search",
        *(("prompt-baseline",) if baseline else ()),
    )
    timings: dict[str, list[float]] = {name: [] for name in names}
    cpu: dict[str, list[float]] = {name: [] for name in names}
    package_root = str(Path(HOOK_SCRIPT).parents[3])
    imports = f"import sys; sys.path.append({package_root!r}); import reflexio.integrations.claude_code.hooks"
    body = {
        "user_id": USER,
        "agent_version": "claude-code",
        "top_k": 5,
    }
    server = httpx.Client(base_url=url)
    injected = 0
    send_waits: list[float] = []
    waited = 0.0
    for i in range(runs + 5):
        with transcript.open("a") as handle:  # one more turn per round, as a session grows
            handle.write(turn)
        rounds = {  # a new session per prompt, so session dedup never empties the block
            "prompt": (
                shlex.split(hook_command("prompt")),
                _prompt_event(prompt, f"bench-{i}", _prompt_text(i)),
            ),
            "prompt-long": (
                shlex.split(hook_command("prompt")),
                _prompt_event(prompt, f"long-{i}", _long_prompt_text(i + 3 * (runs + 5))),
            ),
            "stop": (shlex.split(hook_command("stop")), stop),
            "python": ([sys.executable, "-I", "-S", "-c", "pass"], ""),
            "imports": ([sys.executable, "-I", "-S", "-c", imports], ""),
        }
        if baseline is not None:
            rounds["prompt-baseline"] = (
                baseline_command(baseline),
                _prompt_event(prompt, f"base-{i}", _prompt_text(i + runs + 5)),
            )
        measured = {}
        for name, (command, stdin) in rounds.items():
            measured[name] = run(command, stdin, env)
            if name == "stop":  # a turn ended: its send runs before the user's next prompt
                waited = wait_for_send(env["REFLEXIO_HOME"])
        query = {"query": _prompt_text(i + 2 * (runs + 5)), "session_id": f"bench-search-{i}"}
        measured["search"] = search(server, body | query)
        if i >= 5:  # warm-up rounds are not counted
            send_waits.append(waited)
            for name, (wall, used) in measured.items():
                timings[name].append(wall)
                cpu[name].append(used)
        injected += int(i >= 5)
    server.close()
    return {name: percentiles(values) for name, values in timings.items()} | {
        "cpu": {name: percentiles(values) for name, values in cpu.items()},
        "rounds": injected,
        "send_wait": percentiles(send_waits),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--learnings", type=int, default=1000)
    parser.add_argument(
        "--embedder", default="", help="REFLEXIO_EMBEDDER for the server (default: its default)"
    )
    parser.add_argument(
        "--baseline", type=Path, help="an earlier commit's src folder, to run its prompt hook interleaved"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder)
        settings = Settings.from_env(
            {
                "HOME": str(home),
                "REFLEXIO_STORAGE_URL": f"sqlite:///{home}/db.sqlite",
                "REFLEXIO_WORKERS": "0",
            }
            | ({"REFLEXIO_EMBEDDER": args.embedder} if args.embedder else {})
        )
        core = open_core(settings)
        embedder = core.embedder.name
        with in_background(core) as url:
            seed(url, args.learnings)
            results = measure(url, home, args.runs, args.baseline)
    report = {
        "benchmark": "claude-code-hooks",
        "machine": machine(),
        "embedder": embedder,
        "learnings": args.learnings + len(TOPICS),
        "goal": "prompt hook p95 <= 50 ms",
        "long_prompt_chars": len(_long_prompt_text(0)),
        "baseline": str(args.baseline) if args.baseline else None,
        "note": (
            "ms: wall time; ms.cpu: CPU time (a child's user+system; for search, the server "
            "process's). On an idle machine a prompt's wall time approaches cpu.prompt + cpu.search. "
            "Each stop hook's background send is waited for before the next command "
            "(send_wait_ms: how long that took), as a user's reading and typing does."
        ),
        "send_wait_ms": results.pop("send_wait"),
        "ms": results,
        "load_average": os.getloadavg(),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report["ms"], indent=2))


if __name__ == "__main__":
    main()
