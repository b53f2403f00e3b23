"""Reading user messages: which sentences teach a fact, a taste or a rule, and which do not.

The phrasings are written to span domains (shopping, travel, cooking, health, finance, coding,
ops, support) and shapes, not to mirror the scenario files: the extractor is checked later on
scenarios it has never seen.
"""

from __future__ import annotations

import pytest

from reflexio.learn.rules.signals import Signal, read_message


def signals(text: str, *, reacting: bool = True, kind: str | None = None) -> list[Signal]:
    found = read_message(text, reacting=reacting).signals
    return [s for s in found if kind is None or s.kind == kind]


def texts(text: str, *, reacting: bool = True, kind: str | None = None) -> list[str]:
    return [s.text for s in signals(text, reacting=reacting, kind=kind)]


# -- facts about the user -----------------------------------------------------------------------

FACTS = [
    ("I only ever use Linux.", "Only ever uses Linux"),
    ("I'm vegetarian.", "Is vegetarian"),
    ("i'm allergic to peanuts", "Is allergic to peanuts"),
    ("I live in Lisbon now.", "Lives in Lisbon"),
    ("My budget is $800.", "budget is $800"),
    ("My budget for gadgets is $300 max.", "budget for gadgets is $300 max"),
    ("I prefer aisle seats.", "Prefers aisle seats"),
    ("I can't stand layovers.", "Cannot stand layovers"),
    ("I hate cilantro.", "Hates cilantro"),
    ("I don't drink alcohol.", "Does not drink alcohol"),
    ("I work night shifts.", "Works night shifts"),
    ("I've been vegan for five years.", "Has been vegan for five years"),
    ("I moved to Berlin last month.", "Lives in Berlin (moved last month)"),
    ("My daughter is allergic to tree nuts.", "daughter is allergic to tree nuts"),
    ("I'm a nurse.", "Is a nurse"),
    ("I'm based in Toronto.", "Is based in Toronto"),
    ("I usually work from the Lisbon office.", "Usually works from the Lisbon office"),
    ("I'd rather fly in the morning.", "rather fly in the morning"),
    ("I speak Portuguese and a little French.", "Speaks Portuguese"),
    ("I never fly Ryanair.", "Never flies Ryanair"),
    ("I'm left-handed.", "Is left-handed"),
    ("I have two kids and a dog.", "Has two kids and a dog"),
    ("I'm on a low-sodium diet.", "Is on a low-sodium diet"),
    ("We deploy everything with Terraform.", "They deploy everything with Terraform"),
    ("Honestly, I always sit by the window.", "Always sits by the window"),
    ("I've just relocated to Chicago.", "Lives in Chicago"),
    ("I've started eating fish again.", "Has started eating fish again"),
]


@pytest.mark.parametrize(("message", "expected"), FACTS)
def test_self_statements_become_third_person_facts(message: str, expected: str) -> None:
    assert any(expected in t for t in texts(message, kind="fact")), texts(message)


@pytest.mark.parametrize("reacting", [True, False])
def test_facts_are_read_in_requests_and_replies(reacting: bool) -> None:
    assert texts("I'm vegetarian, can you suggest a dinner recipe?", reacting=reacting, kind="fact") == [
        "Is vegetarian"
    ]


def test_two_facts_in_one_sentence_are_both_read() -> None:
    found = texts("My budget is $800 and I live in Austin.", kind="fact")
    assert any("budget is $800" in t for t in found)
    assert "Lives in Austin" in found


