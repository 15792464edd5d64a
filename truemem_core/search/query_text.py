"""Query text for the keyword and trigram channels. Pure functions, no I/O.

A question such as "When did I renew the SSL thing?" is mostly glue: matched
word for word, "when", "did", "the" and "thing" hit almost every memory and
bury the one word that matters. So both lexical channels search for the
query's *significant terms* — its words minus English and Spanish stop-words
and vague fillers ("thing", "stuff", "cosa") — with OR semantics: a memory
that shares one rare term with the query is a candidate, and the engines'
IDF weighting (BM25 on SQLite, per-user IDF on PostgreSQL) ranks those
sharing more, and rarer, terms first.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import NamedTuple

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
_ALNUM = re.compile(r"[^\W_]+")

_ENGLISH = """
a about above after again against all also am an and any are as at be because been
before being below between both but by can could did do does doing done down during
each few for from further get gets got had has have having he her here hers herself
him himself his how i if in into is it its itself just let lets like me might more
most much must my myself no nor not now of off on once only or other our ours
ourselves out over own same shall she should so some such than that the their
theirs them themselves then there these they this those through to too under until
up upon us very was we were what whats when where which while who whom whose why
will with would yet you your yours yourself yourselves ever really
i'm i've i'd i'll you're you've he's she's it's we're they're that's there's don't
didn't doesn't isn't wasn't aren't weren't can't couldn't won't wouldn't
"""
_SPANISH = """
a al algo algunas algunos ante antes como con contra cual cuales cuando cuanto de
del desde donde dos el ella ellas ellos en entre era eran es esa esas ese eso esos
esta estaba estaban estado estar estas este esto estos fue fueron ha habia han hasta
hay la las le les lo los mas me mi mis mucho muy nada ni no nos nosotros o os otra
otro para pero poco por porque que quien quienes se ser si sin sobre su sus tambien
te tengo tiene tienen tu tus un una uno unos unas usted ustedes y ya yo
"""
# Words that stand for "whatever it was": they carry no topic.
_FILLERS = "thing things stuff something anything cosa cosas algo asunto tema"

STOPWORDS: frozenset[str] = frozenset((_ENGLISH + _SPANISH + _FILLERS).split())
# A query is a question, not a document: the lexical channels search its first 64
# terms (the longest dev-set question has 29), which also keeps every statement
# within what the databases accept. The vector channel still reads the whole text.
MAX_TERMS = 64
MAX_QUERY_CHARS = 4000  # read for terms: a longer message is a document, not a question


def fold(text: str) -> str:
    """Lower-case and strip diacritics ("Alérgica" -> "alergica")."""
    if text.isascii():
        return text.lower()
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def words(text: str) -> list[str]:
    """The text's lower-cased words (letters and digits; inner apostrophes kept)."""
    return [w.replace("’", "'") for w in _WORD.findall(text.casefold())]


class QueryTerms(NamedTuple):
    """What the lexical channels search for in a query (see the two functions below)."""

    keyword: tuple[str, ...]  # ``keyword_terms``
    significant: tuple[str, ...]  # ``significant_terms``


def query_terms(query: str) -> QueryTerms:
    """Both term lists of ``query``, from one reading of its head (``MAX_QUERY_CHARS``).

    A context searches the memories and the past messages with the same message, so the
    last few heads are remembered: the second search reads nothing.
    """
    return _terms(query[:MAX_QUERY_CHARS])


@lru_cache(maxsize=8)
def _terms(head: str) -> QueryTerms:
    sequence = [_bare(w) for w in words(head)]
    found = _unique(sequence)
    kept = [w for w in found if _significant(w)]
    significant = (kept or found)[:MAX_TERMS]
    if len(significant) >= MAX_TERMS:  # the phrases would be cut off anyway
        return QueryTerms(tuple(significant), tuple(significant))
    phrases = [
        f"{a} {b}" for a, b in itertools.pairwise(sequence)
        if _significant(a) and _significant(b) and a != b
    ]
    return QueryTerms(tuple(_unique([*significant, *phrases])[:MAX_TERMS]), tuple(significant))


def significant_terms(query: str) -> list[str]:
    """The query's distinct words without stop-words, in order.

    English possessives are dropped ("John's" -> "john"): the memory says
    "John", or "his". When every word is a stop-word ("who is he?") they are
    all kept: the user asked for something, and a lexical match is still
    better than none.
    """
    return list(query_terms(query).significant)


def keyword_terms(query: str) -> list[str]:
    """``significant_terms`` plus each pair of them adjacent in the query, as a phrase.

    "LGBTQ support group" also searches "lgbtq support" and "support group": a
    memory holding the phrase ranks above one that has the words far apart
    (phrases are rare, so their IDF is high).
    """
    return list(query_terms(query).keyword)


