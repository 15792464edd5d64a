"""``TrueMemStore``: LangGraph's ``BaseStore`` over TrueMem's store items.

A namespace names its user by one label, ``user_at`` (default 1: ``("memories",
user_id)``, LangMem's layout); the labels around it are kept as they are. A value is
a JSON document; the text of the fields ``index`` names (default: its ``content``,
``text``, ``memory`` or ``data`` field, else every string in it) becomes one of the
user's memories, re-written when a put changes it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from langgraph.store.base import (
    NOT_PROVIDED,
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    NotProvided,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)
from langgraph.store.base.embed import get_text_at_path

from truemem_core import InvalidInputError, StoreItem, TrueMem, item_text

Call = tuple[str, tuple[Any, ...], dict[str, Any]]


class TTLNotSupportedError(InvalidInputError, NotImplementedError):
    """A TTL was asked of ``TrueMemStore``: items live until deleted (a ``TrueMemError``,
    and the ``NotImplementedError`` LangGraph raises for stores without TTL)."""


def text_of(value: Mapping[str, Any], fields: Sequence[str] | None) -> str:
    """The text that indexes a value: its ``fields`` (LangGraph's path syntax), each on a
    line; by default its text field (``content``, ``text``, ``memory`` or ``data``) or
    else every string it holds; a value without any is indexed by its JSON."""
    if not isinstance(value, Mapping):
        raise InvalidInputError(
            f"a store item's value is a dict (a JSON object), got {type(value).__name__}")
    found = ([t for path in fields for t in get_text_at_path(value, path)]
             if fields is not None else [item_text(value)])
    found = [t for t in found if t.strip()]
    return "\n".join(found) if found else json.dumps(value, sort_keys=True, ensure_ascii=False,
                                                          default=repr)


def _path_matches(pattern: Sequence[str], labels: Sequence[str]) -> bool:
    return len(labels) >= len(pattern) and all(
        p in ("*", label) for p, label in zip(pattern, labels, strict=False))


def namespace_matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    """LangGraph's prefix / suffix match, ``"*"`` matching any one label."""
    path = tuple(condition.path)
    if condition.match_type == "prefix":
        return _path_matches(path, namespace)
    return _path_matches(path[::-1], namespace[::-1])


def listed(op: ListNamespacesOp, namespaces: Iterable[tuple[str, ...]]) -> list[tuple[str, ...]]:
    kept = [ns for ns in namespaces
            if all(namespace_matches(c, ns) for c in op.match_conditions or ())]
    if op.max_depth is not None:
        kept = sorted({ns[:op.max_depth] for ns in kept})
    return sorted(kept)[op.offset:op.offset + op.limit]


def to_item(item: StoreItem) -> Item:
    return Item(value=item.value, key=item.key, namespace=item.namespace,
                created_at=item.created_at, updated_at=item.updated_at)


def to_search_item(item: StoreItem) -> SearchItem:
    return SearchItem(item.namespace, item.key, item.value, item.created_at, item.updated_at,
                      score=item.score)


class TrueMemStore(BaseStore):
    """A LangGraph store whose items are TrueMem memories.

    ``memory``: the ``TrueMem`` to use (the caller closes it). ``user_at``: which label
    of a namespace is the user id (``("memories", user_id, ...)`` by default); a put or
    get needs that label, a search with a query needs its prefix to reach it, and a
    search without a query or ``list_namespaces`` above it spans users. ``index``: the
    value fields whose text is embedded (LangGraph's path syntax, e.g. ``["content"]``;
    default the value's ``content``, ``text``, ``memory`` or ``data`` field, else every
    string of it); a put's own ``index`` wins, ``index=False``
    stores the item without a memory (found by ``get`` and by a search without query).
    ``importance``: the importance of the memories (default TrueMem's, 3).
    """

    supports_ttl = False

    def __init__(
        self, memory: TrueMem, *, user_at: int = 1, index: Sequence[str] | None = None,
        importance: int | None = None,
    ) -> None:
        if not isinstance(memory, TrueMem):
            raise InvalidInputError(f"TrueMemStore needs a TrueMem, got {type(memory).__name__}")
        if isinstance(user_at, bool) or not isinstance(user_at, int) or user_at < 0:
            raise InvalidInputError(f"user_at must be an int >= 0, got {user_at!r}")
        if isinstance(index, str):
            raise InvalidInputError("index must be a list of field paths, not one str")
        self.memory = memory
        self.user_at = user_at
        self.fields = None if index is None else list(index)
        self.importance = importance

    # -- LangGraph's batch interface ----------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        results: list[Result] = []
        for op in ops:
            name, args, kwargs = self._call(op)
            results.append(self._result(op, getattr(self.memory.items, name)(*args, **kwargs)))
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        results: list[Result] = []
        for op in ops:
            name, args, kwargs = self._call(op)
            results.append(self._result(op, await getattr(self.memory.items, "a" + name)(
                *args, **kwargs)))
        return results

    def put(self, namespace: tuple[str, ...], key: str, value: Mapping[str, Any],
            index: Any = None, *, ttl: float | NotProvided | None = NOT_PROVIDED) -> None:
        self._refuse_ttl(ttl)
        super().put(namespace, key, value, index, ttl=None)

    async def aput(self, namespace: tuple[str, ...], key: str, value: Mapping[str, Any],
                   index: Any = None, *,
                   ttl: float | NotProvided | None = NOT_PROVIDED) -> None:
        self._refuse_ttl(ttl)
        await super().aput(namespace, key, value, index, ttl=None)

    # -- one op as one call of TrueMem ----------------------------------------------------

    @staticmethod
    def _refuse_ttl(ttl: Any) -> None:
        if ttl is not None and not isinstance(ttl, NotProvided):
            raise TTLNotSupportedError(
                "TrueMemStore keeps items until they are deleted: it does not support ttl "
                "(pass ttl=None, or delete items yourself)")

    def _user(self, namespace: Sequence[str]) -> str:
        if len(namespace) <= self.user_at:
            raise InvalidInputError(
                f"namespace {tuple(namespace)!r} has no user label: TrueMemStore reads the "
                f"user id at position {self.user_at} (e.g. ('memories', user_id))")
        return namespace[self.user_at]

    def _call(self, op: Op) -> Call:
        """The ``memory.items`` method (sync name) and arguments that carry out ``op``."""
        if isinstance(op, GetOp):
            return "get", (self._user(op.namespace), op.namespace, op.key), {}
        if isinstance(op, PutOp):
            user = self._user(op.namespace)
            if op.value is None:
                return "delete", (user, op.namespace, op.key), {}
            self._refuse_ttl(op.ttl)
            text = None if op.index is False else text_of(
                op.value, self.fields if op.index is None else op.index)
            return "put", (user, op.namespace, op.key, op.value), {
                "text": text, "importance": self.importance}
        if isinstance(op, SearchOp):
            prefix = op.namespace_prefix
            return "search", (prefix,), {
                "user_id": prefix[self.user_at] if len(prefix) > self.user_at else None,
                # an empty query is no query, as in LangGraph's own stores
                "query": op.query or None, "filter": op.filter, "limit": op.limit,
                "offset": op.offset}
        if isinstance(op, ListNamespacesOp):
            return "namespaces", (), {}
        raise InvalidInputError(f"TrueMemStore does not know the operation {op!r}")

    @staticmethod
    def _result(op: Op, found: Any) -> Result:
        if isinstance(op, GetOp):
            return None if found is None else to_item(found)
        if isinstance(op, SearchOp):
            return [to_search_item(item) for item in found]
        if isinstance(op, ListNamespacesOp):
            return listed(op, found)
        return None
