"""Word lists the offline rule extractor reads English with.

The rule extractor has no model and no tagger, so it recognises instructions, self-statements
and verb forms from closed lists: a few hundred common verbs (to spot a bare imperative and to
turn "ran"/"checked" into "run"/"check"), the markers of persistence, correction, reversal and
reported speech, and the words that carry no topic. Keeping them here, as data, keeps the
logic modules short and lets a reviewer extend a list without reading any code.
"""

from __future__ import annotations

from typing import Final


def word_list(text: str) -> frozenset[str]:
    """The whitespace-separated words of a block of text, as a set (lists stay readable)."""
    return frozenset(text.split())


def phrase_list(text: str) -> tuple[str, ...]:
    """The "|"-separated phrases of a block of text, in order."""
    return tuple(p.strip() for p in text.split("|") if p.strip())


def pair_list(text: str) -> dict[str, str]:
    """ "a:b c:d" as {"a": "b", "c": "d"}."""
    return dict(pair.split(":", 1) for pair in text.split())


__all__ = [
    "CORRECTION_CUES",
    "DOCUMENT_SPEAKERS",
    "EVALUATIVE",
    "FAILURE_WORDS",
    "FIX_APPRAISALS",
    "FIX_PHRASES",
    "FIX_STATES",
    "GENERAL_CUES",
    "HYPOTHETICAL_OPENERS",
    "INDIFFERENCE",
    "IRREGULAR_PAST",
    "ITEM_VERBS",
    "LIGHT_WORDS",
    "NOT_SELF_ADJECTIVES",
    "NOT_SELF_VERBS",
    "PERSISTENCE_CUES",
    "PROBLEM_CUES",
    "REASON_CUES",
    "REPORTING_VERBS",
    "RESTATEMENT_CUES",
    "REVERSAL_CUES",
    "SELF_PROGRESSIVE",
    "SUCCESS_WORDS",
    "TERSE_NOT",
    "THIRD_PERSON_IRREGULAR",
    "VERBS",
    "word_list",
]

#: Base forms of common verbs: a sentence opening with one of them is an imperative.
VERBS: Final = word_list(
    """
    accept add adjust advise alert allow answer append apply approve archive arrange ask assign
    attach avoid back backup bake book boil bring browse build bump buy calculate call cancel
    capitalize cc change charge chat check choose cite clarify clean clear click close collect
    combine comment commit compare compile complete compress compute configure confirm connect
    consider contact continue convert cook copy correct count cover create credit cut debug deduct
    default define delete deliver deploy describe design detect document double download draft drop
    edit email enable encrypt end ensure escalate estimate evaluate exclude execute expand explain
    export extract fetch figure file fill filter find finish fix flag follow format forward freeze
    gather generate give go grab group handle help highlight hold hyphenate ignore import include
    increase inform insert inspect install invite issue keep label launch lead leave let limit link
    list load lock log look lower make mark measure mention merge message migrate mind minimize
    mirror monitor move name narrow note notify number offer omit open order organize organise
    outline pack paste pause pay pick ping pin place plan point post prepare present preserve print
    prioritize prioritise proceed process prompt propose protect provide publish pull push put quote
    raise rank read rebase reboot recheck recommend record redact reduce refer refresh refund reject
    release reload remember remind remove rename render reopen repeat rephrase replace reply report
    request rerun reschedule reserve reset resize respect respond restart restore resume retry
    return review revert rewrite roll rotate round route run save scale scan schedule scroll search
    select send separate serve set share ship show shorten sign simplify skip slow sort specify
    spell split start state stay stick stop store stream submit suggest summarize summarise supply
    swap switch sync tag take talk tell test text think throttle tidy track transfer translate treat
    trim try turn type undo unlock update upgrade upload use validate verify visit wait walk warn
    wash watch weigh wipe wrap write zip do see get be have come exceed drink eat sleep rest stretch
    hydrate consult reach pass greet thank apologise apologize address relocate sit fly drive ride
    pick spend save invest budget bring listen cost seat require last expire belong contain mean
    depend sit stand hold support exist happen differ equal cap accept allow close open cover skip
    tag tip need arrive leave land depart stop begin say work state charge ship hurt feel seem
    sound taste smell break fail crash freeze matter suit fit help drop lose win grow draw plot
    """
)

