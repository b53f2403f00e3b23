"""Turn one cluster of user playbooks into the text of one agent playbook.

Two aggregators sit behind one seam, as extraction does:

* ``CentralAggregator`` needs no model, so the no-key install generalises too. It splits the
  cluster into *directions* (members whose instructions share most of their words or mean the
  same), keeps the largest direction (a minority that says something else is not
  generalised), and writes the rule from its most central member: the member nearest the
  cluster's centroid, with the trigger that covers most of the trigger words the members share.
* ``LLMAggregator`` makes one structured call per cluster (prompt ``aggregate``), validated
  against ``AggregateOutput`` like every LLM answer; the member ids it cites must belong to
  the cluster.

Either returns a ``Draft`` citing the members it generalises, or None when the cluster holds no
rule for everyone. Nothing here reads or writes storage; ``learn.generalize`` decides which
clusters are aggregated at all and what happens to the result.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from reflexio import ranking
from reflexio.embed import Vectors
from reflexio.errors import ReflexioError
from reflexio.learn import prompts
from reflexio.learn.llm_schemas import AggregateOutput
from reflexio.llm import LLM, Role
from reflexio.records import Vector

__all__ = [
    "Aggregator",
    "CentralAggregator",
    "Draft",
    "Evidence",
    "LLMAggregator",
    "directions",
    "render_members",
]

log = logging.getLogger(__name__)

#: Longest answer an aggregation call may write.
MAX_TOKENS = 2048
#: Share of members' triggers a word must appear in to count as a shared trigger term.
SHARED_TERM_SHARE = 0.5


@dataclass(frozen=True, slots=True)
class Evidence:
    """One member of a cluster: a user playbook with its author and stored vector."""

    id: int
    user_id: str
    content: str
    trigger: str | None = None
    rationale: str | None = None
    pitfall: str | None = None
    blocking_issue: dict[str, Any] | None = None
    vector: Vector | None = field(default=None, repr=False, compare=False)


@dataclass(frozen=True, slots=True)
class Draft:
    """The agent playbook a cluster generalises to, and the members it cites."""

    content: str
    trigger: str | None
    rationale: str | None
    pitfall: str | None
    blocking_issue: dict[str, Any] | None
    member_ids: tuple[int, ...]


class Aggregator(Protocol):
    """Writes the agent playbook of one cluster."""

    @property
    def name(self) -> str:
        """Which aggregator wrote a draft (recorded with the run)."""
        ...

    def aggregate(self, members: Sequence[Evidence], *, min_users: int) -> Draft | None:
        """The cluster's rule for everyone, or None when it has none."""
        ...


def directions(
    members: Sequence[Evidence],
    overlap: float,
    link_similarity: float | None = None,
    instructions: Sequence[Vector] | None = None,
    instruction_similarity: float | None = None,
) -> list[list[Evidence]]:
    """Members grouped by what their instructions say (single linkage on word overlap).

    Two members point the same way when ``|A∩B| / min(|A|, |B|) >= overlap`` over the
    informative words of their instructions, or — with ``link_similarity`` — when their
    stored vectors (every member has one), or the vectors of their instructions alone
    (``instructions``, one per member), are at least that similar. Paraphrases share few
    words ("add the policy link", "include the link to the policy page"), and a stored vector
    also holds the member's trigger, which differs from user to user: "check for interactions
    with my other medications" and "ask about my other medication first" mean the same, taught
    on different requests. Instruction vectors are compared at ``instruction_similarity``
    (``link_similarity`` when None): a stored vector's similarity is raised by a trigger two
    members share, an instruction's is not, so the instructions need no margin above the
    clustering threshold. Groups are the connected components of that relation. Most
    distinct users first, then most members; ties keep member order.
    """
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    if not members:
        return []
    words = [ranking.word_set(m.content) for m in members]
    vocabulary = {w: n for n, w in enumerate(sorted(set().union(*words)))}
    cols = [vocabulary[w] for ws in words for w in ws]
    rows = [i for i, ws in enumerate(words) for _ in ws]
    incidence = csr_matrix(
        (np.ones(len(cols), dtype=np.int32), (rows, cols)), shape=(len(members), len(vocabulary))
    )
    shared = (incidence @ incidence.T).toarray()
    sizes = np.maximum(np.asarray([len(ws) for ws in words]), 1)
    linked = shared >= overlap * np.minimum.outer(sizes, sizes)
    if link_similarity is not None and all(m.vector is not None for m in members):
        stack = np.stack([np.asarray(m.vector, dtype=np.float32) for m in members])
        linked |= stack @ stack.T >= link_similarity
    by_meaning = link_similarity if instruction_similarity is None else instruction_similarity
    if by_meaning is not None and instructions is not None:
        stack = np.stack([np.asarray(v, dtype=np.float32) for v in instructions])
        linked |= stack @ stack.T >= by_meaning
    _, labels = connected_components(csr_matrix(linked), directed=False)
    groups: dict[int, list[Evidence]] = {}
    for member, label in zip(members, labels.tolist(), strict=True):
        groups.setdefault(int(label), []).append(member)
    return sorted(groups.values(), key=lambda g: (-len({m.user_id for m in g}), -len(g)))


