"""The public surface: importable without the server, and call-compatible with 0.2.16."""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import reflexio
from reflexio import AsyncReflexioClient, ReflexioClient

# Every ReflexioClient method of reflexio-client 0.2.16 that maps to a route we serve, with
# its parameters in order ("*" starts the keyword-only ones), taken from its client.py.
SIGNATURES_0_2_16: dict[str, tuple[str, ...]] = {
    "publish_interaction": (
        "user_id",
        "interactions",
        "source=''",
        "agent_version='agent-v0'",
        "session_id=None",
        "wait_for_response=False",
        "skip_aggregation=False",
        "force_extraction=False",
        "evaluation_only=False",
        "override_learning_stall=False",
        "retrieval_experiment_id=None",
        "retrieval_experiment_arm=None",
    ),
    "get_learning_status": ("request_id",),
    "search_interactions": (
        "request=None",
        "*",
        "user_id=None",
        "request_id=None",
        "query=None",
        "start_time=None",
        "end_time=None",
        "top_k=None",
        "most_recent_k=None",
        "threshold=None",
        "search_mode=None",
    ),
    "search_user_profiles": (
        "request=None",
        "*",
        "user_id=None",
        "generated_from_request_id=None",
        "query=None",
        "start_time=None",
        "end_time=None",
        "top_k=None",
        "source=None",
        "custom_feature=None",
        "extractor_name=None",
        "tags=None",
        "threshold=None",
        "enable_reformulation=None",
        "search_mode=None",
    ),
    "search_profiles": (
        "request=None",
        "*",
        "user_id=None",
        "generated_from_request_id=None",
        "query=None",
        "start_time=None",
        "end_time=None",
        "top_k=None",
        "source=None",
        "custom_feature=None",
        "extractor_name=None",
        "tags=None",
        "threshold=None",
        "enable_reformulation=None",
        "search_mode=None",
    ),
    "search_user_playbooks": (
        "request=None",
        "*",
        "query=None",
        "user_id=None",
        "agent_version=None",
        "playbook_name=None",
        "source=None",
        "start_time=None",
        "end_time=None",
        "status_filter=None",
        "tags=None",
        "top_k=None",
        "threshold=None",
        "enable_reformulation=None",
        "search_mode=None",
        "request_id=None",
        "session_id=None",
    ),
    "search_agent_playbooks": (
        "request=None",
        "*",
        "query=None",
        "user_id=None",
        "agent_version=None",
        "playbook_name=None",
        "source=None",
        "start_time=None",
        "end_time=None",
        "status_filter=None",
        "playbook_status_filter=None",
        "tags=None",
        "top_k=None",
        "threshold=None",
        "enable_reformulation=None",
        "search_mode=None",
    ),
    "delete_profile": ("user_id", "profile_id=''", "search_query=''", "wait_for_response=False"),
    "delete_interaction": ("user_id", "interaction_id", "wait_for_response=False"),
    "delete_request": ("request_id", "wait_for_response=False"),
    "delete_session": ("session_id", "wait_for_response=False"),
    "delete_agent_playbook": ("agent_playbook_id", "wait_for_response=False"),
    "delete_user_playbook": ("user_playbook_id", "wait_for_response=False"),
    "get_profile_change_log": (),
    "get_interactions": (
        "request=None",
        "*",
        "user_id=None",
        "start_time=None",
        "end_time=None",
        "top_k=None",
    ),
    "get_profiles": (
        "request=None",
        "force_refresh=False",
        "*",
        "user_id=None",
        "profile_id=None",
        "query=None",
        "start_time=None",
        "end_time=None",
        "top_k=None",
        "source=None",
        "profile_time_to_live=None",
        "status_filter=None",
        "tags=None",
    ),
    "get_all_interactions": ("limit=100",),
    "get_all_profiles": (
        "limit=100",
        "status_filter=None",
        "user_id=None",
        "profile_id=None",
        "query=None",
        "source=None",
        "profile_time_to_live=None",
        "start_time=None",
        "end_time=None",
    ),
    "set_config": ("config",),
    "update_config": ("partial",),
    "get_config": (),
    "get_user_playbooks": (
        "request=None",
        "*",
        "limit=None",
        "user_playbook_id=None",
        "user_id=None",
        "request_id=None",
        "query=None",
        "playbook_name=None",
        "agent_version=None",
        "start_time=None",
        "end_time=None",
        "status_filter=None",
        "tags=None",
    ),
    "add_user_playbook": ("user_playbooks",),
    "add_agent_playbooks": ("agent_playbooks",),
    "add_user_profile": ("user_profiles",),
    "update_user_playbook": (
        "user_playbook_id",
        "*",
        "playbook_name=None",
        "content=None",
        "trigger=None",
        "rationale=None",
    ),
    "update_agent_playbook": (
        "agent_playbook_id",
        "*",
        "playbook_name=None",
        "content=None",
        "trigger=None",
        "rationale=None",
        "playbook_status=None",
    ),
    "update_agent_playbook_status": ("agent_playbook_id", "*", "playbook_status"),
    "get_agent_playbooks": (
        "request=None",
        "force_refresh=False",
        "*",
        "limit=None",
        "agent_playbook_id=None",
        "query=None",
        "playbook_name=None",
        "agent_version=None",
        "start_time=None",
        "end_time=None",
        "status_filter=None",
        "playbook_status_filter=None",
        "tags=None",
    ),
    "get_requests": (
        "request=None",
        "*",
        "user_id=None",
        "request_id=None",
        "session_id=None",
        "source=None",
        "start_time=None",
        "end_time=None",
        "top_k=None",
    ),
    "get_agent_success_evaluation_results": (
        "request=None",
        "*",
        "limit=None",
        "agent_version=None",
        "start_time=None",
        "end_time=None",
    ),
    "get_retrieved_learning_evaluation_results": (
        "request=None",
        "*",
        "user_id=None",
        "session_id=None",
        "start_time=None",
        "end_time=None",
        "limit=None",
    ),
    "rerun_profile_generation": (
        "request=None",
        "wait_for_response=False",
        "*",
        "user_id=None",
        "start_time=None",
        "end_time=None",
        "source=None",
        "extractor_names=None",
    ),
    "upgrade_profiles": ("*", "user_id=None", "only_affected_users=True"),
    "upgrade_user_playbooks": ("*", "agent_version=None", "playbook_name=None"),
    "manual_profile_generation": ("request=None", "*", "user_id=None", "source=None", "extractor_names=None"),
    "rerun_playbook_generation": (
        "request=None",
        "wait_for_response=False",
        "*",
        "agent_version=None",
        "start_time=None",
        "end_time=None",
        "playbook_name=None",
    ),
    "manual_playbook_generation": (
        "request=None",
        "*",
        "agent_version=None",
        "source=None",
        "playbook_name=None",
    ),
    "run_playbook_aggregation": (
        "request=None",
        "wait_for_response=False",
        "*",
        "agent_version=None",
        "playbook_name=None",
    ),
    "search": (
        "request=None",
        "*",
        "query=None",
        "top_k=None",
        "threshold=None",
        "agent_version=None",
        "playbook_name=None",
        "user_id=None",
        "source=None",
        "tags=None",
        "entity_types=None",
        "agent_playbook_status_filter=None",
        "enable_reformulation=None",
        "enable_agent_answer=None",
        "conversation_history=None",
        "search_mode=None",
        "request_id=None",
        "session_id=None",
        "interaction_id=None",
    ),
    "delete_requests_by_ids": ("request_ids",),
    "delete_profiles_by_ids": ("profile_ids",),
    "delete_agent_playbooks_by_ids": ("agent_playbook_ids",),
    "delete_user_playbooks_by_ids": ("user_playbook_ids",),
    "whoami": (),
    "delete_all_interactions": (),
    "delete_all_profiles": (),
    "delete_all_playbooks": (),
    "delete_all_user_playbooks": (),
    "delete_all_agent_playbooks": (),
    "clear_user_data": ("user_id",),
}
# 0.2.16's two coroutines take exactly the parameters of their blocking twins.
SIGNATURES_0_2_16["publish_interaction_async"] = SIGNATURES_0_2_16["publish_interaction"]
SIGNATURES_0_2_16["search_async"] = SIGNATURES_0_2_16["search"]


