"""PostgreSQL: the trigram channel skips what a memory's trigram signature rules out.

``memories.trigram_signature`` (migration 0013) lets the channel score a (memory,
term) pair with ``word_similarity`` only where the threshold is reachable. What it
returns must be exactly what scoring every pair returns: random texts (accents,
CJK, digits), misspelt and foreign terms, and thresholds that fall exactly on a
similarity some pair has.
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest
from migration_steps import current, head, migrate
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, create_async_engine

from truemem_core import Settings, TrueMem
from truemem_core.search.channels import memories_of
from truemem_core.search.channels.postgres import PostgresChannels
from truemem_core.search.scoring import idf_rank
from truemem_core.storage.database import Database, resolve_url

pytestmark = pytest.mark.parametrize("backend", ["postgres"], indirect=True)

WORDS = ["peanuts", "allergy", "sister", "Zoë", "Porto", "nurse", "guitar", "marathon",
         "São", "Paulo", "Zürich", "東京", "タワー", "café", "2024", "B12", "x", "jazz-piano",
         "greenhouse", "ceremony", "dentist", "Lisbon", "teacher", "daughter", "München"]
SETTINGS = Settings(dedup_threshold=1.0, admission_threshold=0.0)

# the pairs that pass: a (memory, term) pair is scored where the signature allows it
_SCORED = """
SELECT m.id, t.n - 1 AS term, word_similarity(t.term, m.text) AS value
FROM memories m, unnest(CAST(:terms AS text[])) WITH ORDINALITY AS t(term, n)
WHERE m.user_id = :user AND m.state != 'archived'
  AND word_similarity(t.term, m.text) >= :threshold"""
_RULED_OUT = """
SELECT count(*) FROM memories m, (
    SELECT truemem_trigram_signature(term) AS mask,
           cardinality(show_trgm(term)) AS size FROM unnest(CAST(:terms AS text[])) AS term) t
WHERE m.user_id = :user
  AND bit_count(m.trigram_signature & t.mask) < t.size * :threshold - t.size + bit_count(t.mask)"""


def _misspelt(word: str, rng: random.Random) -> str:
    chars = list(word)
    for _ in range(rng.randint(0, 2)):
        at = rng.randrange(len(chars) + 1)
        match rng.choice(["drop", "add", "swap"]):
            case "drop" if at < len(chars):
                del chars[at]
            case "swap" if at + 1 < len(chars):
                chars[at], chars[at + 1] = chars[at + 1], chars[at]
            case _:
                chars.insert(at, rng.choice("aeiouxzäé"))
    return "".join(chars) or word


def _terms(rng: random.Random) -> list[str]:
    picked = [_misspelt(rng.choice(WORDS), rng) for _ in range(rng.randint(1, 5))]
    return picked + rng.sample(["a", "zz", "ab cd", "東", "123", "porto sister", "Sao"],
                               rng.randint(0, 2))


async def _compare(url: str, rng: random.Random) -> tuple[int, int, int]:
    """Trigram rankings from the channel and from scoring every pair, compared; the
    pairs compared, the matches among them and the pairs the signature ruled out."""
    db = Database(resolve_url(url), embedder=None)
    channels = PostgresChannels()
    pairs = matches = ruled_out = 0
    try:
        async with db.autocommit() as conn:
            documents = (await conn.execute(text(
                "SELECT count(*) FROM memories WHERE user_id = 'ana'"))).scalar_one()
            for _ in range(60):
                terms = _terms(rng)
                values = await _values(conn, terms)
                # thresholds on a similarity some pair has, and the usual ones
                for threshold in {0.3, 0.6, 1.0, *rng.sample(values, min(3, len(values)))}:
                    found = await channels.trigram(conn, memories_of("ana"), terms, 1000,
                                                   threshold=threshold)
                    params = {"terms": terms, "user": "ana", "threshold": threshold}
                    scored = sorted(tuple(row) for row in await conn.execute(
                        text(_SCORED), params))
                    expected = idf_rank(scored, documents=documents, limit=1000)
                    assert found == expected, (terms, threshold)
                    pairs += documents * len(terms)
                    matches += len(scored)
                    ruled_out += (await conn.execute(text(_RULED_OUT), params)).scalar_one()
    finally:
        await db.close()
    return pairs, matches, ruled_out


async def _values(conn: AsyncConnection, terms: list[str]) -> list[Any]:
    """The similarities of the terms to the user's memories (as the channel compares them)."""
    return sorted({row[0] for row in await conn.execute(text(
        "SELECT word_similarity(t, text)::float8 FROM memories, unnest(CAST(:terms AS text[])) t "
        "WHERE user_id = 'ana'"), {"terms": terms}) if row[0] > 0})


def test_the_signature_never_drops_a_trigram_match(tmp_url: str) -> None:
    rng = random.Random(5)
    with TrueMem(tmp_url, settings=SETTINGS) as memory:
        for user in ("ana", "bob"):
            memory.add_memories(user, [
                " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 12)))
                for _ in range(120)])
    pairs, matches, ruled_out = asyncio.run(_compare(tmp_url, rng))
    assert matches > 500  # the comparison is not of empty results
    assert ruled_out > pairs / 2  # and most pairs were never scored


async def _scalars(url: str, query: str) -> tuple[Any, ...]:
    """One row of ``query`` on the store, which is left at its revision."""
    engine = create_async_engine(resolve_url(url))
    try:
        async with engine.connect() as conn:
            return tuple((await conn.execute(text(query))).one())
    finally:
        await engine.dispose()


_SIGNED = ("SELECT count(*) FILTER (WHERE trigram_signature = truemem_trigram_signature(text)),"
           " count(*) FROM memories")
_COLUMNS = ("SELECT count(*) FROM information_schema.columns"
            " WHERE table_name = 'memories' AND column_name = 'trigram_signature'")
_FUNCTIONS = "SELECT count(*) FROM pg_proc WHERE proname = 'truemem_trigram_signature'"


async def test_stored_memories_are_signed_by_the_upgrade_and_it_reverses(tmp_url: str) -> None:
    async with TrueMem(tmp_url, settings=SETTINGS) as memory:
        await memory.aadd_memories("ana", ["Flew to Lisbon in June", "Zoë is a nurse in Zürich"])
    await migrate(tmp_url, "downgrade", "0012")
    assert await _scalars(tmp_url, _COLUMNS) == (0,)
    assert await _scalars(tmp_url, _FUNCTIONS) == (0,)

    await migrate(tmp_url, "upgrade", "head")
    assert await current(tmp_url) == head()
    assert await _scalars(tmp_url, _SIGNED) == (2, 2)
    async with TrueMem(tmp_url, settings=SETTINGS) as memory:
        hits = await memory.asearch("ana", "Zurich nurse", mode="trigram")
        assert [hit.memory.text for hit in hits] == ["Zoë is a nurse in Zürich"]
        stored = hits[0].memory
        await memory.aupdate_memory("ana", stored.id, text="Zoë moved to Lisbon")
        assert await memory.asearch("ana", "Zurich", mode="trigram") == []
    assert await _scalars(tmp_url, _SIGNED) == (2, 2)  # a new text, its signature with it