@dataclass(frozen=True, slots=True)
class CentralAggregator:
    """The deterministic aggregator: the majority direction's most central member.

    Attributes:
        overlap: ``direction_overlap_threshold`` of the org's aggregation config.
        link_similarity: Vector similarity at which two members point the same way whatever
            their words (None: words only); see ``directions``.
        embed: Embeds instructions (document vectors). When words and stored vectors leave a
            cluster in several directions, the members' instructions are embedded alone and
            compared at ``instruction_similarity``, so that paraphrases taught on different
            requests count as one lesson. Only such clusters pay for it; None (or an embedder
            that fails) keeps words and stored vectors.
        instruction_similarity: Similarity of two instructions' own vectors at which they
            point the same way (None: ``link_similarity``); the clustering threshold, since
            no shared trigger raises it (see ``directions``).
    """

    overlap: float = 0.6
    link_similarity: float | None = None
    instruction_similarity: float | None = None
    embed: Callable[[Sequence[str]], Vectors] | None = field(default=None, compare=False)
    name: str = "central"

    def aggregate(self, members: Sequence[Evidence], *, min_users: int) -> Draft | None:
        """The largest direction's central instruction, if enough users stand behind it."""
        if not members:
            return None
        groups = directions(members, self.overlap, self.link_similarity)
        if len(groups) > 1:
            groups = self._by_meaning(members, groups)
        chosen = groups[0]
        if len({m.user_id for m in chosen}) < min_users:
            return None
        center = _most_central(chosen)
        users = len({m.user_id for m in chosen})
        summary = f"Taught independently by {users} users ({len(chosen)} user playbooks)."
        rationale = " ".join(x for x in (center.rationale, summary) if x)
        return Draft(
            content=center.content,
            trigger=_general_trigger(_by_centrality(chosen), center),
            rationale=rationale,
            pitfall=center.pitfall or next((m.pitfall for m in chosen if m.pitfall), None),
            blocking_issue=_shared_blocking_issue(chosen, center),
            member_ids=tuple(sorted(m.id for m in chosen)),
        )

    def _by_meaning(self, members: Sequence[Evidence], groups: list[list[Evidence]]) -> list[list[Evidence]]:
        """The directions again, with the instructions' own vectors (when they can be had)."""
        if self.embed is None or (self.link_similarity is None and self.instruction_similarity is None):
            return groups
        try:
            vectors = list(self.embed([m.content for m in members]))
        except ReflexioError as exc:  # a hosted embedder is down: words and stored vectors decide
            log.warning("instructions not embedded, directions by words: %s", exc)
            return groups
        return directions(
            members,
            self.overlap,
            self.link_similarity,
            instructions=vectors,
            instruction_similarity=self.instruction_similarity,
        )


def _by_centrality(members: Sequence[Evidence]) -> list[Evidence]:
    """Members ordered from the most central (the order ``_most_central`` picks by)."""
    scores = _centrality(members)
    order = sorted(range(len(members)), key=lambda i: (-round(scores[i], 6), members[i].id))
    return [members[i] for i in order]


def _most_central(members: Sequence[Evidence]) -> Evidence:
    """The member most similar to the others (by vector; by shared words without vectors)."""
    scores = _centrality(members)
    best = max(range(len(members)), key=lambda i: (round(scores[i], 6), -members[i].id))
    return members[best]


def _centrality(members: Sequence[Evidence]) -> list[float]:
    if all(m.vector is not None for m in members):
        stack = np.stack([np.asarray(m.vector, dtype=np.float32) for m in members])
        return [float(x) for x in (stack @ stack.mean(axis=0)).tolist()]
    sets = [ranking.word_set(f"{m.trigger or ''} {m.content}") for m in members]
    return [sum(ranking.jaccard(a, b) for b in sets) for a in sets]


