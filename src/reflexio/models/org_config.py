"""The per-organisation ``Config``: what to learn, how often, with which models and storage.

Field names and defaults are Reflexio 0.2.32's, so ``get_config``/``set_config`` round-trip
with the published client. Older stored shapes (0.2.13 extractor lists, ``batch_size`` and
``batch_interval``, renamed prompt fields) are upgraded on the way in. API writes reject
unknown keys at every level; :meth:`Config.from_stored` is the lenient loader for documents
written by other versions. Reads go out through :meth:`Config.masked`, and writes come back
through :meth:`Config.merge_update`, which restores the secrets a round trip carried masked.

Our additions are marked as such: ``session_idle_seconds``, ``search_threshold``,
``approval_required``, ``allowed_origins``, ``holdout_rate``, ``holdout_kinds`` and
``reflection_policy``.
"""

import functools
from collections.abc import Callable, Mapping
from enum import StrEnum
from typing import Annotated, Any, Final, Literal, Self

from pydantic import ConfigDict, Field, StringConstraints, TypeAdapter, model_validator

from reflexio.models.entities import StorageConfigTest
from reflexio.models.fields import (
    MAX_EPOCH,
    NonEmptyStr,
    SanitizedNonEmptyStr,
    StrictModel,
)
from reflexio.models.llm_providers import (
    APIKeyConfig,
    AzureOpenAIConfig,
    CustomEndpointConfig,
    DashScopeConfig,
    LLMConfig,
    OpenAIConfig,
    ProviderKeyConfig,
)
from reflexio.models.secrets import mask_secrets, restore_masked_secrets

__all__ = [
    "DEFAULT_STRIDE_SIZE",
    "DEFAULT_WINDOW_SIZE",
    "APIKeyConfig",
    "AgentSuccessConfig",
    "AzureOpenAIConfig",
    "Config",
    "CustomEndpointConfig",
    "DashScopeConfig",
    "DeduplicationConfig",
    "ExpiryReclamationConfig",
    "ExtractionPreset",
    "GovernanceRetentionConfig",
    "LLMConfig",
    "LineageGCConfig",
    "OpenAIConfig",
    "PendingToolCallConfig",
    "PendingToolCallToolOverrideConfig",
    "PlaybookAggregatorConfig",
    "PlaybookConfig",
    "PlaybookOptimizerConfig",
    "ProfileExtractorConfig",
    "ProviderKeyConfig",
    "ReflectionPolicy",
    "RetrievalExperimentConfig",
    "RetrievalExperimentRecord",
    "RetrievalFloorConfig",
    "StorageConfig",
    "StorageConfigManagedSupabase",
    "StorageConfigPostgres",
    "StorageConfigSQLite",
    "StorageConfigSupabase",
    "ToolUseConfig",
    "UserPlaybookExtractorConfig",
]

#: A browser origin as a page's ``Origin`` header spells it: scheme, host, optional port.
ORIGIN_PATTERN: Final = r"^https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?$"

DEFAULT_WINDOW_SIZE: Final = 10
DEFAULT_STRIDE_SIZE: Final = 8
#: The largest extraction window (and stride): more interactions than fit one LLM prompt.
MAX_WINDOW: Final = 1_000
# Every numeric setting has a range (in the schema, enforced with a 422): a value such as 2**70
# would otherwise be accepted and then break every job that reads it.
_MONTH: Final = 30 * 86_400
_YEAR: Final = 365 * 86_400


def _renamed(data: Any, renames: Mapping[str, str], retired: frozenset[str] = frozenset()) -> Any:
    """Copy ``data`` with old key names moved to new ones (the new name wins) and retired keys
    removed."""
    if not isinstance(data, dict):
        return data
    moved = {key: value for key, value in data.items() if key not in retired}
    for old, new in renames.items():
        if old in moved:
            value = moved.pop(old)
            moved.setdefault(new, value)
    return moved


