"""A synthetic but realistic corpus of learnings and queries for the search benchmark.

Learnings are short facts and rules built from templates and a vocabulary of realistic words;
each slot draws its filler with Zipf-like weights (the first filler is the most common), and
optional clauses vary the length, so term frequencies are skewed the way real text is.
Queries read like user messages: about half share words with the learnings, the rest are
paraphrases that only the vector arm can match well.

Generation is sequential from fixed seeds, so the corpus of size n is a prefix of every
larger corpus and embeddings computed once are reused for every size.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from reflexio.embed import Embedder
from reflexio.records import Approval, Learning, LearningKind, LearningStatus


def _words(text: str) -> list[str]:
    """A vocabulary slot written as "first | second | ...", most common first."""
    return [w.strip() for w in text.split("|")]


#: Bump when the generated text changes, so cached databases and vectors are rebuilt.
VERSION = 1
USERS = 1000
VERSIONS = 10
NOW = 1_760_000_000
YEAR = 365 * 86400

W: dict[str, list[str]] = {
    "lang": _words(
        "Python | TypeScript | Go | Rust | Java | SQL | Kotlin | Swift | Ruby | Elixir | Scala | Haskell"
    ),
    "task": _words(
        "data analysis | unit tests | web scraping | backend services | scripting | dashboards | "
        "deployment | code review | machine learning | report writing | budgeting | trip planning | meal "
        "planning | spreadsheets"
    ),
    "role": _words(
        "software engineer | product manager | nurse | data scientist | teacher | accountant | lawyer | "
        "designer | sales lead | support agent | pharmacist | researcher | chef | architect | student"
    ),
    "industry": _words(
        "fintech | healthcare | logistics | retail | education | insurance | gaming | biotech | media | "
        "energy"
    ),
    "city": _words(
        "Berlin | London | Lisbon | Tokyo | New York | Toronto | Paris | Madrid | Austin | Seattle | "
        "Singapore | Sydney | Amsterdam | Dublin | Nairobi | Bangalore | Oslo | Mexico City | Seoul | "
        "Cape Town"
    ),
    "food": _words(
        "peanuts | shellfish | gluten | dairy | eggs | soy | sesame | walnuts | strawberries | mushrooms"
    ),
    "pet": _words("dog | cat | parrot | rabbit | hamster | turtle"),
    "name": _words(
        "Max | Luna | Bella | Charlie | Milo | Daisy | Oscar | Nora | Felix | Ruby | Leo | Ivy | Hugo | Maya"
    ),
    "tone": _words("short | detailed | friendly | formal | direct | step-by-step | casual"),
    "format": _words(
        "bullet points | tables | code snippets | numbered steps | plain prose | a summary first | checklists"
    ),
    "skill": _words(
        "Spanish | guitar | Japanese | statistics | woodworking | photography | chess | piano | German"
    ),
    "day": _words("Monday | Friday | Tuesday | Wednesday | Thursday | Saturday | Sunday"),
    "transport": _words("bike | train | bus | car | scooter | ferry"),
    "tool": _words(
        "VS Code | Excel | Notion | Jira | Slack | Figma | PyCharm | Vim | Google Sheets | Tableau | "
        "Salesforce | Obsidian"
    ),
    "tz": _words("CET | PST | EST | GMT | JST | IST | AEST"),
    "hour": _words("9am | 10am | 8am | 11am | noon | 3pm | 7am"),
    "month": _words("March | June | September | January | May | October | December | April | July | August"),
    "diet": _words("vegetarian | vegan | keto | low-sodium | halal | kosher | pescatarian | gluten-free"),
    "race": _words("marathon | half marathon | triathlon | 10k run | cycling race"),
    "genre": _words("science fiction | history | mystery | business | fantasy | biography"),
    "topic": _words(
        "billing | invoices | refunds | travel plans | Python errors | SQL queries | deployment failures "
        "| meal plans | workout plans | tax returns | contracts | the weekly report | onboarding | "
        "password resets | calendar conflicts | data pipelines | flight bookings | insurance claims"
    ),
    "artifact": _words(
        "a stack trace | a screenshot | a spreadsheet | a contract | a log file | a pull request | a "
        "recipe | an error message | a CSV export"
    ),
    "state": _words("frustrated | in a hurry | unsure | travelling | asking for a second opinion"),
    "thing": _words(
        "account | order number | environment | file | date range | invoice | project | branch | currency"
    ),
    "situation": _words(
        "a customer requests a refund | a deployment fails | the user asks to delete files | a payment is "
        "declined | the user reports a bug | a tool call times out | the user asks for medical advice | "
        "the request mentions personal data | a search returns no results | the user wants to cancel a "
        "subscription | an API returns a rate limit error | the user uploads a CSV | a test suite fails | "
        "the user asks for legal advice | an order has not shipped | the user changes their password"
    ),
    "agent_action": _words(
        "verify the account owner | check the order status | read the error log | ask for confirmation | "
        "run the test suite | look up the refund policy | retry once with backoff | summarise what will "
        "change | escalate to a human agent | cite the documentation | check the user's plan | validate "
        "the file schema"
    ),
    "bad_action": _words(
        "delete data | issue a refund | deploy to production | share account details | give a diagnosis | "
        "promise a delivery date | retry more than three times | change billing settings"
    ),
    "guard": _words(
        "explicit confirmation | a passing build | manager approval | checking the policy | verifying "
        "identity | a ticket number"
    ),
}
W["action"] = [
    "answer in {format}",
    "keep the reply under five sentences",
    "show a {lang} example first",
    "confirm the {thing} before making changes",
    "link the relevant documentation",
    "ask which {thing} they mean",
    "summarise the key numbers first",
    "avoid jargon",
    "give times in {tz}",
    "suggest {diet} options",
    "use metric units",
    "double-check the dates",
    "include the source of every figure",
    "propose two alternatives",
]

PROFILE = [
    "Prefers {lang} over {lang} for {task}",
    "Works as a {role} at a {industry} company in {city}",
    "Is allergic to {food} and avoids {food}",
    "Has a {pet} named {name}",
    "Wants {tone} answers, ideally as {format}",
    "Is learning {skill} and practises every {day}",
    "Lives in {city} and commutes by {transport}",
    "Uses {tool} for {task} at work",
    "Is in the {tz} time zone; avoid meetings before {hour}",
    "Is planning a trip to {city} in {month}",
    "Follows a {diet} diet",
    "Prefers dark mode in {tool}",
    "Their manager is {name} and the team ships releases on {day}",
    "Picks the kids up from school at {hour} on weekdays",
    "Is training for a {race} in {month}",
    "Reads {genre} books and listens to {genre} podcasts",
]
USER_TRIGGER = [
    "When the user asks about {topic}",
    "When the user shares {artifact}",
    "When the user is {state}",
]
AGENT = [
    ("When {situation}", "always {agent_action} before you {agent_action}"),
    ("When {situation}", "never {bad_action} without {guard}"),
    ("If {situation}", "{agent_action}, then {agent_action}"),
]
SUFFIX = [
    "since {month}",
    "unless they say otherwise",
    "especially on {day}s",
    "as mentioned while discussing {task}",
    "because it came up in several conversations about {topic}",
    "even when they are {state}",
]
QUERIES = [  # (template, shares words with the learnings)
    ("can you help me plan my trip to {city} in {month}?", True),
    ("what's the best {lang} library for {task}?", True),
    ("a customer wants a refund for order 4471, what should I do?", True),
    ("my deployment failed again, can you check the error log", True),
    ("suggest a quick {diet} dinner without {food}", True),
    ("please delete the old files in the project folder", True),
    ("write the weekly report for my {role} team", True),
    ("how do I fix this {lang} error in my unit tests", True),
    ("the payment was declined, try again", True),
    ("schedule a meeting with {name} on {day} morning", True),
    ("I'm flying out to {city} soon, any tips?", False),
    ("what can I cook tonight? I can't eat {food}", False),
    ("just give me the gist, I'm in a rush", False),
    ("the build is red and prod is down", False),
    ("I want my money back for the jacket I bought", False),
    ("my puppy keeps barking at night", False),
    ("which editor setup do you recommend for coding?", False),
    ("I want to run a long race next spring, how should I train?", False),
    ("remove everything in my downloads folder", False),
    ("help me get my expenses in order before taxes are due", False),
]


class Filler:
    """Fills the ``{slot}`` holes of a template from a vocabulary, drawing each slot's words
    with Zipf-like weights (the first word of a slot is the most common, 1/rank^exponent)."""

    def __init__(self, words: dict[str, list[str]], exponent: float) -> None:
        self.words = words
        self._cum = {slot: self._cumulative(len(options), exponent) for slot, options in words.items()}

    @staticmethod
    def _cumulative(n: int, exponent: float) -> list[float]:
        cum, total = [], 0.0
        for rank in range(1, n + 1):
            total += 1.0 / rank**exponent
            cum.append(total)
        return cum

    def __call__(self, rng: random.Random, template: str) -> str:
        out = template
        while "{" in out:
            start = out.index("{")
            end = out.index("}", start)
            slot = out[start + 1 : end]
            word = rng.choices(self.words[slot], cum_weights=self._cum[slot])[0]
            out = out[:start] + word + out[end + 1 :]
        return out


_fill = Filler(W, 1.1)


def _pick(rng: random.Random, options: Sequence[Any]) -> Any:
    return options[int(rng.random() ** 1.6 * len(options))]  # skewed towards the first ones


def _with_suffix(rng: random.Random, text: str) -> str:
    return f"{text} {_fill(rng, rng.choice(SUFFIX))}" if rng.random() < 0.4 else text


def texts(kind: LearningKind, n: int) -> list[tuple[str | None, str]]:
    """(trigger, content) of the first ``n`` learnings of ``kind``."""
    rng = random.Random(f"{kind.value}-{VERSION}")
    out: list[tuple[str | None, str]] = []
    for _ in range(n):
        if kind is LearningKind.PROFILE:
            out.append((None, _with_suffix(rng, _fill(rng, _pick(rng, PROFILE)))))
        elif kind is LearningKind.USER_PLAYBOOK:
            action = _fill(rng, rng.choice(W["action"]))
            if rng.random() < 0.5:
                action += ", and " + _fill(rng, rng.choice(W["action"]))
            out.append(
                (_fill(rng, _pick(rng, USER_TRIGGER)), _with_suffix(rng, action[0].upper() + action[1:]))
            )
        else:
            trigger, content = _pick(rng, AGENT)
            body = _with_suffix(rng, _fill(rng, content))
            out.append((_fill(rng, trigger), body[0].upper() + body[1:]))
    return out


def _search_text(trigger: str | None, content: str) -> str:
    return Learning(org_id="", kind=LearningKind.PROFILE, content=content, trigger=trigger).search_text


def vectors(embedder: Embedder, n: int, cache: Path) -> dict[LearningKind, np.ndarray]:
    """Embeddings of the first ``n`` texts of each kind, cached on disk across runs and sizes."""
    out = {}
    for kind in LearningKind:
        path = cache / f"vectors-{kind.value}-{embedder.name}-v{VERSION}.npy"
        have = np.load(path, mmap_mode="r") if path.exists() else np.zeros((0, embedder.dim), np.float32)
        if len(have) < n:
            have = embedder.embed([_search_text(t, c) for t, c in texts(kind, n)], kind="document")
            np.save(path, have)
        out[kind] = have[:n]
    return out


def _scope(kind: LearningKind, i: int, layout: str) -> tuple[str | None, str]:
    """(user_id, agent_version) of row ``i``: users are pinned to one agent version each."""
    if layout == "worst":
        return (None if kind is LearningKind.AGENT_PLAYBOOK else user(0)), version(0)
    if kind is LearningKind.AGENT_PLAYBOOK:
        return None, version(i % VERSIONS)
    return user(i % USERS), version(i % USERS % VERSIONS)


def user(k: int) -> str:
    """The id of user ``k``."""
    return f"user-{k:04d}"


def version(k: int) -> str:
    """The id of agent version ``k``."""
    return f"agent-v{k + 1}"


def learnings(
    org: str, n: int, layout: str, vecs: dict[LearningKind, np.ndarray], model: str, batch: int
) -> Iterator[list[Learning]]:
    """All ``3 n`` rows with their vectors, in batches for ``save_learnings``."""
    rng = random.Random(f"meta-{VERSION}")
    for kind in LearningKind:
        rows: list[Learning] = []
        for i, (trigger, content) in enumerate(texts(kind, n)):
            rows.append(_row(org, kind, i, layout, trigger, content, vecs[kind][i], model, rng))
            if len(rows) == batch:
                yield rows
                rows = []
        if rows:
            yield rows


def _row(
    org: str,
    kind: LearningKind,
    i: int,
    layout: str,
    trigger: str | None,
    content: str,
    vector: np.ndarray,
    model: str,
    rng: random.Random,
) -> Learning:
    user_id, agent_version = _scope(kind, i, layout)
    roll = rng.random()
    status = LearningStatus.CURRENT
    if roll < 0.05:
        status = LearningStatus.ARCHIVED
    elif roll < 0.09:
        status = LearningStatus.SUPERSEDED
    created = NOW - int(rng.random() * YEAR)
    row = Learning(
        org_id=org,
        kind=kind,
        content=content,
        trigger=trigger,
        user_id=user_id,
        agent_version=agent_version,
        playbook_name="default" if rng.random() < 0.8 else "escalations",
        status=status,
        approval=_approval(rng) if kind is LearningKind.AGENT_PLAYBOOK else None,
        source=rng.choice(["chat", "chat", "email", "api"]),
        tags=["billing"] if rng.random() < 0.1 else [],
        expires_at=NOW - 86400 if kind is LearningKind.PROFILE and rng.random() < 0.03 else 4_102_444_800,
        request_id=f"req-{kind.value}-{i // 3}",
        created_at=created,
        updated_at=created,
        embedding=np.asarray(vector, dtype=np.float32),
        embed_model=model,
    )
    row.text_hash = row.computed_text_hash()
    return row


def _approval(rng: random.Random) -> Approval:
    roll = rng.random()
    return Approval.APPROVED if roll < 0.65 else Approval.PENDING if roll < 0.9 else Approval.REJECTED


@dataclass(frozen=True, slots=True)
class Query:
    """A user message and the scope it is asked in."""

    text: str
    user_id: str
    agent_version: str
    shares_terms: bool


def queries(n: int, layout: str, count: int) -> list[Query]:
    """``count`` queries, each in the scope of a random user and that user's agent version."""
    rng = random.Random(f"queries-{VERSION}")
    out = []
    for _ in range(count):
        template, shared = rng.choice(QUERIES)
        k = 0 if layout == "worst" else rng.randrange(min(USERS, n))
        out.append(Query(_fill(rng, template), user(k), version(k % VERSIONS), shared))
    return out


def describe() -> dict[str, Any]:
    """What the corpus is, for the results file."""
    return {
        "version": VERSION,
        "users": USERS,
        "agent_versions": VERSIONS,
        "spread": "profiles and user playbooks round-robin over 1,000 users (each user pinned to "
        "one agent version); agent playbooks round-robin over 10 agent versions",
        "worst": "every profile and user playbook belongs to one user, every agent playbook to one version",
        "statuses": "91% current, 5% archived, 4% superseded; 3% of profiles expired; agent "
        "playbooks 65% approved, 25% pending, 10% rejected",
        "texts": f"{len(PROFILE)} profile, {len(USER_TRIGGER)}x{len(W['action'])} user playbook and "
        f"{len(AGENT)} agent playbook templates; Zipf-weighted fillers; 40% get an extra clause",
        "queries": f"{len(QUERIES)} templates, half sharing words with the learnings, half paraphrases",
    }
