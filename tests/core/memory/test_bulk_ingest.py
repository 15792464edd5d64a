"""Bulk ingest on both backends: ``add_memories`` leaves exactly the rows, history and
rejections that adding the same facts one by one leaves (dedup within the batch and
against stored rows, supersession, admission, pruning), writes nothing on bad input,
and ``truemem memories import`` loads a file with a progress line."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from db_access import rows
from sqlalchemy import select

from truemem_core import InvalidInputError, Memory, Settings, TrueMem
from truemem_core.cli import main
from truemem_core.memory import write
from truemem_core.storage.schema import admission_rejections, memories, memory_events

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")

# Near-duplicates of each other and of earlier facts, a bridge that folds two stored
# variants into one, contradictions that close older facts, a restatement of a closed
# fact (it reopens), low-importance facts that pruning archives and one restated after
# it was pruned (it comes back), protected facts pruning never touches.
FACTS: list[str | dict[str, Any]] = [
    "Lives in Madrid",
    {"text": "Is allergic to peanuts and tree nuts", "importance": 5},
    "Is allergic to peanuts!",
    {"text": "Drinks coffee without sugar", "importance": 1},
    "Works as a nurse at the city hospital",
    "Lives in Berlin",
    "Is allergic to peanuts",
    {"text": "Plays the piano badly", "importance": 1, "kind": "episodic"},
    "Has a dog named Rex",
    "Has a dog named Max",
    "Works as a nurse at the city hospital.",
    {"text": "Enjoys climbing on weekends", "importance": 2},
    "Lives in Madrid",
    {"text": "Is learning Japanese", "importance": 2},
    "Supports Benfica",
    {"text": "Reads science fiction", "importance": 2},
    "Has two children",
    "Owns 5 cats",
    "Owns 10 cats",
    {"text": "Drinks coffee without sugar!", "importance": 1},
    "Prefers bullet points",
    {"text": "Is building a home weather station", "importance": 1},
    "Has a golden retriever named Max",
    "Works as a data engineer at Acme",
    "Lives in Lisbon, Portugal",
    "Is learning Japanese.",
    "Speaks Spanish fluently",
]
SETTINGS = Settings(memory_limit=10)

# Extracted facts for admission control: filler it rejects among facts it keeps.
EXTRACTED = ["Likes things", "Works as a pharmacist at IKEA", "Is fine", "Has stuff",
             "Works as a pharmacist at IKEA.", "Lives in Porto", "Lives in Osaka",
             "Is good", "Plays chess every Sunday", "Really likes stuff", "Plays chess on Sundays"]


def _one_by_one(memory: TrueMem, user: str, facts: Sequence[Any]) -> list[Memory]:
    added = []
    for fact in facts:
        if isinstance(fact, str):
            added.append(memory.add_memory(user, fact))
        else:
            options = {k: v for k, v in fact.items() if k != "text"}
            added.append(memory.add_memory(user, fact["text"], **options))
    return added


def _names(memory: TrueMem, user: str) -> dict[str, int]:
    """Memory ids -> their order of first appearance in the user's history."""
    found = rows(memory, select(memory_events.c.memory_id).where(
        memory_events.c.user_id == user).order_by(memory_events.c.id))
    return {memory_id: n for n, memory_id in enumerate(dict.fromkeys(r[0] for r in found))}


def _store(memory: TrueMem, user: str) -> dict[str, Any]:
    """Everything the write path leaves for ``user``, ids replaced by stable names."""
    names = _names(memory, user)
    events = rows(memory, select(memory_events).where(
        memory_events.c.user_id == user).order_by(memory_events.c.id))
    stored = rows(memory, select(memories).where(memories.c.user_id == user))
    rejected = rows(memory, select(admission_rejections).where(
        admission_rejections.c.user_id == user).order_by(admission_rejections.c.id))
    return {
        "memories": sorted(
            (names[r.id], r.text, r.importance, r.kind, r.source, r.state, r.reinforcements,
             r.valid_to is None, r.superseded_by and names[r.superseded_by],
             r.created_at <= r.updated_at) for r in stored),
        "events": [(names[e.memory_id], e.action, _UUID.sub(
            lambda m: f"#{names[m.group()]}", e.reason or ""), e.old_text, e.new_text,
            e.old_importance, e.new_importance) for e in events],
        "rejected": [(r.text, r.source, round(r.score, 3)) for r in rejected],
    }


def _returned(memory: TrueMem, user: str, added: Sequence[Memory | None]) -> list[Any]:
    names = _names(memory, user)
    return [None if m is None else (names[m.id], m.text, m.importance, m.kind, m.source,
                                    m.state, m.reinforcements, m.valid_to is None)
            for m in added]


