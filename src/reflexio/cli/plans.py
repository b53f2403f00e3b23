"""``reflexio usage`` (the org's use of its quotas, from the server) and ``reflexio plan``
(the operator assigning an org its plan, on the storage directly, like ``reflexio keys``).
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from reflexio.cli.admin import StorageUrlOpt, local_core
from reflexio.cli.options import ApiKeyOpt, JsonOpt, UrlOpt, client, wants_json
from reflexio.cli.output import Result, Table, run

__all__ = ["plan", "usage"]

plan = typer.Typer(help="The plan (monthly quotas) of an org.", no_args_is_help=True)


def usage(as_json: JsonOpt = False, url: UrlOpt = "", api_key: ApiKeyOpt = "") -> None:
    """This month's use of each quota against the org's plan, and whether learning is paused."""

    def action() -> Result:
        with client(url, api_key) as api:
            report = api.get_usage()
        rows = [
            {
                "quota": meter,
                "used": f"{quota.used:,}",
                "limit": "unlimited" if quota.limit is None else f"{quota.limit:,}",
                "left": "" if quota.remaining is None else f"{quota.remaining:,}",
            }
            for meter, quota in report.usage.items()
        ]
        learning = report.learning_status + (f" ({report.learning_reason})" if report.learning_reason else "")
        return Result(
            report,
            message=f"Org {report.org_id}, plan {report.plan}; resets {report.resets_at:%Y-%m-%d %H:%M} UTC",
            fields={"learning": learning},
            tables=[Table("Usage this month", ["quota", "used", "limit", "left"], rows)],
        )

    run(wants_json(as_json), action)


@plan.command("show")
def show(
    org: Annotated[str | None, typer.Option("--org", help="The org (default: the default org).")] = None,
    storage_url: StorageUrlOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """The org's plan and its monthly limits."""

    def action() -> Result:
        from reflexio.service import quotas

        with local_core(storage_url) as core:
            chosen = org or core.settings.default_org_id
            current = quotas.plan_of(core, chosen)
        return _plan_result(chosen, current.model_dump(mode="json"), "is on")

    run(wants_json(as_json), action)


@plan.command("set")
def set_plan(
    name: Annotated[str, typer.Argument(help="free, pro, unlimited, custom, or default (the server's).")],
    org: Annotated[str | None, typer.Option("--org", help="The org (default: the default org).")] = None,
    input_tokens: Annotated[
        int | None, typer.Option("--input-tokens", min=0, help="custom: input tokens a month.")
    ] = None,
    learnings: Annotated[
        int | None, typer.Option("--learnings", min=0, help="custom: generated learnings a month.")
    ] = None,
    searches: Annotated[
        int | None, typer.Option("--searches", min=0, help="custom: searches a month.")
    ] = None,
    storage_url: StorageUrlOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Assign an org a plan; custom limits take --input-tokens, --learnings, --searches (unset: unlimited)."""

    def action() -> Result:
        from reflexio.errors import ValidationError
        from reflexio.models.plans import BUILTIN_PLANS, Plan, PlanLimits
        from reflexio.service import quotas

        limits = {"input_tokens": input_tokens, "learnings_generated": learnings, "searches": searches}
        given = any(value is not None for value in limits.values())
        if name == "custom":
            chosen_plan: Plan | None = Plan(name="custom", limits=PlanLimits(**limits))
        elif given:
            raise ValidationError("limits go with the plan named custom")
        elif name == "default":
            chosen_plan = None
        elif name in BUILTIN_PLANS:
            chosen_plan = BUILTIN_PLANS[name]
        else:
            raise ValidationError(f"unknown plan {name!r}: use free, pro, unlimited, custom or default")
        with local_core(storage_url) as core:
            chosen = org or core.settings.default_org_id
            current = quotas.set_plan(core, chosen, chosen_plan)
        return _plan_result(chosen, current.model_dump(mode="json"), "is now on")

    run(wants_json(as_json), action)


def _plan_result(org: str, plan_doc: dict[str, Any], verb: str) -> Result:
    limits = {
        meter: "unlimited" if value is None else f"{value:,}" for meter, value in plan_doc["limits"].items()
    }
    return Result(
        {"org_id": org, **plan_doc}, message=f"Org {org} {verb} plan {plan_doc['name']}", fields=limits
    )
