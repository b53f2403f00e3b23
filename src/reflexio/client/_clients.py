"""``ReflexioClient`` and ``AsyncReflexioClient``: the same methods, blocking or awaitable.

Each method is written once, as a plan in one of the resource modules; the two classes only
list them, wrapped by :func:`_sync` or :func:`_async`, which run the plan over an
``httpx.Client`` or an ``httpx.AsyncClient`` and copy its signature and docstring.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import AsyncGenerator, Callable, Coroutine, Generator
from types import TracebackType
from typing import Any, Concatenate, ParamSpec, TypeVar

import httpx

from reflexio.client import (
    _aggregation,
    _evaluation,
    _generation,
    _interactions,
    _playbooks,
    _profiles,
    _provenance,
    _search,
    _system,
)
from reflexio.client._events import EventQuery, aiter_events, iter_events
from reflexio.client._transport import Plan, client_options, run_async, run_sync
from reflexio.config import ClientSettings
from reflexio.models.api_events import StreamEvent

__all__ = ["AsyncReflexioClient", "ReflexioClient"]

P = ParamSpec("P")
T = TypeVar("T")

#: Seconds a request may take before it fails (Reflexio's default).
DEFAULT_TIMEOUT = 300.0


class _Settings:
    """Where and how to connect, resolved once: arguments first, then the environment."""

    def __init__(self, api_key: str, url_endpoint: str, timeout: float) -> None:
        env = ClientSettings.from_env()
        self.base_url = (url_endpoint or env.url).rstrip("/")
        self.api_key = api_key or env.api_key
        self.timeout = timeout

    def options(self) -> dict[str, Any]:
        return client_options(self.base_url, self.api_key, self.timeout)


def _adopt(method: Callable[..., Any], plan: Callable[..., Any], *, is_async: bool) -> None:
    """Give ``method`` the plan's name, docstring and signature (with ``self`` in front).

    ``__signature__`` is set explicitly so ``help()`` and IDEs show the real parameters;
    ``functools.wraps`` alone would make ``inspect`` drop the plan's first parameter.
    """
    functools.update_wrapper(method, plan, assigned=("__name__", "__qualname__", "__doc__"), updated=())
    signature = inspect.signature(plan)
    result = signature.return_annotation
    if isinstance(result, str) and result.startswith("Plan[") and result.endswith("]"):
        result = result[len("Plan[") : -1]
    self_parameter = inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY)
    method.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[self_parameter, *signature.parameters.values()], return_annotation=result
    )
    if is_async:
        method.__doc__ = f"{plan.__doc__ or ''}\n\n    (Coroutine: await it.)"


def _sync(plan: Callable[P, Plan[T]]) -> Callable[Concatenate[ReflexioClient, P], T]:
    def method(self: ReflexioClient, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return run_sync(self._http, plan(*args, **kwargs))

    _adopt(method, plan, is_async=False)
    return method


def _async(
    plan: Callable[P, Plan[T]],
) -> Callable[Concatenate[AsyncReflexioClient, P], Coroutine[Any, Any, T]]:
    async def method(self: AsyncReflexioClient, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return await run_async(self._http, plan(*args, **kwargs))

    _adopt(method, plan, is_async=True)
    return method


def _async_oneshot(
    plan: Callable[P, Plan[T]],
) -> Callable[Concatenate[ReflexioClient, P], Coroutine[Any, Any, T]]:
    """A coroutine method of the *sync* client, for Reflexio's ``*_async`` methods.

    It opens a short-lived ``httpx.AsyncClient`` per call, so it works from any event loop.
    """

    async def method(self: ReflexioClient, /, *args: P.args, **kwargs: P.kwargs) -> T:
        async with httpx.AsyncClient(**self._settings.options(), transport=self._async_transport) as http:
            return await run_async(http, plan(*args, **kwargs))

    _adopt(method, plan, is_async=True)
    return method


class ReflexioClient:
    """Blocking client for a Reflexio server (yours, or any Reflexio 0.2.32-compatible one).

    Method names and arguments are those of ``reflexio-client`` 0.2.16, so code written for
    it runs unchanged; every method returns the typed response model and every failure raises
    a :class:`~reflexio.errors.ReflexioError` subclass (``NotFoundError``,
    ``ValidationError``, ``ServiceUnavailableError`` when the server cannot be reached, ...).

    Args:
        api_key: Sent as ``Authorization: Bearer``; defaults to ``REFLEXIO_API_KEY``. A
            server with no keys configured answers loopback callers without one.
        url_endpoint: Base URL of the server; defaults to ``REFLEXIO_URL``, then the local
            server (``http://127.0.0.1:8081``). A path prefix is kept.
        timeout: Seconds each request may take.
        transport: An httpx transport to use instead of the network (tests pass
            ``httpx.MockTransport``; ``httpx.ASGITransport`` talks to an app in-process).
    """

    def __init__(
        self,
        api_key: str = "",
        url_endpoint: str = "",
        timeout: float = DEFAULT_TIMEOUT,
        *,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._settings = _Settings(api_key, url_endpoint, timeout)
        self._http = httpx.Client(**self._settings.options(), transport=transport)
        self._async_transport = transport if isinstance(transport, httpx.AsyncBaseTransport) else None

    @property
    def base_url(self) -> str:
        """The server this client talks to."""
        return self._settings.base_url

    @property
    def api_key(self) -> str:
        """The API key sent with each request (empty when none)."""
        return self._settings.api_key

    @property
    def timeout(self) -> float:
        """Seconds each request may take."""
        return self._settings.timeout

    def close(self) -> None:
        """Close pooled connections; the client cannot be used afterwards."""
        self._http.close()

    def __enter__(self) -> ReflexioClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ReflexioClient(url_endpoint={self.base_url!r})"

    # -- system, identity, config, user data, jobs --------------------------------------------
    health = _sync(_system.health)
    version = _sync(_system.version)
    whoami = _sync(_system.whoami)
    get_usage = _sync(_system.get_usage)
    get_config = _sync(_system.get_config)
    set_config = _sync(_system.set_config)
    update_config = _sync(_system.update_config)
    clear_user_data = _sync(_system.clear_user_data)
    export_user_data = _sync(_system.export_user_data)
    list_jobs = _sync(_system.list_jobs)
    retry_jobs = _sync(_system.retry_jobs)

    # -- interactions --------------------------------------------------------------------------
    publish_interaction = _sync(_interactions.publish_interaction)
    publish_interaction_async = _async_oneshot(_interactions.publish_interaction)
    get_learning_status = _sync(_interactions.get_learning_status)
    finalize_session = _sync(_interactions.finalize_session)
    get_interactions = _sync(_interactions.get_interactions)
    get_all_interactions = _sync(_interactions.get_all_interactions)
    get_requests = _sync(_interactions.get_requests)
    search_interactions = _sync(_interactions.search_interactions)
    delete_interaction = _sync(_interactions.delete_interaction)
    delete_request = _sync(_interactions.delete_request)
    delete_session = _sync(_interactions.delete_session)
    delete_requests_by_ids = _sync(_interactions.delete_requests_by_ids)
    delete_all_interactions = _sync(_interactions.delete_all_interactions)

    # -- search --------------------------------------------------------------------------------
    search = _sync(_search.search)
    search_async = _async_oneshot(_search.search)

    # -- the live event stream -----------------------------------------------------------------
    def events(
        self,
        *,
        types: list[str] | None = None,
        kinds: list[str] | None = None,
        user_id: str | None = None,
        after: int | None = None,
        follow: bool = True,
        give_up_after: float | None = None,
    ) -> Generator[StreamEvent, None, None]:
        """Follow what happens to the org's learnings and work, as it happens (``GET /api/events``).

        Learnings created, superseded, retired, approved and rejected, jobs dead-lettered and
        evaluations finished, in the order they were committed. A dropped connection is
        resumed after the last event delivered, so each event arrives exactly once. Stopping
        early, ``close()`` the generator to drop the connection at once.

        Args:
            types: Event types to receive (see ``reflexio.models.api_events.EVENT_TYPES``).
            kinds: Only these learning kinds (or job tasks).
            user_id: Only events about this user.
            after: Start after this event id (``0``: from the first; ``None``: from now on).
            follow: Wait for new events; ``False`` stops after those already there.
            give_up_after: Stop reconnecting after this many seconds without a connection.

        Raises:
            ServiceUnavailableError: The server stayed unreachable (or ``follow`` is off).
        """
        query = EventQuery(types, kinds, user_id, after, follow, give_up_after=give_up_after)
        return iter_events(self._http, query)

    # -- profiles ------------------------------------------------------------------------------
    add_user_profile = _sync(_profiles.add_user_profile)
    get_profiles = _sync(_profiles.get_profiles)
    get_all_profiles = _sync(_profiles.get_all_profiles)
    update_user_profile = _sync(_profiles.update_user_profile)
    search_user_profiles = _sync(_profiles.search_user_profiles)
    search_profiles = _sync(_profiles.search_profiles)
    get_profile_change_log = _sync(_profiles.get_profile_change_log)
    get_profile_statistics = _sync(_profiles.get_profile_statistics)
    delete_profile = _sync(_profiles.delete_profile)
    delete_profiles_by_ids = _sync(_profiles.delete_profiles_by_ids)
    delete_all_profiles = _sync(_profiles.delete_all_profiles)

    # -- playbooks -----------------------------------------------------------------------------
    add_user_playbook = _sync(_playbooks.add_user_playbook)
    add_agent_playbooks = _sync(_playbooks.add_agent_playbooks)
    add_agent_playbook = add_agent_playbooks
    get_user_playbooks = _sync(_playbooks.get_user_playbooks)
    get_agent_playbooks = _sync(_playbooks.get_agent_playbooks)
    update_user_playbook = _sync(_playbooks.update_user_playbook)
    update_agent_playbook = _sync(_playbooks.update_agent_playbook)
    update_agent_playbook_status = _sync(_playbooks.update_agent_playbook_status)
    search_user_playbooks = _sync(_playbooks.search_user_playbooks)
    search_agent_playbooks = _sync(_playbooks.search_agent_playbooks)
    delete_user_playbook = _sync(_playbooks.delete_user_playbook)
    delete_agent_playbook = _sync(_playbooks.delete_agent_playbook)
    delete_user_playbooks_by_ids = _sync(_playbooks.delete_user_playbooks_by_ids)
    delete_agent_playbooks_by_ids = _sync(_playbooks.delete_agent_playbooks_by_ids)
    delete_all_playbooks = _sync(_playbooks.delete_all_playbooks)
    delete_all_user_playbooks = _sync(_playbooks.delete_all_user_playbooks)
    delete_all_agent_playbooks = _sync(_playbooks.delete_all_agent_playbooks)

    # -- generation, operations, evaluation ----------------------------------------------------
    rerun_profile_generation = _sync(_generation.rerun_profile_generation)
    manual_profile_generation = _sync(_generation.manual_profile_generation)
    upgrade_profiles = _sync(_generation.upgrade_profiles)
    downgrade_profiles = _sync(_generation.downgrade_profiles)
    rerun_playbook_generation = _sync(_generation.rerun_playbook_generation)
    manual_playbook_generation = _sync(_generation.manual_playbook_generation)
    upgrade_user_playbooks = _sync(_generation.upgrade_user_playbooks)
    downgrade_user_playbooks = _sync(_generation.downgrade_user_playbooks)
    run_playbook_aggregation = _sync(_generation.run_playbook_aggregation)
    submit_playbook_aggregation = _sync(_aggregation.submit_playbook_aggregation)
    get_playbook_aggregation_operation = _sync(_aggregation.get_playbook_aggregation_operation)
    get_playbook_aggregation_change_logs = _sync(_aggregation.get_playbook_aggregation_change_logs)
    get_agent_playbook_review_queue = _sync(_aggregation.get_agent_playbook_review_queue)
    get_learning_provenance = _sync(_provenance.get_learning_provenance)
    get_operation_status = _sync(_generation.get_operation_status)
    get_agent_success_evaluation_results = _sync(_generation.get_agent_success_evaluation_results)
    get_retrieved_learning_evaluation_results = _sync(_generation.get_retrieved_learning_evaluation_results)
    mark_session_outcome = _sync(_evaluation.mark_session_outcome)
    get_session_outcomes = _sync(_evaluation.get_session_outcomes)
    grade_on_demand = _sync(_evaluation.grade_on_demand)
    list_shadow_comparisons = _sync(_evaluation.list_shadow_comparisons)
    get_evaluation_overview = _sync(_evaluation.get_evaluation_overview)
    get_playbook_application_stats = _sync(_evaluation.get_playbook_application_stats)
    get_learning_impact = _sync(_evaluation.get_learning_impact)
    get_reflection_actions = _sync(_evaluation.get_reflection_actions)
    revert_reflection_action = _sync(_evaluation.revert_reflection_action)
    list_retrieval_experiments = _sync(_evaluation.list_retrieval_experiments)
    start_retrieval_experiment = _sync(_evaluation.start_retrieval_experiment)
    stop_retrieval_experiment = _sync(_evaluation.stop_retrieval_experiment)
    get_retrieval_experiment_results = _sync(_evaluation.get_retrieval_experiment_results)


class AsyncReflexioClient:
    """Awaitable client with exactly the methods of :class:`ReflexioClient`.

    Use it from asyncio code (agent frameworks, web handlers) so a search or a publish does
    not block the event loop. ``search_async``/``publish_interaction_async`` are aliases of
    ``search``/``publish_interaction``, so code written for the sync client's coroutines
    keeps working.

    Args:
        api_key: Sent as ``Authorization: Bearer``; defaults to ``REFLEXIO_API_KEY``.
        url_endpoint: Base URL of the server; defaults to ``REFLEXIO_URL``, then the local
            server (``http://127.0.0.1:8081``). A path prefix is kept.
        timeout: Seconds each request may take.
        transport: An httpx async transport to use instead of the network (tests).
    """

    def __init__(
        self,
        api_key: str = "",
        url_endpoint: str = "",
        timeout: float = DEFAULT_TIMEOUT,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._settings = _Settings(api_key, url_endpoint, timeout)
        self._http = httpx.AsyncClient(**self._settings.options(), transport=transport)

    @property
    def base_url(self) -> str:
        """The server this client talks to."""
        return self._settings.base_url

    @property
    def api_key(self) -> str:
        """The API key sent with each request (empty when none)."""
        return self._settings.api_key

    @property
    def timeout(self) -> float:
        """Seconds each request may take."""
        return self._settings.timeout

    async def aclose(self) -> None:
        """Close pooled connections; the client cannot be used afterwards."""
        await self._http.aclose()

    async def __aenter__(self) -> AsyncReflexioClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"AsyncReflexioClient(url_endpoint={self.base_url!r})"

    # -- system, identity, config, user data, jobs --------------------------------------------
    health = _async(_system.health)
    version = _async(_system.version)
    whoami = _async(_system.whoami)
    get_usage = _async(_system.get_usage)
    get_config = _async(_system.get_config)
    set_config = _async(_system.set_config)
    update_config = _async(_system.update_config)
    clear_user_data = _async(_system.clear_user_data)
    export_user_data = _async(_system.export_user_data)
    list_jobs = _async(_system.list_jobs)
    retry_jobs = _async(_system.retry_jobs)

    # -- interactions --------------------------------------------------------------------------
    publish_interaction = _async(_interactions.publish_interaction)
    publish_interaction_async = publish_interaction
    get_learning_status = _async(_interactions.get_learning_status)
    finalize_session = _async(_interactions.finalize_session)
    get_interactions = _async(_interactions.get_interactions)
    get_all_interactions = _async(_interactions.get_all_interactions)
    get_requests = _async(_interactions.get_requests)
    search_interactions = _async(_interactions.search_interactions)
    delete_interaction = _async(_interactions.delete_interaction)
    delete_request = _async(_interactions.delete_request)
    delete_session = _async(_interactions.delete_session)
    delete_requests_by_ids = _async(_interactions.delete_requests_by_ids)
    delete_all_interactions = _async(_interactions.delete_all_interactions)

    # -- search --------------------------------------------------------------------------------
    search = _async(_search.search)
    search_async = search

    # -- the live event stream -----------------------------------------------------------------
    def events(
        self,
        *,
        types: list[str] | None = None,
        kinds: list[str] | None = None,
        user_id: str | None = None,
        after: int | None = None,
        follow: bool = True,
        give_up_after: float | None = None,
    ) -> AsyncGenerator[StreamEvent, None]:
        """Follow the org's learnings and work as they change: ``async for event in client.events()``.

        Learnings created, superseded, retired, approved and rejected, jobs dead-lettered and
        evaluations finished, in the order they were committed. A dropped connection is
        resumed after the last event delivered, so each event arrives exactly once. Stopping
        early, ``await events.aclose()`` drops the connection at once.

        Args:
            types: Event types to receive (see ``reflexio.models.api_events.EVENT_TYPES``).
            kinds: Only these learning kinds (or job tasks).
            user_id: Only events about this user.
            after: Start after this event id (``0``: from the first; ``None``: from now on).
            follow: Wait for new events; ``False`` stops after those already there.
            give_up_after: Stop reconnecting after this many seconds without a connection.

        Raises:
            ServiceUnavailableError: The server stayed unreachable (or ``follow`` is off).
        """
        query = EventQuery(types, kinds, user_id, after, follow, give_up_after=give_up_after)
        return aiter_events(self._http, query)

    # -- profiles ------------------------------------------------------------------------------
    add_user_profile = _async(_profiles.add_user_profile)
    get_profiles = _async(_profiles.get_profiles)
    get_all_profiles = _async(_profiles.get_all_profiles)
    update_user_profile = _async(_profiles.update_user_profile)
    search_user_profiles = _async(_profiles.search_user_profiles)
    search_profiles = _async(_profiles.search_profiles)
    get_profile_change_log = _async(_profiles.get_profile_change_log)
    get_profile_statistics = _async(_profiles.get_profile_statistics)
    delete_profile = _async(_profiles.delete_profile)
    delete_profiles_by_ids = _async(_profiles.delete_profiles_by_ids)
    delete_all_profiles = _async(_profiles.delete_all_profiles)

    # -- playbooks -----------------------------------------------------------------------------
    add_user_playbook = _async(_playbooks.add_user_playbook)
    add_agent_playbooks = _async(_playbooks.add_agent_playbooks)
    add_agent_playbook = add_agent_playbooks
    get_user_playbooks = _async(_playbooks.get_user_playbooks)
    get_agent_playbooks = _async(_playbooks.get_agent_playbooks)
    update_user_playbook = _async(_playbooks.update_user_playbook)
    update_agent_playbook = _async(_playbooks.update_agent_playbook)
    update_agent_playbook_status = _async(_playbooks.update_agent_playbook_status)
    search_user_playbooks = _async(_playbooks.search_user_playbooks)
    search_agent_playbooks = _async(_playbooks.search_agent_playbooks)
    delete_user_playbook = _async(_playbooks.delete_user_playbook)
    delete_agent_playbook = _async(_playbooks.delete_agent_playbook)
    delete_user_playbooks_by_ids = _async(_playbooks.delete_user_playbooks_by_ids)
    delete_agent_playbooks_by_ids = _async(_playbooks.delete_agent_playbooks_by_ids)
    delete_all_playbooks = _async(_playbooks.delete_all_playbooks)
    delete_all_user_playbooks = _async(_playbooks.delete_all_user_playbooks)
    delete_all_agent_playbooks = _async(_playbooks.delete_all_agent_playbooks)

    # -- generation, operations, evaluation ----------------------------------------------------
    rerun_profile_generation = _async(_generation.rerun_profile_generation)
    manual_profile_generation = _async(_generation.manual_profile_generation)
    upgrade_profiles = _async(_generation.upgrade_profiles)
    downgrade_profiles = _async(_generation.downgrade_profiles)
    rerun_playbook_generation = _async(_generation.rerun_playbook_generation)
    manual_playbook_generation = _async(_generation.manual_playbook_generation)
    upgrade_user_playbooks = _async(_generation.upgrade_user_playbooks)
    downgrade_user_playbooks = _async(_generation.downgrade_user_playbooks)
    run_playbook_aggregation = _async(_generation.run_playbook_aggregation)
    submit_playbook_aggregation = _async(_aggregation.submit_playbook_aggregation)
    get_playbook_aggregation_operation = _async(_aggregation.get_playbook_aggregation_operation)
    get_playbook_aggregation_change_logs = _async(_aggregation.get_playbook_aggregation_change_logs)
    get_agent_playbook_review_queue = _async(_aggregation.get_agent_playbook_review_queue)
    get_learning_provenance = _async(_provenance.get_learning_provenance)
    get_operation_status = _async(_generation.get_operation_status)
    get_agent_success_evaluation_results = _async(_generation.get_agent_success_evaluation_results)
    get_retrieved_learning_evaluation_results = _async(_generation.get_retrieved_learning_evaluation_results)
    mark_session_outcome = _async(_evaluation.mark_session_outcome)
    get_session_outcomes = _async(_evaluation.get_session_outcomes)
    grade_on_demand = _async(_evaluation.grade_on_demand)
    list_shadow_comparisons = _async(_evaluation.list_shadow_comparisons)
    get_evaluation_overview = _async(_evaluation.get_evaluation_overview)
    get_playbook_application_stats = _async(_evaluation.get_playbook_application_stats)
    get_learning_impact = _async(_evaluation.get_learning_impact)
    get_reflection_actions = _async(_evaluation.get_reflection_actions)
    revert_reflection_action = _async(_evaluation.revert_reflection_action)
    list_retrieval_experiments = _async(_evaluation.list_retrieval_experiments)
    start_retrieval_experiment = _async(_evaluation.start_retrieval_experiment)
    stop_retrieval_experiment = _async(_evaluation.stop_retrieval_experiment)
    get_retrieval_experiment_results = _async(_evaluation.get_retrieval_experiment_results)