def _nullable(*keys: str) -> Callable[[dict[str, Any]], None]:
    """A schema hook stating that these fields also take ``null`` (for their default)."""

    def amend(schema: dict[str, Any]) -> None:
        properties = schema.get("properties", {})
        for key in keys:
            if key in properties:
                described = properties[key]
                nullable: dict[str, Any] = {"anyOf": [{k: v for k, v in described.items() if k != "default"}]}
                nullable["anyOf"].append({"type": "null"})
                if "default" in described:
                    nullable["default"] = described["default"]
                properties[key] = nullable

    return amend


# ---------------------------------------------------------------------------------------------
# Storage
# ---------------------------------------------------------------------------------------------


class _StorageConfig(StrictModel):
    # The union below is untagged: ``extra="forbid"`` on every member is what stops a broken
    # Supabase or Postgres config from quietly validating as SQLite.
    model_config = ConfigDict(extra="forbid", populate_by_name=True, serialize_by_alias=True)


class StorageConfigSQLite(_StorageConfig):
    """A local SQLite file; ``db_path=None`` means the server's default location."""

    storage_type: Literal["sqlite"] = Field(default="sqlite", alias="type", exclude=True)
    db_path: str | None = None


class StorageConfigSupabase(_StorageConfig):
    """A Supabase project (accepted for compatibility; served by enterprise plug-ins)."""

    storage_type: Literal["supabase"] = Field(default="supabase", alias="type", exclude=True)
    url: NonEmptyStr
    key: NonEmptyStr
    db_url: NonEmptyStr
    schema_name: str | None = Field(default=None, alias="schema")
    read_url: NonEmptyStr | None = None
    read_key: NonEmptyStr | None = None


class StorageConfigPostgres(_StorageConfig):
    """A PostgreSQL database, optionally with a read replica."""

    storage_type: Literal["postgres"] = Field(default="postgres", alias="type")
    db_url: NonEmptyStr
    schema_name: str | None = Field(default=None, alias="schema")
    pool_size: int = Field(default=10, ge=1, le=1_000)
    pool_acquire_timeout: float = Field(default=30.0, gt=0, le=300)
    read_db_url: NonEmptyStr | None = None
    read_pool_size: int | None = Field(default=None, ge=1, le=1_000)
    read_pool_acquire_timeout: float | None = Field(default=None, gt=0, le=300)


class StorageConfigManagedSupabase(_StorageConfig):
    """Redacted stand-in for storage a hosting platform manages."""

    managed_by: Literal["platform"]
    schema_present: bool = True


StorageConfig = (
    StorageConfigSQLite | StorageConfigSupabase | StorageConfigPostgres | StorageConfigManagedSupabase | None
)


@functools.cache
def _storage_config_adapter() -> TypeAdapter[StorageConfig]:
    """Built on first use, like the models (``WireModel.defer_build``)."""
    return TypeAdapter(StorageConfig)


# ---------------------------------------------------------------------------------------------
# Extractors and evaluation
# ---------------------------------------------------------------------------------------------

_OVERRIDE_RENAMES: Final = {
    "batch_size_override": "window_size_override",
    "batch_interval_override": "stride_size_override",
    "extraction_window_size_override": "window_size_override",
    "extraction_window_stride_override": "stride_size_override",
}
# Removed in 0.2.32; older configs and clients still send it.
_RETIRED_EXTRACTOR_KEYS: Final = frozenset({"metadata_definition_prompt"})

DEFAULT_PROFILE_PROMPT: Final = (
    "Extract key information about the user and their working environment: name, role, "
    "preferences, and stable facts the agent needs to know to serve the user correctly — "
    "including data/schema details (table names, column types, units, join paths), metric "
    "definitions the user enforces, and tool quirks or workarounds the user relies on. Do NOT "
    "extract behavioral rules for the agent (those belong in the playbook extractor)."
)
DEFAULT_PLAYBOOK_PROMPT: Final = (
    "Extract playbook rules about agent performance, including areas where the agent was "
    "helpful, areas for improvement, and any issues encountered during the interaction."
)
DEFAULT_SUCCESS_PROMPT: Final = (
    "Evaluate whether the AI agent successfully handled the user's session.\n\n"
    "Mark the session successful when, by the end of the conversation, the agent:\n"
    "1. Identified and addressed the user's main goal or question.\n"
    "2. Provided a correct, useful, and actionable response or completed the requested "
    "action.\n"
    "Mark the session unsuccessful when the agent failed to understand the request,\n"
    "gave incorrect or unhelpful guidance, did not complete an available action,\n"
    "ignored important constraints, or left the user unsatisfied."
)


