"""Explicit memory requests: "remember that…", "no olvides que…", "lembre-se de que…".

Runs on the request path, so it is pure regex work over one message. A trigger
counts only where an imperative can stand: at the start of a sentence or after
a filler ("Great, and remember that…", "could you please note that…"). That is
what keeps "I remember when…" and "do you remember the movie?" out. Questions
are not requests, except the polite "Could you remember that…?".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .perspective import Lang, is_first_person_verb, strip_edges, third_person
from .text import fold, normalise, sentence_spans
from .types import CandidateFact

EXPLICIT_IMPORTANCE = 5


@dataclass(frozen=True, slots=True)
class _Trigger:
    pattern: re.Pattern[str]
    lang: Lang | None  # None: Spanish or Portuguese, told apart by the fact itself
    strict: bool = False  # the fact must be about the speaker ("note that" is common prose)
    free: bool = False  # any content may follow, even without "that"


_LINK_EN = r"(?P<link>\s*,?\s*that\b|\s*[:\-–—]+|\s+of\b)?"
_LINK_ROMANCE = r"(?P<link>(?:\s+de)?\s+que\b|\s*[:\-–—]+)"
_TRIGGERS = [
    _Trigger(re.compile(p + link), lang, strict, free)
    for p, link, lang, strict, free in [
        (r"(?:always\s+)?remember", _LINK_EN, "en", False, False),
        (r"(?:do\s+not|don'?t|dont|never)\s+forget", _LINK_EN, "en", False, False),
        (r"(?:keep|bear)\s+(?:this\s+|that\s+)?in\s+mind", _LINK_EN, "en", False, False),
        (r"(?:make|take)\s+(?:a\s+)?(?:mental\s+)?note", _LINK_EN, "en", False, False),
        (r"(?:note|jot\s+down|write\s+down)", _LINK_EN, "en", True, False),
        (r"memori[sz]e", _LINK_EN, "en", False, False),
        (r"(?:save|store|add)\s+(?:this|that)(?:\s+(?:to|in)\s+(?:your\s+)?memory)?",
         r"(?P<link>\s*[:\-–—]+)", "en", False, True),
        (r"for\s+(?:future\s+reference|your\s+(?:future\s+)?reference)",
         r"(?P<link>\s*[:,\-–—]*)", "en", False, True),
        (r"(?:recuerd[ae]|recorda|acuerdate|acuerdese|acordate)", _LINK_ROMANCE, "es", False,
         False),
        (r"(?:no\s+(?:te\s+)?olvides|no\s+(?:se\s+)?olvide|nunca\s+olvides|"
         r"que\s+no\s+se\s+te\s+olvide)", _LINK_ROMANCE, "es", False, False),
        (r"(?:ten|tenga|tene)\s+(?:en\s+cuenta|presente)", _LINK_ROMANCE, "es", False, False),
        (r"(?:apunta|apuntate|apunte)", _LINK_ROMANCE, "es", False, False),
        (r"(?:anota|anote|toma\s+nota|tome\s+nota|toma\s+buena\s+nota)", _LINK_ROMANCE, None,
         False, False),
        (r"(?:puedes|podrias|podria|podes)\s+(?:recordar|tener\s+en\s+cuenta|apuntar|anotar|"
         r"memorizar)", _LINK_ROMANCE, "es", False, False),
        (r"quiero\s+que\s+(?:recuerdes|tengas\s+en\s+cuenta|apuntes|anotes)", _LINK_ROMANCE, "es",
         False, False),
        (r"para\s+futuras?\s+referencias?", r"(?P<link>\s*[:,\-–—]*)", "es", False, True),
        (r"(?:lembre-se|lembra-te|lembrese|lembre|lembra)", _LINK_ROMANCE, "pt", False, False),
        (r"(?:nao\s+(?:se\s+|te\s+)?esquec[ae]s?|nunca\s+(?:se\s+)?esqueca)", _LINK_ROMANCE,
         "pt", False, False),
        (r"(?:tenha|tem)\s+(?:em\s+mente|em\s+conta|presente)", _LINK_ROMANCE, "pt", False,
         False),
        (r"(?:pode|poderia|voce\s+pode)\s+(?:lembrar|ter\s+em\s+mente|anotar|memorizar|guardar)",
         _LINK_ROMANCE, "pt", False, False),
    ]
]
_ALL_TRIGGERS = re.compile(
    r"(?<![\w'-])(?:" + "|".join(f"(?P<t{i}>{t.pattern.pattern})" for i, t in
                                enumerate(_TRIGGERS)) + ")"
)

# Words that may stand between a sentence start and the imperative.
_FILLER = re.compile(
    r"(?:^|[\s,])(?:and|also|but|so|oh|ok|okay|hey|please|pls|plz|btw|by\s+the\s+way|just|now|"
    r"plus|finally|lastly|one\s+more\s+thing|can\s+you|could\s+you|would\s+you|will\s+you|"
    r"i\s+want\s+you\s+to|i\s+need\s+you\s+to|i'?d\s+like\s+you\s+to|you\s+should|you\s+must|"
    r"you\s+need\s+to|you\s+have\s+to|make\s+sure\s+(?:to|you)|try\s+to|"
    r"y|tambien|pero|ademas|por\s+favor|porfa|oye|bueno|vale|ah|eh|pues|asi\s+que|"
    r"e|tambem|mas|alem\s+disso|olha|bom|entao)\s*[,!]?\s*$"
)
_POLITE = re.compile(r"\b(?:can|could|would|will)\s+you\b|^\s*¿")
_POLITE_TRIGGER = re.compile(r"(?:puedes|podrias|podria|podes|pode|poderia|voce\s+pode)\b")
_FIRST_PERSON_START = re.compile(r"(?:i|i'm|im|i've|ive|i'd|i'll|my|we|we're|our)\b")
_FIRST_PERSON_ANY = re.compile(r"\b(?:i|i'm|im|i've|ive|i'd|i'll|my|me|mine|we|our)\b")
# "remember that movie we watched": a demonstrative, not a complementiser.
_DEMONSTRATIVE = re.compile(
    r"(?:one\s+)?(?:time|day|night|movie|film|song|book|show|place|guy|girl|thing|trip|game|"
    r"episode|video|party|restaurant|story|joke)\b|\w+\s+(?:we|you|he|she|they)\b"
)
_TAIL = re.compile(
    r"(?:[\s,]+(?:ok|okay|please|pls|thanks|thank\s+you|thx|right|alright|por\s+favor|porfa|"
    r"gracias|vale|obrigad[oa]|and|also|but|y|pero|e|mas))+[\s?!.]*$"
)
_SPLIT_EN = re.compile(r"(?:,?\s+(?:and|but|also)|[;,])\s+(?=(?:i|i'm|im|i've|ive|my)\b)")
_SPLIT_ROMANCE = re.compile(r",?\s+(?:y|e|pero|mas)\s+(?=(\w+))")
_PORTUGUESE = re.compile(r"\b(?:nao|voce|eu|meu|minha|sou|tenho|moro|gosto|estou|sao)\b|[ãõ]")


def detect_explicit(message: str) -> list[CandidateFact]:
    """Facts the user explicitly asked to be remembered, importance 5, in message order."""
    text = normalise(message)
    folded = fold(text)
    spans = sentence_spans(text)
    hits = [hit for hit in (_check(text, folded, spans, m) for m in _ALL_TRIGGERS.finditer(folded))
            if hit is not None]
    facts: list[CandidateFact] = []
    seen: set[str] = set()
    for index, (start, lang, sentence_end) in enumerate(hits):
        end = min([sentence_end] + [s for s, _, _ in hits[index + 1 :] if s >= start])
        content = _TAIL.sub("", text[start:end]).strip()
        for clause in _clauses(content, _language(lang, fold(content))):
            fact = _to_fact(clause, _language(lang, fold(clause)))
            if fact and fact.lower() not in seen:
                seen.add(fact.lower())
                facts.append(CandidateFact(fact, EXPLICIT_IMPORTANCE, "semantic"))
    return facts


def _check(
    text: str, folded: str, spans: list[tuple[int, int]], match: re.Match[str]
) -> tuple[int, Lang | None, int] | None:
    """``(fact start, language, sentence end)`` when the match is a real request."""
    trigger = _TRIGGERS[int(next(k for k, v in match.groupdict().items() if v and k[0] == "t"
                                 and k[1:].isdigit())[1:])]
    sentence_start, sentence_end = next((s, e) for s, e in spans if s <= match.start() < e)
    sentence = folded[sentence_start:sentence_end].strip()
    prefix = folded[sentence_start : match.start()]
    while (filler := _FILLER.search(prefix)) and filler.group().strip():
        prefix = prefix[: filler.start() + (1 if filler.group()[0] in " ," else 0)]
    if prefix.strip() and not re.search(r"[^\w\s]\s*$", prefix):
        return None
    polite = bool(_POLITE.search(folded[sentence_start : match.start()]) or
                  _POLITE_TRIGGER.match(match.group()) or sentence.startswith("¿"))
    content = _TAIL.sub("", folded[match.end() : sentence_end]).strip()
    if (sentence.endswith("?") and not polite) or not re.search(r"[^\W\d_]", content):
        return None
    link_match = trigger.pattern.fullmatch(match.group())
    link = (link_match.group("link") or "").strip(" ,") if link_match else ""
    if trigger.strict and not _FIRST_PERSON_ANY.search(content):
        return None
    if link == "that" and _DEMONSTRATIVE.match(content):
        return None
    if trigger.lang == "en" and not (link or trigger.free):
        pleaded = "please" in folded[sentence_start : match.start()]
        about_user = _FIRST_PERSON_START.match(content) or content.startswith("to ")
        if not (about_user or (pleaded and len(content.split()) >= 3)):
            return None
    return match.end(), trigger.lang, sentence_end


def _language(lang: Lang | None, folded_content: str) -> Lang:
    if lang is not None:
        return lang
    return "pt" if _PORTUGUESE.search(folded_content) else "es"


def _clauses(content: str, lang: Lang) -> list[str]:
    """Split "I'm vegan and I live in Madrid" into one clause per fact."""
    folded = fold(content)
    if lang == "en":
        cuts = [m.span() for m in _SPLIT_EN.finditer(folded)]
    else:
        cuts = [
            m.span(0)[:1] + (m.start(1),)
            for m in _SPLIT_ROMANCE.finditer(folded)
            if is_first_person_verb(m.group(1), lang)
            or m.group(1) in {"yo", "eu", "mi", "mis", "meu", "minha", "me"}
        ]
    clauses, start = [], 0
    for cut_start, cut_end in cuts:
        clauses.append(content[start:cut_start])
        start = cut_end
    clauses.append(content[start:])
    return [c for c in (strip_edges(c) for c in clauses) if c]


def _to_fact(clause: str, lang: Lang) -> str:
    if lang == "en" and fold(clause).startswith("to "):
        return "Asked to remember " + third_person(clause, "en")[0].lower() + \
            third_person(clause, "en")[1:]
    return third_person(clause, lang)
