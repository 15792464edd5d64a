"""Bad input fails cleanly: a ``TrueMemError`` subclass, and nothing written.

Every test here uses only the public API (``from truemem_core import ...``) to
act; "nothing written" is checked through the public reads (``list_memories``,
``get_session``, ``export_user``) and, for what they cannot show (rows under an
id that was rejected), by counting the rows of every table on a connection of
the test's own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import db_access
import pytest

import truemem_core
from truemem_core import InvalidInputError, Settings, TrueMem, TrueMemError

# Every table a call could write to (the store's metadata and Alembic's are left out).
_TABLES = ("memories", "memory_events", "sessions", "messages", "admission_rejections", "jobs")

# Ids that look like other ids, or cannot be stored on every backend.
BAD_IDS = {"nul": "ana\x00", "bell": "ana\x07", "zero-width": "a\u200bna",
           "lone surrogate": "ana\ud800"}
# Texts that cannot be stored on every backend.
BAD_TEXTS = {"nul": "I live in Lis\x00bon", "lone surrogate": "I live in Lisbon \ud800"}

FACTS = ["Works as a pilot at SkyAir", "Plays the cello on weekends", "Has a cat named Miso",
         "Visited Kyoto last spring", "Grows tomatoes on the balcony",
         "Speaks fluent Portuguese", "Runs a marathon every autumn", "Collects vinyl records"]


def row_counts(database_url: str) -> dict[str, int]:
    """The number of rows of every table, read on a short-lived connection of our own."""
    return db_access.row_counts(database_url, _TABLES)


@pytest.fixture
def seeded(memory: TrueMem) -> Iterator[TrueMem]:
    """A store where ana already has a memory and a session: bad calls must add nothing."""
    memory.add_memory("ana", "Lives in Lisbon", importance=3)
    memory.record("ana", "s", "Hello there", "Hi!")
    memory.drain()
    yield memory


def unchanged(memory: TrueMem, before: dict[str, int]) -> None:
    """Nothing was written: ana's memories and session as seeded, no row anywhere else."""
    assert [m.text for m in memory.list_memories("ana", include_archived=True)] == [
        "Lives in Lisbon"]
    assert [m.content for m in memory.sessions.get("ana", "s").recent] == ["Hello there", "Hi!"]
    assert row_counts(memory.admin.database_url) == before


def all_refused(calls: Mapping[str, Callable[[], Any]], match: str, what: str) -> None:
    """Every call raises ``InvalidInputError`` matching ``match``; one that returns fails
    the test as "<its name> accepted <what>"."""
    for name, call in calls.items():
        with pytest.raises(InvalidInputError, match=match):
            call()
            pytest.fail(f"{name} accepted {what}")


# --------------------------------------------------------------- the database URL


def test_a_database_url_of_the_wrong_type_is_invalid_input() -> None:
    with pytest.raises(InvalidInputError, match="database_url"):
        TrueMem(12345)  # type: ignore[arg-type]