#: Most member situations an offline agent playbook's trigger names.
MAX_TRIGGERS = 4


def _general_trigger(members: Sequence[Evidence], center: Evidence) -> str | None:
    """The situations the rule applies in: the representative trigger, then the members'
    other situations (most central first, up to ``MAX_TRIGGERS``), so the rule is found for
    each kind of request its users taught it on, not only the first one's."""
    first = _representative_trigger(members, center)
    if first is None:
        return None
    picked = [first]
    seen = [ranking.word_set(first)]
    for m in members:
        words = ranking.word_set(m.trigger or "")
        if not words or any(ranking.jaccard(words, w) >= 0.5 for w in seen):
            continue
        picked.append(m.trigger or "")
        seen.append(words)
        if len(picked) == MAX_TRIGGERS:
            break
    return "; or ".join(picked)


def _representative_trigger(members: Sequence[Evidence], center: Evidence) -> str | None:
    """The trigger covering most words shared by the members' triggers (the center's on ties)."""
    triggers = [m.trigger for m in members if m.trigger]
    if not triggers:
        return None
    counts: dict[str, int] = {}
    for text in triggers:
        for word in ranking.word_set(text):
            counts[word] = counts.get(word, 0) + 1
    shared = {w for w, n in counts.items() if n >= SHARED_TERM_SHARE * len(triggers)}
    ordered = ([center.trigger] if center.trigger else []) + triggers
    return max(ordered, key=lambda t: len(shared & ranking.word_set(t)))


def _shared_blocking_issue(members: Sequence[Evidence], center: Evidence) -> dict[str, Any] | None:
    """A blocking issue only when every member reports one, all of the same kind."""
    issues = [m.blocking_issue for m in members]
    if not issues or any(i is None for i in issues):
        return None
    kinds = {str(i.get("kind")) for i in issues if i is not None}
    if len(kinds) != 1:
        return None
    return center.blocking_issue or issues[0]


def render_members(members: Sequence[Evidence]) -> str:
    """The prompt's view of a cluster: numbered members, authors as anonymous letters."""
    letters: dict[str, str] = {}
    blocks = []
    for m in members:
        author = letters.setdefault(m.user_id, _letter(len(letters)))
        lines = [f"[{m.id}] (user {author})"]
        if m.trigger:
            lines.append(f"  Trigger: {m.trigger}")
        lines.append(f"  Instruction: {m.content}")
        if m.rationale:
            lines.append(f"  Rationale: {m.rationale}")
        if m.pitfall:
            lines.append(f"  Pitfall: {m.pitfall}")
        if m.blocking_issue:
            lines.append(f"  Blocked by: [{m.blocking_issue.get('kind')}] {m.blocking_issue.get('details')}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def _letter(n: int) -> str:
    out = ""
    n += 1
    while n:
        n, rem = divmod(n - 1, 26)
        out = chr(65 + rem) + out
    return out


@dataclass
class LLMAggregator:
    """One structured call per cluster; the answer must cite members of that cluster."""

    llm: LLM
    agent_context: str = ""
    name: str = "llm"

    def aggregate(self, members: Sequence[Evidence], *, min_users: int) -> Draft | None:
        """The model's rule for the cluster, or None (null answer, bad citations, too few users).

        Raises:
            LLMOutputError: The answer did not fit the schema, even after the repair attempt
                (the caller leaves that cluster for the next run).
        """
        if not members:
            return None
        values = {
            "members": render_members(members),
            "user_count": len({m.user_id for m in members}),
            "min_users": min_users,
            "agent_context": self.agent_context or "not described",
        }
        call = prompts.load("aggregate").call(
            Role.EXTRACTION,
            values,
            output=AggregateOutput,
            inputs={"evidence": tuple(members)},
            max_tokens=MAX_TOKENS,
        )
        output = self.llm.complete(call).value
        if output.playbook is None:
            return None
        item = output.playbook
        by_id = {m.id: m for m in members}
        cited = sorted({i for i in item.member_ids if i in by_id})
        unknown = sorted(set(item.member_ids) - set(by_id))
        if unknown:
            log.warning("aggregation cited ids outside its cluster, ignored: %s", unknown)
        if len({by_id[i].user_id for i in cited}) < min_users:
            return None
        return Draft(
            content=item.content.strip(),
            trigger=item.trigger.strip(),
            rationale=item.rationale.strip() or None,
            pitfall=item.pitfall,
            blocking_issue=item.blocking_issue.model_dump(mode="json") if item.blocking_issue else None,
            member_ids=tuple(cited),
        )