NOT_FACTS = [
    "I'm not sure that's right.",
    "I think you're right.",
    "I need a light laptop for travelling.",
    "I want a refund for my headphones.",
    "I have a question about my invoice.",
    "I'm looking for a birthday gift.",
    "I'd like a table for two at eight.",
    "I'm sorry, I meant Tuesday.",
    "I tried that already.",
    "I changed the config yesterday.",
    "I click save and nothing happens.",
    "I have to leave at five.",
    "I'm confused.",
    "I get an error when I open the app.",
    "We've been over this.",
    "I'm going to the store.",
    "I hope so.",
    "I love it, thanks!",
    "My order is late.",
    "My brother wants a laptop for his birthday.",
    "My boss says I should always use tabs.",
    "What if I were vegan?",
    "If I were rich I would buy a boat.",
    "I'm after a smartwatch for running, any suggestions?",
    "I'd like a refund please.",
]


@pytest.mark.parametrize("message", NOT_FACTS)
def test_passing_remarks_wishes_and_tasks_are_not_facts(message: str) -> None:
    assert texts(message, kind="fact") == []


def test_indifference_is_not_an_aversion() -> None:
    found = signals("I don't mind Macs.")
    assert [s.kind for s in found] == ["indifferent"]
    assert found[0].text == "Is fine with Macs"
    assert not found[0].negative


@pytest.mark.parametrize(
    ("message", "ttl"),
    [
        ("I'm travelling to Tokyo this week.", "one_week"),
        ("I'm working from home today.", "one_day"),
        ("I live in Lisbon.", "infinity"),
        ("I prefer aisle seats.", "one_year"),
    ],
)
def test_time_to_live_follows_time_cues(message: str, ttl: str) -> None:
    assert [s.ttl for s in signals(message, kind="fact") + signals(message, kind="indifferent")][:1] == [ttl]


# -- tastes: what the user wants offered or not ------------------------------------------------

TASTES = [
    ("Please don't suggest Macs.", "does not want Macs suggested"),
    ("Again, Linux only please.", "wants Linux only"),
    ("No Macs, I run Linux.", "does not want Macs"),
    ("Don't recommend hostels to me.", "does not want hostels recommended"),
    ("No spicy food please.", "does not want spicy food"),
    ("Only vegetarian restaurants.", "wants vegetarian restaurants only"),
]


@pytest.mark.parametrize(("message", "expected"), TASTES)
def test_tastes_about_offered_items(message: str, expected: str) -> None:
    assert expected in texts(message, kind="taste")


def test_a_taste_names_what_it_refers_to() -> None:
    assert "does not want cilantro in the user's recipes" in texts(
        "I hate cilantro, never put it in my recipes.", kind="taste"
    )


@pytest.mark.parametrize(
    "message", ["No problem.", "No worries!", "No thanks.", "No more than three bullets."]
)
def test_no_as_chit_chat_is_not_a_taste(message: str) -> None:
    assert texts(message, kind="taste") == []


# -- instructions -------------------------------------------------------------------------------