@pytest.mark.parametrize("batch_size", [1, 4, 256])
def test_bulk_equals_one_by_one(store_url: str, batch_size: int) -> None:
    with TrueMem(store_url, settings=SETTINGS) as memory:
        single = _one_by_one(memory, "one", FACTS)
        bulk = memory.add_memories("bulk", FACTS, batch_size=batch_size)
        expected = _store(memory, "one")
        assert _store(memory, "bulk") == expected
        assert _returned(memory, "bulk", bulk) == _returned(memory, "one", single)
        # the data exercises every path
        actions = {event[1] for event in expected["events"]}
        assert actions == {"added", "merged", "superseded", "pruned"}
        assert any("folded into" in event[2] for event in expected["events"])
        assert any("current again" in event[2] for event in expected["events"])
        assert any(row[5] == "archived" for row in expected["memories"])


def test_bulk_continues_a_stored_history(store_url: str) -> None:
    """Near-duplicates and contradictions of facts stored before the bulk add."""
    with TrueMem(store_url, settings=SETTINGS) as memory:
        for user in ("one", "bulk"):
            _one_by_one(memory, user, FACTS[:12])
        single = _one_by_one(memory, "one", FACTS[12:])
        bulk = memory.add_memories("bulk", FACTS[12:], batch_size=5)
        assert _store(memory, "bulk") == _store(memory, "one")
        assert _returned(memory, "bulk", bulk) == _returned(memory, "one", single)


def test_near_duplicates_in_one_batch_end_as_one_row(store_url: str) -> None:
    variants = ["Is allergic to peanuts", "Is allergic to peanuts!",
                "Is allergic to peanuts.....", "Is allergic to peanuts and tree nuts"]
    with TrueMem(store_url) as memory:
        added = memory.add_memories("ana", variants)
        [stored] = memory.list_memories("ana", include_archived=True)
        assert stored.text == "Is allergic to peanuts and tree nuts"
        assert stored.reinforcements == 3
        assert {m.id for m in added} == {stored.id}
        assert [m.reinforcements for m in added] == [0, 1, 2, 3]


def test_admission_control_decides_as_one_by_one(store_url: str) -> None:
    async def one_by_one(memory: TrueMem) -> list[Memory | None]:
        store, added = memory._core.memories, []
        for text in EXTRACTED:
            new = await store.candidate("one", text, importance=None, kind=None,
                                        source="extracted")
            async with store.db.transaction() as conn:
                added.append(await write.add(conn, store.deps, new, admit=True))
        return added

    with TrueMem(store_url, settings=SETTINGS) as memory:
        single = memory._loop.run(one_by_one(memory))
        bulk = memory._loop.run(memory._core.memories.ingest(
            "bulk", EXTRACTED, source="extracted", admit=True, batch_size=4))
        expected = _store(memory, "one")
        assert _store(memory, "bulk") == expected
        assert _returned(memory, "bulk", bulk) == _returned(memory, "one", single)
        assert None in bulk and len(expected["rejected"]) >= 3


def test_a_write_between_batches_is_seen_by_the_next(store_url: str) -> None:
    """Batches keep the user's vectors; one another writer changed is read again."""
    with TrueMem(store_url) as memory, TrueMem(store_url) as other:
        def between(done: int, total: int) -> None:
            if done == 2:  # after the first batch, committed: another writer edits a fact
                [madrid] = [m for m in other.list_memories("ana") if m.text == "Lives in Madrid"]
                other.update_memory("ana", madrid.id, text="Owns a red bicycle")

        added = memory.add_memories(
            "ana", ["Lives in Madrid", "Supports Benfica", "Owns a red bicycle!"],
            batch_size=2, progress=between)
        assert added[2].id == added[0].id  # folded into the edited memory, by its new vector
        assert added[2].reinforcements == 1
        assert sorted(m.text for m in memory.list_memories("ana")) == [
            "Owns a red bicycle", "Supports Benfica"]  # says no more: the stored text stays


@pytest.mark.parametrize("bad", [
    "", 42, None, {"importance": 3}, {"text": "Speaks Dutch", "colour": "red"},
    {"text": "Speaks Dutch", "importance": 9}, {"text": "Speaks Dutch", "kind": "bogus"},
    "x" * 10_001,
])
def test_one_bad_item_writes_nothing(store_url: str, bad: Any) -> None:
    with TrueMem(store_url) as memory:
        items = ["Lives in Lisbon", "Has two children", bad, "Supports Benfica"]
        with pytest.raises(InvalidInputError, match=r"^item 2: "):
            memory.add_memories("ana", items, batch_size=1)
        assert memory.list_memories("ana", include_archived=True) == []
        assert rows(memory, select(memory_events).where(memory_events.c.user_id == "ana")) == []


