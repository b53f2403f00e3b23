"""The demo org ``reflexio demo`` seeds: a realistic support agent's data, made the way a real org's is.

The demo is made the way a real org's data is made: a support agent's conversations with a
dozen users are published through the service (corrections, stated preferences, failed tool
calls, expert answers), the real job workers learn profiles and user playbooks from them and
judge the sessions, and a reviewer's decisions on agent playbooks go through the review
state machine. A team's own agent playbooks are added through the API as a team would; the
last step runs the real aggregation, so the lessons several users taught wait in the review
queue with their recorded evidence. One approved playbook (a lapsed express-shipping offer)
hurts the three late-parcel sessions it is served in, which the shop reports as failed, so
reflection retires it with its reason. The clock is the publishes' own ``created_at``,
spread over the last two weeks.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from reflexio.config import Settings
from reflexio.jobs import Worker
from reflexio.learn.review import Action
from reflexio.models import (
    AddAgentPlaybookRequest,
    AgentPlaybook,
    GetAgentPlaybooksRequest,
    InteractionData,
    PlaybookAggregationOperationRequest,
    PublishUserInteractionRequest,
    SessionOutcomeKind,
    SetSessionOutcomeRequest,
    ToolUsed,
    UserActionType,
)
from reflexio.service import aggregation, org_config, outcomes, playbooks, publish
from reflexio.service.core import Core, open_core
from reflexio.service.review import review
from reflexio.service.workers import handlers

__all__ = ["AGENT_VERSION", "DemoSummary", "seed_demo", "seed_into"]

AGENT_VERSION = "support-agent@2"
DAY = 86_400
#: Who the demo's review decisions are recorded as.
REVIEWER = "demo:reviewer"

#: Lessons a team would see proposed from many users' corrections: (trigger, instruction, rationale, fate).
AGENT_PLAYBOOKS = [
    (
        "a customer asks for a refund on an order",
        "Confirm the order number and the payment method before starting any refund.",
        "Refunds issued to the wrong line were the most common correction.",
        "approved",
    ),
    (
        "writing any customer email",
        "Sign customer emails as 'The Acme Support Team', never with the assistant's name.",
        "Several reps corrected the signature.",
        "approved",
    ),
    (
        "a tracking lookup fails",
        "If the carrier API times out, say so and offer to retry instead of guessing a delivery date.",
        "Guessed dates led to escalations.",
        "pending",
    ),
    (
        "a customer mentions a laptop or workstation",
        "Ask which operating system they use before recommending hardware.",
        "Users corrected Mac suggestions to Linux or Windows.",
        "pending",
    ),
    (
        "quoting sizes, weights or distances",
        "Use metric units unless the customer asks for imperial.",
        "Most customers of this shop are in Europe.",
        "pending",
    ),
    (
        "a customer is upset about a delay",
        "Apologise once, give the new date, and offer the 10% voucher.",
        "",
        "pending",
    ),
    (
        "a customer asks to cancel",
        "Always cancel immediately without asking why.",
        "Proposed from two users; conflicts with the retention policy.",
        "rejected",
    ),
    (
        "a parcel is late",
        "Apologise and offer a free express shipping upgrade on their next order.",
        "Customers liked the upgrade while the summer offer ran.",
        "lapsed",
    ),
]
#: What three users said when the lapsed express offer was made to them (each session failed).
LAPSED_REPLIES = [
    ("marta.lopez", "That express upgrade doesn't exist. Please stop offering it."),
    ("omar.haddad", "The store says there is no free express offer any more. Why did you promise it?"),
    ("pia.nielsen", "Stop promising free express shipping, that offer ended."),
]

#: One exchange: what the user said, the agent's answer, a tool call (name, status), an expert's answer.
Turn = tuple[str, str, tuple[str, str] | None, str | None]
#: (user, [(session, days ago, turns)]).
CONVERSATIONS: list[tuple[str, list[tuple[str, int, list[Turn]]]]] = [
    (
        "ana.silva",
        [
            (
                "ana-1",
                12,
                [
                    (
                        "My order 4411 arrived damaged, I want a refund.",
                        "I'm sorry! I've refunded your order to your card.",
                        None,
                        None,
                    ),
                    (
                        "Don't refund to the card, I paid with PayPal. Always check the payment method.",
                        "You're right, I'll refund to PayPal.",
                        None,
                        None,
                    ),
                ],
            ),
            (
                "ana-2",
                3,
                [
                    (
                        "Where is my replacement parcel?",
                        "Let me check the tracking.",
                        ("carrier_tracking", "timeout"),
                        None,
                    ),
                    (
                        "Please don't guess, just tell me if the lookup failed.",
                        "The lookup failed; I'll retry in a minute.",
                        None,
                        None,
                    ),
                ],
            ),
        ],
    ),
    (
        "ben.okafor",
        [
            (
                "ben-1",
                11,
                [
                    (
                        "I need a light laptop for travelling.",
                        "The MacBook Air is a great choice.",
                        None,
                        None,
                    ),
                    (
                        "I only ever use Linux. Please don't suggest Macs.",
                        "Noted — a ThinkPad X1 Carbon runs Linux well.",
                        None,
                        None,
                    ),
                ],
            )
        ],
    ),
    (
        "chloe.martin",
        [
            (
                "chloe-1",
                10,
                [
                    (
                        "How big is the 'Trail' backpack?",
                        "It is 20 x 12 x 8 inches.",
                        None,
                        "It is 50 x 30 x 20 cm (30 litres).",
                    ),
                    (
                        "Use centimetres, not inches, I'm in France.",
                        "Of course: 50 x 30 x 20 cm.",
                        None,
                        None,
                    ),
                ],
            )
        ],
    ),
    (
        "dev.patel",
        [
            (
                "dev-1",
                9,
                [
                    (
                        "Draft a reply to a customer whose parcel is three days late.",
                        "Hi Sam, sorry it's late. It arrives tomorrow. Best, Assistant",
                        None,
                        None,
                    ),
                    (
                        "Always sign customer emails as 'The Acme Support Team'.",
                        "Updated: Best regards, The Acme Support Team",
                        None,
                        None,
                    ),
                ],
            )
        ],
    ),
    (
        "emma.novak",
        [
            (
                "emma-1",
                8,
                [
                    (
                        "I want a refund for order 5120.",
                        "Done, refunded to your Visa card.",
                        ("refund_api", "error"),
                        None,
                    ),
                    (
                        "I never used a Visa. Check the order's payment method first, please.",
                        "Sorry — it was a bank transfer; I'll refund that way.",
                        None,
                        None,
                    ),
                ],
            )
        ],
    ),
    (
        "farid.haddad",
        [
            (
                "farid-1",
                7,
                [
                    ("My name is Farid and I live in Oslo.", "Nice to meet you, Farid!", None, None),
                    (
                        "What's the delivery time to my city?",
                        "Delivery to Oslo takes 2-3 business days.",
                        None,
                        None,
                    ),
                ],
            )
        ],
    ),
    (
        "grace.lee",
        [
            (
                "grace-1",
                6,
                [
                    ("Recommend a workstation for video editing.", "The Mac Studio is ideal.", None, None),
                    (
                        "I use Windows. Don't recommend Apple hardware to me.",
                        "Understood: a Dell Precision 5860 with an RTX card.",
                        None,
                        None,
                    ),
                ],
            )
        ],
    ),
    (
        "hugo.berg",
        [
            (
                "hugo-1",
                5,
                [
                    (
                        "The package is 2 days late and I'm annoyed.",
                        "Sorry about that.",
                        None,
                        "Sorry for the delay: your parcel now arrives Thursday. Here is a 10% voucher.",
                    ),
                    ("That's it? Give me a new date at least.", "It now arrives Thursday.", None, None),
                ],
            )
        ],
    ),
    (
        "ines.costa",
        [
            (
                "ines-1",
                4,
                [
                    ("I prefer to be contacted by email, not phone.", "Noted, we'll email you.", None, None),
                    (
                        "Can you check order 7781?",
                        "It shipped yesterday and arrives Friday.",
                        ("order_lookup", "ok"),
                        None,
                    ),
                ],
            )
        ],
    ),
    (
        "jonas.weber",
        [
            (
                "jonas-1",
                2,
                [
                    ("How heavy is the camping stove?", "It weighs 1.2 pounds.", None, None),
                    ("Please use kilograms, not pounds.", "It weighs 0.54 kg.", None, None),
                ],
            )
        ],
    ),
    (
        "kim.tran",
        [
            (
                "kim-1",
                1,
                [
                    (
                        "Write to a customer who was charged twice.",
                        "Hi Ana, we refunded the duplicate charge. Thanks, Assistant",
                        None,
                        None,
                    ),
                    (
                        "Sign it as 'The Acme Support Team', as always.",
                        "Hi Ana, we refunded the duplicate charge. Best regards, The Acme Support Team",
                        None,
                        None,
                    ),
                ],
            )
        ],
    ),
    (
        "lena.fischer",
        [
            (
                "lena-1",
                0,
                [
                    (
                        "I want to return my order 9002 and get a refund.",
                        "Before I start: was it paid by card or PayPal?",
                        None,
                        None,
                    ),
                    (
                        "PayPal. Thanks for asking!",
                        "Refund started to PayPal; it shows within 3 days.",
                        None,
                        None,
                    ),
                ],
            )
        ],
    ),
]


@dataclass(frozen=True, slots=True)
class DemoSummary:
    """What the demo seeded."""

    org_id: str
    users: int
    sessions: int
    agent_playbooks: int
    jobs_run: int


def _add_agent_playbooks(core: Core, org_id: str, start: int) -> list[tuple[int, str]]:
    rows = [
        AgentPlaybook(
            agent_version=AGENT_VERSION,
            playbook_name="support",
            trigger=trigger,
            content=content,
            rationale=rationale or None,
            created_at=start + i * DAY,
        )
        for i, (trigger, content, rationale, _) in enumerate(AGENT_PLAYBOOKS)
    ]
    playbooks.add_agent_playbooks(core, org_id, AddAgentPlaybookRequest(agent_playbooks=rows), actor=REVIEWER)
    query = GetAgentPlaybooksRequest(agent_version=AGENT_VERSION, limit=100)
    listed = playbooks.get_agent_playbooks(core, org_id, query).agent_playbooks
    by_content = {p.content: p.agent_playbook_id for p in listed}
    return [(by_content[content], fate) for _, content, _, fate in AGENT_PLAYBOOKS]


def _send(core: Core, org_id: str, user_id: str, session_id: str, items: list[InteractionData]) -> None:
    """Publish one finished session of the demo's support agent."""
    req = PublishUserInteractionRequest(
        user_id=user_id,
        session_id=session_id,
        agent_version=AGENT_VERSION,
        source="support-agent:v2",
        interaction_data_list=items,
        session_finished=True,
    )
    publish.publish(core, org_id, req, flush=True)


