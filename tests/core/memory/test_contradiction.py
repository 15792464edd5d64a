"""Supersession: a new fact closes an old one only when it changes a single-valued attribute."""

from __future__ import annotations

import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from truemem_core.language.claims import Claim, parse_claims
from truemem_core.language.contradiction import clash, replaces
from truemem_core.memory.decision import decide

PROPERTY = settings(database=None, deadline=None)

SUPERSEDES = [
    # location
    ("Moved to Berlin", "Lives in Madrid"),
    ("Lives in Berlin", "Lives in Madrid"),
    ("Is now based in Lisbon", "Lives in Porto"),
    ("Relocated to New York City", "Lives in Boston"),
    ("Lives in Munich, Germany", "Lives in Berlin, Germany"),
    ("Yesterday moved to Oslo", "Lives in Bergen"),
    ("Vive en Berlín", "Vive en Madrid"),
    ("Se mudó a Valencia", "Vive en Sevilla"),
    ("Se ha trasladado a Bilbao", "Reside en Madrid"),
    # job and employer
    ("Works as a nurse at City Hospital", "Works as a teacher at Lincoln High"),
    ("Works as a nurse", "Works as a teacher"),
    ("Is a nurse", "Works as a teacher"),
    ("Works at Google", "Works at Microsoft"),
    ("Works for Acme Corp", "Is employed at Globex"),
    ("Trabaja como enfermera", "Trabaja como profesora"),
    ("Trabaja en Telefónica", "Trabaja en Indra"),
    ("Es médica", "Trabaja como profesora"),
    # names
    ("Name is Ana", "Name is Maria"),
    ("User's daughter is called Lucía", "User's daughter's name is Sofía"),
    ("Goes by Annie", "Prefers to be called Anna"),
    ("Su hija se llama Lucía", "Su hija se llama Sofía"),
    # versions of a named tool
    ("Uses PostgreSQL 16", "Uses PostgreSQL 14"),
    ("Moved to PostgreSQL 16", "Uses PostgreSQL 14"),
    ("Upgraded to Python 3.12", "Uses Python 3.11"),
    ("Uses Postgres 16", "Uses PostgreSQL 14"),
    ("The database server runs PostgreSQL 16", "The database server runs PostgreSQL 14"),
    ("El Servidor X fue migrado a PostgreSQL 16", "El Servidor X usa PostgreSQL 14"),
    ("Migramos a PostgreSQL 16", "Usamos PostgreSQL 14"),
    # what a thing uses or runs
    ("The web server runs nginx", "The web server runs Apache"),
    ("Project Atlas uses MySQL", "Project Atlas uses PostgreSQL"),
    ("El servidor web usa Caddy", "El servidor web usa nginx"),
    ("Now uses Emacs", "Uses Vim"),
    ("Switched to Firefox", "Uses Chrome"),
    # preferences and favourites
    ("Now prefers tea", "Prefers coffee"),
    ("Prefers tea over coffee", "Prefers coffee"),
    ("Prefers Rust", "Prefers Python"),
    ("Prefers light mode", "Prefers dark mode"),
    ("Ahora prefiere el té", "Prefiere el café"),
    ("Favourite colour is green", "Favorite color is blue"),
    ("Favourite food is sushi", "Favourite food is pizza"),
    ("Su color favorito es el verde", "Su color favorito es el azul"),
]

ADDITIVE = [
    # facts that add up
    ("Likes tea", "Likes coffee"),
    ("Has a cat", "Has a dog"),
    ("Speaks French", "Speaks Spanish"),
    ("Le gusta el té", "Le gusta el café"),
    ("Tiene un gato", "Tiene un perro"),
    ("Habla francés", "Habla español"),
    ("Uses Rust", "Uses Python"),
    ("Uses Docker", "Uses Git"),
    ("Visited Paris", "Lives in Madrid"),
    # a different subject
    ("User's sister lives in Paris", "Lives in Madrid"),
    ("Ana lives in Paris", "Lives in Madrid"),
    ("The database server runs PostgreSQL", "The web server runs nginx"),
    ("Su hija se llama Lucía", "Se llama Ana"),
    # a different attribute or category
    ("Works at Google", "Works as a nurse"),
    ("Prefers dark mode", "Prefers Python"),
    ("Prefers Python for scripting", "Prefers Go"),
    ("Prefers coffee in the morning", "Prefers tea"),
    ("Uses PostgreSQL 16", "Uses Python 3.12"),
    ("Favourite food is sushi", "Favourite colour is blue"),
    ("Is a student", "Works as a nurse"),
    ("Moved to Kubernetes", "Lives in Madrid"),
    ("Moved to PostgreSQL 16", "Lives in Madrid"),
    # refinements and restatements
    ("Lives in Berlin, Germany", "Lives in Germany"),
    ("Lives in Germany", "Lives in Berlin, Germany"),
    ("Prefers green tea", "Prefers tea"),
    ("Uses PostgreSQL", "Uses PostgreSQL 14"),
    ("Works as a senior software engineer", "Works as a software engineer"),
    ("Lives in Berlin", "Lives in Berlin"),
    ("Lives in berlin", "Lives in Berlin"),
    ("Vive en Berlin", "Vive en Berlín"),
    ("Uses PostgreSQL 14", "Uses PostgreSQL 14"),
    # not a place, negated, or in the past
    ("Moved to a new apartment", "Lives in Madrid"),
    ("Works for the government", "Works at Google"),
    ("No longer lives in Madrid", "Lives in Berlin"),
    ("Doesn't live in Madrid", "Lives in Berlin"),
    ("Ya no vive en Madrid", "Vive en Berlín"),
    ("Used to live in Madrid", "Lives in Berlin"),
    ("Moved to Berlin 2 years ago", "Lives in Berlin"),
    ("Is vegan", "Is a nurse"),
]