@pytest.mark.parametrize(("texts", "options", "match"), [
    ("Lives in Lisbon", {}, "texts must be a list"),
    ({"text": "Lives in Lisbon"}, {}, "texts must be a list"),
    (["Lives in Lisbon"], {"batch_size": 0}, "batch_size"),
    (["Lives in Lisbon"], {"importance": 0}, "importance"),
    (["Lives in Lisbon"], {"source": "rumour"}, "source"),
])
def test_bad_arguments(memory: TrueMem, texts: Any, options: Any, match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        memory.add_memories("ana", texts, **options)
    assert memory.list_memories("ana") == []


def test_async_twin_and_progress(memory: TrueMem) -> None:
    calls: list[tuple[int, int]] = []

    async def run() -> list[Memory]:
        return await memory.aadd_memories(
            "ana", (f"Visited city number {n}" for n in range(7)), importance=2,
            kind="episodic", batch_size=3, progress=lambda done, total: calls.append(
                (done, total)))

    added = asyncio.run(run())
    assert [(m.text, m.importance, m.kind) for m in added] == [
        (f"Visited city number {n}", 2, "episodic") for n in range(7)]
    assert calls == [(3, 7), (6, 7), (7, 7)]
    assert memory.add_memories("ana", []) == []


# -- the command line (SQLite files, in-process) -------------------------------------------


def _error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert err.startswith("truemem: error: ") and err.count("\n") == 1, err
    return err


def test_cli_imports_json_lines_with_progress(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    facts = tmp_path / "facts.jsonl"
    facts.write_text("\n".join([
        json.dumps("Lives in Lisbon"),
        json.dumps({"text": "Is allergic to peanuts", "importance": 5}),
        "",
        json.dumps({"text": "Visited Kyoto last spring", "kind": "episodic"}),
        json.dumps("Lives in Lisbon!"),
    ]) + "\n", encoding="utf-8")
    database = tmp_path / "new" / "store.db"  # import creates the store, as add does
    assert main(["--database", str(database), "memories", "import", "--user", "ana",
                 str(facts), "--importance", "2"]) == 0
    done = capsys.readouterr()
    assert done.out == "imported 4 facts for user 'ana' into 3 memories\n"
    assert "4/4" in done.err  # the progress bar's last state
    with TrueMem(database) as memory:
        stored = {m.text: (m.importance, m.kind) for m in memory.list_memories("ana")}
    assert stored == {"Lives in Lisbon": (3, "semantic"),  # 2, raised by the restatement
                      "Is allergic to peanuts": (5, "semantic"),
                      "Visited Kyoto last spring": (2, "episodic")}


def test_cli_imports_a_json_array(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps(["Supports Benfica", {"text": "Has two children"}]))
    db = ["--database", str(tmp_path / "store.db")]
    assert main([*db, "memories", "import", "--user", "ana", str(facts)]) == 0
    assert "imported 2 facts" in capsys.readouterr().out
    assert main([*db, "memories", "list", "--user", "ana", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert sorted(m["text"] for m in listed) == ["Has two children", "Supports Benfica"]


@pytest.mark.parametrize(("content", "message"), [
    ('"Lives in Lisbon"\n{"text": "Has two kids"\n',
     "facts.txt line 2, column 24 is not JSON: Expecting ',' delimiter"),
    ('"Lives in Lisbon"\n\n\n{oops\n', "facts.txt line 4, column 2 is not JSON"),
    ('["Lives in Lisbon", ', "facts.txt is not a JSON array"),
    ('"Lives in Lisbon"\n\n{"text": "Has two kids", "importance": 7}\n',
     "facts.txt line 3: importance must be"),
    ('["Lives in Lisbon", {"txt": "Has two kids"}]', "facts.txt item 1: a mapping needs 'text'"),
    ('"Lives in Lisbon"\n42\n', "facts.txt line 2: text must be"),
    ('{"facts": ["Lives in Lisbon"]}', "facts.txt line 1: a mapping needs 'text'"),
    (b"\xff\xfe not utf-8", "is not UTF-8 text"),
])
def test_cli_import_errors_write_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | bytes, message: str
) -> None:
    facts = tmp_path / "facts.txt"
    if isinstance(content, bytes):
        facts.write_bytes(content)
    else:
        facts.write_text(content, encoding="utf-8")
    database = tmp_path / "store.db"
    assert main(["--database", str(database), "memories", "import", "--user", "ana",
                 str(facts)]) == 2
    assert message in _error(capsys)
    with TrueMem(database) as memory:
        assert memory.list_memories("ana", include_archived=True) == []


def test_cli_import_of_a_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--database", str(tmp_path / "store.db"), "memories", "import", "--user",
                 "ana", str(tmp_path / "nope.jsonl")]) == 2
    assert "cannot read" in _error(capsys)