def _publish(core: Core, org_id: str, now: int, served: list[int]) -> int:
    sessions = 0
    for user_id, user_sessions in CONVERSATIONS:
        for session_id, days_ago, turns in user_sessions:
            t = now - days_ago * DAY - 3_600
            items = []
            for n, (said, answered, tool, expert) in enumerate(turns):
                items.append(
                    InteractionData(
                        role="User", content=said, user_action=UserActionType.NONE, created_at=t + n * 60
                    )
                )
                injected = (
                    [{"kind": "agent_playbook", "learning_id": str(pid)} for pid in served] if n == 0 else []
                )
                items.append(
                    InteractionData(
                        role="Agent",
                        content=answered,
                        created_at=t + n * 60 + 20,
                        tools_used=[ToolUsed(tool_name=tool[0], status=tool[1], tool_data={"order": "4411"})]
                        if tool
                        else [],
                        expert_content=expert or "",
                        retrieved_learnings=injected,
                    )
                )
            _send(core, org_id, user_id, session_id, items)
            sessions += 1
    return sessions


def _publish_lapsed(core: Core, org_id: str, now: int, playbook_id: int) -> int:
    """Three late-parcel sessions the lapsed offer is served in; the shop reports each failed."""
    for n, (user_id, reply) in enumerate(LAPSED_REPLIES):
        t = now - (4 - n) * DAY
        session_id = f"{user_id.split('.')[0]}-late"
        items = [
            InteractionData(role="User", content="My parcel is three days late, where is it?", created_at=t),
            InteractionData(
                role="Agent",
                content="Sorry! I've added a free express shipping upgrade to your next order.",
                created_at=t + 20,
                retrieved_learnings=[{"kind": "agent_playbook", "learning_id": str(playbook_id)}],
            ),
            InteractionData(role="User", content=reply, created_at=t + 60),
        ]
        _send(core, org_id, user_id, session_id, items)
        outcomes.set_session_outcome(
            core,
            org_id,
            SetSessionOutcomeRequest(
                session_id=session_id,
                outcome=SessionOutcomeKind("failure"),
                occurred_at=t + 3_600,
                label="complaint",
            ),
        )
    return len(LAPSED_REPLIES)


