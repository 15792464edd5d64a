"""Which of a user's memories a search may return: the filters (``SearchFilters``, the
one definition of ``search``'s keywords, used by ``TrueMem``, ``MemoryService`` and the
server), validated (``CheckedFilters``), and the modes."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, TypedDict

from truemem_core._validation import check_importance, check_instant
from truemem_core.errors import InvalidInputError
from truemem_core.records import KINDS, STATES, Kind, State

Mode = Literal["hybrid", "vector", "keyword", "trigram"]
MODES: tuple[Mode, ...] = ("hybrid", "vector", "keyword", "trigram")
CHANNELS: tuple[str, ...] = ("vector", "keyword", "trigram")
"""The ranking channels a single-channel search may name."""


class SearchFilters(TypedDict, total=False):
    """The filters of ``search`` (its keywords after ``k`` and ``mode``), all optional.

    ``kind`` / ``state``: one value or a collection of them (``state`` by default active
    and ephemeral; ``include_archived`` adds archived); ``min_importance``: 1 to 5;
    ``created_after`` (inclusive) / ``created_before`` (exclusive); ``as_of`` /
    ``valid_at``: time travel (docs/graph.md). Times are timezone-aware.
    """

    kind: Kind | Collection[Kind] | None
    min_importance: int | None
    state: State | Collection[State] | None
    created_after: datetime | None
    created_before: datetime | None
    include_archived: bool
    as_of: datetime | None
    valid_at: datetime | None


FILTERS: frozenset[str] = frozenset(SearchFilters.__annotations__)
"""The names of the filters."""


@dataclass(frozen=True, slots=True)
class CheckedFilters:
    """Which of the user's memories a search may return (all conditions must hold).

    ``created_after`` is inclusive and ``created_before`` exclusive, so
    consecutive windows never return a memory twice. ``as_of``: only what was recorded
    then and not yet invalidated (``created_at <= t < invalidated_at``); ``valid_at``:
    only what was true in the world then (``valid_from`` or ``created_at`` ``<= t <
    valid_to``).
    """

    states: tuple[State, ...] = ("active", "ephemeral")
    kinds: tuple[Kind, ...] | None = None
    min_importance: int | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None
    as_of: datetime | None = None
    valid_at: datetime | None = None
    closed_too: bool = False
    """Also the facts closed since (superseded or called wrong: archived now, yet current
    at an earlier instant), whatever ``states`` says; what pruning or decay archived
    stays out, as without time travel."""


def check_mode(value: Any) -> Mode:
    if value not in MODES:
        raise InvalidInputError(f"mode must be one of {', '.join(MODES)}; got {value!r}")
    return value  # type: ignore[no-any-return]


def check_filters(filters: Mapping[str, Any]) -> CheckedFilters:
    """``search``'s ``**filters``, validated: a name that is no filter is a ``TypeError``,
    as Python's own for an unknown keyword."""
    unknown = sorted(set(filters) - FILTERS)
    if unknown:
        raise TypeError(f"search() got an unexpected keyword argument {unknown[0]!r}; "
                        f"its filters are {', '.join(sorted(FILTERS))}")
    return make_filters(**filters)


def make_filters(
    *,
    kind: Any = None,
    min_importance: Any = None,
    state: Any = None,
    include_archived: Any = False,
    created_after: Any = None,
    created_before: Any = None,
    as_of: Any = None,
    valid_at: Any = None,
) -> CheckedFilters:
    """Validate the search filters (``SearchFilters``, one parameter each); each bad
    value raises ``InvalidInputError``, an unknown name ``TypeError``.

    ``kind`` and ``state`` take one value or a collection of them. Without
    ``state`` a search sees active and ephemeral memories, plus archived ones
    when ``include_archived`` is true (archived memories are out of standard
    search but still findable, §8); travelling in time (``as_of``, ``valid_at``),
    it also sees the facts closed since (see ``CheckedFilters.closed_too``).
    """
    if not isinstance(include_archived, bool):
        raise InvalidInputError(f"include_archived must be a bool, got {include_archived!r}")
    if state is None:
        states: tuple[State, ...] = STATES if include_archived else ("active", "ephemeral")
    else:
        states = _choices(state, STATES, "state")  # type: ignore[assignment]
    kinds = None if kind is None else _choices(kind, KINDS, "kind")
    importance = None if min_importance is None else check_importance(min_importance)
    after = _instant(created_after, "created_after")
    before = _instant(created_before, "created_before")
    if after is not None and before is not None and after >= before:
        raise InvalidInputError("created_after must be earlier than created_before")
    at, valid = _instant(as_of, "as_of"), _instant(valid_at, "valid_at")
    return CheckedFilters(states, kinds, importance, after, before,  # type: ignore[arg-type]
                          at, valid, closed_too=state is None and not include_archived
                          and (at is not None or valid is not None))


def _choices(value: Any, allowed: Sequence[str], what: str) -> tuple[str, ...]:
    chosen = (value,) if isinstance(value, str) else value
    if not isinstance(chosen, Iterable):
        raise InvalidInputError(f"{what} must be a str or a collection of str, got {value!r}")
    chosen = tuple(chosen)
    if not chosen or any(not isinstance(c, str) or c not in allowed for c in chosen):
        raise InvalidInputError(f"{what} must be among {', '.join(allowed)}; got {value!r}")
    return tuple(dict.fromkeys(chosen))


def _instant(value: Any, what: str) -> datetime | None:
    return None if value is None else check_instant(value, what)
