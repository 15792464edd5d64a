"""Migration 0023: a session's syntheses by stretches (``part``). The column and its
unique index come with the upgrade (a synthesis already there is its session's part 0)
and go with the downgrade, which keeps each session's part 0 and drops the others."""

from __future__ import annotations

from migration_steps import indexes, migrate

from truemem_core import TrueMem
from truemem_core.synthesis.extractive import PART_MESSAGES

PART = "ux_syntheses_user_kind_key_part"
OLD = "ux_syntheses_user_kind_key"


def _boat(n: int) -> list[tuple[str, str]]:
    said = [f"Day {day}: I sanded plank number {day} of the boat Marlin." for day in range(n)]
    return [turn for line in said for turn in (("user", line), ("assistant", "Nice."))]


async def test_the_parts_come_and_go_and_part_zero_stays(tmp_url: str) -> None:
    async with TrueMem(tmp_url) as memory:
        await memory.arecord_messages("ana", "boat", _boat(PART_MESSAGES + 3))
        await memory.adrain(60)
        assert [(s.key, s.part) for s in await memory.syntheses.alist("ana")] == [
            ("boat", 0), ("boat", 1)]
    assert PART in await indexes(tmp_url, "syntheses")
    await migrate(tmp_url, "downgrade", "0022")
    assert OLD in await indexes(tmp_url, "syntheses")
    assert PART not in await indexes(tmp_url, "syntheses")
    await migrate(tmp_url, "upgrade", "head")
    async with TrueMem(tmp_url) as memory:
        [kept] = await memory.syntheses.alist("ana")
        assert (kept.key, kept.part) == ("boat", 0) and "plank number 0" in kept.text
        # the next record of the session rebuilds its stretch
        await memory.arecord("ana", "boat", "I varnished plank 11 of Marlin.", "Shiny.")
        await memory.adrain(60)
        assert [s.part for s in await memory.syntheses.alist("ana")] == [0, 1]
