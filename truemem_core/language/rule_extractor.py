"""Rule-based fact extraction from a user message, English and Spanish.

Used when no LLM is configured, so precision comes before recall: a clause
yields a fact only when it opens with a recognised first-person pattern
("I live in…", "my wife…", "me gusta…", see ``patterns_en``/``patterns_es``)
and, where a pattern is vague ("I'm a…", "I have…"), only when the object is
in a closed word list. Questions, hypotheticals and opinions ("I think…")
yield nothing. Only the user's own words are read (``quoting``): the "I live in
Berlin" of a pasted email or a quotation is someone else's first person.

Importance follows SPEC §5, 5 being reserved for explicit requests:
4 key personal data (name, age, job, location, allergies and health),
3 general context (likes, hobbies, family, pets), 2 temporary (projects,
trips), 1 minor passing events.
"""

from __future__ import annotations

import re

from truemem_core.language import offload, quoting
from truemem_core.language import patterns_en as en
from truemem_core.language import patterns_es as es
from truemem_core.language.perspective import (
    Lang,
    is_first_person_verb,
    split_adverbial,
    third_person,
)
from truemem_core.language.rule import Rule
from truemem_core.language.text import capitalise, fold, normalise, split_sentences, strip_edges
from truemem_core.language.types import CandidateFact

_RULES = [*en.RULES, *es.RULES]
_MAX_WORDS = 14
_ECHO = re.compile(
    r"\s(?:too|as\s+well)\s*$"
)  # a longer "fact" is a rambling sentence, not a memory

_QUESTION = re.compile(
    r"(?:(?:do|does|did|are|is|was|were|can|could|would|will|should|shall|may|have|has|am|"
    r"aren'?t|isn'?t|don'?t|didn'?t|doesn'?t)\s+(?:you|i|we|they|he|she|it|there|your|u|anyone)|"
    r"(?:what|where|who|whom|whose|why|how|which|when)\s+(?:do|does|did|are|is|was|were|can|"
    r"could|would|will|should|about|kind|sort|type|'s|else|have|has)|what's|how's|wanna|"
    r"how\s+about|what\s+about)\b"
)
# Where a request or a question begins inside a sentence: ", can you help me…",
# "; how do I…", ", any tips?", ", ¿puedes…", ", você pode…".
_ASKING = re.compile(
    r"[,;:]\s*(?:(?:so|and|but|then|now|y|pero|entonces|e|mas|entao)\s+)?"
    r"(?=(?:can|could|would|will)\s+you\b|(?:how|what|which|where|when|why|should|do|does|"
    r"is|are|any)\b|(?:puedes|podrias|me\s+puedes|como|que|cual|donde|cuando|pode|poderia|"
    r"voce\s+pode|qual|onde|quando)\b|¿)")
