"""A labelled synthetic set of user playbooks for bench/aggregate: lessons in many wordings.

Each lesson is one rule that many users teach an agent, each in their own words: several ways to
say the situation (trigger) and the instruction, with details that differ from user to user (the
product, the file, the system). Some lessons are deliberately close to others (confirm the
order number before a refund / confirm the address before shipping), so a clustering that
merges neighbours shows up as playbooks mixing two lessons. Noise rows are one-off rules that
belong to no lesson. The set is generated deterministically from a seed.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

__all__ = ["LESSONS", "Row", "make_set"]

# (lesson key, triggers, instructions, fillers); "{x}" in a text takes a filler.
LESSONS: list[tuple[str, list[str], list[str], list[str]]] = [
    (
        "refund-order-number",
        [
            "When a customer asks for a refund",
            "When the user wants their money back for {x}",
            "When someone requests a refund on {x}",
            "If a customer asks to return {x} for a refund",
        ],
        [
            "Ask for the order number before issuing the refund.",
            "Confirm the order number with the customer before refunding {x}.",
            "Check which order the {x} was on (order number) before refunding anything.",
            "Always get the order ID first, then refund.",
        ],
        ["headphones", "a blender", "the shoes", "a lamp", "a keyboard", "the jacket"],
    ),
    (
        "ship-confirm-address",
        [
            "When a customer places an order for delivery",
            "Before dispatching a parcel with {x}",
            "When the user asks to ship {x}",
            "When arranging shipping for an order",
        ],
        [
            "Confirm the delivery address with the customer before shipping.",
            "Read back the shipping address and get a yes before dispatching {x}.",
            "Double-check the postal address before the parcel goes out.",
            "Verify the recipient's address before sending {x}.",
        ],
        ["a sofa", "the monitor", "a gift box", "two chairs", "the printer"],
    ),
    (
        "code-run-tests",
        [
            "When fixing a bug in the code",
            "After changing {x}",
            "When the user asks for a code fix in {x}",
            "Before saying a code change works",
        ],
        [
            "Run the relevant tests before claiming the fix works.",
            "Run tests/{x} and report the result before saying it is fixed.",
            "Verify the change by running the test suite; do not claim success from reading the code.",
            "Execute the failing test again after the change and show that it passes.",
        ],
        ["test_login.py", "the signup handler", "the payment module", "utils.py", "the API router"],
    ),
    (
        "code-check-logs",
        [
            "When a deployment finishes",
            "After deploying {x}",
            "When the user asks whether the release went well",
            "Before reporting a deploy as successful",
        ],
        [
            "Check the server logs for errors before saying the deployment succeeded.",
            "Look at the {x} logs after deploying and report any errors.",
            "Inspect the runtime logs before telling the user the release is healthy.",
            "Read the service logs and confirm there are no new errors before calling the deploy done.",
        ],
        ["staging", "the web service", "the worker", "production", "the API"],
    ),
    (
        "hr-policy-link",
        [
            "When answering a question about leave",
            "When someone asks about {x}",
            "When the employee asks an HR policy question",
            "When explaining {x} rules",
        ],
        [
            "Include the link to the policy page in the answer.",
            "Always add the policy link so people can check the source.",
            "Give the handbook link for {x}, not just a number.",
            "Point to the official policy page when answering {x} questions.",
        ],
        ["vacation days", "parental leave", "sick leave", "sabbaticals", "overtime"],
    ),
    (
        "finance-currency",
        [
            "When quoting a price",
            "When showing amounts for {x}",
            "When the user asks how much {x} costs",
            "When reporting totals",
        ],
        [
            "State the currency with every amount.",
            "Always write the currency code next to the price of {x}.",
            "Never give a bare number for money; say EUR, USD or the local currency.",
            "Show amounts with their currency symbol.",
        ],
        ["the subscription", "a flight", "the invoice", "the upgrade", "shipping"],
    ),
    (
        "travel-timezone",
        [
            "When giving flight times",
            "When the user asks when {x} departs",
            "When scheduling a trip",
            "When listing arrival times for {x}",
        ],
        [
            "Give times in the local time zone of the airport and say which zone.",
            "Always state the time zone next to departure and arrival times.",
            "Convert {x} times to local time and name the time zone.",
            "Mention the time zone for every time you give.",
        ],
        ["the train", "flight LH400", "the ferry", "the connecting flight"],
    ),
    (
        "health-dose-doctor",
        [
            "When the user asks about medication doses",
            "When someone asks how much {x} to take",
            "When a question is about dosage",
            "When asked to change a dose of {x}",
        ],
        [
            "Tell them to confirm the dose with their doctor or pharmacist.",
            "Do not give a dose for {x}; refer them to a pharmacist.",
            "Recommend checking the dosage with a healthcare professional before taking {x}.",
            "Advise asking a doctor before changing any medication dose.",
        ],
        ["ibuprofen", "paracetamol", "insulin", "antibiotics", "melatonin"],
    ),
    (
        "support-escalate-human",
        [
            "When the customer asks for a human",
            "When the user is angry about {x}",
            "When a customer repeats a complaint",
            "When someone demands a manager about {x}",
        ],
        [
            "Offer to hand over to a human agent straight away.",
            "Escalate to a human support agent instead of repeating the same answer.",
            "Transfer the conversation to a person when the customer asks for one.",
            "Say you are passing them to a human colleague and open a handover ticket.",
        ],
        ["a late parcel", "billing", "a broken device", "a cancelled order"],
    ),
    (
        "sales-no-discount",
        [
            "When a prospect asks for a discount",
            "When the customer negotiates the price of {x}",
            "When someone asks for a lower price",
            "When a buyer wants a deal on {x}",
        ],
        [
            "Do not promise discounts; say pricing is set by the sales team.",
            "Never offer a discount on {x} yourself; refer to the account manager.",
            "Explain that you cannot change prices and route discount requests to sales.",
            "Decline to invent a discount and pass the request to the sales team.",
        ],
        ["the enterprise plan", "annual billing", "a bulk order", "the pro tier"],
    ),
    (
        "ops-confirm-prod",
        [
            "Before running a command on production",
            "When asked to restart {x} in production",
            "When changing production servers",
            "Before deleting data in {x}",
        ],
        [
            "Ask for explicit confirmation before acting on production.",
            "Get a yes from the user before restarting {x} in production.",
            "Always confirm with the operator before any production change.",
            "Request approval first, then touch the production {x}.",
        ],
        ["the database", "the web servers", "the cache cluster", "the queue"],
    ),
    (
        "data-state-sample-size",
        [
            "When reporting a metric",
            "When summarising results of {x}",
            "When the analyst asks for a conversion rate",
            "When presenting survey results",
        ],
        [
            "Say how many records the number is based on.",
            "Always give the sample size next to percentages from {x}.",
            "Report n (the number of rows) with every rate.",
            "Mention the sample size so the result can be judged.",
        ],
        ["the A/B test", "the survey", "last week's cohort", "the funnel"],
    ),
    (
        "legal-cite-source",
        [
            "When answering a legal question",
            "When asked about {x} law",
            "When explaining a regulation",
            "When someone asks whether {x} is legal",
        ],
        [
            "Cite the statute or article the answer relies on.",
            "Name the exact article of the regulation for {x}.",
            "Quote the legal source (law and section) you base the answer on.",
            "Give the reference to the article, not just a summary.",
        ],
        ["GDPR", "tenancy", "employment", "consumer", "copyright"],
    ),
    (
        "python-pathlib",
        [
            "When writing Python that handles file paths",
            "When the user asks for a script that reads {x}",
            "When generating Python file code",
            "When editing path handling in {x}",
        ],
        [
            "Use pathlib instead of os.path.",
            "Write file paths with pathlib.Path, not string concatenation, in {x}.",
            "Prefer pathlib over os.path joins.",
            "Use Path objects from pathlib for every path.",
        ],
        ["config files", "the CSV loader", "log files", "build.py"],
    ),
    (
        "meeting-calendar-invite",
        [
            "When booking a meeting",
            "When the user asks to set up {x}",
            "When scheduling a call",
            "When arranging {x} with colleagues",
        ],
        [
            "Send a calendar invite, do not just mention the time in chat.",
            "Always create a calendar invitation for {x}.",
            "Put the meeting in the calendar with an invite to every attendee.",
            "Book it in the calendar and send invites rather than only replying with a time.",
        ],
        ["the weekly sync", "a 1:1", "the kickoff", "the review"],
    ),
    (
        "writing-short-answers",
        [
            "When answering simple questions",
            "When the user asks a quick question about {x}",
            "For factual questions",
            "When replying to a yes/no question about {x}",
        ],
        [
            "Keep the answer to two sentences.",
            "Answer briefly first; add detail on {x} only if asked.",
            "Be concise: a short direct answer, no long preamble.",
            "Lead with the answer in one sentence.",
        ],
        ["opening hours", "the return window", "delivery times", "pricing"],
    ),
    (
        "password-never-ask",
        [
            "When helping with login problems",
            "When the user cannot sign in to {x}",
            "When resetting an account",
            "When troubleshooting access to {x}",
        ],
        [
            "Never ask the user for their password.",
            "Do not request the password for {x}; send a reset link instead.",
            "Never collect passwords in chat; use the reset flow.",
            "Do not ask for credentials; point them to the password reset page.",
        ],
        ["the portal", "the mobile app", "email", "the dashboard"],
    ),
    (
        "translate-keep-names",
        [
            "When translating a document",
            "When translating {x}",
            "When the user asks for a translation",
            "When localising {x}",
        ],
        [
            "Keep product names and brand names untranslated.",
            "Do not translate the brand names in {x}.",
            "Leave proper nouns and product names as they are in the original.",
            "Keep trademarks in their original form when translating.",
        ],
        ["the brochure", "the app strings", "the website", "the manual"],
    ),
    (
        "recipe-allergens",
        [
            "When suggesting a recipe",
            "When the user asks what to cook with {x}",
            "When recommending a dish",
            "When planning a menu with {x}",
        ],
        [
            "List the common allergens in the recipe.",
            "Point out allergens such as nuts, gluten and dairy in {x} dishes.",
            "Always flag allergens in suggested meals.",
            "Mention which allergens the dish contains.",
        ],
        ["chicken", "pasta", "tofu", "salmon", "rice"],
    ),
    (
        "booking-cancel-policy",
        [
            "When confirming a hotel booking",
            "When the user books {x}",
            "When making a reservation",
            "When reserving {x}",
        ],
        [
            "State the cancellation policy before confirming the booking.",
            "Tell the user the cancellation deadline for {x} before booking.",
            "Explain the refund and cancellation terms when reserving.",
            "Always mention whether the booking is refundable and until when.",
        ],
        ["a double room", "the suite", "two nights", "a table for four"],
    ),
    (
        "ticket-number",
        [
            "When opening a support ticket",
            "When logging an issue about {x}",
            "After creating a case",
            "When the customer reports {x}",
        ],
        [
            "Give the customer the ticket number.",
            "Always tell the user the case ID after logging {x}.",
            "Share the reference number of the ticket at the end.",
            "Reply with the ticket number so they can follow up.",
        ],
        ["a faulty charger", "a billing error", "a login bug", "a missing item"],
    ),
    (
        "sql-limit-queries",
        [
            "When running exploratory SQL",
            "When querying {x}",
            "When the analyst asks for rows from a table",
            "When sampling data from {x}",
        ],
        [
            "Add a LIMIT clause to exploratory queries.",
            "Always put LIMIT 100 on ad-hoc queries against {x}.",
            "Never select a whole big table; limit the rows returned.",
            "Use LIMIT when previewing table contents.",
        ],
        ["the events table", "orders", "the clickstream", "users"],
    ),
    (
        "git-no-force-push",
        [
            "When pushing changes",
            "When the user asks to push {x}",
            "When a push is rejected",
            "When updating a shared branch like {x}",
        ],
        [
            "Never force-push to shared branches.",
            "Do not use git push --force on {x}; rebase and push normally.",
            "Avoid force pushes on main or any branch others use.",
            "Ask before rewriting history on a shared branch; never force-push by default.",
        ],
        ["main", "the release branch", "develop", "a teammate's branch"],
    ),
    (
        "accessibility-alt-text",
        [
            "When generating HTML with images",
            "When adding {x} to a page",
            "When writing web markup",
            "When building a page with {x}",
        ],
        [
            "Add descriptive alt text to every image.",
            "Always include an alt attribute describing {x}.",
            "Give images meaningful alt text for screen readers.",
            "Never leave img tags without alt text.",
        ],
        ["product photos", "the logo", "charts", "icons"],
    ),
]

# Noise: one-off rules on unrelated subjects, each subject used once (adjective x hobby).
NOISE_ADJECTIVES = [
    "vintage",
    "indoor",
    "winter",
    "beginner",
    "competitive",
    "family",
    "weekend",
    "urban",
    "coastal",
    "budget",
    "electric",
    "handmade",
    "night",
    "alpine",
    "tropical",
    "miniature",
    "acoustic",
    "organic",
    "amateur",
    "rooftop",
    "desert",
    "medieval",
    "digital",
    "seasonal",
    "backyard",
]
NOISE_HOBBIES = [
    "chess openings",
    "garden watering",
    "bike maintenance",
    "wedding speeches",
    "piano practice",
    "knitting patterns",
    "astronomy",
    "fishing trips",
    "board games",
    "photo editing",
    "sourdough baking",
    "birdwatching",
    "pottery",
    "calligraphy",
    "beekeeping",
    "origami",
    "kite flying",
    "model trains",
    "stamp collecting",
    "rock climbing",
    "home brewing",
    "wood carving",
    "salsa dancing",
    "aquariums",
]
NOISE_RULES = [
    "Use a playful tone when talking about {x}.",
    "Suggest one concrete next step for {x}.",
    "Ask which season it is before advising on {x}.",
    "Offer a checklist for {x}.",
    "Mention a beginner mistake to avoid with {x}.",
    "Keep jargon out of explanations of {x}.",
    "Recommend a local club for {x}.",
    "Share one fun fact about {x}.",
]
NOISE_TRIGGERS = ["When the user brings up {x}", "When chatting about {x}", "If {x} comes up"]
OPENERS = ["", "", "Please ", "Make sure to ", "Remember: ", "Important: "]


@dataclass(frozen=True, slots=True)
class Row:
    """One synthetic user playbook: its label (lesson key, or ``noise:N``), author and text."""

    id: int
    label: str
    user_id: str
    trigger: str
    content: str

    @property
    def text(self) -> str:
        """What storage embeds for it (``Learning.search_text``)."""
        return f"{self.trigger}\n{self.content}"


def _say(rng: random.Random, templates: list[str], fillers: list[str]) -> str:
    return rng.choice(templates).replace("{x}", rng.choice(fillers))


def _voice(rng: random.Random, instruction: str) -> str:
    opener = rng.choice(OPENERS)
    if not opener:
        return instruction
    return opener + instruction[0].lower() + instruction[1:]


def make_set(per_lesson: int, noise: int, *, users: int = 400, seed: int = 7) -> list[Row]:
    """``per_lesson`` rows for each lesson (distinct authors per lesson) plus ``noise`` one-offs."""
    rng = random.Random(seed)
    rows: list[Row] = []
    for key, triggers, instructions, fillers in LESSONS:
        authors = rng.sample(range(max(users, per_lesson)), per_lesson)
        for author in authors:
            rows.append(
                Row(
                    0,
                    key,
                    f"user{author}",
                    _say(rng, triggers, fillers),
                    _voice(rng, _say(rng, instructions, fillers)),
                )
            )
    subjects = [f"{a} {h}" for a in NOISE_ADJECTIVES for h in NOISE_HOBBIES]
    for n, subject in enumerate(rng.sample(subjects, noise)):
        rule = rng.choice(NOISE_RULES).replace("{x}", subject)
        trigger = _say(rng, NOISE_TRIGGERS, [subject])
        rows.append(Row(0, f"noise:{n}", f"user{rng.randrange(users)}", trigger, rule))
    rng.shuffle(rows)
    return [Row(i, r.label, r.user_id, r.trigger, r.content) for i, r in enumerate(rows, 1)]
