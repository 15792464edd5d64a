"""Explicit memory requests: "remember that…", "no olvides que…", "lembre-se de que…",
and standing instructions ("Always include version numbers…": ``directives``).

Runs on the request path, so it is pure regex work over one message. A trigger
counts only where an imperative can stand: at the start of a sentence or after
a filler ("Great, and remember that…", "could you please note that…"). That is
what keeps "I remember when…" and "do you remember the movie?" out. Questions
are not requests, except the polite "Could you remember that…?".

Only the user's own words can ask (``quoting``): a trigger inside a quotation, a code
block, a pasted email or a text to translate is someone else's, and a request's fact
stops where a pasted block begins. A quotation inside the user's own request stays in
its fact ("remember that my motto is "carpe diem"").
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass

from truemem_core.language import directives, offload, quoting
from truemem_core.language.perspective import Lang, is_first_person_verb, third_person
from truemem_core.language.text import fold, normalise, sentence_spans, strip_edges
from truemem_core.language.types import CandidateFact

EXPLICIT_IMPORTANCE = 5
MAX_EXPLICIT_FACTS = 20  # per message: one message is not a bulk import
MAX_FACT_CHARS = 2000  # Settings.max_text_chars' default: a longer "fact" is a document
EDGE_CHARS = 10_000  # of a long message, the start and the end are read
_WINDOW = 200  # characters read on each side of a trigger
_MAX_TRIGGERS = 100  # trigger words examined per message: far more than 20 facts need


@dataclass(frozen=True, slots=True)
class _Trigger:
    pattern: re.Pattern[str]
    lang: Lang | None  # None: Spanish or Portuguese, told apart by the fact itself
    strict: bool = False  # the fact must be about the speaker ("note that" is common prose)
    free: bool = False  # any content may follow, even without "that"


_THAT = r"(?P<link>\s*,?\s*that\b|\s*[:\-–—]+|\s+of\b)?"  # "remember that", "remember:"
_QUE = r"(?P<link>(?:\s+de)?\s+que\b|\s*[:\-–—]+)"  # "recuerda que", "lembre-se de que"
_COLON = r"(?P<link>\s*[:\-–—]+)"
_COMMA = r"(?P<link>\s*[:,\-–—]*)"


def _trigger(
    words: str, lang: Lang | None, link: str, *, strict: bool = False, free: bool = False
) -> _Trigger:
    return _Trigger(re.compile(rf"(?<![\w'-])(?:{words})\b{link}"), lang, strict, free)


_TRIGGERS = [
    _trigger(r"(?:always\s+)?remember", "en", _THAT),
    _trigger(r"(?:do\s+not|don'?t|dont|never)\s+forget", "en", _THAT),
    _trigger(r"(?:keep|bear)\s+(?:this\s+|that\s+)?in\s+mind", "en", _THAT),
    _trigger(r"(?:make|take)\s+(?:a\s+)?(?:mental\s+)?note", "en", _THAT),
    _trigger(r"note|jot\s+down|write\s+down", "en", _THAT, strict=True),
    _trigger(r"memori[sz]e", "en", _THAT),
    _trigger(
        r"(?:save|store|add)\s+(?:this|that)(?:\s+(?:to|in)\s+(?:your\s+)?memory)?",
        "en",
        _COLON,
        free=True,
    ),
    _trigger(
        r"for\s+(?:future\s+reference|your\s+(?:future\s+)?reference)", "en", _COMMA, free=True
    ),
    _trigger(r"recuerd[ae]|recorda|acuerdate|acuerdese|acordate", "es", _QUE),
    _trigger(
        r"no\s+(?:te\s+)?olvides|no\s+(?:se\s+)?olvide|nunca\s+olvides|que\s+no\s+se\s+te\s+olvide",
        "es",
        _QUE,
    ),
    _trigger(r"(?:ten|tenga|tene)\s+(?:en\s+cuenta|presente)", "es", _QUE),
    _trigger(r"apunta|apuntate|apunte", "es", _QUE),
    _trigger(r"anota|anote|toma\s+nota|tome\s+nota|toma\s+buena\s+nota", None, _QUE),
    _trigger(
        r"(?:puedes|podrias|podria|podes)\s+(?:recordar|tener\s+en\s+cuenta|apuntar|anotar|"
        r"memorizar)",
        "es",
        _QUE,
    ),
    _trigger(r"quiero\s+que\s+(?:recuerdes|tengas\s+en\s+cuenta|apuntes|anotes)", "es", _QUE),
    _trigger(r"para\s+futuras?\s+referencias?", "es", _COMMA, free=True),
    _trigger(r"lembre-se|lembra-te|lembrese|lembre|lembra", "pt", _QUE),
    _trigger(r"nao\s+(?:se\s+|te\s+)?esquec[ae]s?|nunca\s+(?:se\s+)?esqueca", "pt", _QUE),
    _trigger(r"(?:tenha|tem)\s+(?:em\s+mente|em\s+conta|presente)", "pt", _QUE),
    _trigger(
        r"(?:pode|poderia|voce\s+pode)\s+(?:lembrar|ter\s+em\s+mente|anotar|memorizar|guardar)",
        "pt",
        _QUE,
    ),
]

# Words that may stand between a sentence start and the imperative.
_FILLER = re.compile(
    r"(?:^|[\s,])(?:and|also|but|so|oh|ok|okay|hey|please|pls|plz|btw|by\s+the\s+way|just|now|"
    r"plus|finally|lastly|one\s+more\s+thing|can\s+you|could\s+you|would\s+you|will\s+you|"
    r"i\s+want\s+you\s+to|i\s+need\s+you\s+to|i'?d\s+like\s+you\s+to|you\s+should|you\s+must|"
    r"you\s+need\s+to|you\s+have\s+to|make\s+sure\s+(?:to|you)|try\s+to|"
    r"y|tambien|pero|ademas|por\s+favor|porfa|oye|bueno|vale|ah|eh|pues|asi\s+que|"
    r"e|tambem|mas|alem\s+disso|olha|bom|entao)\s*[,!]?\s*$"
)
# Every trigger contains one of these stems; checked first, on the raw message.
_KEYWORD = re.compile(
    r"remember|forget|mind|note|memor|reference|recu[eé]rd|record|acu[eé]rd|acord|olvid|"
    r"cuenta|presente|apunt|anot|nota|lembr|esque[cç]|mente|conta",
    re.IGNORECASE,
)
_CONJUNCTION = re.compile(r"and|also|plus|y|e|tambien|tambem|ademas")
_POLITE = re.compile(r"\b(?:can|could|would|will)\s+you\b")
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
_PORTUGUESE = re.compile(
    r"\b(?:nao|voce|eu|meu|minha|meus|minhas|sou|tenho|moro|gosto|estou|sao|tambem|na|nas|em|com|"
    r"um|uma|trabalho)\b"
)


@dataclass(frozen=True, slots=True)
class _Hit:
    start: int  # of the trigger words
    fact_start: int  # right after them
    lang: Lang | None
    sentence_end: int


def detect_explicit(message: str) -> list[CandidateFact]:
    """Facts the user explicitly asked to be remembered, importance 5, in message order.

    Linear in the message: each trigger looks at a bounded window around itself,
    so a hostile message cannot make detection quadratic. At most
    ``MAX_EXPLICIT_FACTS`` facts come out of one message, none longer than
    ``MAX_FACT_CHARS`` (a pasted document is not a fact to remember). In a message
    longer than ``2 * EDGE_CHARS`` only its start and its end are read: that is where
    a request stands around a pasted text, and the work stays small.

    A message over ``offload.OFFLOAD_CHARS`` is read in a helper process: the work
    is pure Python, and a thread doing it would hold the GIL that other users' calls need.
    """
    if len(message) <= 2 * EDGE_CHARS:
        return offload.run(_detect, message, size=len(message))
    return offload.run(_detect_edges, message[:EDGE_CHARS], message[-EDGE_CHARS:],
                       size=2 * EDGE_CHARS)


def _detect_edges(head: str, tail: str) -> list[CandidateFact]:
    return _unique_facts([*_detect(head), *_detect(tail)])


def _detect(message: str) -> list[CandidateFact]:
    """Requests to remember, then standing instructions (``directives``), from one
    reading of the message."""
    asks, instructs = bool(_KEYWORD.search(message)), directives.worded(message)
    if not (asks or instructs):
        return []  # the common case on the request path: no trigger word at all
    reading = quoting.read(message)
    # Triggers are found in the user's own words (quotations masked, same offsets);
    # facts are cut from the text itself, so a quotation inside one keeps its words.
    text, folded = normalise(reading.text), fold(normalise(reading.masked()))
    return _unique_facts([*(_requests(text, folded) if asks else []), *(
        CandidateFact(said, EXPLICIT_IMPORTANCE, "semantic")
        for said in (directives.found(text, folded) if instructs else []))])


def _requests(text: str, folded: str) -> list[CandidateFact]:
    facts: list[CandidateFact] = []
    seen: set[str] = set()
    hits = _hits(text, folded)
    for index, hit in enumerate(hits):
        end = hit.sentence_end if index + 1 == len(hits) else min(
            hit.sentence_end, hits[index + 1].start)
        content = text[hit.fact_start : _tail_start(folded, hit.fact_start, end)]
        if len(content) > MAX_FACT_CHARS:
            continue
        for clause in _clauses(content, _language(hit.lang, fold(content))):
            fact = _to_fact(clause, _language(hit.lang, fold(clause)))
            if re.search(r"[^\W\d_]", fact) and fact.lower() not in seen:
                seen.add(fact.lower())
                facts.append(CandidateFact(fact, EXPLICIT_IMPORTANCE, "semantic"))
                if len(facts) == MAX_EXPLICIT_FACTS:
                    return facts
    return facts


def _unique_facts(facts: list[CandidateFact]) -> list[CandidateFact]:
    unique = {fact.text.lower(): fact for fact in reversed(facts)}  # the first one wins
    return list(reversed(unique.values()))[:MAX_EXPLICIT_FACTS]


def _hits(text: str, folded: str) -> list[_Hit]:
    """The trigger matches that are real requests, in order, without overlaps."""
    spans = sentence_spans(text)
    starts = [start for start, _ in spans]
    asks: dict[int, bool] = {}  # sentence start -> it is a question
    matches = sorted(
        ((m, t) for t in _TRIGGERS for m in t.pattern.finditer(folded)),
        key=lambda pair: (pair[0].start(), -pair[0].end()),
    )[:_MAX_TRIGGERS]
    hits: list[_Hit] = []
    for match, trigger in matches:
        if hits and match.start() < hits[-1].fact_start:
            continue  # inside the previous trigger ("make a note" contains "note")
        sentence_start, sentence_end = spans[bisect_right(starts, match.start()) - 1]
        if sentence_start not in asks:
            asks[sentence_start] = folded[
                sentence_start : _tail_start(folded, sentence_start, sentence_end)
            ].strip().endswith("?")
        # Only a bounded window around the trigger is read: fillers and the start
        # of the fact are short, and a window keeps a long message linear.
        window_start = max(sentence_start, match.start() - _WINDOW)
        before = ("…" if window_start > sentence_start else "") + folded[
            window_start : match.start()]
        # a request may follow another in the same sentence: "…, and don't forget…"
        chained = bool(hits) and hits[-1].sentence_end > match.start()
        polite = bool(_POLITE.search(before) or _POLITE_TRIGGER.match(match.group()))
        window_end = min(sentence_end, match.end() + _WINDOW)
        content = folded[match.end() : _tail_start(folded, match.end(), window_end)]
        if (
            _imperative_position(before, chained=chained)
            and (polite or not asks[sentence_start])
            and _requested_fact(trigger, match, content.strip(), before)
        ):
            hits.append(_Hit(match.start(), match.end(), trigger.lang, sentence_end))
    return hits


def _tail_start(folded: str, start: int, end: int) -> int:
    """Where the closing words ("ok, thanks", "por favor") of ``folded[start:end]`` begin.

    Only the last ``_WINDOW`` characters are read: a tail is a few words, and the
    tail pattern rescans from every position, which a long input makes quadratic.
    """
    offset = max(start, end - _WINDOW)
    tail = _TAIL.search(folded, offset, end)
    return tail.start() if tail else end


def _imperative_position(before: str, *, chained: bool) -> bool:
    """Whether the text before a trigger leaves it at the start of a clause.

    "I remember…" and "do you remember…" fail; "Great, and remember…" and
    "could you please remember…" pass once their fillers are peeled off.
    """
    prefix, conjunction = before, False
    while (filler := _FILLER.search(prefix)) and filler.group().strip(" ,"):
        conjunction = conjunction or bool(_CONJUNCTION.fullmatch(filler.group().strip(" ,!")))
        prefix = prefix[: filler.start() + (1 if filler.group()[0] in " ," else 0)]
    at_start = not prefix.strip() or bool(re.search(r"[^\w\s]\s*$", prefix))
    return at_start or (chained and conjunction)


def _requested_fact(trigger: _Trigger, match: re.Match[str], content: str, before: str) -> bool:
    """Whether what follows the trigger is something to remember, not "that movie"."""
    if not re.search(r"[^\W\d_]", content):
        return False
    link = (match.group("link") or "").strip(" ,")
    if trigger.strict and not _FIRST_PERSON_ANY.search(content):
        return False
    if link == "that" and _DEMONSTRATIVE.match(content):
        return False
    if trigger.lang == "en" and not (link or trigger.free):
        # bare "remember …": only "remember I'm…", "remember my…", "remember to…"
        about_user = _FIRST_PERSON_START.match(content) or content.startswith("to ")
        pleaded = re.search(r"\b(?:please|pls|plz)\b", before) and len(content.split()) >= 3
        return bool(about_user or pleaded)
    return True


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
            (m.start(), m.start(1))
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
    if clause.isupper():  # "REMEMBER THAT I'M VEGAN" should not store "Is VEGAN"
        clause = clause.lower()
    fact = third_person(clause, lang)
    if lang == "en" and fold(clause).startswith("to "):
        return "Asked to remember " + fact[:1].lower() + fact[1:]  # an instruction, kept as said
    return fact
