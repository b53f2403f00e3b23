"""A worked example of Reflect, written from a ``bench.loop --trace`` run: one learning's story.

``python -m bench.reflect_example --results R.json --scenario NAME --out bench/results/X.md``
renders, for the first reflection action of the scenario: the learning, the sessions it was
eligible for and whether it was served (from the trace), the judge's verdict in each, the
interval on its effect, and the action taken with its evidence. Every number comes from the
results file, which the loop wrote from the server's own answers.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["main", "render"]


def _short(session: str) -> str:
    """A session id without the run's namespace (``<run>:<scenario>:``)."""
    return session.rsplit(":", 1)[-1]


def _interval(name: str, found: dict[str, Any] | None) -> str:
    if not found:
        return f"- {name}: none (needs sessions on both sides; the holdout was off)"
    low, high = found.get("low"), found.get("high")
    span = f", 95 % interval [{low:.3f}, {high:.3f}]" if low is not None and high is not None else ""
    return f"- {name}: {found['value']:.3f}{span} over {found['sessions']} sessions of {found['users']} users"


def render(results: dict[str, Any], scenario: str) -> str:
    """The markdown story of the scenario's first reflection action."""
    data = results["scenarios"][scenario]
    if not data.get("reflection_actions"):
        raise SystemExit(f"{scenario}: no reflection action in this run")
    action = data["reflection_actions"][0]
    impact = action.get("impact") or {}
    verdicts = {_short(v["session_id"]): v for v in action.get("verdicts", [])}
    meta = results.get("meta", {})
    lines = [
        f"# Worked example: {action['action']} of {action['kind']} {action['learning_id']} ({scenario})",
        "",
        f"From `python -m bench.loop --scenarios {meta.get('scenarios')} --extractor {meta.get('extractor')}"
        f" --trace` at commit {meta.get('commit')} on {meta.get('date')} ({meta.get('machine')},"
        f" load {meta.get('load_average_at_end')}); rendered by `bench.reflect_example`.",
        "",
        "## Exposures and verdicts",
        "",
        "| session | served | harmed the answer | judge's impact | reason |",
        "|---|---|---|---|---|",
    ]
    for turn in data.get("trace", []):
        session = _short(turn["session"])
        verdict = verdicts.get(session, {})
        served = "yes" if turn.get("harmed") else ("no" if not turn.get("served") else "other learnings")
        lines.append(
            f"| {session} | {served} | {', '.join(turn.get('harmed', [])) or '-'} |"
            f" {verdict.get('impact') or '-'} | {verdict.get('impact_reason') or '-'} |"
        )
    evidence = action.get("evidence", {})
    lines += [
        "",
        "## Counts and interval (`get_learning_impact`)",
        "",
        f"- sessions served {impact.get('sessions_served')}, withheld {impact.get('sessions_withheld')};"
        f" helped {impact.get('helped')}, hurt {impact.get('hurt')}, neutral {impact.get('neutral')},"
        f" unjudged {impact.get('unjudged')}; users served {impact.get('users_served')}",
        _interval("help rate (Wilson)", impact.get("help_rate")),
        _interval("lift (served minus withheld, clustered by user)", impact.get("lift")),
        "",
        "## Action (`get_reflection_actions`)",
        "",
        f"- action `{action['action']}`: {action['reason']}",
        f"- status {action.get('status_before')} -> {action.get('status_after')}, by {action.get('actor')};"
        f" reversible with `reflexio eval revert {action['action_id']}`",
        f"- evidence recorded with it: `{json.dumps(evidence, sort_keys=True)}`",
        "",
        f"harm_served_after for this scenario: {data.get('harm_served_after')}"
        f" (sessions that still received a harmful learning after the first one it harmed:"
        f" {json.dumps(data.get('harm_served_after_by_key', {}))}); false_retirements:"
        f" {data.get('false_retirements')}.",
        "",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--results", required=True, help="a bench.loop JSON written with --trace")
    parser.add_argument("--scenario", required=True, help="the scenario's name")
    parser.add_argument("--out", required=True, help="where to write the markdown")
    args = parser.parse_args(argv)
    text = render(json.loads(Path(args.results).read_text()), args.scenario)
    Path(args.out).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