@pytest.mark.parametrize("url", ["", "::::not a url"])
def test_an_unusable_database_url_is_refused_and_creates_no_file(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # the default store is not a fallback
    monkeypatch.delenv("TRUEMEM_DATABASE_URL", raising=False)
    with pytest.raises(InvalidInputError, match=r"database_url|database URL"):
        TrueMem(url)  # refused here, before anything is opened
    assert list(tmp_path.iterdir()) == []


def test_a_bad_redis_url_is_refused_before_anything_is_written(memory: TrueMem) -> None:
    with pytest.raises(InvalidInputError, match="notaurl"):
        TrueMem(memory.admin.database_url, redis_url="notaurl")  # refused here, not on first use
    assert memory.sessions.get("ana", "s").recent == []
    assert row_counts(memory.admin.database_url) == dict.fromkeys(_TABLES, 0)


# --------------------------------------------------------------- lengths


def test_an_oversized_message_names_max_message_chars(seeded: TrueMem) -> None:
    before = row_counts(seeded.admin.database_url)
    too_long = "x" * (seeded.settings.max_message_chars + 1)
    calls: list[Callable[[], Any]] = [
        lambda: seeded.get_context("ana", "s", too_long),
        lambda: seeded.record("ana", "s", too_long, "Hi!"),
        lambda: seeded.record("ana", "s", "Hello", too_long),
    ]
    for call in calls:
        with pytest.raises(InvalidInputError, match=r"Settings\.max_message_chars"):
            call()
    unchanged(seeded, before)


def test_an_oversized_memory_text_names_max_text_chars(seeded: TrueMem) -> None:
    before = row_counts(seeded.admin.database_url)
    too_long = "x" * (seeded.settings.max_text_chars + 1)
    with pytest.raises(InvalidInputError, match=r"Settings\.max_text_chars"):
        seeded.add_memory("ana", too_long)
    unchanged(seeded, before)


# --------------------------------------------------------------- ids and texts


@pytest.mark.parametrize("bad", BAD_IDS.values(), ids=BAD_IDS.keys())
def test_ids_with_invisible_or_unstorable_characters_are_refused(
    seeded: TrueMem, bad: str
) -> None:
    before = row_counts(seeded.admin.database_url)
    calls: dict[str, Callable[[], Any]] = {
        "get_context user": lambda: seeded.get_context(bad, "s", "Remember that I like tea"),
        "get_context session": lambda: seeded.get_context("ana", bad, "Remember that I like tea"),
        "record user": lambda: seeded.record(bad, "s", "I work as a pilot", "Nice!"),
        "record session": lambda: seeded.record("ana", bad, "I work as a pilot", "Nice!"),
        "add_memory": lambda: seeded.add_memory(bad, "Likes tea"),
        "add_memories": lambda: seeded.add_memories(bad, ["Likes tea"]),
        "list_memories": lambda: seeded.list_memories(bad),
    }
    all_refused(calls, "printable", f"the id {bad!r}")
    unchanged(seeded, before)


@pytest.mark.parametrize("bad", ["ana ", " ana", "ana\u00a0", "\u3000ana"])
def test_user_ids_with_a_space_around_them_are_refused_on_every_entry(
    seeded: TrueMem, bad: str
) -> None:
    """``"ana "`` would be a second user that every list shows as ``ana``."""
    before = row_counts(seeded.admin.database_url)
    calls: dict[str, Callable[[], Any]] = {
        "get_context": lambda: seeded.get_context(bad, "s", "Remember that I like tea"),
        "record": lambda: seeded.record(bad, "s", "I work as a pilot", "Nice!"),
        "add_memory": lambda: seeded.add_memory(bad, "Likes tea"),
        "add_memories": lambda: seeded.add_memories(bad, ["Likes tea"]),
        "import_user": lambda: seeded.import_user(bad, seeded.export_user("ana")),
        "add_relations": lambda: seeded.graph.add_relations(
            bad, [{"source": "Ana", "type": "knows", "target": "Bob"}]),
        "put_item": lambda: seeded.items.put(bad, ("prefs",), "k", {"v": 1}),
        "erase_user": lambda: seeded.erase_user(bad),
    }
    all_refused(calls, "space at its start or end", f"the user id {bad!r}")
    unchanged(seeded, before)


def test_a_user_id_typed_in_two_unicode_forms_is_one_user(memory: TrueMem) -> None:
    composed, decomposed = "Jos\u00e9", "Jose\u0301"  # "José" both ways
    memory.add_memory(decomposed, "Likes fado")
    memory.record(decomposed, "s", "I live in Porto", "Nice!")
    memory.graph.add_relations(
        decomposed, [{"source": "José", "type": "lives_in", "target": "Porto"}])
    memory.drain()  # the fact extracted from the message is the same user's too
    stored = memory.list_memories(composed)
    assert {m.user_id for m in stored} == {composed}
    assert "Likes fado" in {m.text for m in stored}
    assert memory.sessions.get(composed, "s").recent[0].content == "I live in Porto"
    assert memory.export_user(decomposed)["user_id"] == composed
    assert memory.erase_user(composed) == len(stored)
    assert memory.list_memories(decomposed) == []
    assert memory.graph.list_entities(composed) == []


@pytest.mark.parametrize("bad", BAD_TEXTS.values(), ids=BAD_TEXTS.keys())
def test_texts_that_cannot_be_stored_are_refused_on_every_backend(
    seeded: TrueMem, bad: str
) -> None:
    before = row_counts(seeded.admin.database_url)
    calls: dict[str, Callable[[], Any]] = {
        "add_memory": lambda: seeded.add_memory("ana", bad),
        "add_memories": lambda: seeded.add_memories("ana", ["Likes tea", {"text": bad}]),
        "record user message": lambda: seeded.record("ana", "s", bad, "Nice!"),
        "record reply": lambda: seeded.record("ana", "s", "Where do I live?", bad),
        "get_context": lambda: seeded.get_context("ana", "s", f"Remember that {bad}"),
    }
    all_refused(calls, r"NUL|surrogate", repr(bad))
    seeded.drain()
    unchanged(seeded, before)


# --------------------------------------------------------------- arguments of other calls


def test_arguments_no_store_could_hold_are_invalid_input_not_a_crash(seeded: TrueMem) -> None:
    """Values no row could hold, an out-of-range time, the wrong kind of object: each
    is ``InvalidInputError`` (not ``TypeError``, ``OverflowError``, ``UnicodeEncodeError``
    or a ``StorageError`` blaming the database), and nothing is written."""
    before = row_counts(seeded.admin.database_url)
    [memory_id] = [m.id for m in seeded.list_memories("ana")]
    far = datetime.max.replace(tzinfo=timezone(timedelta(hours=-14)))  # past UTC's years
    early = datetime.min.replace(tzinfo=timezone(timedelta(hours=14)))
    nested: dict[str, Any] = {}
    deepest = nested
    for _ in range(5000):
        deepest["x"] = deepest = {}
    shallower: dict[str, Any] = {}  # deep enough to overflow a recursive walk, not json's
    deepest = shallower
    for _ in range(450):
        deepest["x"] = deepest = {"n": "a"}
    calls: dict[str, Callable[[], Any]] = {
        **{f"{name} surrogate id": (lambda call=call: call("ana", "id \ud800"))
           for name, call in (("get_memory", seeded.get_memory),
                              ("delete_memory", seeded.delete_memory),
                              ("history", seeded.history))},
        "update_memory surrogate id": lambda: seeded.update_memory(
            "ana", "\ud800", importance=2),
        "feedback surrogate id": lambda: seeded.feedback("ana", "\ud800", "helpful"),
        "feedback list verdict": lambda: seeded.feedback("ana", memory_id, []),  # type: ignore[arg-type]
        "search nested kind": lambda: seeded.search("ana", "tea", kind=[["semantic"]]),  # type: ignore[list-item]
        "search dict state": lambda: seeded.search("ana", "tea", state=[{}]),  # type: ignore[list-item]
        "search as_of past UTC": lambda: seeded.search("ana", "tea", as_of=far),
        "search created_after before UTC": lambda: seeded.search(
            "ana", "tea", created_after=early),
        "list_memories valid_at past UTC": lambda: seeded.list_memories("ana", valid_at=far),
        "record_messages said_at past UTC": lambda: seeded.record_messages(
            "ana", "s", [("user", "I like tea", far)]),
        "record_messages said_at in 9999": lambda: seeded.record_messages(
            "ana", "s", [("user", "I like tea", datetime(9999, 1, 1, tzinfo=UTC))]),
        "drain text timeout": lambda: seeded.drain("x"),  # type: ignore[arg-type]
        "drain NaN timeout": lambda: seeded.drain(float("nan")),
        "get_entity surrogate": lambda: seeded.graph.get_entity("ana", "Lisbon \ud800"),
        "add_entities surrogate observation": lambda: seeded.graph.add_entities(
            "ana", [{"name": "Lisbon", "type": "place", "observations": ["x \ud800"]}]),
        "put_item surrogate value": lambda: seeded.items.put(
            "ana", ("prefs",), "k", {"content": "bad \ud800"}),
        "put_item NUL value": lambda: seeded.items.put("ana", ("prefs",), "k", {"n": "a\x00"}),
        "put_item NUL key": lambda: seeded.items.put("ana", ("prefs",), "k", {"a\x00": 1}),
        "put_item nested too deep": lambda: seeded.items.put("ana", ("prefs",), "k", nested),
        "put_item nested 450 deep": lambda: seeded.items.put("ana", ("prefs",), "k", shallower),
        "put_item value of 2 MB": lambda: seeded.items.put(
            "ana", ("prefs",), "k", {"content": "Short answers", "blob": "x" * 2_000_000}),
        "add_memories progress not callable": lambda: seeded.add_memories(
            "ana", FACTS[:3], batch_size=1, progress=5),  # type: ignore[arg-type]
        "TrueMem settings dict": lambda: TrueMem(seeded.admin.database_url, settings={}),  # type: ignore[arg-type]
        "TrueMem embedder object": lambda: TrueMem(seeded.admin.database_url, embedder=object()),  # type: ignore[arg-type]
    }
    for name, call in calls.items():
        with pytest.raises(InvalidInputError):
            call()
            pytest.fail(f"{name} was accepted")
    unchanged(seeded, before)


def test_a_count_beyond_any_store_reads_everything(seeded: TrueMem) -> None:
    seeded.items.put("ana", ("prefs",), "tone", {"content": "Short answers"})
    seeded.graph.add_entities("ana", [{"name": "Lisbon", "type": "place"}])
    found = seeded.items.search(("prefs",), user_id="ana", limit=2**70)
    assert [item.key for item in found] == ["tone"]
    assert seeded.items.search(("prefs",), user_id="ana", offset=2**70) == []
    assert [e.name for e in seeded.graph.list_entities("ana", limit=2**70)] == ["Lisbon"]


@pytest.mark.parametrize(
    "blank", ["\u200b\u200b", "\ufeff", "\u202e", "\x01\x02", "\u200b\u2028\u200b"])
def test_a_text_with_nothing_visible_is_refused_as_empty(seeded: TrueMem, blank: str) -> None:
    before = row_counts(seeded.admin.database_url)
    calls: dict[str, Callable[[], Any]] = {
        "add_memory": lambda: seeded.add_memory("ana", blank),
        "record": lambda: seeded.record("ana", "s", blank, "Nice!"),
        "get_context": lambda: seeded.get_context("ana", "s", blank),
    }
    all_refused(calls, "no visible character", repr(blank))
    unchanged(seeded, before)


# --------------------------------------------------------------- a closed TrueMem


async def test_a_closed_truemem_raises_closed_error_and_never_reopens(store_url: str) -> None:
    closed_error = truemem_core.ClosedError
    memory = TrueMem(store_url)
    memory.add_memory("ana", "Lives in Lisbon")
    memory.close()
    with pytest.raises(closed_error):
        memory.add_memory("ana", "Plays the cello")
    with pytest.raises(closed_error):
        await memory.aadd_memory("ana", "Has a cat named Miso")
    with pytest.raises(closed_error):
        memory.list_memories("ana")
    assert issubclass(closed_error, TrueMemError)
    memory.close()  # closing again is fine, sync or async
    await memory.aclose()
    with TrueMem(store_url) as fresh:
        assert [m.text for m in fresh.list_memories("ana")] == ["Lives in Lisbon"]


def test_drain_timeout_error_is_public() -> None:
    from truemem_core import DrainTimeoutError

    assert "DrainTimeoutError" in truemem_core.__all__
    assert issubclass(DrainTimeoutError, TrueMemError)
    assert issubclass(DrainTimeoutError, TimeoutError)


# --------------------------------------------------------------- the soft limit


def _remember_explicitly(memory: TrueMem) -> str:
    context = memory.get_context("ana", "s", "Remember that I'm allergic to peanuts")
    assert len(context.explicit) == 1
    return context.explicit[0].id


def _add_explicit(memory: TrueMem) -> str:
    return memory.add_memory("ana", "Is allergic to peanuts", source="explicit").id


@pytest.mark.parametrize("explicit", [_remember_explicitly, _add_explicit],
                         ids=["remember that", "add_memory explicit"])
def test_an_explicit_memory_is_never_pruned_even_at_importance_1(
    store_url: str, explicit: Callable[[TrueMem], str]
) -> None:
    with TrueMem(store_url, settings=Settings(memory_limit=3)) as memory:
        kept = explicit(memory)
        assert memory.get_memory("ana", kept).source == "explicit"
        memory.update_memory("ana", kept, importance=1)  # the user lowers it: still explicit
        for text in FACTS[:4]:
            memory.add_memory("ana", text, importance=2)
        memory.drain()
        active = {m.id for m in memory.list_memories("ana")}
        archived = [m for m in memory.list_memories("ana", include_archived=True)
                    if m.state == "archived"]
        assert kept in active
        assert len(active) == 3 and len(archived) == 2  # pruning did run, on the others
        assert all(m.source == "manual" for m in archived)


def test_import_user_never_leaves_a_user_over_the_soft_limit(memory: TrueMem) -> None:
    for text in FACTS:
        memory.add_memory("ana", text, importance=2)
    exported = memory.export_user("ana")
    assert len(exported["memories"]) == 8
    with TrueMem(memory.admin.database_url, settings=Settings(memory_limit=5)) as small:
        small.import_user("ben", exported)
        everything = small.list_memories("ben", include_archived=True)
        active = small.list_memories("ben")
        archived = [m for m in everything if m.state == "archived"]
        assert len(everything) == 8
        assert len(active) == 5 and len(archived) == 3
        for pruned in archived:
            assert "pruned" in [e.action for e in small.history("ben", pruned.id)]