#: Irregular past tenses and participles of the verbs above (and a few more), to their base.
IRREGULAR_PAST: Final = pair_list(
    """
    ran:run run:run wrote:write written:write made:make took:take taken:take gave:give given:give
    sent:send built:build bought:buy brought:bring chose:choose chosen:choose found:find got:get
    gotten:get went:go gone:go kept:keep left:leave led:lead let:let put:put read:read said:say
    set:set shut:shut split:split spent:spend told:tell thought:think understood:understand did:do
    done:do was:be were:be been:be had:have began:begin begun:begin broke:break broken:break
    drew:draw drawn:draw fed:feed felt:feel forgot:forget forgotten:forget froze:freeze
    frozen:freeze held:hold knew:know known:know lost:lose meant:mean met:meet paid:pay rode:ride
    saw:see seen:see sold:sell shown:show spoke:speak spoken:speak stood:stand struck:strike
    swore:swear threw:throw thrown:throw woke:wake won:win wore:wear worn:wear rewrote:rewrite
    rewritten:rewrite reran:rerun rebuilt:rebuild undid:undo undone:undo overrode:override
    overridden:override ate:eat eaten:eat drank:drink drunk:drink flew:fly flown:fly grew:grow
    grown:grow became:become quit:quit
    """
)

#: Third-person singular forms that the regular rules get wrong.
THIRD_PERSON_IRREGULAR: Final = pair_list(
    """
    am:is are:is have:has do:does go:goes can:can could:could will:will would:would should:should
    must:must may:may might:might shall:shall was:was had:had
    """
)

#: Phrases that make an instruction last beyond the current task.
PERSISTENCE_CUES: Final = phrase_list(
    """
    from now on | from here on | going forward | moving forward | in the future | in future |
    next time | in general | as a rule | by default | for future reference | every time | each time |
    whenever | anytime | any time | all the time | for all | in all | in everything | everything you |
    all your | your replies | your answers | your responses | every answer | every reply | each answer
    """
)

#: Words that make a bare imperative in a reply generalise beyond the task at hand.
GENERAL_CUES: Final = phrase_list(
    """
    before | after | first | when | whenever | if | unless | until | every | each | always | never |
    instead | only | again | next time | from now on | in future | going forward | anything | any |
    all
    """
)

#: How a clause opens when it gives the reason for the instruction before it.
REASON_CUES: Final = phrase_list(
    """
    otherwise | because | since | so that | so i | so we | so people | so they | that way |
    it matters | this matters | it's important | it is important | people need
    """
)

#: Signs that the user is telling the agent it did something wrong.
CORRECTION_CUES: Final = phrase_list(
    """
    wrong | incorrect | not correct | not right | mistake | not what i asked | not what i wanted |
    not what i meant | that's not | that is not | that was not | that wasn't | this is not |
    this isn't | that isn't | you forgot | you missed | you didn't | you did not | you should have |
    you shouldn't have | why did you | why didn't you | did you actually | did you even |
    did you really | i told you | i said | i asked you | again | still | ugh | seriously | no, |
    nope | broke | not working | doesn't work | does not work | didn't work | actually | not true |
    not quite | you're mistaken | you are mistaken | mistaken | outdated | out of date | off by |
    way off | not how | it's not | it isn't | that changed | that has changed | that's changed
    """
)

#: Signs that the user repeats something they said before.
RESTATEMENT_CUES: Final = phrase_list(
    """
    again | i told you | i already told you | i've told you | i have told you | as i said |
    like i said | as i mentioned | i already said | i said | remember | for the last time |
    once more | how many times | been over this | been through this | we discussed | as discussed
    """
)