@pytest.mark.parametrize(("new", "old"), SUPERSEDES)
def test_supersedes(new: str, old: str) -> None:
    assert _superseded(new, [("old", old)]) == ["old"]


@pytest.mark.parametrize(("new", "old"), ADDITIVE)
def test_does_not_supersede(new: str, old: str) -> None:
    assert _superseded(new, [("old", old)]) == []


@pytest.mark.parametrize(("new", "old"), SUPERSEDES)
def test_restating_the_old_fact_supersedes_nothing(new: str, old: str) -> None:
    assert _superseded(old, [("old", old)]) == []


def test_only_the_clashing_memories_are_returned_in_order() -> None:
    stored = [
        (1, "Lives in Madrid"),
        (2, "Likes coffee"),
        (3, "Works as a teacher"),
        (4, "Lives in Madrid, Spain"),
        (5, "User's sister lives in Paris"),
    ]
    assert _superseded("Moved to Berlin", stored) == [1, 4]
    assert _superseded("Likes tea", stored) == []
    assert _superseded("anything", []) == []


def test_a_supersession_explains_itself() -> None:
    found = clash("Moved to Berlin", "Lives in Madrid")
    assert found is not None and found.id == "Lives in Madrid"
    assert (found.old.attribute, found.old.value, found.new.value) == (
        "location", "madrid", "berlin")
    assert found.explain() == "location of user: madrid -> berlin"


def test_version_supersession_names_the_tool() -> None:
    found = clash("Uses PostgreSQL 16", "Uses PostgreSQL 14")
    assert found is not None and found.explain() == "version:postgresql of user: 14 -> 16"


# -- the claims themselves --------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Lives in New York City", [("user", "location", "new york city")]),
        ("Lives in Frankfurt am Main since 2019", [("user", "location", "frankfurt am main")]),
        ("Lives in Madrid, Spain, with his wife", [("user", "location", "madrid spain")]),
        ("Works as a nurse at St. Mary's Hospital",
         [("user", "employer", "st mary's hospital"), ("user", "job", "nurse")]),
        ("Is a senior software engineer at Acme", [("user", "job", "senior software engineer")]),
        ("Name is Ana García", [("user", "name", "ana garcia")]),
        ("My name is Bob", [("user", "name", "bob")]),
        ("Su hija se llama Lucía", [("hija", "name", "lucia")]),
        ("The web server runs nginx 1.25 and Redis 7",
         [("web server", "version:nginx", "1.25"), ("web server", "uses:web server", "nginx"),
          ("web server", "version:redis", "7"), ("web server", "uses:cache", "redis")]),
        ("The app runs on Kubernetes", [("app", "uses:orchestrator", "kubernetes")]),
        ("Uses Python 3.12.", [("user", "version:python", "3.12"),
                               ("user", "uses:language", "python")]),
        ("Prefers coffee in the morning", [("user", "preference:drink|in the morning", "coffee")]),
        ("Su color favorito es el azul", [("user", "favorite:color", "azul")]),
        ("Likes tea", []),
        ("Has 2 kids", []),
        ("Uses 2 monitors", []),
        ("Runs marathons", []),
        ("Es alérgica a los cacahuetes", []),
        ("", []),
    ],
)
def test_parse_claims(text: str, expected: list[tuple[str, str, str]]) -> None:
    assert [(c.subject, c.attribute, c.value) for c in parse_claims(text)] == expected


def test_what_a_user_uses_is_exclusive_only_after_a_change() -> None:
    [_, uses] = parse_claims("Uses Python 3.12")
    assert not uses.exclusive
    assert all(c.exclusive for c in parse_claims("Now uses Python 3.12"))
    assert all(c.exclusive for c in parse_claims("The API uses Python"))


def test_a_claim_that_is_not_exclusive_replaces_nothing() -> None:
    old = Claim("user", "uses:language", "python")
    assert not replaces(Claim("user", "uses:language", "rust", exclusive=False), old)
    assert replaces(Claim("user", "uses:language", "rust"), old)
    assert str(old) == "uses:language of user = python"


@PROPERTY
@given(st.text(max_size=200))
def test_no_text_supersedes_itself(text: str) -> None:
    assert _superseded(text, [(0, text)]) == []


@PROPERTY
@given(st.text(max_size=200), st.lists(st.text(max_size=80), max_size=5))
def test_superseded_ids_come_from_the_stored_ones(new: str, texts: list[str]) -> None:
    stored = list(enumerate(texts))
    found = _superseded(new, stored)
    assert found == sorted(set(found))
    assert set(found) <= {i for i, _ in stored}


@pytest.mark.parametrize(
    "text",
    ["now " * 500, "ahora " * 400, "Lives in " + "Big " * 400, "Uses " + "Python 3, " * 200,
     "works as " * 200, "favourite " + "a " * 1000, "El " * 600 + "usa", "x" * 2000],
)
def test_long_repetitive_texts_parse_in_linear_time(text: str) -> None:
    started = time.perf_counter()
    _superseded(text, [(0, text)])
    assert time.perf_counter() - started < 1.0


def _superseded(new_text: str, stored: list[tuple[Any, str]]) -> list[Any]:
    """The ids the write path's decision supersedes, in ``stored`` order."""
    return [memory_id for memory_id, text in stored
            if decide(text, new_text, similar=False).action == "supersede"]