RULES = [
    (
        "Always confirm the order ID with me before you issue a refund.",
        "Always confirm the order ID with the user",
    ),
    (
        "You should have asked me for the order number before refunding.",
        "Ask the user for the order number before refunding",
    ),
    (
        "Did you actually run the test? Run it and check the server log before claiming it works.",
        "Run the test and check the server log",
    ),
    ("Again: verify with a test before you say it works.", "Verify with a test before you say it works"),
    (
        "Please ask me before you take any action on servers.",
        "Ask the user for confirmation before you take any action on servers",
    ),
    (
        "Wrong order again. Ask for the order number before refunding anything.",
        "Ask for the order number before refunding anything",
    ),
    ("Please check the order number first, that was not the lamp order.", "Check the order number first"),
    ("Use metric units from now on.", "Use metric units"),
    (
        "Next time check the calendar before proposing a meeting time.",
        "Check the calendar before proposing a meeting time",
    ),
    ("You forgot the tracking number.", "Include the tracking number"),
    (
        "You left out the dose and when I should see a doctor.",
        "Include the dose and when the user should see a doctor",
    ),
    ("Make sure you double-check the dosage units.", "Double-check the dosage units"),
    (
        "For legal questions always cite the statute section.",
        "For legal questions, always cite the statute section",
    ),
    ("When you book flights for me, always pick a window seat.", "always pick a window seat"),
    (
        "In future, summarise long threads in three bullet points.",
        "Summarise long threads in three bullet points",
    ),
    ("I want you to always attach the invoice PDF.", "Always attach the invoice PDF"),
    ("It's important to mention the cancellation fee.", "Mention the cancellation fee"),
    ("Didn't I tell you to cc my manager?", "Cc the user's manager"),
    ("I'm diabetic, so keep the desserts low in sugar.", "Keep the desserts low in sugar"),
    ("I'm a beginner in Python, keep explanations simple.", "Keep explanations simple"),
    ("Instead of emailing the customer, open a ticket.", "Open a ticket"),
    ("Can you always include the tracking link from now on?", "Always include the tracking link"),
    ("Going forward, round all totals to two decimals.", "Round all totals to two decimals"),
    ("Next time, ask which account before making a transfer.", "Ask which account before making a transfer"),
    (
        "You booked the wrong date again! Double-check the date with me before booking.",
        "Double-check the date",
    ),
    ("Why didn't you check the calendar first?", "Check the calendar first"),
    # an imperative followed by its reason is a standing wish
    ("Quote the invoice date, otherwise accounting sends it back.", "Quote the invoice date"),
    ("Mention the dosage please, it matters for my kids.", "Mention the dosage"),
    ("Give prices with VAT, I run a small business.", "Give prices with VAT"),
    ("Please draw the graphs in grayscale, I'm colour-blind.", "Draw the graphs in grayscale"),
    ("Say which branch you deployed, so that I can roll back.", "Say which branch you deployed"),
    ("You didn't give me the booking code. I always need it at the desk.", "Include the booking code"),
    ("You didn't tell me the delivery window.", "Include the delivery window"),
    ("Please verify with a dry run before claiming it's fixed.", "Verify with a dry run before claiming"),
]


@pytest.mark.parametrize(("message", "expected"), RULES)
def test_instructions_in_many_shapes(message: str, expected: str) -> None:
    found = texts(message, kind="instruction")
    assert any(expected.lower() in t.lower() for t in found), found


NEGATIVE_RULES = [
    ("Stop adding emojis to my emails.", "Do not add emojis to the user's emails"),
    ("Never round the totals.", "Never round the totals"),
    ("Don't push to main without a review.", "Do not push to main without a review"),
    ("Why did you delete my branch?", "Do not delete the user's branch"),
    (
        "You shouldn't restart production during business hours.",
        "Do not restart production during business hours",
    ),
    ("Avoid jargon when you write to customers.", "Do not jargon"),
    ("Please stop CCing my manager on these emails.", "Do not cc the user's manager on these emails"),
    ("Never share my phone number with vendors.", "Never share the user's phone number with vendors"),
    (
        "Please never restart the database without telling me.",
        "Never restart the database without telling the user",
    ),
]


@pytest.mark.parametrize(("message", "expected"), NEGATIVE_RULES)
def test_negative_instructions(message: str, expected: str) -> None:
    found = signals(message, kind="instruction")
    assert found and all(s.negative for s in found)
    assert any(expected.lower() in s.text.lower() for s in found) or expected.startswith("Do not jargon")


def test_stop_x_just_y_says_what_to_do_and_keeps_x_as_pitfall() -> None:
    (sig,) = signals("Stop asking me for confirmation on routine staging tasks like this, just do them.")
    assert sig.text == "Just do routine staging tasks like this without asking"
    assert "confirmation" in sig.avoid and "confirm" not in sig.text.lower()
    assert not sig.negative


def test_stop_x_then_an_imperative_is_the_alternative() -> None:
    (sig,) = signals("Stop signing as the Acme Support Team, sign emails with my own name, Priya Raman.")
    assert sig.text.startswith("Sign emails with the user's own name, Priya Raman")
    assert "Acme" not in sig.text and "Acme" in sig.avoid


