"""Near-duplicates: how a restatement folds into the stored memory. Pure, no I/O.

Whether a new fact restates a stored one at all is ``decision.decide``'s rule.
The stored vector of a merged memory is the centroid of every variant folded
into it (``centroid``), so whether a later variant still counts as the same
fact does not depend on which variant happened to come first.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from truemem_core.embeddings import Vector, normalize
from truemem_core.language.gist import gist


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

    The more complete text wins: the new one only when it says more (its content
    words contain all of the stored one's and more, "Lives in Lisbon, Portugal"
    after "Lives in Lisbon"); a restatement in other words or other punctuation leaves
    the stored text as it is, so adding the same facts again rewrites nothing. Importance
    becomes the max of the two, and a genuine restatement — anything but a replay
    of the same source message — raises it by one more, up to
    ``reinforcement_cap``. So facts seen again across conversations climb, while
    a one-off extraction keeps its rank and is pruned first.
    """
    text = new_text if gist(new_text).words > gist(old_text).words else old_text
    importance = max(old_importance, new_importance)
    if not replay and importance < reinforcement_cap:
        importance += 1
    return Merge(text=text, importance=importance, reinforced=not replay)