def _spelled(parameter: inspect.Parameter) -> str:
    if parameter.default is inspect.Parameter.empty:
        return parameter.name
    return f"{parameter.name}={parameter.default!r}"


def _ours(cls: type, name: str) -> tuple[str, ...]:
    spelled: list[str] = []
    for parameter in list(inspect.signature(getattr(cls, name)).parameters.values())[1:]:
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY and "*" not in spelled:
            spelled.append("*")
        spelled.append(_spelled(parameter))
    return tuple(spelled)


@pytest.mark.parametrize("cls", [ReflexioClient, AsyncReflexioClient])
@pytest.mark.parametrize("name", sorted(SIGNATURES_0_2_16))
def test_signature_extends_0_2_16(cls: type, name: str) -> None:
    """Same parameters, order, kinds and defaults; anything added is keyword-only at the end."""
    theirs = SIGNATURES_0_2_16[name]
    ours = _ours(cls, name)
    if "*" in theirs:
        split = theirs.index("*")
        assert ours[:split] == theirs[:split]
        assert set(theirs[split:]) <= set(ours[split:])
        assert ours[split] == "*"
    else:
        assert ours[: len(theirs)] == theirs
        assert all(extra == "*" or "*" in ours[: ours.index(extra)] for extra in ours[len(theirs) :])