class ToolUseConfig(StrictModel):
    """A tool the agent can call, described for extraction and evaluation prompts."""

    tool_name: NonEmptyStr
    tool_description: NonEmptyStr


class ProfileExtractorConfig(StrictModel):
    """What counts as a profile fact, and when to extract (one extractor per org)."""

    extractor_name: NonEmptyStr | None = None  # accepted and ignored
    extraction_definition_prompt: SanitizedNonEmptyStr
    context_prompt: str | None = None
    tagging_definition_prompt: str | None = None
    should_extract_profile_prompt_override: str | None = None
    request_sources_enabled: list[str] | None = None  # None = every source
    manual_trigger: bool = False  # publishes never run it; manual generation and reruns do
    window_size_override: int | None = Field(default=None, gt=0, le=MAX_WINDOW)
    stride_size_override: int | None = Field(default=None, gt=0, le=MAX_WINDOW)

    @model_validator(mode="before")
    @classmethod
    def _upgrade_legacy_names(cls, data: Any) -> Any:
        renames = {"profile_content_definition_prompt": "extraction_definition_prompt"}
        return _renamed(_renamed(data, renames, _RETIRED_EXTRACTOR_KEYS), _OVERRIDE_RENAMES)


class PlaybookAggregatorConfig(StrictModel):
    """How user playbooks are clustered into agent playbooks."""

    min_cluster_size: int = Field(default=2, ge=1, le=10_000)
    reaggregation_trigger_count: int = Field(default=2, ge=1, le=10_000)
    clustering_similarity: float | None = Field(default=None, ge=0.0, le=1.0)  # None = model's
    direction_overlap_threshold: float = Field(default=0.6, ge=0.0, le=1.0)
    # --- Our additions ---
    # Distinct users a lesson needs before it becomes an agent playbook: one person's
    # preference never becomes a rule for everyone.
    min_users: int = Field(default=2, ge=1, le=10_000)
    # New agent playbooks taught by at least this many distinct users are approved at once
    # (None: every one waits for a reviewer). ``approval_required`` overrides it.
    auto_approve_min_users: int | None = Field(default=None, ge=1, le=10_000)
    # Seconds between the last change of a scope's user playbooks and its aggregation run:
    # a burst of learning is one run.
    delay_seconds: float = Field(default=10.0, ge=0.0, le=86_400.0)

    @model_validator(mode="before")
    @classmethod
    def _upgrade_legacy_names(cls, data: Any) -> Any:
        return _renamed(
            data,
            {
                "min_feedback_threshold": "min_cluster_size",
                "refresh_count": "reaggregation_trigger_count",
                "similarity_threshold": "clustering_similarity",
            },
        )


class DeduplicationConfig(StrictModel):
    """How candidates for merging a new playbook into an existing one are found."""

    search_threshold: float = Field(default=0.4, ge=0.0, le=1.0)
    search_top_k: int = Field(default=5, ge=1, le=100)
    max_unified_content_chars: int = Field(default=1200, gt=0, le=100_000)
    strategy: Literal["legacy", "audited"] = "legacy"