def _run_jobs(core: Core, *, settle_seconds: float = 3.0) -> int:
    """Run due jobs in this thread until none has been due for ``settle_seconds``."""
    worker = Worker(core.storage, handlers(core), name="demo-seeder")
    ran, quiet_since = 0, time.monotonic()
    while time.monotonic() - quiet_since < settle_seconds:
        if worker.run_once():
            ran += 1
            quiet_since = time.monotonic()
        else:
            time.sleep(0.1)
    return ran


def seed_demo(core: Core, org_id: str) -> DemoSummary:
    """Seed ``org_id`` with the demo's users, conversations, learnings, verdicts and reviews.

    Sessions are judged one second after they go idle while seeding (the org's
    ``session_idle_seconds`` is restored afterwards), so the verdicts exist when this returns.
    """
    now = int(time.time())
    decided = _add_agent_playbooks(core, org_id, now - 13 * DAY)
    for playbook_id, fate in decided:
        if fate in ("approved", "lapsed"):
            review(
                core,
                org_id,
                playbook_id,
                Action.APPROVE,
                actor=REVIEWER,
                note="matches the support policy",
            )
        elif fate == "rejected":
            review(
                core,
                org_id,
                playbook_id,
                Action.REJECT,
                actor=REVIEWER,
                note="conflicts with the retention policy",
            )
    idle = core.org_config(org_id).session_idle_seconds
    org_config.update_config(core, org_id, {"session_idle_seconds": 1})
    try:
        sessions = _publish(core, org_id, now, [pid for pid, fate in decided if fate == "approved"])
        sessions += _publish_lapsed(core, org_id, now, next(pid for pid, fate in decided if fate == "lapsed"))
        time.sleep(1.2)
        ran = _run_jobs(core)
    finally:
        org_config.update_config(core, org_id, {"session_idle_seconds": idle})
    # What several users taught, generalised by the real aggregation: pending, for review.
    aggregation.run_and_wait(
        core, org_id, PlaybookAggregationOperationRequest(agent_version=AGENT_VERSION), wait_seconds=60
    )
    return DemoSummary(org_id, len(CONVERSATIONS) + len(LAPSED_REPLIES), sessions, len(decided), ran)


def seed_into(chosen: Settings, org_id: str | None = None) -> DemoSummary:
    """Open the store ``chosen`` names, seed the demo org in it, and close it again."""
    core = open_core(chosen)
    try:
        return seed_demo(core, org_id or chosen.default_org_id)
    finally:
        core.close()