def test_constructor_is_0_2_16s() -> None:
    for cls in (ReflexioClient, AsyncReflexioClient):
        parameters = list(inspect.signature(cls).parameters.values())
        assert [_spelled(parameter) for parameter in parameters[:3]] == [
            "api_key=''",
            "url_endpoint=''",
            "timeout=300.0",
        ]
        assert all(parameter.kind is inspect.Parameter.KEYWORD_ONLY for parameter in parameters[3:])


def test_every_public_method_has_a_docstring() -> None:
    for cls in (ReflexioClient, AsyncReflexioClient):
        for name in dir(cls):
            if not name.startswith("_"):
                assert (getattr(cls, name).__doc__ or "").strip(), f"{cls.__name__}.{name}"


def test_async_methods_are_coroutines() -> None:
    for name in SIGNATURES_0_2_16:
        assert inspect.iscoroutinefunction(getattr(AsyncReflexioClient, name)), name
    assert inspect.iscoroutinefunction(ReflexioClient.search_async)
    assert not inspect.iscoroutinefunction(ReflexioClient.search)


def test_public_names() -> None:
    for name in ("ReflexioClient", "AsyncReflexioClient", "InteractionData", "UserActionType", "ToolUsed"):
        assert name in reflexio.__all__
    for name in reflexio.__all__:
        assert hasattr(reflexio, name), name


def test_importing_reflexio_loads_no_server_code() -> None:
    code = textwrap.dedent(
        """
        import sys
        import reflexio
        from reflexio import ReflexioClient, InteractionData, UserActionType
        heavy = [name for name in ("numpy", "fastapi", "uvicorn", "starlette", "reflexio.storage",
                 "reflexio.service", "reflexio.api", "reflexio.embed", "litellm") if name in sys.modules]
        print(",".join(heavy))
        """
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == ""


def test_client_package_depends_only_on_models_errors_and_config() -> None:
    allowed = (
        "reflexio.client",
        "reflexio.models",
        "reflexio.errors",
        "reflexio.config",
        "reflexio._version",
        "httpx",
        "pydantic",
    )
    package = Path(reflexio.client.__file__).parent
    for source in package.glob("*.py"):
        for node in ast.walk(ast.parse(source.read_text())):
            names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                top = name.split(".")[0]
                assert name.startswith(allowed) or top in sys.stdlib_module_names, f"{source.name}: {name}"
