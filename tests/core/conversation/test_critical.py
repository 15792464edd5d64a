"""Critical memories (importance 5: allergies, standing instructions) reach every context,
whatever the question; the cap holds; closed or archived ones stay out."""

from __future__ import annotations

from truemem_core import Settings, TrueMem

FACTS = [
    "Works as a data engineer at Acme", "Lives in Lisbon", "Has a golden retriever named Max",
    "Plays the guitar on weekends", "Is learning Japanese", "Prefers Python over Java",
    "Runs a half marathon every spring", "Has two sisters", "Drinks green tea",
    "Is planning a trip to Kyoto", "Uses PostgreSQL at work", "Reads science fiction",
    "Likes hiking in the mountains", "Follows Formula 1",
]


def test_the_allergy_reaches_a_food_question_that_does_not_name_it(memory: TrueMem) -> None:
    for fact in FACTS:
        memory.add_memory("ana", fact, importance=3)
    allergy = memory.add_memory("ana", "Allergic to peanuts and tree nuts", importance=5)
    context = memory.get_context("ana", "s1", "What food can't I eat?")
    assert allergy.id in {m.id for m in context.critical}
    assert "Allergic to peanuts and tree nuts" in context.to_system_prompt()
    assert [m.id for m in context.facts].count(allergy.id) == 1  # once, even if also retrieved
    assert context.to_dict()["critical"][0]["id"] == allergy.id


def test_critical_memories_are_capped_newest_first(store_url: str) -> None:
    with TrueMem(store_url, settings=Settings(critical_limit=3)) as memory:
        added = [memory.add_memory("ana", f"Never schedule meetings on day {n} of the month",
                                   importance=5) for n in range(1, 6)]
        memory.add_memory("bob", "Is allergic to shellfish", importance=5)
        context = memory.get_context("ana", "s1", "Hello!")
        assert [m.id for m in context.critical] == [m.id for m in added[::-1][:3]]


def test_superseded_or_lowered_memories_are_not_critical(memory: TrueMem) -> None:
    madrid = memory.add_memory("ana", "Lives in Madrid", importance=5)
    memory.add_memory("ana", "Lives in Berlin", importance=5)  # closes Madrid
    vegan = memory.add_memory("ana", "Is vegan", importance=5)
    memory.update_memory("ana", vegan.id, importance=2)
    critical = memory.get_context("ana", "s1", "Hi").critical
    assert [m.text for m in critical] == ["Lives in Berlin"]
    assert madrid.id not in {m.id for m in critical}
