"""``truemem import --from mem0|langmem``: exports of mem0 and of a LangGraph store
(LangMem) into TrueMem, on both backends; fixtures in ``tests/data/import/`` follow the
documented formats (mem0's ``get_all()`` JSON and pgvector collection rows; LangGraph's
``Item.dict()`` and ``PostgresStore``'s ``store`` table)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from truemem_core import InvalidInputError, TrueMem
from truemem_core.cli import main
from truemem_core.cli.importers.formats import parse
from truemem_integrations.langgraph import TrueMemStore

DATA = Path(__file__).parents[2] / "data" / "import"


def records(source: str, name: str, **options: object) -> list:  # type: ignore[type-arg]
    path = DATA / name
    return parse(source, path.read_text(encoding="utf-8"), str(path), **options)  # type: ignore[arg-type]


# ------------------------------------------------------------------ the parsers (pure)


def test_mem0_get_all_export() -> None:
    found = records("mem0", "mem0_get_all.json")
    assert [(r.user_id, r.text) for r in found][:2] == [
        ("alex", "Is travelling to Paris in June"), ("alex", "Is vegetarian")]
    first = found[0]
    assert first.namespace == ("mem0", "alex")
    assert first.key == "f38b689d-6b24-45b7-bced-17fbb4d8bac7"
    assert first.created_at == datetime(2025, 2, 26, 6, 57, 0, 108347, tzinfo=UTC)
    assert found[1].value["metadata"] == {"category": "food"}
    assert found[2].updated_at is None
    # mem0 v1's get_all: the bare list, same records
    bare = json.loads((DATA / "mem0_get_all.json").read_text())["results"]
    assert parse("mem0", json.dumps(bare), "v1.json") == found


def test_mem0_pgvector_rows_as_csv_and_json_lines() -> None:
    found = records("mem0", "mem0_pgvector.csv")
    assert [(r.user_id, r.text) for r in found] == [
        ("kim", "Prefers window seats on flights"), ("kim", "Has two kids, Lea and Tom"),
        ("kim", "Is allergic to penicillin")]
    assert "vector" not in found[0].value and found[0].value["category"] == "travel"
    assert found[0].updated_at == datetime(2025, 5, 3, 16, 0, tzinfo=UTC)
    lines = "\n".join(json.dumps({"id": r.key, "vector": [0.1, 0.2], "payload": {
        "data": r.text, "user_id": r.user_id}}) for r in found)
    assert [r.text for r in parse("mem0", lines, "rows.jsonl")] == [r.text for r in found]


def test_langgraph_items_and_store_rows() -> None:
    items = records("langmem", "langmem_items.json")
    assert [(r.namespace, r.text) for r in items] == [
        (("memories", "ana"), "Ana prefers dark mode in every editor"),
        (("memories", "ana"), "Ana is training for the Lisbon marathon"),
        (("memories", "ana"), "Ana's dog is called Rex"),
        (("memories", "ben"), "Ben runs the team's PostgreSQL upgrades")]
    assert items[1].updated_at == datetime(2025, 6, 10, 7, 30, tzinfo=UTC)
    rows = records("langmem", "langmem_store.csv")
    assert [(r.user_id, r.namespace, r.text) for r in rows] == [
        ("cy", ("memories", "cy"), "Cy is learning Japanese"),
        ("cy", ("memories", "cy"), "Cy lives in Osaka")]
    assert rows[0].created_at == datetime(2025, 7, 1, 9, 0, 0, 123456, tzinfo=UTC)
    moved = records("langmem", "langmem_store.csv", user="dee")
    assert {(r.user_id, r.namespace) for r in moved} == {("dee", ("memories", "dee"))}


def test_bad_exports_name_the_record() -> None:
    with pytest.raises(InvalidInputError, match="record 1 has no user_id: pass --user"):
        parse("mem0", json.dumps([{"id": "1", "memory": "x"}]), "f.json")
    with pytest.raises(InvalidInputError, match="record 2 has no text"):
        parse("mem0", json.dumps([{"id": "1", "memory": "x", "user_id": "a"},
                                  {"id": "2", "memory": " ", "user_id": "a"}]), "f.json")
    with pytest.raises(InvalidInputError, match="record 1 created_at is not a time"):
        parse("mem0", json.dumps([{"id": "1", "memory": "x", "user_id": "a",
                                   "created_at": "yesterday"}]), "f.json")
    with pytest.raises(InvalidInputError, match="record 1 created_at is in the future: 9999"):
        parse("mem0", json.dumps([{"id": "1", "memory": "x", "user_id": "a",
                                   "created_at": "9999-12-31T00:00:00Z"}]), "f.json")
    with pytest.raises(InvalidInputError, match=(
            r"^record 2: created_at 2025-03-02T00:00:00\+00:00 is after updated_at "
            r"2025-03-01T00:00:00\+00:00$")):
        parse("langmem", "\n".join(json.dumps({
            "namespace": ["memories", "a"], "key": f"k{n}", "value": {"content": "x"},
            "created_at": f"2025-03-0{n + 1}", "updated_at": "2025-03-01"}) for n in (0, 1)),
            "f.jsonl")
    with pytest.raises(InvalidInputError, match="no user label at position 1"):
        parse("langmem", json.dumps([{"namespace": ["memories"], "key": "k",
                                      "value": {"content": "x"}}]), "f.json")
    with pytest.raises(InvalidInputError, match=r"f\.json is not a JSON array"):
        parse("langmem", "[{not json", "f.json")
    with pytest.raises(InvalidInputError, match=r"f\.jsonl line 3, column 2 is not JSON"):
        parse("mem0", '{"id": "1", "memory": "x", "user_id": "a"}\n\n{oops\n', "f.jsonl")


# ------------------------------------------------------------ the command, both backends


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(list(argv)) == 0, capsys.readouterr().err
    return capsys.readouterr().out


def test_mem0_import_twice_keeps_text_user_and_times_without_duplicates(
        store_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    db = ["--database", store_url]
    file = str(DATA / "mem0_get_all.json")
    dry = run(capsys, *db, "import", "--from", "mem0", file, "--dry-run")
    assert "5 would be imported" in dry and "alex (4), sam (1)" in dry
    with TrueMem(store_url) as memory:
        assert memory.list_memories("alex") == []  # the dry run wrote nothing
    out = run(capsys, *db, "import", "--from", "mem0", file)
    assert "4 new memories, 1 merged" in out
    again = run(capsys, *db, "import", "--from", "mem0", file)
    assert "0 new memories, 0 merged" in again and "5 already imported" in again
    with TrueMem(store_url) as memory:
        alex = {m.text: m for m in memory.list_memories("alex")}
        # the two variants of the job folded into one (dedup), the rest kept as they were
        assert set(alex) == {"Is travelling to Paris in June", "Is vegetarian",
                             "Works as a data engineer at Acme Corp"}
        assert alex["Is vegetarian"].created_at == datetime(2025, 3, 1, 17, tzinfo=UTC)
        assert alex["Is vegetarian"].updated_at == datetime(2025, 4, 2, 15, 30, tzinfo=UTC)
        assert alex["Works as a data engineer at Acme Corp"].created_at == datetime(
            2025, 3, 5, 19, tzinfo=UTC)
        assert [m.text for m in memory.list_memories("sam")] == [
            "Plays the cello in a community orchestra"]
        # each mem0 memory is kept at ("mem0", user) under its mem0 id
        kept = memory.items.get("alex", ("mem0", "alex"), "0b8d1c7e-2f0e-4a51-9b53-1c1b3b8d9a10")
        assert kept is not None and kept.memory_id == alex["Is vegetarian"].id
        assert kept.value["metadata"] == {"category": "food"}


def test_mem0_pgvector_rows_with_one_user_for_all(
        store_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    db = ["--database", store_url]
    file = str(DATA / "mem0_pgvector.csv")
    assert main([*db, "import", "--from", "mem0", file, "--user", "lee"]) == 0
    printed = capsys.readouterr()
    assert "3 new memories" in printed.out
    assert "importing" in printed.err and "3/3" in printed.err  # the bar, on stderr
    out = run(capsys, *db, "import", "--from", "mem0", file, "--user", "lee")
    assert "3 already imported" in out
    with TrueMem(store_url) as memory:
        assert sorted(m.text for m in memory.list_memories("lee")) == [
            "Has two kids, Lea and Tom", "Is allergic to penicillin",
            "Prefers window seats on flights"]
        assert memory.list_memories("kim") == []
        [hit] = memory.search("lee", "medicine allergy", k=1)
        assert hit.memory.text == "Is allergic to penicillin"  # re-embedded here


def test_langmem_import_serves_the_same_items_through_the_store(
        store_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    db = ["--database", store_url]
    for file in ["langmem_items.json", "langmem_store.csv"]:
        run(capsys, *db, "import", "--from", "langmem", str(DATA / file))
    again = run(capsys, *db, "import", "--from", "langmem", str(DATA / "langmem_items.json"))
    assert "4 already imported" in again
    with TrueMem(store_url) as memory:
        store = TrueMemStore(memory)
        item = store.get(("memories", "ana"), "6a5b4c3d-2e1f-4a0b-9c8d-7e6f5a4b3c2d")
        assert item is not None and item.value == {
            "kind": "Memory", "content": {"content": "Ana is training for the Lisbon marathon"}}
        assert item.created_at == datetime(2025, 6, 3, 7, 30, tzinfo=UTC)
        hits = store.search(("memories", "ana"), query="running a race", limit=1)
        assert hits[0].key == "6a5b4c3d-2e1f-4a0b-9c8d-7e6f5a4b3c2d"
        assert {i.key for i in store.search(("memories", "cy"))} == {
            "d4e5f6a7-b8c9-4d0e-1f2a-3b4c5d6e7f80", "e5f6a7b8-c9d0-4e1f-2a3b-4c5d6e7f8091"}
        assert len(memory.list_memories("ana")) == 3


def test_a_bad_file_is_one_clear_line_and_writes_nothing(
        store_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"results": [
        {"id": "1", "memory": "Likes tea", "user_id": "a"}, {"id": "2", "memory": "x"}]}))
    assert main(["--database", store_url, "import", "--from", "mem0", str(bad)]) == 2
    assert "record 2 has no user_id: pass --user" in capsys.readouterr().err
    with TrueMem(store_url) as memory:
        assert memory.list_memories("a") == []


def test_admission_control_rejects_noise_and_a_second_run_skips_it_too(
        store_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    file = tmp_path / "mem0.json"
    file.write_text(json.dumps([
        {"id": "1", "memory": "ok", "user_id": "uma"},
        {"id": "2", "memory": "Lives in Lisbon", "user_id": "uma"},
        {"id": "3", "memory": "the thing", "user_id": "uma"}]))
    out = run(capsys, "--database", store_url, "import", "--from", "mem0", str(file))
    assert "1 new memories, 0 merged into existing ones, 2 rejected by admission control" in out
    again = run(capsys, "--database", store_url, "import", "--from", "mem0", str(file))
    assert "3 already imported" in again
    with TrueMem(store_url) as memory:
        assert [m.text for m in memory.list_memories("uma")] == ["Lives in Lisbon"]
        noise = memory.items.get("uma", ("mem0", "uma"), "1")
        assert noise is not None and noise.memory_id is None  # kept, indexed by nothing


def test_a_byte_order_mark_is_not_part_of_the_file(
        store_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    exported = tmp_path / "mem0.json"  # as Windows editors and PowerShell write UTF-8
    exported.write_text("\ufeff" + json.dumps([
        {"id": "1", "memory": "Lives in Lisbon", "user_id": "uma"}]), encoding="utf-8")
    out = run(capsys, "--database", store_url, "import", "--from", "mem0", str(exported))
    assert out.startswith("1 records read: 1 new memories")
    facts = tmp_path / "facts.jsonl"
    facts.write_text('\ufeff"Plays the cello"\n"Has a cat named Miso"\n', encoding="utf-8")
    out = run(capsys, "--database", store_url, "memories", "import", "--user", "uma",
              str(facts))
    assert out.startswith("imported 2 facts")
    with TrueMem(store_url) as memory:
        assert sorted(m.text for m in memory.list_memories("uma")) == [
            "Has a cat named Miso", "Lives in Lisbon", "Plays the cello"]


def test_a_file_nested_too_deeply_is_one_clear_line(
        store_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    deep_lines = tmp_path / "deep.jsonl"
    deep_lines.write_text('{"id": "1", "memory": "x", "user_id": "a", "metadata": '
                          + "[" * 100_000 + "]" * 100_000 + "}\n")
    langmem = tmp_path / "langmem.json"  # deep enough for a recursive walk, not for json
    langmem.write_text(json.dumps([{"namespace": ["memories", "a"], "key": "k", "value": {
        "content": "Likes tea", "x": json.loads("[" * 450 + "]" * 450)}}]))
    db = ["--database", store_url]
    for argv, why in [
        (["import", "--from", "mem0", str(deep)], "is not a JSON array (nested too deeply"),
        (["import", "--from", "mem0", str(deep_lines)], "line 1 is not JSON: nested too deeply"),
        (["import", "--from", "langmem", str(langmem)],
         "record 1 value is nested more than 100 levels deep"),
        (["memories", "import", "--user", "a", str(deep)], "is not a JSON array (nested"),
        (["user", "import", "--user", "a", str(deep)], "is not JSON (nested too deeply"),
    ]:
        assert main([*db, *argv]) == 2
        err = capsys.readouterr().err
        assert why in err and err.count("\n") == 1, err
    with TrueMem(store_url) as memory:
        assert memory.list_memories("a") == []
