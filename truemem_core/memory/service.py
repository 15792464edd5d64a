"""``MemoryService``: long-term memory behind the facade; each method is one transaction.

Arguments are validated and texts embedded (off the event loop) *before* the
transaction opens, so no lock is held during CPU work; the SQL and decisions
live in the modules of this package, which all take the caller's connection.
Every query is filtered by ``user_id``: another user's memory id behaves
exactly like an unknown id.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections import OrderedDict
from collections.abc import (
    Awaitable,
    Callable,
    Iterable,
    Mapping,
    Sequence,
)
from datetime import datetime
from typing import Any

import numpy as np

from truemem_core._validation import (
    check_importance,
    check_k,
    check_kind,
    check_progress,
    check_source,
    check_text,
    check_user_id,
)
from truemem_core.embeddings import Embedder, Vector, compute, normalize
from truemem_core.errors import InvalidInputError
from truemem_core.graph.superseded import end_with_their_memories
from truemem_core.language.classify import classify_kind
from truemem_core.memory import bulk, edit, maintenance, reads, reembedding, rows, write
from truemem_core.memory.deps import MemoryDeps
from truemem_core.records import Kind, Memory, MemoryEvent, ScoredMemory, Source
from truemem_core.search import hybrid
from truemem_core.search.channels import channels_for_dialect, memories_of
from truemem_core.search.filters import (
    Mode,
    SearchFilters,
    check_filters,
    check_mode,
    make_filters,
)
from truemem_core.settings import Settings
from truemem_core.storage.database import Database
from truemem_core.storage.schema import utcnow

BATCH = 256  # facts per embedding call and per transaction of a bulk add
MAX_BATCH = 10_000
_NO_VECTOR: Vector = np.empty(0, dtype=np.float32)


def _sequence(items: Any) -> list[Any]:
    """The items of a bulk add as a list; one text or one mapping is not a sequence."""
    if isinstance(items, str | bytes | Mapping) or not isinstance(items, Iterable):
        raise InvalidInputError(
            "texts must be a list of texts or of mappings with 'text' (and 'importance', "
            f"'kind'), got {type(items).__name__}")
    return list(items)


def check_batch_size(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_BATCH:
        raise InvalidInputError(f"batch_size must be an int in [1, {MAX_BATCH}], got {value!r}")
    return value


Embedding = Callable[[Sequence[str]], Vector]
QUERY_CACHE_SIZE = 1024  # query embeddings kept: 1.5 MB at 384 dimensions
QUERY_CACHE_CHARS = 2000  # longer texts are rarely asked twice word for word


class MemoryService:
    def __init__(self, db: Database, embedder: Embedder, settings: Settings) -> None:
        self.db = db
        self.embedder = embedder
        self.settings = settings
        self.deps = MemoryDeps(db, channels_for_dialect(db.dialect), settings, embedder.model_name)
        self._queries: OrderedDict[str, Vector] = OrderedDict()  # see embed_query
        # a query embedded its own way (``int8_queries``) is never stored as a text's vector
        self._embed_queries = getattr(embedder, "embed_queries", None)

    def check_user(self, user_id: Any) -> str:
        return check_user_id(user_id, self.settings.max_id_chars)

    async def embed_query(self, text: str) -> Vector:
        """One query's embedding; a message asked again (a retry, a greeting, a button's
        text) is served from a small LRU cache keyed by its exact text."""
        cached = self._queries.get(text)
        if cached is not None:
            self._queries.move_to_end(text)
            return cached
        vector: Vector = (await self._compute([text], self._embed_queries))[0]
        vector.flags.writeable = False  # shared by every caller of this text
        if len(text) <= QUERY_CACHE_CHARS:
            self._queries[text] = vector
            if len(self._queries) > QUERY_CACHE_SIZE:
                self._queries.popitem(last=False)
        return vector

    async def embed(self, texts: Sequence[str]) -> Vector:
        """Embed off the event loop, below its priority (``embeddings/compute.py``).

        A text a query embedded a moment ago comes from the query cache: a message that
        ``get_context`` saw and ``record`` then stored is embedded once, not again by
        its extraction job (when that job runs in this process), unless the embedder
        embeds queries its own way.
        """
        vectors = np.empty((len(texts), self.embedder.dimension), dtype=np.float32)
        missing = []
        for n, text in enumerate(texts):
            cached = self._queries.get(text) if self._embed_queries is None else None
            if cached is None:
                missing.append(n)
            else:
                vectors[n] = cached
        if missing:
            vectors[missing] = await self._compute([texts[n] for n in missing])
        return vectors

    async def _compute(self, texts: list[str], embed: Embedding | None = None) -> Vector:
        """The model's normalised vectors of ``texts`` (by ``embed``, else the embedder's
        ``embed``), in the low-priority pool."""
        return normalize(await compute.run(embed or self.embedder.embed, texts))

    async def candidate(
        self, user_id: Any, text: Any, *, importance: int | None, kind: Kind | None,
        source: Source, source_message_id: int | None = None, supersedes: Sequence[str] = (),
        said_at: datetime | None = None,
    ) -> write.Candidate:
        """Validate a fact and embed it; ``kind=None`` classifies it. ``said_at``: when its
        message was said (the fact is true from then), default when it is stored."""
        fact = self.fact(self.check_user(user_id), text, importance=importance, kind=kind,
                         source=source, source_message_id=source_message_id,
                         supersedes=supersedes)
        return dataclasses.replace(fact, vector=(await self.embed([fact.text]))[0],
                                   said_at=said_at)

    def fact(
        self, user: str, text: Any, *, importance: int | None, kind: Kind | None,
        source: Source, source_message_id: int | None = None, supersedes: Sequence[str] = (),
    ) -> write.Candidate:
        """A validated fact of (already checked) ``user``, its vector still to come."""
        fact = check_text(text, "text", self.settings.max_text_chars)
        if isinstance(supersedes, str) or not all(isinstance(i, str) for i in supersedes):
            raise InvalidInputError("supersedes must be a sequence of memory ids (str)")
        return write.Candidate(
            user=user, text=fact,
            importance=check_importance(
                self.settings.default_importance if importance is None else importance),
            kind=check_kind(classify_kind(fact) if kind is None else kind),
            source=check_source(source), source_message_id=source_message_id,
            vector=_NO_VECTOR, supersedes=tuple(supersedes),
        )

    # -- writes ----------------------------------------------------------------

    async def add(
        self, user_id: Any, text: Any, *, importance: int | None = None,
        kind: Kind | None = None, source: Source = "manual",
    ) -> Memory:
        """Store a fact, or fold it into a near-duplicate; prune past the soft limit."""
        new = await self.candidate(user_id, text, importance=importance, kind=kind,
                                   source=source)
        async with self.db.writing(new.user) as conn:
            stored = await write.add(conn, self.deps, new, admit=False)
            assert stored is not None  # only admission control rejects
            await end_with_their_memories(conn, stored.user_id, [stored.id], utcnow())
        return stored

    async def add_many(
        self, user_id: Any, items: Any, *, importance: int | None = None,
        kind: Kind | None = None, source: Source = "manual", batch_size: Any = BATCH,
        progress: Callable[[int, int], None] | None = None,
    ) -> list[Memory]:
        """``add`` of each item in order, in batches: one embedding call and one
        transaction per batch (see ``memory.bulk``)."""
        added = await self.ingest(user_id, items, importance=importance, kind=kind,
                                  source=source, batch_size=batch_size, progress=progress)
        assert all(m is not None for m in added)  # only admission control rejects
        return [m for m in added if m is not None]

    async def ingest(
        self, user_id: Any, items: Any, *, importance: int | None = None,
        kind: Kind | None = None, source: Source = "manual", admit: bool = False,
        batch_size: Any = BATCH, progress: Callable[[int, int], None] | None = None,
    ) -> list[Memory | None]:
        """Every item checked before anything is embedded or written; then batch by
        batch, the next one embedded while this one is written."""
        user, size = self.check_user(user_id), check_batch_size(batch_size)
        report = check_progress(progress)
        facts = await self.facts(user, items, importance=importance, kind=kind, source=source)
        done: list[Memory | None] = []
        known: bulk.Known = {}  # the user's vectors, from one batch to the next
        async with contextlib.aclosing(bulk.embedded(self.embed, facts, size)) as batches:
            async for ready in batches:
                async with self.db.writing(user) as conn:
                    done += await bulk.add_many(conn, self.deps, user, ready, admit=admit,
                                                known=known)
                report(len(done), len(facts))
        return done

    async def facts(
        self, user: str, items: Any, *, importance: int | None = None,
        kind: Kind | None = None, source: Source = "manual",
    ) -> list[write.Candidate]:
        """The items of a bulk add of (already checked) ``user``, each checked, their
        vectors still to come."""
        return await asyncio.to_thread(lambda: [  # classifying is pure work: off the loop
            self._item(user, n, item, importance, kind, source)
            for n, item in enumerate(_sequence(items))])

    def _item(
        self, user: str, n: int, item: Any, importance: int | None, kind: Kind | None,
        source: Source,
    ) -> write.Candidate:
        """Item ``n`` of a bulk add: a text, or a mapping with text, importance, kind."""
        try:
            if isinstance(item, Mapping):
                unknown = sorted(map(str, set(item) - {"text", "importance", "kind"}))
                if unknown or "text" not in item:
                    raise InvalidInputError(
                        "a mapping needs 'text' and may have 'importance' and 'kind'"
                        + (f", not {', '.join(unknown)}" if unknown else ""))
                text = item["text"]
                importance = item.get("importance", importance)
                kind = item.get("kind", kind)
            else:
                text = item
            return self.fact(user, text, importance=importance, kind=kind, source=source)
        except InvalidInputError as exc:
            raise InvalidInputError(f"item {n}: {exc}") from exc

    async def update(
        self, user_id: Any, memory_id: Any, *, text: Any = None, importance: Any = None
    ) -> Memory:
        user = self.check_user(user_id)
        if text is None and importance is None:
            raise InvalidInputError("nothing to update: give text= and/or importance=")
        new_text = None if text is None else check_text(text, "text", self.settings.max_text_chars)
        new_importance = None if importance is None else check_importance(importance)
        vector = None if new_text is None else (await self.embed([new_text]))[0]
        async with self.db.writing(user) as conn:
            return await edit.update(conn, user, memory_id, text=new_text,
                                     importance=new_importance, vector=vector)

    async def delete(self, user_id: Any, memory_id: Any) -> None:
        user = self.check_user(user_id)
        async with self.db.writing(user) as conn:
            await edit.delete(conn, user, memory_id)

    async def feedback(self, user_id: Any, memory_id: Any, verdict: Any) -> Memory:
        user, checked = self.check_user(user_id), edit.check_verdict(verdict)
        async with self.db.writing(user) as conn:  # it may close the fact
            return await edit.feedback(conn, user, memory_id, checked)

    async def touch(self, counts: Mapping[str, Mapping[str, int]]) -> None:
        """Count retrievals, ``counts[user][id]`` of each memory, for all those users in
        one transaction (off the request path: see ``conversation.service``)."""
        if counts:
            async with self.db.writing(*counts) as conn:  # erase_user wins
                await maintenance.touch(conn, counts)

    async def maintain(self, user_id: Any) -> dict[str, str]:
        user = self.check_user(user_id)
        async with self.db.writing(user) as conn:
            return await maintenance.maintain(conn, self.deps, user)

    async def prune(self, user_id: Any) -> list[str]:
        user = self.check_user(user_id)
        async with self.db.writing(user) as conn:
            return await maintenance.prune_excess(conn, self.deps, user)

    async def reembed(
        self, *, batch: int = 256, progress: Callable[[int, int], None] | None = None
    ) -> int:
        """Recompute every stored vector with this embedder (after changing models): the
        memories' and the messages' (``memory.reembedding``); returns how many.

        Runs in batches, each committed; vectors already this model's are skipped, so an
        interrupted run is simply run again and goes on where it stopped. The store adopts
        the new model only once none is left (rows written meanwhile: another pass).
        """
        return await reembedding.run(self.db, self.embed, self.embedder.model_name,
                                     self.embedder.dimension, batch=batch,
                                     report=check_progress(progress))

    # -- reads -------------------------------------------------------------------

    async def get(self, user_id: Any, memory_id: Any) -> Memory:
        user = self.check_user(user_id)
        async with self.db.autocommit() as conn:
            return await reads.get(conn, user, memory_id)

    async def list_memories(
        self, user_id: Any, *, include_archived: Any = False, as_of: Any = None,
        valid_at: Any = None,
    ) -> list[Memory]:
        user = self.check_user(user_id)
        if not isinstance(include_archived, bool):
            raise InvalidInputError(f"include_archived must be a bool, got {include_archived!r}")
        when = make_filters(as_of=as_of, valid_at=valid_at)
        async with self.db.autocommit() as conn:
            return await reads.list_all(conn, user, include_archived=include_archived,
                                        as_of=when.as_of, valid_at=when.valid_at)

    async def history(self, user_id: Any, memory_id: Any) -> list[MemoryEvent]:
        user = self.check_user(user_id)
        async with self.db.autocommit() as conn:
            return await reads.history(conn, user, memory_id)

    async def nearest_current(self, user: str, vector: Vector, k: int) -> list[tuple[str, str]]:
        """The user's ``k`` current facts nearest ``vector``, read outside any write
        transaction: the caller may then wait on an LLM."""
        async with self.db.transaction(readonly=True) as conn:
            return await reads.nearest_current(conn, self.deps, user, vector, k)

    async def search(
        self,
        user_id: Any,
        query: Any,
        *,
        k: int | None = None,
        mode: Mode = "hybrid",
        vector: Vector | Awaitable[Vector] | None = None,
        filters: SearchFilters | None = None,
    ) -> list[ScoredMemory]:
        """Hybrid or single-channel top ``k`` (see ``search.hybrid``), each hit explained.

        In hybrid and vector mode a user with fewer than k memories gets all of them.
        ``vector``: the query's embedding, when the caller has it (or will: an awaitable
        is awaited after the lexical channels have run). Without it, the query is
        embedded while the lexical channels run.
        """
        user = self.check_user(user_id)
        text = check_text(query, "query", self.settings.max_message_chars,
                          setting="max_message_chars")
        k = check_k(self.settings.search_k if k is None else k)
        mode = check_mode(mode)
        checked = check_filters(filters or {})
        to_embed = vector is None and "vector" in hybrid.channels_for(mode, self.settings)
        async with (compute.meanwhile(self.embed_query(text)) if to_embed
                    else contextlib.nullcontext(vector)) as query_vector, \
                self.db.autocommit() as conn:
            hits = await hybrid.run(conn, self.deps.channels, memories_of(user, checked), text,
                                    query_vector, k=k, mode=mode, settings=self.settings,
                                    columns=rows.MEMORY_COLUMNS)
        return reads.scored(hits)