#: Signs that a statement replaces an earlier one.
REVERSAL_CUES: Final = phrase_list(
    """
    actually | anymore | any more | no longer | not anymore | changed my mind | change of plan |
    scratch that | forget what i said | ignore what i said | instead | now | these days | nowadays |
    switched | moved | became | become | started | stopped | quit | gave up | no need | don't need |
    do not need | doesn't need | does not need | stop | lately | from now on | going forward |
    gone off | over it | any longer | not any more | relocated | retrained
    """
)

#: Openers of hypothetical sentences, which state no fact and no rule.
HYPOTHETICAL_OPENERS: Final = phrase_list(
    """
    what if | suppose | supposing | imagine | hypothetically | let's say | lets say | say that |
    in theory | if i were | if i was | if you were | if i had | if we were | would it | would you |
    wouldn't it | i wonder | i was wondering | assuming
    """
)

#: Verbs of reported speech: "my boss says never use tabs" is someone else's rule.
REPORTING_VERBS: Final = word_list(
    """
    say says said tell tells told write writes wrote think thinks thought believe believes believed
    claim claims claimed mention mentions mentioned recommend recommends recommended suggest
    suggests suggested insist insists insisted argue argues argued reckon reckons swear swears swore
    ask asks asked want wants wanted
    """
)

#: Verbs after "I" that describe a passing act, wish or thought, not a lasting fact about the user.
NOT_SELF_VERBS: Final = word_list(
    """
    think guess mean wonder hope see know understand agree disagree want need ask say tell try get
    just notice find believe suppose feel expect assume appreciate would could should will shall
    might may must can cannot mention forget remember figure realize realise already also still
    really actually definitely probably maybe click tap press type enter open receive keep look
    wanna gotta bet reckon doubt apologize apologise promise
    """
)

#: Progressive verbs after "I'm" that still describe the user ("I'm living in Porto").
SELF_PROGRESSIVE: Final = frozenset(
    [
        "living",
        "staying",
        "travelling",
        "traveling",
        "moving",
        "training",
        "studying",
        "using",
        "running",
        "learning",
        "visiting",
        "relocating",
        "expecting",
        "pregnant",
        "recovering",
        "based",
        "working",
    ]
)

#: What may follow "I'm" without it being a fact about the user ("I'm sorry", "I'm not sure").
NOT_SELF_ADJECTIVES: Final = word_list(
    """
    sorry afraid sure unsure confused wondering looking trying asking done back here there happy
    glad ok okay fine good great curious going getting having about still just also really so very
    not thinking hoping waiting telling saying gonna kidding joking serious lost stuck confused
    frustrated annoyed tired disappointed impressed surprised pleased excited thrilled sad worried
    afraid checking calling writing following reading off in out up down ready able unable aware all
    late early busy free available away after shopping searching planning almost nearly literally
    honestly referring talking speaking replying responding used
    """
)

#: Verbs whose object is an item offered to the user: "don't suggest Macs" is a taste.
ITEM_VERBS: Final = frozenset(
    [
        "suggest",
        "recommend",
        "show",
        "offer",
        "propose",
        "book",
        "pick",
        "choose",
        "buy",
        "order",
        "send",
        "give",
        "list",
        "include",
        "sell",
        "serve",
        "cook",
        "make",
        "put",
    ]
)

#: "I don't mind Macs": indifference, not aversion.
INDIFFERENCE: Final = ("mind", "care", "bother", "worry", "matter")

#: Words too common in rules to signal a shared topic or a conflict between two rules.
LIGHT_WORDS: Final = word_list(
    """
    user users ask asks asked asking when whenever agent answer answers reply replies respond do
    does done doing make makes made get gets got use uses used using give gives take takes go goes
    want wants need needs like thing things something anything everything stuff way always never
    just also please first before after time times sure one ones instead them it this that these
    those there here again now then still even really actually way ways every each any all always
    new old good well better best let lets tell told say said says know think thinks see look looks
    come keep kept put set try e g eg ie etc include includes including mention mentions doesn don
    didn isn aren wasn weren shouldn won wouldn couldn mustn hasn haven hadn needn ll ve re
    """
)

