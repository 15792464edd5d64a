"""What a short fact says, word for word: its content words and whether it is negated.

Dedup's decision (``memory.decision``) compares two facts by their gists. The
content words are the words left once function words (articles, pronouns,
auxiliaries, "has", "in", "with"…) are dropped, each stemmed crudely ("lives",
"living", "live" -> "liv"), a few closed synonym groups folded ("resides" =
"lives", "mom" = "mother", "daily" = "day") and number words written as digits.
Negated says the fact denies or ends something: "not", "never", "no longer",
"stopped", "quit", "used to" (and "ya no", "dejó de", "não", "parou de"…).

Every list is closed on purpose: an unknown word counts as content, so two facts
that differ in a word the lists do not know stay two facts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from truemem_core.language.text import fold, normalise, words

_NEGATION = re.compile(
    r"\b(?:no\s+longer|not\s+any\s?more|any\s?more|no\s+more|used\s+to|formerly|former|"
    r"previously|gave\s+up|given\s+up|giving\s+up|stopped|quit|quits|quitted|ceased|not|never|"
    r"no|nunca|jamas|jamais|tampoco|nao|(?:ha\s+)?(?:dejo|dejado|deja|parou|deixou|deixa)\s+de)"
    r"\b")
_CONTRACTION = re.compile(r"n't\b")  # "doesn't" -> "does not", "can't" -> "ca not"
# "Dejó de fumar": the infinitive as the present it ends ("Fuma"), es and pt
_ENDED_INFINITIVE = re.compile(
    r"\b((?:dejo|dejado|deja|parou|deixou|deixa)\s+de\s+\w+?)(?:(a)r|(e)r|i(r))\b")
_POSSESSIVE = re.compile(r"'s\b")
_TOKEN = re.compile(r"[^\W_]+(?:[-.'][^\W_]+)*")

IGNORED = words(
    """a an the is are was were be been being am has have had having own owns owned possess
    possesses do does did doing in on at for with of by as and or but it its this that these
    those there here i me my mine we us our you your he him his she her hers they them their
    theirs user users ca wo ai also very really just so too quite now currently still again actually
    recently lately every each will would can could should might start starts started
    starting begin begins began begun resume resumes resumed restart restarts restarted
    el la los las un una unos unas de del al en con por para y o e u que es fue ser
    soy esta estan estoy estar ha han he tiene tienen tengo le les lo se su sus mi mis tu
    me nos muy mas tambien ya ahora todavia aun vez otra volvio empezo comenzo
    os as um uma uns umas do da das em na nas com ou sao foi sou estao tem tenho seu sua seus
    suas meu minha meus minhas muito ja agora ainda voltou comecou""")
# Words that say the same, first of each line the one they all become.
_SYNONYMS = """
live lives reside resides vive viven reside residen mora moram
like likes enjoy enjoys love loves adore adores fond gusta gustan encanta encantan disfruta
  gosta gostam adora
name named called call llama llamado llamada chama chamado chamada
kid kids child children
mother mom mum mommy mama madre mae
father dad daddy papa padre pai
grandmother grandma granny abuela
grandfather grandpa abuelo
day daily days diario diaria diariamente
work works employed employ trabaja trabajo
doctor physician medico medica
big large
allergic allergy allergies alergico alergica alergia
favorite favourite fave
color colour
"""
# What an ending may leave out or add without being about another fact:
# "Stopped taking insulin" ends "Takes insulin daily".
# When and how often a fact holds: an ending may drop these from the fact it ends
_QUALIFIERS = words(
    """day daily week weeks weekly month months monthly year years yearly morning mornings
    night nights evening evenings weekend weekends regularly often usually always sometimes
    completely entirely altogether fully since ago last today yesterday dia semana ano manana
    noche siempre""")
# What an ending may add: when it ended, or that it ended for good ("Stopped smoking last
# year", "Quit completely"). How often or at what time of day it does not hold ("Does not
# drink coffee in the evening", "... every month") limits the fact instead: another fact.
_ENDING = words("since ago last today yesterday completely entirely altogether fully")
_PERIODS = words("day days week weeks month months year years dia semana ano")
_NUMBERS = {word: str(n) for n, group in enumerate([
    "zero cero", "one uno", "two dos dois duas", "three tres", "four cuatro quatro",
    "five cinco", "six seis", "seven siete sete", "eight ocho oito", "nine nueve nove",
    "ten diez dez", "eleven once onze", "twelve doce doze"]) for word in group.split()}


def _stem(word: str) -> str:
    """A crude suffix strip, enough for "takes"/"taking"/"take" or "nurses"/"nurse" to meet."""
    for suffix, replacement in (("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
            word = word[: -len(suffix)] + replacement
            if suffix in ("ing", "ed") and word[-1] == word[-2] and word[-1] not in "lsz":
                word = word[:-1]  # "stopped", "running"
            break
    return word[:-1] if word.endswith("e") and len(word) > 3 else word


_CANONICAL = {_stem(word): _stem(line.split()[0])
              for line in _SYNONYMS.replace("\n  ", " ").strip().splitlines()
              for word in line.split()}


def canonical(word: str) -> str:
    """The form a content word is compared in."""
    if word in _NUMBERS:
        return _NUMBERS[word]
    stem = _stem(word)
    return _CANONICAL.get(stem, stem)


QUALIFIERS = frozenset(canonical(w) for w in _QUALIFIERS)
ENDING = frozenset(canonical(w) for w in _ENDING)
PERIODS = frozenset(canonical(w) for w in _PERIODS)


def says_when_it_ended(added: frozenset[str]) -> bool:
    """Whether the words a negation adds only say when or that the fact ended: a period
    ("year") only with a word that dates it ("last", "ago", a number)."""
    dated = any(w in ENDING or w.isdigit() for w in added)
    return all(w in ENDING or w.isdigit() or (w in PERIODS and dated) for w in added)


_canonical = lru_cache(maxsize=65_536)(canonical)  # texts share most of their words


def content_words(folded: str) -> frozenset[str]:
    """The canonical content words of folded text: its function words dropped."""
    return frozenset(_canonical(token) for token in _TOKEN.findall(folded)
                     if token not in IGNORED)


@dataclass(frozen=True, slots=True)
class Gist:
    words: frozenset[str]  # content words, canonical
    negated: bool  # denies or ends what it is about


@lru_cache(maxsize=8192)  # a bulk add compares the same stored facts again and again
def gist(text: str) -> Gist:
    folded = _POSSESSIVE.sub("", fold(normalise(text)))
    folded = _CONTRACTION.sub(" not", folded)
    folded = _ENDED_INFINITIVE.sub(
        lambda m: m[1] + (m[2] or m[3] or "e"), folded)
    negated = bool(_NEGATION.search(folded))
    return Gist(content_words(_NEGATION.sub(" ", folded)), negated)
