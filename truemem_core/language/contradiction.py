"""Which stored facts a new fact supersedes ("Lives in Berlin" after "Lives in Madrid").

A new fact supersedes a stored one when both claim the same single-valued
attribute of the same subject (see ``claims.py``) and the values differ. The
caller then closes the old fact's validity (``valid_to``, ``superseded_by``)
instead of leaving both current. Facts that add up never supersede: they make
no claim. Values where one contains the other ("Berlin" and "Berlin, Germany",
"tea" and "green tea") are a refinement, not a change, and the merge handles them.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from functools import lru_cache
from typing import Generic, TypeVar

from truemem_core.language.claims import Claim, parse_claims

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True, slots=True)
class Supersession(Generic[K]):
    id: K
    old: Claim
    new: Claim

    def explain(self) -> str:
        """E.g. ``location of user: madrid -> berlin``."""
        return f"{self.new.attribute} of {self.new.subject}: {self.old.value} -> {self.new.value}"


def _nested(a: str, b: str) -> bool:
    """Whether one value's words run inside the other's."""
    short, long = sorted((a.split(), b.split()), key=len)
    return any(long[i : i + len(short)] == short for i in range(len(long) - len(short) + 1))


def replaces(new: Claim, old: Claim) -> bool:
    return (
        new.exclusive
        and (new.subject, new.attribute) == (old.subject, old.attribute)
        and not _nested(new.value, old.value)
    )


@lru_cache(maxsize=4096)
def _claims(text: str) -> tuple[Claim, ...]:
    """``parse_claims``, remembered: a bulk add compares each new fact with the same
    stored ones again and again."""
    return tuple(parse_claims(text))


def clash(new_text: str, old_text: str) -> Supersession[str] | None:
    """Whether ``new_text`` supersedes ``old_text`` (the id is the old text)."""
    new_claims = _claims(new_text)
    found = next(((n, o) for o in (_claims(old_text) if new_claims else ())
                  for n in new_claims if replaces(n, o)), None)
    return None if found is None else Supersession(old_text, old=found[1], new=found[0])
