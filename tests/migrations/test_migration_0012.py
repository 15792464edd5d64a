"""Migration 0012: a past message is searchable by the words of its head only.

A message is indexed up to ``INDEXED_CHARS`` characters: a word there finds it,
a word past it does not. Messages stored before the upgrade are indexed again so
(and, on SQLite, deleting one leaves nothing behind: a contentless FTS5 'delete'
needs the text exactly as it was indexed); the downgrade indexes whole messages again.
"""

from __future__ import annotations

from datetime import UTC, datetime

from migration_steps import current, head, migrate
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from truemem_core import Settings, TrueMem
from truemem_core.storage.database import resolve_url
from truemem_core.storage.message_search import INDEXED_CHARS
from truemem_core.storage.schema import messages

_FILLER = "the weather was mild and we talked about nothing much. "
# 'Zanzibar' at the start, 'Kilimanjaro' past the indexed head
_LONG = (f"We flew to Zanzibar in June. {_FILLER * (INDEXED_CHARS // len(_FILLER) + 1)}"
         "Then we climbed Kilimanjaro.")


# passages (0020) would find the words past the head: this is about the message's own index
HEADS_ONLY = Settings(passage_tokens=0)


async def _by_words(url: str, user: str, query: str) -> list[str]:
    """The sessions of the past turns a context found by the query's words."""
    async with TrueMem(url, settings=HEADS_ONLY) as memory:
        context = await memory.aget_context(user, "now", query)
        return [turn.session_id for turn in context.recalled if "keyword" in turn.ranks]


async def _indexed(url: str, word: str) -> int:
    """Entries of the messages' word index that hold ``word`` (on SQLite, the FTS5
    table's own, stale ones included)."""
    engine = create_async_engine(resolve_url(url))
    try:
        async with engine.connect() as conn:
            if conn.dialect.name == "postgresql":
                query = ("SELECT count(*) FROM messages "
                         "WHERE search_vector @@ to_tsquery('english', :word)")
            else:
                query = "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH :word"
            return int((await conn.execute(text(query), {"word": word})).scalar_one())
    finally:
        await engine.dispose()


async def test_a_message_is_found_by_the_words_of_its_head(tmp_url: str) -> None:
    async with TrueMem(tmp_url, settings=HEADS_ONLY) as memory:
        await memory.arecord_messages("ana", "trip", [("user", _LONG)])
    assert await _by_words(tmp_url, "ana", "Zanzibar") == ["trip"]
    assert await _by_words(tmp_url, "ana", "Kilimanjaro") == []  # past the head


async def test_stored_messages_are_indexed_again_and_the_migration_reverses(
    tmp_url: str,
) -> None:
    await migrate(tmp_url, "upgrade", "0011")
    engine = create_async_engine(resolve_url(tmp_url))
    try:
        async with engine.begin() as conn:
            await conn.execute(messages.insert(), [
                {"user_id": user, "session_id": "old", "role": "user", "content": _LONG,
                 "tokens": 2100, "summarized": False, "embedding": None,
                 "created_at": datetime(2024, 5, 1, tzinfo=UTC)} for user in ("ana", "bob")])
    finally:
        await engine.dispose()
    assert await _indexed(tmp_url, "kilimanjaro") == 2  # 0008 indexed the whole text

    await migrate(tmp_url, "upgrade", "head")
    assert await current(tmp_url) == head()
    assert await _indexed(tmp_url, "kilimanjaro") == 0
    assert await _indexed(tmp_url, "zanzibar") == 2
    assert await _by_words(tmp_url, "bob", "Zanzibar") == ["old"]
    async with TrueMem(tmp_url) as memory:
        await memory.aerase_user("ana")  # forgets the head it was indexed by
    assert await _indexed(tmp_url, "zanzibar") == 1

    await migrate(tmp_url, "downgrade", "0011")
    assert await _indexed(tmp_url, "kilimanjaro") == 1  # bob's, whole again
    await migrate(tmp_url, "upgrade", "head")
    assert await _indexed(tmp_url, "kilimanjaro") == 0