class UserPlaybookExtractorConfig(StrictModel):
    """What counts as a behaviour rule, and how rules are aggregated (one per org)."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_nullable("aggregation_config"))

    extractor_name: NonEmptyStr | None = None  # accepted and ignored
    extraction_definition_prompt: SanitizedNonEmptyStr
    context_prompt: str | None = None
    tagging_definition_prompt: str | None = None
    aggregation_config: PlaybookAggregatorConfig = Field(default_factory=PlaybookAggregatorConfig)
    deduplication_config: DeduplicationConfig | None = None
    request_sources_enabled: list[str] | None = None
    window_size_override: int | None = Field(default=None, gt=0, le=MAX_WINDOW)
    stride_size_override: int | None = Field(default=None, gt=0, le=MAX_WINDOW)

    @model_validator(mode="before")
    @classmethod
    def _upgrade_legacy_names(cls, data: Any) -> Any:
        renames = {
            "feedback_definition_prompt": "extraction_definition_prompt",
            "playbook_definition_prompt": "extraction_definition_prompt",
            "feedback_aggregator_config": "aggregation_config",
            "playbook_aggregator_config": "aggregation_config",
            "playbook_name": "extractor_name",
            "feedback_name": "extractor_name",
        }
        data = _renamed(_renamed(data, renames, _RETIRED_EXTRACTOR_KEYS), _OVERRIDE_RENAMES)
        if isinstance(data, dict) and data.get("aggregation_config", ...) is None:
            del data["aggregation_config"]  # stored null meant "defaults"
        return data


#: Reflexio 0.2.13's name for the playbook extractor config (``playbook_configs=[PlaybookConfig(...)]``).
PlaybookConfig = UserPlaybookExtractorConfig


class AgentSuccessConfig(StrictModel):
    """What success means for the agent, and how many sessions get judged."""

    evaluation_name: NonEmptyStr | None = None  # accepted and ignored
    success_definition_prompt: SanitizedNonEmptyStr
    tagging_definition_prompt: str | None = None
    request_sources_enabled: list[str] | None = None
    sampling_rate: float = Field(default=0.05, ge=0.0, le=1.0)
    evaluation_only_sampling_rate: float | None = Field(default=None, ge=0.0, le=1.0)
    retrieved_learning_sampling_rate: float | None = Field(default=None, ge=0.0, le=1.0)
    window_size_override: int | None = Field(default=None, gt=0, le=MAX_WINDOW)
    stride_size_override: int | None = Field(default=None, gt=0, le=MAX_WINDOW)

    @model_validator(mode="before")
    @classmethod
    def _upgrade_legacy_names(cls, data: Any) -> Any:
        return _renamed(_renamed(data, {}, _RETIRED_EXTRACTOR_KEYS), _OVERRIDE_RENAMES)


# ---------------------------------------------------------------------------------------------
# Retrieval, maintenance and optional features
# ---------------------------------------------------------------------------------------------


class RetrievalFloorConfig(StrictModel):
    """Drop search hits below a per-kind cross-encoder score (raw logits; None = default)."""

    enabled: bool = False
    pool_size: int = Field(default=30, gt=0, le=1_000)
    profile_floor: float | None = Field(default=None, ge=-1_000, le=1_000)
    user_playbook_floor: float | None = Field(default=None, ge=-1_000, le=1_000)
    agent_playbook_floor: float | None = Field(default=None, ge=-1_000, le=1_000)


class RetrievalExperimentConfig(StrictModel):
    """The one active retrieval holdout experiment."""

    experiment_id: NonEmptyStr = Field(max_length=128)
    holdout_percentage: float = Field(gt=0, lt=100)


class RetrievalExperimentRecord(RetrievalExperimentConfig):
    """A past or present experiment with its lifetime."""

    started_at: int = Field(ge=0, le=MAX_EPOCH)
    ended_at: int | None = Field(default=None, ge=0, le=MAX_EPOCH)

    @model_validator(mode="after")
    def _ends_after_start(self) -> Self:
        if self.ended_at is not None and self.ended_at < self.started_at:
            raise ValueError("ended_at must be greater than or equal to started_at")
        return self


class PlaybookOptimizerConfig(StrictModel):
    """Optional prompt optimisation of playbooks against a real assistant (off by default).

    At most one assistant backend: ``webhook_url`` or ``assistant_script_path``.
    """

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "not": {
                "properties": {
                    "webhook_url": {"type": "string", "minLength": 1},
                    "assistant_script_path": {"type": "string", "minLength": 1},
                },
                "required": ["webhook_url", "assistant_script_path"],
            }
        },
    )

    enabled: bool = False
    optimize_agent_playbooks: bool = False
    optimize_user_playbooks: bool = False
    auto_update_pending_agent_playbooks: bool = True
    auto_update_user_playbooks: bool = False
    max_metric_calls: int = Field(default=20, gt=0, le=1_000)
    max_turns: int = Field(default=4, gt=0, le=100)
    early_stop_score: float = Field(default=0.9, ge=0.0, le=1.0)
    reflection_minibatch_size: int = Field(default=2, gt=0, le=100)
    max_validation_windows: int = Field(default=2, gt=0, le=100)
    min_commit_windows: int = Field(default=2, gt=0, le=100)
    min_commit_score: float = Field(default=0.75, ge=0.0, le=1.0)
    min_commit_likert: int = Field(default=4, ge=1, le=5)
    use_merge: bool = True
    max_merge_invocations: int = Field(default=5, ge=0, le=100)
    reflection_model: str | None = None
    webhook_url: str | None = None
    webhook_auth_header: str | None = None  # a secret: masked on read
    webhook_timeout_seconds: int = Field(default=60, gt=0, le=3_600)
    webhook_max_retries: int = Field(default=3, ge=0, le=100)
    webhook_backoff_base_seconds: float = Field(default=1.0, ge=0.0, le=3_600)
    assistant_script_path: str | None = None
    assistant_script_args: list[str] = Field(default_factory=list)
    scheduler_jitter_seconds: float = Field(default=1.0, ge=0.0, le=3_600)
    cooldown_after_aborts_seconds: int = Field(default=3600, ge=0, le=_MONTH)
    abort_cooldown_threshold: int = Field(default=2, ge=1, le=1_000)

    @model_validator(mode="after")
    def _one_assistant_backend(self) -> Self:
        if self.webhook_url and self.assistant_script_path:
            raise ValueError(
                "Configure only one playbook optimizer assistant backend: "
                "webhook_url or assistant_script_path"
            )
        return self


class LineageGCConfig(StrictModel):
    """Hard-delete tombstoned learnings once they are older than the grace window."""

    enabled: bool = True
    tombstone_grace_window_days: int = Field(default=90, gt=0, le=36_500)
    poll_interval_seconds: int = Field(default=86400, gt=0, le=_MONTH)


class ExpiryReclamationConfig(StrictModel):
    """Delete expired, non-audited rows directly (opt-in)."""

    enabled: bool = False


class GovernanceRetentionConfig(StrictModel):
    """How long audit events are kept (enforced by enterprise sweeps; our server takes only the defaults)."""

    audit_events_retention_enabled: bool = False
    audit_events_retention_days: int = Field(default=365, gt=0, le=36_500)
    audit_events_delete_batch_limit: int = Field(default=500, gt=0, le=100_000)


class PendingToolCallToolOverrideConfig(StrictModel):
    """Per-tool overrides of the pending tool call limits."""

    max_pending_followups_per_scope: int | None = Field(default=None, gt=0, le=1_000)
    pending_ttl_seconds: int | None = Field(default=None, gt=0, le=_YEAR)
    dedup_cache_seconds: int | None = Field(default=None, gt=0, le=_YEAR)
    prior_answer_valid_seconds: int | None = Field(default=None, gt=0, le=10 * _YEAR)
    similarity_threshold: float | None = Field(default=None, ge=0.0, le=1.0)


class PendingToolCallConfig(StrictModel):
    """Questions extraction may ask a human without blocking (off by default)."""

    enabled: bool = False
    max_pending_followups_per_scope: int = Field(default=10, gt=0, le=1_000)
    pending_ttl_seconds: int = Field(default=86_400, gt=0, le=_YEAR)
    dedup_cache_seconds: int = Field(default=300, gt=0, le=_YEAR)
    prior_answer_valid_seconds: int = Field(default=2_592_000, gt=0, le=10 * _YEAR)
    similarity_threshold: float = Field(default=0.0, ge=0.0, le=1.0)
    resume_poll_interval_seconds: float = Field(default=5.0, gt=0, le=3_600)
    resume_claim_ttl_seconds: int = Field(default=600, gt=0, le=86_400)
    max_resume_attempts: int = Field(default=3, ge=0, le=100)
    max_finalization_attempts: int = Field(default=3, ge=0, le=100)
    hmac_secrets: list[str] = Field(default_factory=list)  # secrets: masked on read
    tool_overrides: dict[str, PendingToolCallToolOverrideConfig] = Field(default_factory=dict)


class ReflectionPolicy(StrictModel):
    """When evaluation acts on a learning (our addition; every action is audited and reversible).

    Harm is *established* when a learning was served in at least ``min_negative_sessions``
    judged sessions that it hurt, and the sessions it helped are at most
    ``max_positive_share`` of the helped and hurt ones (no offsetting positives); or when its
    holdout lift (served minus withheld success rate, 95 % interval clustered by user) lies
    entirely below zero with at least ``min_holdout_sessions`` sessions in each arm. Such a
    learning stops being served: retired, or suspended for a reviewer when the org has
    ``approval_required``. A learning whose help outweighs its harm, or whose lift interval
    lies above zero, is never retired.
    """

    enabled: bool = True
    min_negative_sessions: int = Field(default=3, ge=1, le=10_000)
    max_positive_share: float = Field(default=0.25, ge=0.0, lt=0.5)
    min_holdout_sessions: int = Field(default=20, ge=2, le=1_000_000)
    # With an LLM: propose a pending revision of a hurting playbook from its failure cases.
    propose_revisions: bool = True


HoldoutKind = Literal["profile", "user_playbook", "agent_playbook"]
_HOLDOUT_KINDS: Final[tuple[HoldoutKind, ...]] = ("user_playbook", "agent_playbook")


class ExtractionPreset(StrEnum):
    """Named window/stride pairs for common conversation shapes."""

    QUICK_CHAT = "quick_chat"
    STANDARD = "standard"
    LONG_FORM = "long_form"
    HIGH_VOLUME = "high_volume"


_PRESETS: Final[dict[ExtractionPreset, tuple[int, int]]] = {
    ExtractionPreset.QUICK_CHAT: (5, 3),
    ExtractionPreset.STANDARD: (DEFAULT_WINDOW_SIZE, DEFAULT_STRIDE_SIZE),
    ExtractionPreset.LONG_FORM: (25, 10),
    ExtractionPreset.HIGH_VOLUME: (15, 8),
}


# ---------------------------------------------------------------------------------------------
# The org config
# ---------------------------------------------------------------------------------------------

# Retired list-valued fields and the singular field that replaced each; the first entry wins.
_LEGACY_LISTS: Final = (
    ("profile_extractor_configs", "profile_extractor_config"),
    ("user_playbook_extractor_configs", "user_playbook_extractor_config"),
    ("playbook_configs", "user_playbook_extractor_config"),
    ("agent_feedback_configs", "user_playbook_extractor_config"),
    ("agent_success_configs", "agent_success_config"),
)
_CONFIG_RENAMES: Final = {
    "batch_size": "window_size",
    "batch_interval": "stride_size",
    "extraction_window_size": "window_size",
    "extraction_window_stride": "stride_size",
}
# Fields whose stored ``null`` means "use the default" rather than "off".
_NULL_MEANS_DEFAULT: Final = (
    "window_size",
    "stride_size",
    "playbook_optimizer_config",
    "lineage_gc",
    "expiry_reclamation",
    "governance_retention",
    "pending_tool_call_config",
    "retrieval_floor",
    "reflection_policy",
)


# Changed only through their own lifecycle routes, so a full write that omits them keeps them.
_OWN_LIFECYCLE_FIELDS: Final = ("retrieval_experiment_config", "retrieval_experiment_history")


def _upgrade_config_shape(data: dict[str, Any]) -> dict[str, Any]:
    """Map 0.2.13-era shapes onto the current one, returning a new dict."""
    upgraded = dict(data)
    for legacy, current in _LEGACY_LISTS:
        if legacy in upgraded:
            value = upgraded.pop(legacy)
            first = (value[0] if value else None) if isinstance(value, list) else value
            upgraded.setdefault(current, first)
    upgraded = dict(_renamed(upgraded, _CONFIG_RENAMES))
    for key in _NULL_MEANS_DEFAULT:
        if key in upgraded and upgraded[key] is None:
            del upgraded[key]
    return upgraded


class Config(StrictModel):
    """Everything one organisation configures: extraction, evaluation, models, storage.

    ``storage_config`` defaults to ``None`` (the server's default store); Reflexio requires
    the key but accepts ``null``, so this only relaxes what callers must send.
    """

    model_config = ConfigDict(extra="forbid", json_schema_extra=_nullable(*_NULL_MEANS_DEFAULT))

    storage_config: StorageConfig = None
    storage_config_test: StorageConfigTest | None = StorageConfigTest.UNKNOWN
    agent_context_prompt: str | None = None
    tool_can_use: list[ToolUseConfig] | None = None
    profile_extractor_config: ProfileExtractorConfig | None = Field(
        default_factory=lambda: ProfileExtractorConfig(extraction_definition_prompt=DEFAULT_PROFILE_PROMPT)
    )
    user_playbook_extractor_config: UserPlaybookExtractorConfig | None = Field(
        default_factory=lambda: UserPlaybookExtractorConfig(
            extraction_definition_prompt=DEFAULT_PLAYBOOK_PROMPT
        )
    )
    agent_success_config: AgentSuccessConfig | None = Field(
        default_factory=lambda: AgentSuccessConfig(
            evaluation_name="agent_success", success_definition_prompt=DEFAULT_SUCCESS_PROMPT
        )
    )
    extraction_preset: ExtractionPreset | None = None
    window_size: int = Field(default=DEFAULT_WINDOW_SIZE, gt=0, le=MAX_WINDOW)  # interactions per window
    stride_size: int = Field(default=DEFAULT_STRIDE_SIZE, gt=0, le=MAX_WINDOW)  # new ones before the next
    extraction_idle_timeout_seconds: int = Field(default=21_600, ge=0, le=_MONTH)
    api_key_config: APIKeyConfig | None = None
    llm_config: LLMConfig | None = None
    retrieval_experiment_config: RetrievalExperimentConfig | None = None
    retrieval_experiment_history: list[RetrievalExperimentRecord] = Field(default_factory=list)
    retrieval_floor: RetrievalFloorConfig = Field(default_factory=RetrievalFloorConfig)
    playbook_optimizer_config: PlaybookOptimizerConfig = Field(default_factory=PlaybookOptimizerConfig)
    lineage_gc: LineageGCConfig = Field(default_factory=LineageGCConfig)
    expiry_reclamation: ExpiryReclamationConfig = Field(default_factory=ExpiryReclamationConfig)
    governance_retention: GovernanceRetentionConfig = Field(default_factory=GovernanceRetentionConfig)
    pending_tool_call_config: PendingToolCallConfig = Field(default_factory=PendingToolCallConfig)
    skip_should_run_check: bool = False
    enable_document_expansion: bool = False
    shadow_mode_enabled: bool = False
    eval_sample_n_per_stratum: int = Field(default=200, gt=0, le=100_000)
    eval_concurrency_limit: int = Field(default=10, gt=0, le=1_000)
    shadow_comparison_judge_prompt_version: NonEmptyStr = "v1.1.0"
    # --- Our additions (not in Reflexio; older clients ignore them on read) ---
    # How long a session must be idle before it is judged and its learnings reflected on.
    session_idle_seconds: int = Field(default=600, gt=0, le=_MONTH)
    # Minimum relevance for a search hit; None = the embedder's calibrated default.
    search_threshold: float | None = Field(default=None, ge=0.0, le=1.0)
    # Nothing is served to every user without a human approving it: search serves approved
    # agent playbooks only, whatever the request's agent_playbook_status_filter asks.
    approval_required: bool = False
    # Browser origins (scheme://host[:port]) whose pages may call the API (CORS); none by default.
    allowed_origins: list[Annotated[str, StringConstraints(max_length=255, pattern=ORIGIN_PATTERN)]] = Field(
        default_factory=list, max_length=100
    )
    # Per-learning exposure holdout: the share of sessions from which an eligible learning is
    # withheld (hashed per learning and session, every decision recorded), so its causal
    # effect on outcomes can be measured. 0 turns it off. Profiles are facts the user stated
    # and are not withheld by default; behaviour rules are.
    holdout_rate: float = Field(default=0.05, ge=0.0, le=0.5)
    # A learning is withheld only once it is this old: a fresh install, a demo or a newly
    # taught lesson is served every time, and its first day is not a coin flip a newcomer can
    # lose; afterwards the randomised holdout measures it as above. 0 randomises at once.
    holdout_warmup_seconds: int = Field(default=86_400, ge=0, le=90 * 86_400)
    holdout_kinds: list[HoldoutKind] = Field(default_factory=lambda: list(_HOLDOUT_KINDS))
    reflection_policy: ReflectionPolicy = Field(default_factory=ReflectionPolicy)

    @model_validator(mode="before")
    @classmethod
    def _upgrade_legacy_shape(cls, data: Any) -> Any:
        return _upgrade_config_shape(data) if isinstance(data, dict) else data

    @model_validator(mode="after")
    def _apply_preset(self) -> Self:
        """A preset sets window and stride unless the caller set them explicitly."""
        if self.extraction_preset is not None:
            window, stride = _PRESETS[self.extraction_preset]
            if "window_size" not in self.model_fields_set:
                self.window_size = window
            if "stride_size" not in self.model_fields_set:
                self.stride_size = stride
        return self

    @model_validator(mode="after")
    def _stride_fits_window(self) -> Self:
        if self.stride_size > self.window_size:
            raise ValueError("stride_size must be <= window_size")
        return self

    @classmethod
    def from_stored(cls, data: Mapping[str, Any]) -> "Config":
        """Load a config written by any version, ignoring keys this version no longer knows.

        ``storage_config`` is still checked strictly first: leniency there could turn a
        damaged Postgres config into "SQLite" and quietly move an org to a local file.
        """
        upgraded = _upgrade_config_shape(dict(data))
        _storage_config_adapter().validate_python(upgraded.get("storage_config"))
        return cls.model_validate(upgraded, extra="ignore")

    def masked(self) -> dict[str, Any]:
        """This config as JSON-ready data with every secret masked: what reads return."""
        masked: dict[str, Any] = mask_secrets(self.model_dump(mode="json"))
        return masked

    def merge_update(self, update: Mapping[str, Any], *, partial: bool = False) -> "Config":
        """The config an API write produces when this one is stored.

        ``partial=False`` (``set_config``) replaces the whole config, except that the
        retrieval experiment fields, which have their own routes, are kept when omitted;
        ``partial=True`` (``update_config``) replaces only the top-level keys sent. Either
        way masked secrets in ``update`` are swapped back for the stored ones, and the result
        is validated strictly.

        Raises:
            pydantic.ValidationError: For an invalid result or an unknown key.
            ValueError: For a masked secret that matches nothing stored.
        """
        stored = self.model_dump(mode="json")
        changes = _upgrade_config_shape(dict(update))
        merged = {**stored, **changes} if partial else changes
        for key in _OWN_LIFECYCLE_FIELDS:
            merged.setdefault(key, stored[key])
        if partial and "extraction_preset" in changes:
            # A newly chosen preset must win over the stored window and stride.
            for key in ("window_size", "stride_size"):
                if key not in changes:
                    merged.pop(key, None)
        return Config.model_validate(restore_masked_secrets(merged, stored))
