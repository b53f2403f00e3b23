"""The published reflexio-client 0.2.16 works against our server, method by method.

``scripts/compat_venv.sh`` builds (once) a Python 3.12 virtualenv with ``reflexio-client==0.2.16``
from PyPI; ``driver.py`` runs in it against our real app served on a loopback port, and prints
a JSON summary of every check. This is required in CI; it skips only where no Python 3.12
exists, and says so.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.client.live_server import running_server

REPO = Path(__file__).resolve().parents[2]
DRIVER = Path(__file__).with_name("driver.py")
NO_PYTHON_312 = 3

#: Every 0.2.16 client method that maps to a route we serve, plus the routes 0.2.16 has no
#: method for (called as raw HTTP, as 0.2.32 callers do). The driver must pass all of them.
EXPECTED = {
    "whoami",
    "get_config",
    "set_config",
    "update_config",
    "publish_interaction",
    "publish_interaction_async",
    "get_learning_status",
    "get_interactions",
    "get_all_interactions",
    "get_requests",
    "search_interactions",
    "delete_interaction",
    "delete_request",
    "delete_session",
    "delete_requests_by_ids",
    "delete_all_interactions",
    "add_user_profile",
    "get_profiles",
    "get_all_profiles",
    "search_user_profiles",
    "search_profiles",
    "get_profile_change_log",
    "delete_profile",
    "delete_profiles_by_ids",
    "delete_all_profiles",
    "add_user_playbook",
    "add_agent_playbooks",
    "get_user_playbooks",
    "get_agent_playbooks",
    "update_user_playbook",
    "update_agent_playbook",
    "update_agent_playbook_status",
    "search_user_playbooks",
    "search_agent_playbooks",
    "delete_user_playbook",
    "delete_agent_playbook",
    "delete_user_playbooks_by_ids",
    "delete_agent_playbooks_by_ids",
    "delete_all_playbooks",
    "delete_all_user_playbooks",
    "delete_all_agent_playbooks",
    "search",
    "search_async",
    "clear_user_data",
    "HTTP GET /",
    "HTTP GET /health",
    "HTTP GET /health/ready",
    "HTTP GET /health/live",
    "HTTP GET /meta/version",
    "HTTP POST /api/finalize_session",
    "HTTP PUT /api/update_user_profile",
    "HTTP GET /api/get_profile_statistics",
    "HTTP GET /api/export_user_data",
    "HTTP no redirects",
}


@pytest.fixture(scope="module")
def compat_python() -> Path:
    script = REPO / "scripts" / "compat_venv.sh"
    result = subprocess.run([str(script)], capture_output=True, text=True, timeout=900)
    if result.returncode == NO_PYTHON_312:
        pytest.skip(f"the 0.2.16 compatibility test needs Python 3.12: {result.stderr.strip()}")
    assert result.returncode == 0, f"{script} failed:\n{result.stderr}"
    return Path(result.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_server(tmp_path_factory.mktemp("compat")) as url:
        yield url


@pytest.mark.timeout(1200)  # the first run builds the venv from PyPI
def test_reflexio_client_0_2_16_against_our_server(
    compat_python: Path, server_url: str, tmp_path: Path
) -> None:
    # A clean environment: nothing of ours on the path, no key, our server as the default.
    env = {key: value for key, value in os.environ.items() if not key.startswith(("REFLEXIO_", "PYTHON"))}
    env.pop("IS_TEST_ENV", None)
    env["REFLEXIO_URL"] = server_url
    result = subprocess.run(
        [str(compat_python), str(DRIVER)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
        env=env,
    )
    assert result.returncode == 0, f"driver crashed:\n{result.stdout}\n{result.stderr}"
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["client_version"] == "0.2.16"
    assert str(compat_python.parent.parent) in summary["client_file"]  # the published client, not ours
    assert summary["failed"] == {}
    assert EXPECTED - set(summary["passed"]) == set()