_ES_QUESTION_WORDS = ("qué", "cómo", "dónde", "cuándo", "quién", "cuál", "cuánto", "por qué")
# Run on the lower-cased original: Spanish "si" (if) differs from "sí" (yes) only by accent.
_HYPOTHETICAL = re.compile(
    r"\b(?:if|unless|suppose|supposing|imagine|wish|would|i'?d|might|maybe|perhaps|probably|"
    r"hopefully|someday|one\s+day|wonder|guess|pretend|dream\s+(?:of|about)|hope|"
    r"si|ojal[aá]|quiz[aá]s?|tal\s+vez|ser[ií]a|gustar[ií]a|deber[ií]a|podr[ií]a|tendr[ií]a|"
    r"supongo|imag[ií]nate|sueño\s+con)\b"
)
_INTERJECTION = re.compile(
    r"(?:(?:oh|ah|aw|aww|yeah|yea|yep|yup|well|actually|haha\w*|hah|lol|lmao|wow|hmm+|um+|uh+|"
    r"ok|okay|sure|cool|nice|great|awesome|honestly|so|and|but|also|hi|hello|hey|same|really|"
    r"right|anyway|anyways|btw|by\s+the\s+way|personally|i\s+mean|to\s+be\s+honest|tbh|"
    r"me\s+too|same\s+here|as\s+for\s+me|for\s+me|well\s+then|"
    r"bueno|pues|vale|hola|oye|claro|jaja\w*|la\s+verdad|por\s+cierto|yo\s+tambien|tambien|"
    r"pero|y|ademas|mira|genial)\b[\s,!.:;-]*|(?:no|nope|nah|si|yes)\s*[,!.:;-]+\s*)+"
)
_FIRST_PERSON = r"(?=(?:i|i'm|im|i've|ive|my)\b)"
_SPLIT_EN = re.compile(
    r"(?:,\s*|\s+)(?:and|but|so|because|although|though|while|plus|as\s+well\s+as)\s+"
    + _FIRST_PERSON
    + r"|[;,]\s+"
    + _FIRST_PERSON
    + r"|\s+-+\s+|\s+[–—]\s+"
)
_SUBJECT_SO_FAR = re.compile(r"\W*(?:my\s+[\w'-]+(?:\s+[\w'-]+)?|me)\s*$")
_SPLIT_ES = re.compile(r"(?:,\s*|\s+)(?:y|pero|aunque|porque)\s+(?=(\w+))|;\s+(?=(\w+))")
# Asides after the fact: "I love hiking because…", "I live in Lyon, which…".
_TAIL = re.compile(
    r"(?:,\s*|\s+)(?:because|cause|'cause|since|but|so\s+(?!much|many|far)|which|although|"
    r"due\s+to|in\s+order\s+to|"
    r"though|while|whereas|until|unless|if|when|whenever|where\s+i|and\s+(?:it|that|they|he|"
    r"she|we|you|this|there)\b|who\s+(?:is|was)|lol|haha\w*|lmao|hehe\w*|jaja\w*|porque|pero|"
    r"aunque|ya\s+que|cuando|donde|mientras|asi\s+que)\b|\s*\(|:\s|,\s*(?:it|that|they|he|she|"
    r"we|you|this|there|which|especially|mostly|like)\b|\s+(?:too|as\s+well|also|tambien)\s*$"
)


# "I'm Ana, a nurse at St Mary's": a name in apposition introduces two facts.
_APPOSITION = re.compile(r"\b((?i:i\s*'?m|i\s+am))\s+([A-Z][\w'-]+)\s*,\s+((?i:an?)\s+)")


def extract_labelled(user_message: str) -> list[tuple[str, CandidateFact]]:
    """Like :func:`extract_facts`, each fact paired with its category ("job", "pets"…).

    A message over ``offload.OFFLOAD_CHARS`` is read in a helper process (the rules
    are pure Python: a thread reading it would hold the GIL other users' calls need).
    """
    return offload.run(_extract_labelled, user_message, size=len(user_message))


def _extract_labelled(user_message: str) -> list[tuple[str, CandidateFact]]:
    found: list[tuple[str, CandidateFact]] = []
    seen: set[str] = set()
    reading = quoting.read(user_message)
    text = _APPOSITION.sub(r"\1 \2; \1 \3", normalise(reading.own_words()))
    for sentence in split_sentences(text):
        sentence = _stated_before_asking(sentence)
        if not sentence:
            continue
        for clause in _clauses(sentence):
            matched = _match(clause)
            if matched is None or matched[1].lower() in seen or quoting.QUOTED in matched[1]:
                continue  # a fact about a quotation would be about "[quoted text]"
            rule, fact = matched[0], reading.restore(matched[1])
            seen.add(matched[1].lower())
            found.append((rule.category, CandidateFact(fact, rule.importance, rule.kind)))
    return found


def extract_facts(user_message: str) -> list[CandidateFact]:
    """Facts about the user stated in one *user* message (assistant text is not evidence)."""
    return [fact for _, fact in extract_labelled(user_message)]


