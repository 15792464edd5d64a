"""Extractive running summary, for when no LLM is configured.

Keeps sentences verbatim (one per line, prefixed with the speaker) and ranks
them by how much they carry: first-person facts from the user, names,
numbers, content words. Greetings, thanks and filler never make it. The
result is deterministic and bounded by ``max_sentences``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from truemem_core.language import offload
from truemem_core.language.rule_extractor import extract_facts
from truemem_core.language.text import normalise, split_sentences, words

_MAX_CHARS = 300  # one rambling sentence must not eat the summary
_PREVIOUS_BONUS = 2.0  # a sentence that already made a summary has proven itself once
_STOPWORDS = words(
    "the and for are but not you your yours all any can had her was one our out has him his how "
    "its may new now old see two way who did get got let put say she too use that with have "
    "this will from they know want been good much some time very when come here just like "
    "long make many over such take than them well were what into more also there their about "
    "would could should which these those then only really thing things yeah okay sure thanks "
    "thank please sorry maybe being doing going gonna wanna stuff lot lots yes yeah today "
    "help hello great like would love nice cool awesome glad happy sounds "
    "que los las del por con una para como pero sus más muy está este esta eso esto hay "
    "también porque cuando donde todo nada algo gracias vale bueno"
)
_FILLER = re.compile(
    r"(?:hi|hello|hey|thanks|thank\s+you|thx|ok|okay|sure|great|cool|nice|awesome|perfect|"
    r"you'?re\s+welcome|no\s+problem|bye|goodbye|see\s+you|good\s+(?:morning|night|evening)|"
    r"lol|haha\w*|hola|gracias|vale|de\s+nada|adi[oó]s|perfecto|genial|buenas|claro|got\s+it|"
    r"sounds\s+good|of\s+course|you\s+too|me\s+too|same)\b",
    re.IGNORECASE,
)
_WORD = re.compile(r"[^\W\d_]{3,}")
_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i've|my|me|mine|yo|mi|mis|me)\b", re.IGNORECASE)
_NAMED = re.compile(r"(?<=\s)[A-ZÁÉÍÓÚÑ][\w'-]+")
_ROLE_PREFIX = re.compile(r"^(?:user|assistant|system)\s*:\s*", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class _Candidate:
    position: int
    text: str  # as it will appear in the summary
    score: float


def summarize_extractive(
    previous_summary: str | None,
    messages: Sequence[tuple[str, str]],
    *,
    max_sentences: int = 12,
) -> str:
    """The previous summary's sentences plus the most informative new ones, in order.

    At most ``max_sentences`` lines. At least a third of them is reserved for
    the new messages; when the previous summary does not fit in the rest, its
    least informative sentences go first.
    """
    if max_sentences < 1:
        raise ValueError("max_sentences must be at least 1")
    size = len(previous_summary or "") + sum(len(content) for _, content in messages)
    # Long texts are read in a helper process: see ``offload`` (pure Python holds the GIL).
    return offload.run(_summarize, previous_summary, [(r, c) for r, c in messages],
                       max_sentences, size=size)


def _summarize(
    previous_summary: str | None, messages: list[tuple[str, str]], max_sentences: int
) -> str:
    previous = _previous(previous_summary)
    seen = {_key(c.text) for c in previous}
    fresh: list[_Candidate] = []
    for role, content in messages:
        for sentence in split_sentences(normalise(content)):
            text = f"{role.strip().capitalize() or 'User'}: {clip(sentence)}"
            if is_filler(role, sentence) or _key(text) in seen:
                continue
            seen.add(_key(text))
            fresh.append(_Candidate(len(fresh), text, score(role, sentence)))
    reserved = max(math.ceil(max_sentences / 3), max_sentences - len(previous))
    new_slots = min(len(fresh), reserved)
    kept_previous = _best(previous, max_sentences - new_slots)
    kept_fresh = _best(fresh, new_slots)
    return "\n".join(c.text for c in [*kept_previous, *kept_fresh])


def _previous(summary: str | None) -> list[_Candidate]:
    if not summary:
        return []
    sentences = [s for line in summary.splitlines() for s in split_sentences(normalise(line))]
    candidates = []
    for position, sentence in enumerate(sentences):
        role = "user" if sentence.lower().startswith("user") else "assistant"
        body = _ROLE_PREFIX.sub("", sentence)
        candidates.append(_Candidate(position, sentence, score(role, body) + _PREVIOUS_BONUS))
    return candidates


def _best(candidates: list[_Candidate], slots: int) -> list[_Candidate]:
    """The ``slots`` highest-scoring candidates (earlier first on ties), back in order."""
    ranked = sorted(candidates, key=lambda c: (-c.score, c.position))[: max(slots, 0)]
    return sorted(ranked, key=lambda c: c.position)


def score(role: str, sentence: str) -> float:
    content = [w for w in _WORD.findall(sentence) if w.lower() not in _STOPWORDS]
    score = min(len(content), 12.0)
    if role.lower() == "user":
        score += 3.0
        if extract_facts(sentence):
            score += 6.0
        elif _FIRST_PERSON.search(sentence):
            score += 1.0
    if re.search(r"\d", sentence):
        score += 2.0
    score += 1.5 * min(len(_NAMED.findall(sentence)), 3)
    return score


def is_filler(role: str, sentence: str) -> bool:
    """Greetings, thanks, acknowledgements: a short sentence with under two content words."""
    if role.lower() == "user" and extract_facts(sentence):
        return False  # "I'm vegan." is short and says a lot
    content = [w for w in _WORD.findall(sentence) if w.lower() not in _STOPWORDS]
    short_filler = _FILLER.match(sentence.strip("¡¿!. ")) and len(sentence.split()) <= 5
    return bool(short_filler) or (len(content) < 2 and not re.search(r"\d", sentence))


def clip(sentence: str, most: int = _MAX_CHARS) -> str:
    """``sentence`` cut to at most ``most`` characters at a word, ending in "…"."""
    if len(sentence) <= most:
        return sentence
    head = sentence[:most]
    at_word = head.rsplit(" ", 1)[0]
    # at a word, unless that drops most of it (scripts written without spaces)
    return (at_word if len(at_word) > most // 2 else head) + "…"


def _key(text: str) -> str:
    return " ".join(_ROLE_PREFIX.sub("", text).casefold().split())
