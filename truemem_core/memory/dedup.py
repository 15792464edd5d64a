"""Near-duplicates: which stored facts a new one may fold into, and how. Pure, no I/O.

Similar vectors are not enough: "Owns 5 cats" and "Owns 10 cats", or "Has a dog
named Rex" and "Has a dog named Max", embed close together, and folding one
into the other would silently overwrite a detail. ``same_details`` keeps them
apart (a change of value is the contradiction path's job, with history).

The stored vector of a merged memory is the centroid of every variant folded
into it (``centroid``), so whether a later variant still counts as the same
fact does not depend on which variant happened to come first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from truemem_core.embeddings import Vector, normalize

_NUMBER = re.compile(r"\d+(?:[.,:/-]\d+)*")
# A capitalised word after the first one: a name, a place, a product, a month.
_NAME = re.compile(r"(?<=\s)[^\W\d_][\w'’-]*", re.UNICODE)
_NUMBERS_EN = """zero one two three four five six seven eight nine ten eleven twelve thirteen
fourteen fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy
eighty ninety hundred thousand million first second third fourth fifth"""
_NUMBERS_ES = """cero dos tres cuatro cinco seis siete ocho nueve diez once doce trece catorce
quince veinte treinta cuarenta cincuenta cien ciento mil primero primera segundo segunda"""
_NUMBER_WORDS = frozenset((_NUMBERS_EN + " " + _NUMBERS_ES).split())


@lru_cache(maxsize=4096)  # a bulk add compares the same stored facts again and again
def details(text: str) -> frozenset[str]:
    """The numbers, number words and capitalised names of a fact."""
    found = set(_NUMBER.findall(text))
    found.update(w for w in _NAME.findall(text) if w[0].isupper())
    found.update(w for w in re.findall(r"\w+", text.casefold()) if w in _NUMBER_WORDS)
    return frozenset(found)


def same_details(a: str, b: str) -> bool:
    """Whether two similar facts may be one: one's details contain the other's.

    "Lives in Berlin" and "Lives in Berlin since 2019" agree (the second refines
    the first); "Owns 5 cats" and "Owns 10 cats" do not.
    """
    first, second = details(a), details(b)
    return first <= second or second <= first


def centroid(vectors: list[Vector], weights: list[float]) -> Vector:
    """The normalised weighted mean of unit vectors: where a merged memory's vector sits."""
    mean = np.sum([w * np.asarray(v, dtype=np.float32) for v, w in zip(
        vectors, weights, strict=True)], axis=0)
    merged: Vector = normalize(mean)[0]
    return merged


@dataclass(frozen=True, slots=True)
class Merge:
    text: str
    importance: int
    reinforced: bool


def merge(
    *,
    old_text: str,
    old_importance: int,
    new_text: str,
    new_importance: int,
    replay: bool,
    reinforcement_cap: int,
) -> Merge:
    """How a near-duplicate folds into the stored memory.

    The more complete text wins (the longer one; the newer on a tie). Importance
    becomes the max of the two, and a genuine restatement — anything but a replay
    of the same source message — raises it by one more, up to
    ``reinforcement_cap``. So facts seen again across conversations climb, while
    a one-off extraction keeps its rank and is pruned first.
    """
    text = old_text if len(old_text) > len(new_text) else new_text
    importance = max(old_importance, new_importance)
    if not replay and importance < reinforcement_cap:
        importance += 1
    return Merge(text=text, importance=importance, reinforced=not replay)