#: Tool status words meaning the call failed (matched as substrings, case-insensitively).
FAILURE_WORDS: Final = phrase_list(
    """
    fail | error | timeout | timed out | time out | exception | denied | refused | invalid |
    not found | notfound | unauthori | forbidden | crash | abort | reject | unavailable | rate limit |
    ratelimit | throttl | false | cancel | broken | bad request
    """
)

#: Tool status words meaning the call worked.
SUCCESS_WORDS: Final = ("success", "succeed", "ok", "done", "complete", "pass", "true", "200", "201")

#: A user saying the agent's action fixed their problem ("that fixed it", "works again").
FIX_PHRASES: Final = phrase_list(
    """
    fixed it | that fixed | fixed now | it's fixed | is fixed | that worked | it worked | worked perfectly |
    worked like a charm | works now | works again | work again | working now | working again |
    is working | it's working | solved it | that solved | problem solved | issue solved | sorted it |
    that sorted | all sorted | did the trick | that did it | that was the fix | that was exactly it |
    resolved | lifesaver | life saver | back to normal | up and running | all good now |
    good to go now | no more errors | no longer crashes | no more crashes
    """
)

#: A state that says things work now, to be read with an appraisal ("printing now, perfect").
FIX_STATES: Final = phrase_list(
    """
    now | again | this time | back | at last | finally | no more | no longer | fine
    """
)

#: Appraisals that, with a state, confirm a fix.
FIX_APPRAISALS: Final = phrase_list(
    """
    perfect | great | brilliant | excellent | awesome | amazing | nice | thanks | thank you | cheers |
    phew | finally | wonderful | fantastic | superb | legend | you rock
    """
)

#: Words of a request that reports something broken rather than asking for a task.
PROBLEM_CUES: Final = phrase_list(
    """
    can't | cannot | won't | doesn't | does not | isn't | is not | aren't | not working | broken |
    broke | fails | failing | failed | failure | error | errors | crash | crashes | crashing | stuck |
    down | keeps | keep | offline | slow | blank | wrong | missing | full | timing out | times out |
    timed out | rejected | dropping | drops | stutters | stuttering | freezes | frozen | hangs |
    issue | problem | bug | unable | no longer | stopped | won't | refuses | denied | lost | empty |
    duplicates | outdated | stale
    """
)

#: Words a short reply is made of when it acknowledges or judges rather than asks for something.
TERSE_NOT: Final = word_list(
    """
    thanks thank you ty ok okay k cool great perfect nice awesome lol haha hmm hm yes yeah yep yup
    no nope nah sure fine good right correct exactly interesting wow oh ah phew brilliant excellent
    amazing noted understood got it sounds love deal done bye cheers welcome sorry please maybe
    alright agreed same whatever never mind worries all me too of course definitely absolutely true
    fair wait hello hi hey lovely super fantastic wonderful thx much so very really again well way
    expensive cheap pricey wrong bad terrible awful useless helpful better worse weird strange
    confusing clear obvious ugh seriously what why how huh hah ha nice one cheers mate
    """
)

#: Words that judge rather than inform: a statement made of them ("That is wrong") is a complaint.
EVALUATIVE: Final = word_list(
    """
    wrong right correct incorrect true false bad good great fine terrible awful useless dangerous
    outdated off mistaken mistake nonsense ridiculous expensive cheap pricey slow better worse best
    worst helpful unhelpful rude weird strange confusing clear obvious broken okay ok perfect nice
    cool interesting annoying frustrating disappointing too very really way so much ambiguous
    misleading inaccurate unclear silly stupid pointless irrelevant unacceptable terrible lame
    small big large long short easy hard difficult enough
    """
)

#: Nouns whose "says" is a source of facts, not someone's opinion ("the label says 5 ml").
DOCUMENT_SPEAKERS: Final = word_list(
    """
    label labels policy policies contract contracts handbook manual manuals docs documentation
    website site page sign signs law laws rule rules terms guide guidelines spec specification
    invoice receipt ticket schedule timetable form letter email readme wiki
    """
)
