-- Plans and monthly quotas: the plan an operator assigned to an org (a JSON document: a
-- built-in plan's name or custom limits), and what each org used of each metered quota per
-- calendar month (period 'YYYY-MM', UTC). Input tokens are not counted here: they are summed
-- from llm_usage, which records every LLM call already.
CREATE TABLE org_plans (
    org_id     TEXT PRIMARY KEY,
    plan       TEXT NOT NULL,
    updated_at REAL NOT NULL
);

CREATE TABLE usage_counters (
    org_id TEXT    NOT NULL,
    period TEXT    NOT NULL,
    meter  TEXT    NOT NULL,
    used   INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (org_id, period, meter)
);