def _bare(word: str) -> str:
    return word[:-2] if word.endswith("'s") and len(word) > 3 else word


@lru_cache(maxsize=8192)  # a query's words repeat, and so do the users' vocabularies
def _significant(word: str) -> bool:
    return len(word) > 1 and fold(word) not in STOPWORDS


def fts5_or_query(terms: Iterable[str]) -> str:
    """An FTS5 MATCH expression matching any of the terms (each a quoted string)."""
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in _unique(terms))


def fragments(term: str) -> list[str]:
    """The 3-letter substrings that find the term's fuzzy matches in a trigram index.

    The term's own, plus those bridging one deleted letter, so that a
    transposition or a dropped letter still shares a piece with the right
    word: "jonh" yields "joh" (delete "n"), found in "john".
    """
    term = term.casefold()  # the trigram tokenizer ignores case, not accents
    pieces = [term[i : i + 3] for i in range(len(term) - 2)]
    if len(term) > 3:
        for i in range(len(term)):
            shorter = term[:i] + term[i + 1 :]
            bridging = range(max(0, i - 2), min(i, len(shorter) - 2))
            pieces.extend(shorter[j : j + 3] for j in bridging)
    return _unique(pieces)


def trigram_query(terms: Sequence[str]) -> str:
    """An FTS5 MATCH expression for the ``trigram`` tokenizer ('' if no term has 3 letters)."""
    return fts5_or_query(g for t in terms for g in fragments(t))


def padded_trigrams(text: str) -> list[str]:
    """pg_trgm's trigrams, in order: each lower-cased word padded as ``"  word "``."""
    grams: list[str] = []
    for word in _ALNUM.findall(text.casefold()):
        padded = f"  {word} "
        grams += [padded[i : i + 3] for i in range(len(word) + 1)]
    return grams


def word_similarity(term: str, text: str) -> float:
    """pg_trgm's ``word_similarity(term, text)``, in Python.

    The greatest Jaccard similarity between the term's trigram set and the set
    of any contiguous run of the text's trigrams ("cert" scores 0.8 against
    "certificate", "jonh" 0.4 against "John").
    """
    return word_similarities([term], text)[0]


def word_similarities(terms: Sequence[str], text: str, at_least: float = 0.0) -> list[float]:
    """``word_similarity`` of each term against one text (see ``TrigramMatcher``)."""
    return TrigramMatcher(terms).scores(text, at_least)


class TrigramMatcher:
    """Scores many texts against the same query terms, with pg_trgm's ``word_similarity``.

    Shortcuts that keep it exact: a term present as a whole word scores 1; a
    term too few of whose trigrams occur in the text at all cannot reach
    ``at_least`` and scores 0 without the full computation. A text's trigrams
    and a (term, text) similarity are memoised: a user's memories change
    rarely and are searched again and again.
    """

    def __init__(self, terms: Sequence[str]) -> None:
        self.terms = [t.casefold() for t in terms]
        self.wanted = [frozenset(padded_trigrams(t)) for t in self.terms]

    def scores(self, text: str, at_least: float = 0.0) -> list[float]:
        _, present, words = _text_trigrams(text)
        scores = []
        for term, wanted in zip(self.terms, self.wanted, strict=True):
            if term in words:
                scores.append(1.0)
            elif not wanted or len(wanted & present) < max(at_least * len(wanted), 1e-9):
                scores.append(0.0)
            else:
                scores.append(_similarity(term, text))
        return scores


@lru_cache(maxsize=2048)
def _text_trigrams(text: str) -> tuple[tuple[str, ...], frozenset[str], frozenset[str]]:
    sequence = tuple(padded_trigrams(text))
    return sequence, frozenset(sequence), frozenset(_ALNUM.findall(text.casefold()))


@lru_cache(maxsize=65536)
def _similarity(term: str, text: str) -> float:
    wanted = frozenset(padded_trigrams(term))
    sequence = _text_trigrams(text)[0]
    # Only runs that start and end on a wanted trigram can be best.
    hits = [i for i, gram in enumerate(sequence) if gram in wanted]
    best = 0.0
    for n, start in enumerate(hits):
        seen: set[str] = set()
        common: set[str] = set()
        end = start
        for stop in hits[n:]:
            for gram in sequence[end : stop + 1]:
                seen.add(gram)
                if gram in wanted:
                    common.add(gram)
            end = stop + 1
            best = max(best, len(common) / (len(wanted) + len(seen) - len(common)))
            if len(wanted) / (len(wanted) + len(seen) - len(common)) <= best:
                break  # even matching every wanted trigram, longer runs cannot win
    return best


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))