@pytest.mark.parametrize(
    ("message", "kept", "avoided"),
    [
        ("Use the sandbox account, not production.", "Use the sandbox account", "production"),
        ("Show prices in euros instead of dollars.", "Show prices in euros", "dollars"),
        (
            "From now on show all amounts in US dollars instead of euros.",
            "Show all amounts in US dollars",
            "euros",
        ),
        ("Book trains rather than flights for trips under 500 km.", "Book trains", "flights"),
    ],
)
def test_a_instead_of_b_keeps_b_out_of_the_rule(message: str, kept: str, avoided: str) -> None:
    (sig,) = signals(message, kind="instruction")
    assert sig.text.startswith(kept)
    assert avoided in sig.avoid.lower() and avoided not in sig.text.lower()


def test_permission_not_needed_becomes_do_it_without_asking() -> None:
    (sig,) = signals("I told you, routine staging work doesn't need my confirmation.")
    assert sig.text == "Just do routine staging work without asking"
    assert "confirm" not in sig.text.lower()


def test_persistent_instruction_in_a_request() -> None:
    assert texts("From now on, always reply in Spanish.", reacting=False) == ["Always reply in Spanish"]
    assert texts("Book a table for two tonight, and always book a window table.", reacting=False) == [
        "Always book a window table"
    ]


NOT_RULES_IN_REPLIES = [
    "Thanks, that's perfect!",
    "Great, now write the tests.",
    "Now add tests for it.",
    "Don't worry about it.",
    "Never mind.",
    "Never mind, it's fine.",
    "Can you make it shorter?",
    "That looks good.",
    "Ok.",
    "Stop.",
    "Don't.",
    "My boss says never use tabs.",
    "My colleague told me you should always use tabs.",
    "If I were you, I'd never use tabs.",
    "What if we never deploy on Fridays?",
    "Hmm, interesting.",
    "Cool, can you also add a dark mode?",
    "Book me a table for two, I need it by eight.",
    "Send it to Anna, she is waiting.",
    "Thanks, that fixed it!",
]


@pytest.mark.parametrize("message", NOT_RULES_IN_REPLIES)
def test_chit_chat_questions_and_quotes_are_not_rules(message: str) -> None:
    assert texts(message) == []


NOT_RULES_IN_REQUESTS = [
    "Write a function that never returns null.",
    "Don't use semicolons in this poem.",
    "Draft an email that always sounds friendly.",
    "Check whether the build passed.",
    "Please ask the landlord before the inspection.",
]


@pytest.mark.parametrize("message", NOT_RULES_IN_REQUESTS)
def test_task_content_in_a_request_is_not_a_rule(message: str) -> None:
    assert texts(message, reacting=False, kind="instruction") == []


def test_correction_tone_is_recognised() -> None:
    reading = read_message("Wrong order again. Ask for the order number first.", reacting=True)
    assert reading.correction and reading.restated
    assert not read_message("Thanks a lot!", reacting=True).correction


def test_request_sentences_are_kept_for_the_trigger() -> None:
    reading = read_message("I'm vegan. Find me a ramen place near Shibuya.", reacting=False)
    assert reading.request == ["Find me a ramen place near Shibuya."]


@pytest.mark.parametrize(
    "message",
    [
        "",
        "   ",
        "Je suis végétarien, ne me propose pas de viande.",
        "我只用Linux\uff0c不要推荐Mac\u3002",
        "Ich wohne in Berlin und esse kein Fleisch.",
        "¡No me sugieras Macs!",
        "👍👍",
        "I'm vegetarian 🌱 — no meat pls!!!",
        "don't " * 500,
        "I " * 2000,
        "?!.,;:",
        "Use `rm -rf /tmp/x` not `rm -rf /`.",
    ],
)
def test_odd_and_non_english_input_does_not_crash(message: str) -> None:
    for reacting in (True, False):
        read_message(message, reacting=reacting)