def _is_question(sentence: str) -> bool:
    low = sentence.lower().lstrip("¡¿\"' ")
    return (
        sentence.rstrip().endswith("?")
        or sentence.lstrip().startswith("¿")
        or bool(_QUESTION.match(fold(low)))
        or low.startswith(_ES_QUESTION_WORDS)
    )


def _stated_before_asking(sentence: str) -> str:
    """What a sentence states before it asks: "I prefer short bursts of editing, can you
    help me plan my week?" -> "I prefer short bursts of editing" ("" if it states nothing:
    a question).

    Users chain a statement about themselves and a request in one sentence; the
    statement is as much a fact as if it had ended with a full stop.
    """
    asking = _ASKING.search(fold(sentence))
    head = sentence[: asking.start()] if asking else sentence
    return "" if not head.strip() or _is_question(head) else head


def _clauses(sentence: str) -> list[str]:
    """The candidate clauses of one sentence, fillers and trailing asides removed."""
    folded = fold(sentence)
    cuts = [m.span() for m in _SPLIT_EN.finditer(folded)]
    for m in _SPLIT_ES.finditer(folded):
        word_group = 1 if m.group(1) else 2
        word = m.group(word_group)
        if is_first_person_verb(word, "es") or word in {"yo", "mi", "mis", "me"}:
            cuts.append((m.start(), m.start(word_group)))
    pieces, start = [], 0
    for cut_start, cut_end in sorted(cuts):
        if _SUBJECT_SO_FAR.match(folded[start:cut_start]):
            continue  # "my wife and I love hiking": one subject, not two clauses
        if cut_start >= start:
            pieces.append(sentence[start:cut_start])
            start = cut_end
    pieces.append(sentence[start:])
    clauses = []
    for piece in pieces:
        piece = strip_edges(piece)
        lead = _INTERJECTION.match(fold(piece))
        piece = piece[lead.end() if lead else 0 :]
        if _ECHO.search(fold(piece)):
            continue  # "I love dogs too": an echo of the other speaker, weak evidence
        tail = _TAIL.search(fold(piece))
        piece = strip_edges(piece[: tail.start()] if tail else piece)
        if piece:
            clauses.append(piece)
    return clauses


def _match(clause: str) -> tuple[Rule, str] | None:
    """The first rule that recognises the clause, with the fact it yields."""
    if _HYPOTHETICAL.search(clause.lower()) or en.ANAPHORA.match(fold(clause)):
        return None
    split: dict[Lang, tuple[str, str]] = {
        lang: split_adverbial(clause, lang) for lang in ("en", "es")
    }
    folded = {lang: fold(core) for lang, (_, core) in split.items()}
    for rule in _RULES:
        adverbial, core = split[rule.lang]
        match = rule.pattern.match(folded[rule.lang])
        if match is None:
            continue
        fact = rule.render(core, match) if rule.render else third_person(clause, rule.lang)
        if not fact:
            continue  # e.g. "I'm tired" is no name: let the later rules try
        if adverbial and rule.render:
            fact = f"{fact} {adverbial[:1].lower()}{adverbial[1:]}"
        return (rule, capitalise(fact)) if len(fact.split()) <= _MAX_WORDS else None
    return _minor_event(clause, split)


def _minor_event(clause: str, split: dict[Lang, tuple[str, str]]) -> tuple[Rule, str] | None:
    """ "Yesterday I went to the dentist": a past event with a time marker, importance 1."""
    adverbial, core = split["en"]
    timed = re.fullmatch(en.TIME, fold(adverbial)) or en.TIME_AT_END.search(fold(core))
    if timed and en.MINOR_EVENT.pattern.match(fold(core)):
        return en.MINOR_EVENT, third_person(clause, "en")
    adverbial, core = split["es"]
    if es.TIME.match(fold(adverbial)) and es.MINOR_EVENT.pattern.match(fold(core)):
        return es.MINOR_EVENT, third_person(clause, "es")
    return None
