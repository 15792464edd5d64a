"""What a new fact does to a stored one: one decision, one rule. Pure, no I/O.

- **reinforce**: a restatement, the same fact (its content words equal the stored
  one's, or one's contain the other's: "Lives in Berlin" and "Lives in Berlin since
  2019"), of the same polarity, and near in meaning (cosine at or above
  ``dedup_threshold``). It folds into the stored memory.
- **supersede**: a changed value of an attribute that holds one value at a time
  ("Lives in Berlin" after "Lives in Madrid", see ``language.claims``). The old
  fact is closed; its history says which value changed.
- **close**: a negation or an ending of the stored fact ("Is not allergic to
  peanuts", "Stopped taking insulin" after "Takes insulin daily"), or the reverse
  ("Takes insulin again" after "Stopped taking insulin"). The old fact is closed.
- **distinct**: anything else. Facts that differ in a person, place, number, name,
  object or polarity ("…with their mother" and "…with their grandmother", "Owns 5
  cats" and "Owns 10 cats", "before delete" and "after delete") are two facts and
  both stay, however close their vectors.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from truemem_core.language.contradiction import clash
from truemem_core.language.gist import QUALIFIERS, gist, says_when_it_ended

Action = Literal["reinforce", "supersede", "close", "distinct"]


@dataclass(frozen=True, slots=True)
class Decision:
    action: Action
    reason: str


@lru_cache(maxsize=8192)  # a bulk add compares the same stored facts again and again
def decide(old: str, new: str, *, similar: bool) -> Decision:
    """What ``new`` does to the stored fact ``old``; ``similar``: their vectors are within
    ``dedup_threshold`` (needed to fold only: wording alone never merges two facts)."""
    before, after = gist(old), gist(new)
    lost, added = before.words - after.words, after.words - before.words
    if before.negated != after.negated:
        # an ending may drop when or how often the fact held ("daily", "since 2019") and
        # add when it ended ("last year"); "not … in the evening" is another fact
        if all(w in QUALIFIERS or w.isdigit() for w in lost) \
                and says_when_it_ended(added):
            return Decision("close", f"{'negated' if after.negated else 'reversed'}: {new}")
        return Decision("distinct", "opposite polarity, about something else")
    superseded = clash(new, old)
    if superseded is not None:
        return Decision("supersede", superseded.explain())
    if lost and added:
        return Decision("distinct", f"differs: {' '.join(sorted(lost))} / "
                                    f"{' '.join(sorted(added))}")
    if not similar:
        return Decision("distinct", "not near enough in meaning")
    return Decision("reinforce", "refined" if added else "restated")


def adds_nothing(old: str, new: str) -> bool:
    """Whether every content word of ``new`` is already in ``old``."""
    return gist(new).words <= gist(old).words
