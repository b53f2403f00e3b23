"""Haystacks and needles for the needle benchmark (``bench.needle``).

A haystack is one user's profiles as an extraction model writes them: short third-person facts
about family, travel, food, work, hobbies, health, home, money and habits, in several
phrasings, with Zipf-weighted fillers so some words are everywhere and most are rare. The
words a needle's question is made of ("person", "family", "trip", "recently", "prefer",
"call", "office", "plane"...) occur throughout it, and many rows sit close to a needle's
topic (flights, dairy, phones, commuting, sleep), so a question finds its needle only by
what it means or by the one rare word it shares, never by its style.

A needle is a fact planted among the haystack's oldest rows, with a question it answers.
Half are *lexical*: the question shares a word with the fact that no haystack row contains.
Half are *paraphrases*: the question shares no content word with the fact (after stemming),
so only the vector arm can see the match. ``check()`` proves both properties for a haystack.

Generation is sequential from a fixed seed, so the haystack of size n is a prefix of every
larger one and its embeddings are computed once for all sizes.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from bench.corpus import Filler
from reflexio import ranking

#: Bump when generated text changes, so cached embeddings are rebuilt.
VERSION = 1


@dataclass(frozen=True, slots=True)
class Needle:
    """A planted fact, the question it answers, and whether they share a rare word."""

    key: str
    fact: str
    question: str
    lexical: bool


def _n(key: str, fact: str, question: str, lexical: bool) -> Needle:
    return Needle(key, fact, question, lexical)


LEXICAL = [
    _n(
        "montevideo",
        "The user's grandmother emigrated from Montevideo in the sixties.",
        "Does anyone in this person's family have roots in Montevideo?",
        True,
    ),
    _n(
        "axolotl",
        "User keeps a pet axolotl called Pickles in a tank in the study.",
        "What is the name of the axolotl they look after?",
        True,
    ),
    _n(
        "theremin",
        "They play the theremin in a small experimental band.",
        "Does the user know how to play a theremin?",
        True,
    ),
    _n(
        "penicillin",
        "The user had a severe reaction to penicillin as a child.",
        "Is it safe to recommend penicillin to this person?",
        True,
    ),
    _n(
        "typewriter",
        "Has a collection of over two hundred vintage typewriters.",
        "How many typewriters does this person own?",
        True,
    ),
    _n(
        "kilimanjaro",
        "The user climbed Kilimanjaro with a college roommate.",
        "Has this person ever been up Kilimanjaro?",
        True,
    ),
    _n(
        "bagpipes",
        "The user's daughter is learning the bagpipes at school.",
        "Which of their kids plays the bagpipes?",
        True,
    ),
    _n(
        "kombucha",
        "The user brews kombucha at home every weekend.",
        "Does the user make their own kombucha?",
        True,
    ),
    _n(
        "schiphol",
        "User works night shifts in air traffic control at Schiphol.",
        "What does the user do at Schiphol?",
        True,
    ),
    _n(
        "lama",
        "The user once met the Dalai Lama at a conference in Delhi.",
        "Did they ever get to meet the Dalai Lama?",
        True,
    ),
    _n(
        "comrades",
        "The user is training for the Comrades ultramarathon next June.",
        "Which ultramarathon is the user preparing for?",
        True,
    ),
    _n(
        "tagalog",
        "Speaks Tagalog with their mother on the phone every Sunday.",
        "Can this person speak Tagalog?",
        True,
    ),
    _n(
        "vespa",
        "The user restores old Vespa scooters in a rented garage.",
        "Is the user into Vespa restoration?",
        True,
    ),
    _n(
        "doro",
        "Their favourite dish is doro wat, an Ethiopian chicken stew.",
        "Would this person like a restaurant that serves doro wat?",
        True,
    ),
    _n(
        "kidney",
        "The user donated a kidney to their brother in 2019.",
        "When did the kidney donation happen?",
        True,
    ),
    _n(
        "synesthesia",
        "The user has synesthesia and sees numbers as colours.",
        "Does the user experience synesthesia?",
        True,
    ),
    _n(
        "soviet",
        "Collects Soviet-era postage stamps and keeps them in albums.",
        "Are they into Soviet memorabilia of any kind?",
        True,
    ),
    _n(
        "citroen",
        "The user drives a 1972 Citroen DS that they restored themselves.",
        "What model of Citroen does this person have?",
        True,
    ),
    _n(
        "falconry",
        "The user volunteers at a falconry centre on Sundays.",
        "Has the user done any falconry?",
        True,
    ),
    _n(
        "lighthouse",
        "Their wedding took place in a lighthouse on the coast of Maine.",
        "Where was the lighthouse wedding?",
        True,
    ),
    _n("padi", "The user is a PADI certified diving instructor.", "Is the user PADI certified?", True),
    _n(
        "tinnitus",
        "The user suffers from tinnitus after years of playing drums.",
        "Does this person have tinnitus?",
        True,
    ),
    _n(
        "kyudo", "Practises kyudo, Japanese archery, twice a week.", "How often does the user do kyudo?", True
    ),
    _n(
        "churros",
        "The user's first job was selling churros at a fairground.",
        "Did this person ever sell churros?",
        True,
    ),
    _n(
        "saffron",
        "The user grows saffron crocuses on their balcony.",
        "Is it true they grow their own saffron?",
        True,
    ),
    _n(
        "patagonia",
        "The user lived on a sailboat off Patagonia for a year.",
        "How long did they spend in Patagonia?",
        True,
    ),
    _n(
        "byzantine",
        "The user is writing a thesis on Byzantine coinage.",
        "What is the person's Byzantine research about?",
        True,
    ),
    _n(
        "nebulae",
        "Owns a telescope and photographs nebulae from the back garden.",
        "What kind of camera does the user use for nebulae?",
        True,
    ),
    _n(
        "dyslexia",
        "The user's son was diagnosed with dyslexia last spring.",
        "Which of the user's kids has dyslexia?",
        True,
    ),
    _n(
        "galatasaray",
        "They have held a season ticket for Galatasaray for ten years.",
        "Does this person support Galatasaray?",
        True,
    ),
    _n(
        "alpaca",
        "The user knits sweaters from alpaca wool for the whole family.",
        "Does the person work with alpaca wool?",
        True,
    ),
    _n(
        "rubik",
        "The user competes in Rubik's cube speedsolving tournaments.",
        "How fast can this person solve a Rubik's cube?",
        True,
    ),
]

PARAPHRASE = [
    _n("flying", "The user is terrified of flying.", "Is this person scared to get on a plane?", False),
    _n("lactose", "User cannot digest lactose.", "Should I avoid offering them milk or cheese?", False),
    _n(
        "bereaved",
        "The user lost their father last winter.",
        "Has this person had a recent death in the family?",
        False,
    ),
    _n(
        "twins",
        "Their spouse is expecting twins in the autumn.",
        "Is the family about to get bigger with new babies?",
        False,
    ),
    _n(
        "colourblind",
        "The user is colour-blind.",
        "Does this person have trouble telling red from green?",
        False,
    ),
    _n(
        "smoking", "The user quit smoking three years ago.", "Did they used to have a cigarette habit?", False
    ),
    _n(
        "meat",
        "The user has not eaten meat since childhood.",
        "Would a steak dinner be a bad suggestion for them?",
        False,
    ),
    _n(
        "swim",
        "The user is afraid of deep water and never learned to swim.",
        "Would this person enjoy a snorkelling trip at sea?",
        False,
    ),
    _n(
        "claustrophobia",
        "They have severe claustrophobia.",
        "Do small enclosed spaces like elevators make this person panic?",
        False,
    ),
    _n("deaf", "The user is hard of hearing in one ear.", "Is this person partially deaf?", False),
    _n(
        "grandchild",
        "The user's first grandchild was born in May.",
        "Did this person's kid just have a baby?",
        False,
    ),
    _n("remote", "The user works from home full-time.", "Does this person commute to an office?", False),
    _n(
        "house",
        "The user is saving up to buy a house.",
        "Is this person putting money aside for a property purchase?",
        False,
    ),
    _n(
        "knee",
        "They are recovering from knee surgery.",
        "Has this person had an operation on a leg joint?",
        False,
    ),
    _n("cilantro", "The user despises cilantro.", "Does this person dislike coriander leaves?", False),
    _n("seasick", "The user gets motion sickness on boats.", "Would a ferry ride make them nauseous?", False),
    _n("lefthanded", "The user is left-handed.", "Is this person a southpaw?", False),
    _n(
        "insomnia",
        "The user struggles with insomnia.",
        "Does this person have trouble sleeping at night?",
        False,
    ),
    _n(
        "emigrated",
        "The user moved to Canada from India five years ago.",
        "Where did this person emigrate from originally?",
        False,
    ),
    _n(
        "university",
        "The user's daughter just started university.",
        "Does this person have a child in college?",
        False,
    ),
    _n("buddhist", "The user is a devout Buddhist.", "What religion does this person practise?", False),
    _n("bees", "They are allergic to bee stings.", "Is an insect bite dangerous for this person?", False),
    _n("noise", "The user can't stand loud music.", "Would a noisy rock concert bother them?", False),
    _n(
        "sober",
        "The user is a recovering alcoholic.",
        "Should I avoid suggesting a wine bar to this person?",
        False,
    ),
    _n(
        "village",
        "The user was born and raised in a small fishing village.",
        "Did this person grow up in a coastal town?",
        False,
    ),
    _n(
        "phone",
        "The user dislikes talking on the phone.",
        "Does this person prefer not to receive calls?",
        False,
    ),
    _n(
        "vet",
        "The user is studying to become a veterinarian.",
        "Is this person going to school to treat animals?",
        False,
    ),
    _n(
        "spiders",
        "The user has a severe fear of spiders.",
        "Do creepy crawlies like tarantulas frighten this person?",
        False,
    ),
    _n("mornings", "The user hates waking up early.", "Would a 6am meeting be painful for them?", False),
    _n(
        "glasses",
        "The user wears glasses for reading.",
        "Does this person need spectacles to see text up close?",
        False,
    ),
    _n("diabetes", "The user has type 1 diabetes.", "Does this person need insulin injections?", False),
    _n(
        "bakery",
        "The user runs a small bakery downtown.",
        "Does this person own a shop that sells bread and pastries?",
        False,
    ),
]

NEEDLES: tuple[Needle, ...] = tuple(LEXICAL + PARAPHRASE)


def _words(text: str) -> list[str]:
    """A vocabulary slot written as "first | second | ...", most common first."""
    return [w.strip() for w in text.split("|")]


V: dict[str, list[str]] = {
    "city": _words(
        "London | Berlin | Paris | New York | Madrid | Lisbon | Toronto | Chicago | Tokyo | Rome | "
        "Amsterdam | Dublin | Seattle | Austin | Barcelona | Vienna | Prague | Boston | Sydney | "
        "Melbourne | Denver | Munich | Milan | Osaka | Seoul | Singapore | Copenhagen | Stockholm | "
        "Oslo | Helsinki | Athens | Krakow | Budapest | Edinburgh | Manchester | Vancouver | "
        "Montreal | Portland | Nashville | Cape Town | Nairobi | Lima | Bogota | Hanoi | Bangkok"
    ),
    "country": _words(
        "Spain | Italy | Japan | Portugal | Greece | France | Mexico | Canada | Germany | Thailand | "
        "Vietnam | Croatia | Iceland | Morocco | Peru | Norway | Scotland | Ireland | Chile | Turkey | "
        "Kenya | New Zealand | Australia | Brazil"
    ),
    "family": _words(
        "sister | brother | mother | father | partner | wife | husband | cousin | aunt | uncle | "
        "son | daughter | grandmother | grandfather | niece | nephew | in-laws | best friend | "
        "roommate | stepmother | godson"
    ),
    "event": _words(
        "family reunion | wedding | birthday party | graduation | baby shower | housewarming | "
        "retirement party | anniversary dinner | book club meeting | school play | neighbourhood "
        "barbecue | company offsite | farewell lunch | charity gala | music festival | conference | "
        "hackathon | art exhibition | christening | engagement party | bachelor party | parents' evening"
    ),
    "item": _words(
        "laptop | bike | car | sofa | espresso machine | phone | standing desk | tent | camera | "
        "television | air fryer | pair of running shoes | guitar | pair of headphones | tablet | "
        "mattress | kayak | drone | smartwatch | e-reader | winter coat | lawn mower | 3D printer | "
        "sewing machine | board game | dishwasher | rice cooker | monitor | mechanical keyboard | "
        "electric scooter | backpack | suitcase | blender | vacuum cleaner | desk chair"
    ),
    "adj": _words("small | big | heavy | noisy | expensive | slow | fragile | bulky | complicated"),
    "season": _words("summer | winter | spring | autumn | Christmas | Easter | Thanksgiving"),
    "month": _words(
        "March | June | September | January | May | October | December | April | July | August | "
        "February | November"
    ),
    "year": _words("2023 | 2022 | 2021 | 2024 | 2020 | 2019 | 2018 | 2017 | 2016 | 2015"),
    "food": _words(
        "sushi | tacos | ramen | pizza | curry | pho | dumplings | falafel | paella | lasagna | "
        "burritos | pad thai | dim sum | bibimbap | pierogi | shawarma | risotto | gumbo | ceviche | "
        "biryani | poke bowls | gnocchi | empanadas | laksa | tagine | goulash | moussaka"
    ),
    "drink": _words(
        "black coffee | green tea | oat milk lattes | sparkling water | espresso | chai | matcha | "
        "fresh orange juice | herbal tea | smoothies | iced coffee | hot chocolate"
    ),
    "role": _words(
        "software engineer | product manager | teacher | nurse | accountant | designer | data "
        "analyst | lawyer | project manager | marketing lead | consultant | architect | sales "
        "manager | researcher | journalist | electrician | pharmacist | civil servant | translator"
    ),
    "industry": _words(
        "fintech | healthcare | logistics | retail | education | insurance | gaming | media | energy "
        "| biotech | travel | telecoms | real estate | automotive | nonprofit"
    ),
    "tool": _words(
        "Excel | Notion | Slack | Jira | Google Docs | Figma | VS Code | Trello | Outlook | Zoom | "
        "Asana | Tableau | PowerPoint | Airtable | Obsidian"
    ),
    "task": _words(
        "budgeting | planning sprints | writing reports | tracking invoices | taking notes | "
        "scheduling | code reviews | client updates | design mockups | data cleaning | hiring"
    ),
    "comm": _words("email | Slack | text messages | video calls | WhatsApp | voice notes | Teams chats"),
    "topic": _words(
        "the quarterly budget | a product launch | the new office | hiring plans | customer "
        "churn | the holiday schedule | a client pitch | the migration project | pricing | onboarding"
    ),
    "hobby": _words(
        "hiking | gardening | baking | painting | yoga | cycling | photography | chess | pottery | "
        "birdwatching | rock climbing | fishing | surfing | woodworking | journaling | running | "
        "camping | skiing | board games | calligraphy | crossword puzzles | salsa dancing | tennis | "
        "volunteering | bouldering | sketching | kayaking | baking sourdough"
    ),
    "instrument": _words("piano | guitar | violin | ukulele | cello | saxophone | flute | drums | harmonica"),
    "genre": _words(
        "mystery | science fiction | fantasy | historical | thriller | romance | horror | comedy | "
        "documentary | biography"
    ),
    "music": _words(
        "jazz | podcasts | lo-fi beats | classical music | indie rock | audiobooks | film scores"
    ),
    "team": _words(
        "Arsenal | the Lakers | Real Madrid | the Yankees | Bayern Munich | the Packers | Celtic | "
        "the Maple Leafs | Juventus | the Red Sox"
    ),
    "freq": _words(
        "three times a week | every morning | on weekends | twice a week | every evening | once a "
        "month | every other day | most days"
    ),
    "pet": _words(
        "dog | cat | rabbit | hamster | goldfish | tortoise | guinea pig | budgie | corgi | beagle"
    ),
    "name": _words(
        "Max | Luna | Bella | Charlie | Milo | Daisy | Oscar | Nora | Felix | Ruby | Leo | Ivy | "
        "Hugo | Maya | Biscuit | Pepper | Olive | Ziggy"
    ),
    "home": _words(
        "flat | house | studio apartment | townhouse | loft | cottage | two-bedroom apartment | shared house"
    ),
    "room": _words("kitchen | bathroom | garden | attic | basement | living room | spare bedroom | garage"),
    "tone": _words("short | detailed | friendly | formal | direct | step-by-step | casual | encouraging"),
    "format": _words(
        "bullet points | tables | numbered steps | plain prose | a summary first | checklists | bar charts"
    ),
    "hour": _words("9am | 8am | 10am | 7am | noon | 2pm | 5pm | 7:30am | 6pm | 11am"),
    "day": _words("Monday | Friday | Tuesday | Wednesday | Thursday | Saturday | Sunday"),
    "num": _words("two | three | four | five | six | ten | twelve"),
    "subject": _words(
        "economics | computer science | history | psychology | biology | marketing | statistics | "
        "philosophy | graphic design | chemistry | Spanish | French"
    ),
    "language": _words(
        "Spanish | French | German | Italian | Japanese | Portuguese | Mandarin | Dutch | Korean"
    ),
    "trait": _words(
        "people person | early planner | creative person | practical person | night owl | "
        "organised person | spontaneous person | detail-oriented person"
    ),
    "app": _words("a budgeting app | a spreadsheet | YNAB | a notebook | their bank's app | Mint"),
    "travel": _words(
        "window seats | aisle seats | train travel | road trips | direct flights | boutique hotels "
        "| hostels | carry-on luggage only | early check-in"
    ),
    "ago": _words(
        "last year | two years ago | this spring | a few months ago | in 2021 | recently | last "
        "month | during the pandemic"
    ),
    "work_event": _words(
        "conference | client meeting | team offsite | trade show | training course | job interview"
    ),
    "sport": _words("football | basketball | cricket | rugby | tennis | Formula 1 | cycling | golf"),
    "car": _words("Toyota | Volkswagen | Honda | Tesla | Ford | Volvo | Kia | Mazda | Subaru"),
}

TEMPLATES = [
    # family and events
    "{S} attended a {event} in {city} in {month} {year}",
    "{S} went to their {family}'s {event} last {season}",
    "{S} is organising a {event} for their {family}",
    "{S}'s {family} lives in {city}",
    "{S} visits their {family} in {city} every {season}",
    "{S} has {num} kids and a {pet} named {name}",
    "{S}'s {family} works as a {role} in {city}",
    "{S} hosted a {event} at home {ago}",
    "{S} is looking forward to the {event} in {month}",
    "{S} missed their {family}'s {event} because of work",
    # purchases
    "{S} recently bought a new {item}",
    "{S} is thinking about buying a {item}",
    "{S} returned a {item} because it was too {adj}",
    "{S} wants a {item} for their birthday",
    "{S} saved for months to buy a {item}",
    "{S} bought a {item} for their {family}",
    "{S} is comparing prices for a {item} before {season}",
    # travel
    "{S} took a trip to {city} with their {family} {ago}",
    "{S} flew to {city} for a {work_event} in {month}",
    "{S} is planning a trip to {country} next {season}",
    "{S} spent {num} weeks backpacking through {country}",
    "{S} prefers {travel} when travelling",
    "{S} likes to book hotels near the centre when visiting {city}",
    "{S} would love to visit {country} one day",
    "{S} drove to {city} for the long weekend",
    # food and drink
    "{S} loves {food}",
    "{S} often cooks {food} on {day}s",
    "{S} ordered {food} for the team lunch",
    "{S}'s favourite restaurant in {city} serves {food}",
    "{S} drinks {drink} every morning",
    "{S} is trying to eat less sugar",
    "{S} learned to make {food} from their {family}",
    "{S} recommends a {food} place near the office",
    # work
    "{S} works as a {role} at a {industry} company",
    "{S} started a new job as a {role} in {month}",
    "{S} uses {tool} every day for {task}",
    "{S} prefers {comm} over {comm} for work updates",
    "{S}'s team has a standup at {hour}",
    "{S} is preparing a presentation about {topic}",
    "{S} manages a team of {num} people",
    "{S} has a performance review in {month}",
    "{S} is frustrated with {tool} for {task}",
    "{S} was promoted to senior {role} {ago}",
    # hobbies and media
    "{S} enjoys {hobby} on weekends",
    "{S} took up {hobby} {ago}",
    "{S} joined a {hobby} club in {city}",
    "{S} is learning to play the {instrument}",
    "{S} reads {genre} novels before bed",
    "{S} watches {genre} films with their {family}",
    "{S} listens to {music} while working",
    "{S} supports {team} and watches every match",
    "{S} follows {sport} closely",
    "{S} is learning {language} with an app",
    # health and fitness
    "{S} goes to the gym {freq}",
    "{S} runs {num} kilometres every {day}",
    "{S} is trying to drink more water",
    "{S} sprained an ankle while {hobby} {ago}",
    "{S} takes vitamin D in winter",
    "{S} does yoga {freq} to relax",
    "{S} has a dentist appointment on {day}",
    "{S} is cutting back on {drink}",
    # home and pets
    "{S} has a {pet} named {name}",
    "{S} lives in a {home} in {city}",
    "{S} is renovating the {room}",
    "{S} moved to {city} {ago}",
    "{S}'s {pet} needs a walk at {hour}",
    "{S} is looking for a bigger {home}",
    "{S} shares the {home} with their {family}",
    "{S} drives a {car}",
    # preferences about the assistant
    "{S} prefers {tone} answers",
    "{S} likes responses formatted as {format}",
    "{S} wants reminders {freq}",
    "{S} prefers to be called by their first name",
    "{S} describes themselves as a {trait}",
    "{S} asked for {tone} explanations with {format}",
    "{S} likes a quick call rather than a long email",
    # money, learning, schedule
    "{S} is budgeting for a new {item}",
    "{S} pays rent on the first of the month",
    "{S} tracks expenses with {app}",
    "{S} is taking an online course in {subject}",
    "{S} studied {subject} at university",
    "{S}'s {family} is studying {subject}",
    "{S} is usually free after {hour} on {day}s",
    "{S} is unavailable on {day} afternoons",
    "{S} blocks {day} mornings for deep work",
    "{S} picks up the kids from school at {hour}",
    # words the needles' questions use, in rows about something else
    "{S}'s flight to {city} was delayed by {num} hours",
    "{S} likes to read {genre} books on the plane",
    "{S} booked a plane ticket to {city} for {month}",
    "{S} scared their {family} with a surprise {event}",
    "{S} gets nervous before big presentations",
    "{S} loves cheese toasties for lunch",
    "{S} puts oat milk in their {drink}",
    "{S} wants to save money on a {item}",
    "{S} sends money to their {family} every month",
    "{S}'s child plays {sport} on {day}s",
    "{S} still keeps in touch with college friends from {city}",
    "{S} works late at night before deadlines",
    "{S} loves animals and volunteers at a shelter {freq}",
    "{S} shops at the farmers market on {day}s",
    "{S} bakes bread {freq}",
    "{S} loves holidays by the sea in {country}",
    "{S} opened a joint account with their partner",
    "{S} leaves work at {hour} on {day}s",
    "{S} ran a half marathon despite a sore leg",
    "{S} wants to receive the newsletter by email",
    "{S} wants to see the northern lights in {country}",
    "{S} had a bad experience with a hotel in {city}",
    "{S} asked for suggestions for {food} recipes",
    "{S} wants to avoid meetings on {day}s",
    "{S} got a job offer from a {industry} company in {city}",
    "{S} took their {family} to a {music} concert",
    "{S} had a dinner party for {num} friends",
    "{S} is expecting a parcel with a new {item}",
    "{S} is recovering from a cold",
    "{S} bought a property in {city} with their {family} {ago}",
    "{S} goes for a walk at night to clear their head",
    "{S} met their {family} for coffee in {city}",
]

SUFFIXES = [
    "since {year}",
    "according to a chat in {month}",
    "as mentioned during a conversation about {topic}",
    "but only on weekends",
    "with their {family}",
    "when the weather is good",
    "to relax after work",
    "and talks about it often",
    "which came up while planning the {event}",
    "before the {season} holidays",
]

#: How often a row gets a suffix, and how a row names the user.
SUFFIX_RATE = 0.35
SUBJECTS = [("The user", 0.7), ("User", 0.9), ("", 1.0)]  # cumulative; "" = a bare predicate


_fill = Filler(V, 1.05)


def _subject(rng: random.Random, template: str) -> str:
    roll = rng.random()
    subject = next(s for s, p in SUBJECTS if roll < p)
    if subject:
        return template.replace("{S}", subject, 1)
    bare = template.replace("{S}'s ", "Their ", 1).replace("{S} ", "", 1)
    return bare[0].upper() + bare[1:]


def rows(n: int) -> list[str]:
    """The first ``n`` haystack rows (a prefix of every longer haystack)."""
    rng = random.Random(f"haystack-{VERSION}")
    out = []
    for _ in range(n):
        text = _fill(rng, _subject(rng, rng.choice(TEMPLATES)))
        if rng.random() < SUFFIX_RATE:
            text = f"{text} {_fill(rng, rng.choice(SUFFIXES))}"
        out.append(text + ".")
    return out


@dataclass(frozen=True, slots=True)
class Check:
    """What ``check`` found: needles that break their kind's rule, and the haystack's variety."""

    broken: list[str]
    distinct_rows: int
    question_terms_in_haystack: float


def check(needles: Sequence[Needle], haystack: Iterable[str]) -> Check:
    """Whether each needle keeps its promise against ``haystack``.

    A lexical needle must share with its question a term that no haystack row contains; a
    paraphrase must share no term with its question at all. Also reports how many distinct
    rows the haystack has and what share of the questions' terms it contains (the words the
    lexical arm can be misled by).
    """
    seen: set[str] = set()
    vocab: set[str] = set()
    for text in haystack:
        if text not in seen:
            seen.add(text)
            vocab.update(ranking.tokenize(text))
    broken = []
    for needle in needles:
        shared = set(ranking.tokenize(needle.fact)) & set(ranking.tokenize(needle.question))
        if needle.lexical and not shared - vocab:
            broken.append(needle.key)
        if not needle.lexical and shared:
            broken.append(needle.key)
    terms = [t for needle in needles for t in set(ranking.tokenize(needle.question))]
    covered = sum(t in vocab for t in terms) / max(len(terms), 1)
    return Check(broken, len(seen), round(covered, 3))
