"""Graph facts from the text of one stored fact, by rules (pure, English).

Used on every fact the extraction job stores, with or without an LLM. Precision
comes before recall: a wrong entity is worse than a missing one, so a phrase
becomes an entity only as ``rules_mentions`` allows, and a clause that is
negated, planned or hypothetical ("might move to Lisbon", "no longer uses
MySQL") yields no relation.

What the rules catch, each sentence on its own:

* relations, with the user as the subject of a fact that has none ("Lives in
  Berlin"): ``uses`` (uses, runs on, is built with, relies on, depends on),
  ``works_at``, ``lives_in``, ``works_on``, ``married_to`` and relatives by name
  ("Has a sister named Maria": ``sister``);
* changes: "moved from Madrid to Berlin", "migrated from PostgreSQL 14 to 16",
  "switched from MySQL to PostgreSQL", "replaced Jenkins with GitHub Actions"
  give the new relation with ``replaces`` naming the old target;
* causal phrases: "A caused / triggered / prevented / blocked / enabled / led
  to / required / mitigated B", the passive "B was caused by A", "B because
  (of) A", "A, which triggered B", "A so that B" (``enabled``), with the
  sentence as evidence; a side that is not an entity becomes an ``event`` node
  named by its words (at most eight);
* observations: the sentence, on the entity it is about when that is not the user
  ("Server db-01 has 64 GB of RAM").
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from truemem_core.graph import rules_lexicon as lx
from truemem_core.graph.records import (
    EntitySpec,
    GraphFacts,
    ObservationSpec,
    RelationSpec,
)
from truemem_core.graph.rules_mentions import (
    PROPER,
    USER,
    Mention,
    is_user,
    mention,
    strong,
    tool,
    versioned,
)
from truemem_core.language.text import fold, normalise, split_sentences, strip_edges

RULE_CONFIDENCE = 0.8
CAUSAL_CONFIDENCE = 0.7
_MAX_NODE_WORDS = 8
_I = re.IGNORECASE
_NOT_CURRENT = re.compile(lx.NOT_CURRENT, _I)
_SUBJECT = (r"^(?P<subj>.{0,60}?)\s*\b"
            r"(?:(?:now|currently|still|also|recently|just|has|have|was)\s+)*")
_HARD_END = re.compile(
    r",?\s+(?:for|because|since|as|in(?!\s*\d)|at|on|with|after|before|when|until|instead|which|"
    r"who|that|where|while|but|so|to|from|during|via|by|last|next|this|yesterday|today|now|"
    r"in\s+\d{4}|since|ago|every)\b|\s*[;:(]|,\s+(?![A-Z]\w*\s*(?:,|and))"
    r"|\s+-\s|\.(?:\s|$)|$"
)
_LIST = re.compile(r"\s*,\s*(?:and\s+)?|\s+and\s+|\s*&\s*")

# (relation type, the slot its object fills, the slot its subject fills, verbs)
_VERBS: list[tuple[str, str, str | None, str]] = [
    ("works_at", "organisation", "person",
     r"works\s+(?:as\s+(?:an?\s+)?[\w -]{1,40}?\s+)?(?:at|for)|is\s+employed\s+(?:at|by)|joined"
     r"|is\s+an?\s+[\w -]{1,40}?\s+at"),
    ("lives_in", "place", "person",
     r"lives\s+in|is\s+(?:based|living)\s+in|resides\s+in|(?:moved|relocated)\s+to"),
    ("married_to", "person", "person", r"is\s+married\s+to"),
    ("works_on", "project", None, r"works\s+on|is\s+working\s+on|leads|maintains|is\s+building"),
    ("uses", "tool", None,
     r"uses|use|is\s+using|are\s+using|relies\s+on|runs\s+on|is\s+running\s+on|is\s+hosted\s+on|is\s+deployed\s+"
     r"on|is\s+built\s+(?:with|on)|is\s+written\s+in|depends\s+on|(?:migrated|switched|upgraded|"
     r"moved)\s+to"),
]
_RELATIONS = [(kind, obj, subj, re.compile(_SUBJECT + rf"(?:{verbs})\s+(?P<obj>.+)$", _I))
              for kind, obj, subj, verbs in _VERBS]
_CHANGE = re.compile(
    _SUBJECT + r"(?P<verb>migrated|switched|moved|upgraded|downgraded|relocated|changed)"
    r"(?:\s+(?P<what>.{1,40}?))?\s+from\s+(?P<old>.+?)\s+to\s+(?P<new>.+)$", _I)
_REPLACED = re.compile(_SUBJECT + r"replaced\s+(?P<old>.+?)\s+with\s+(?P<new>.+)$", _I)
_PEOPLE = "|".join(sorted(lx.PEOPLE, key=len, reverse=True))
_RELATIVE = [
    re.compile(rf"^(?:(?:i|we)\s+)?(?:has|have)\s+an?\s+(?:\w+\s+)?(?P<rel>{_PEOPLE})\s+"
               rf"(?:named|called)\s+(?P<name>{PROPER})\b", _I),
    re.compile(rf"^(?:(?:my|user's|the\s+user's)\s+)?(?P<rel>{_PEOPLE})"
               rf"(?:\s+is\s+(?:named|called)|'s\s+name\s+is)\s+"
               rf"(?P<name>{PROPER})\b", _I),
]
_OBSERVED = re.compile(r"^(?P<subj>.{1,60}?)\s+(?:is|are|was|were|has|had|needs|runs|hosts|"
                       r"stores|serves|handles|costs|crashed|failed|went|got|ran)\b", _I)

_CAUSAL_VERBS = {
    "caused": "caused", "causes": "caused", "triggered": "triggered", "triggers": "triggered",
    "prevented": "prevented", "prevents": "prevented", "blocked": "blocked",
    "blocks": "blocked", "enabled": "enabled", "enables": "enabled", "led to": "led_to",
    "leads to": "led_to", "resulted in": "led_to", "required": "required",
    "requires": "required", "mitigated": "mitigated", "mitigates": "mitigated",
}
_ACTIVE = re.compile(
    r"^(?P<a>.+?)(?:,?\s*(?:which|that))?\s+(?:(?:has|have|had|eventually|then|also|finally|"
    r"directly)\s+)*"
    r"(?P<verb>" + "|".join(_CAUSAL_VERBS).replace(" ", r"\s+") + r")\s+(?P<b>.+)$", _I)
_PASSIVE = re.compile(
    r"^(?P<b>.+?)\s+(?:was|were|is|are|has\s+been|had\s+been|got)\s+(?P<verb>caused|triggered|"
    r"prevented|blocked|enabled|required|mitigated)\s+by\s+(?P<a>.+)$", _I)
_BECAUSE = re.compile(r"^(?P<b>.+?),?\s+(?:because(?:\s+of)?|due\s+to|owing\s+to)\s+(?P<a>.+)$",
                      _I)
_SO_THAT = re.compile(r"^(?P<a>.+?),?\s+so\s+that\s+(?P<b>.+)$", _I)
# A relative pronoun or a time phrase closing a side is not part of the event's name.
_NODE_TAIL = re.compile(
    r"(?:,?\s*(?:which|that)|\s+(?:(?:a\s+few|a\s+couple\s+of|\w+)\s+(?:days|weeks|months|"
    r"years)\s+ago|last\s+\w+|yesterday|today|this\s+(?:morning|week|month|year)|"
    r"in\s+\d{4}))+$", _I)
_NEGATED_VERB = re.compile(r"\b(?:not|never|n't|did|does|do)$", _I)
_HYPOTHETICAL = re.compile(r"\b(?:if|unless|would|might|could|may|maybe|perhaps)\b", _I)


class _Facts:
    """What one text yields, gathered in order, each thing once."""

    def __init__(self) -> None:
        self.entities: dict[tuple[str, str], EntitySpec] = {}
        self.observations: dict[tuple[str, str], ObservationSpec] = {}
        self.relations: dict[tuple[str, str, str], RelationSpec] = {}

    def entity(self, found: Mention) -> None:
        self.entities.setdefault((fold(found.name), found.type),
                                 EntitySpec(found.name, found.type, found.aliases))

    def relation(self, source: Mention, kind: str, target: Mention, *, evidence: str,
                 confidence: float = RULE_CONFIDENCE, replaces: Mention | None = None) -> None:
        if fold(source.name) == fold(target.name):
            return
        for found in (source, target, *([replaces] if replaces else [])):
            self.entity(found)
        key = (fold(source.name), kind, fold(target.name))
        self.relations.setdefault(key, RelationSpec(
            source.name, kind, target.name, source_type=source.type, target_type=target.type,
            confidence=confidence, evidence=evidence,
            replaces=replaces.name if replaces else None))

    def observation(self, about: Mention, text: str) -> None:
        self.entity(about)
        self.observations.setdefault((fold(about.name), text), ObservationSpec(
            about.name, text, entity_type=about.type, confidence=RULE_CONFIDENCE))

    def result(self) -> GraphFacts:
        return GraphFacts(tuple(self.entities.values()), tuple(self.observations.values()),
                          tuple(self.relations.values()))


def graph_facts(text: str) -> GraphFacts:
    """The entities, observations and relations one stored fact states."""
    found = _Facts()
    for sentence in split_sentences(normalise(text)):
        sentence = strip_edges(sentence)
        if not sentence or sentence.endswith("?"):
            continue
        clauses = _causal(sentence, found)
        for clause in clauses or [sentence]:
            _clause(strip_edges(clause), sentence, found)
    return found.result()


def _clause(clause: str, sentence: str, found: _Facts) -> None:
    if not clause or _NOT_CURRENT.search(clause):
        return
    subject = _change(clause, sentence, found) or _relations(clause, sentence, found)
    if subject is None:
        observed = _OBSERVED.match(clause)
        subject = strong(observed["subj"]) if observed else None
    if subject is not None and subject.name != USER:
        found.observation(subject, sentence)
    _relatives(clause, sentence, found)


def _subject(phrase: str, slot: str | None) -> Mention | None:
    if is_user(phrase):
        return Mention(USER, "person")
    return mention(phrase, slot)


def _objects(text: str) -> Iterator[str]:
    end = _HARD_END.search(text)
    yield from (piece for piece in _LIST.split(text[: end.start() if end else len(text)])
                if piece.strip())


def _relations(clause: str, sentence: str, found: _Facts) -> Mention | None:
    for kind, slot, subject_slot, pattern in _RELATIONS:
        match = pattern.match(clause)
        if match is None:
            continue
        subject = _subject(match["subj"], subject_slot)
        if subject is None:
            return None
        targets = [t for piece in _objects(match["obj"]) if (t := mention(piece, slot))]
        for target in targets:
            found.relation(subject, kind, target, evidence=sentence)
        if targets:
            return subject
    return None


def _change(clause: str, sentence: str, found: _Facts) -> Mention | None:
    match = _CHANGE.match(clause) or _REPLACED.match(clause)
    if match is None:
        return None
    subject = _subject(match["subj"], None)
    what = match.groupdict().get("what")
    if what and subject is not None and subject.name == USER:
        subject = strong(what) or subject  # "migrated db-01 from…"; "the database": the user's
    verb = fold(match.groupdict().get("verb") or "replaced")
    slot = "place" if verb in ("moved", "relocated") else "tool"
    old_text, new_text = match["old"], next(_objects(match["new"]), "")
    old = tool(old_text) or mention(old_text, slot)
    new = tool(versioned(new_text, old)) or mention(new_text, slot)
    if subject is None or old is None or new is None or old.type != new.type:
        return None
    kind = "lives_in" if new.type == "place" else "uses"
    found.relation(subject, kind, new, evidence=sentence, replaces=old)
    return subject


def _relatives(clause: str, sentence: str, found: _Facts) -> None:
    for pattern in _RELATIVE:
        if (match := pattern.match(clause)) and (person := mention(match["name"], "person")):
            found.relation(Mention(USER, "person"), fold(match["rel"]), person,
                           evidence=sentence)
            return


def _causal(sentence: str, found: _Facts) -> list[str]:
    """Record the sentence's causal relation, if any; its clauses, to read for the rest."""
    if _HYPOTHETICAL.search(sentence):
        return []
    for pattern in (_PASSIVE, _ACTIVE, _BECAUSE, _SO_THAT):
        match = pattern.match(sentence)
        if match is None or _NEGATED_VERB.search(match["a"] if pattern is _ACTIVE else ""):
            continue
        verb = match.groupdict().get("verb")
        kind = ("enabled" if pattern is _SO_THAT else
                "caused" if pattern is _BECAUSE else _CAUSAL_VERBS[fold(" ".join(verb.split()))]
                if verb else "caused")
        cause, effect = _node(match["a"]), _node(match["b"])
        if cause is not None and effect is not None:
            found.relation(cause, kind, effect, evidence=sentence, confidence=CAUSAL_CONFIDENCE)
        return [match["a"], match["b"]]
    return []


def _node(side: str) -> Mention | None:
    """A causal chain's end: the entity it names, or an event named by its words."""
    text = re.sub(r"^(?:the|a|an|this|that|some)\s+", "", strip_edges(side), flags=_I)
    text = strip_edges(_NODE_TAIL.sub("", text))
    if not text or len(text.split()) > _MAX_NODE_WORDS:
        return None
    return strong(text) or Mention(text, "event")
