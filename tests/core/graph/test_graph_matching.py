"""Which entities a query mentions (pure): exact words, aliases, close spellings."""

from __future__ import annotations

from datetime import UTC, datetime

from truemem_core.graph.matching import mentioned, similarity, words
from truemem_core.graph.records import Entity

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _entity(name: str, *aliases: str, kind: str = "thing") -> Entity:
    return Entity(name, "ana", name, kind, aliases, NOW)


ENTITIES = [_entity("PostgreSQL 16", "pg16"), _entity("db-1"), _entity("Atlas", kind="project"),
            _entity("Ana Lima", "Ana"), _entity("Go"), _entity("Kubernetes")]


def test_exact_words_and_aliases_first() -> None:
    found = mentioned(ENTITIES, "Which servers does atlas use? db-1 runs pg16", limit=10)
    assert [e.name for e in found] == ["Atlas", "db-1", "PostgreSQL 16"]


def test_close_spellings_match_short_names_do_not() -> None:
    assert [e.name for e in mentioned(ENTITIES, "the kubernetis cluster", limit=5)] == [
        "Kubernetes"]
    assert mentioned(ENTITIES, "we go home", limit=5)[0].name == "Go"  # exact word only
    assert mentioned(ENTITIES, "goat", limit=5) == []
    assert mentioned(ENTITIES, "nothing related here", limit=5) == []


def test_limit_and_trigrams() -> None:
    assert len(mentioned(ENTITIES, "atlas db-1 kubernetes", limit=2)) == 2
    assert words("Ana's  DB-1!") == ["ana", "s", "db", "1"]
    assert similarity(["postgres"], ["postgres"]) == 1.0
    assert 0 < similarity(["postgres"], ["postgresql"]) < 1
