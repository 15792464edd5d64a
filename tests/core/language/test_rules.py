"""Rule-based extraction: the facts it finds, their importance and kind, and what it skips."""

from __future__ import annotations

import pytest

from truemem_core.language import CandidateFact, Kind, extract_facts, extract_labelled


def only(message: str) -> CandidateFact:
    facts = extract_facts(message)
    assert len(facts) == 1, facts
    return facts[0]


@pytest.mark.parametrize(
    ("message", "text", "importance", "kind"),
    [
        # key personal data: 4
        ("My name is Ana.", "Name is Ana", 4, "semantic"),
        ("Hi, I'm Ana.", "Name is Ana", 4, "semantic"),
        ("You can call me Bea", "Prefers to be called Bea", 4, "semantic"),
        ("I'm a senior engineer at Acme.", "Works as a senior engineer at Acme", 4, "semantic"),
        (
            "I work as a nurse at the local hospital",
            "Works as a nurse at the local hospital",
            4,
            "semantic",
        ),
        ("I'm a student.", "Is a student", 4, "semantic"),
        ("I'm the CTO of a small startup", "Is the CTO of a small startup", 4, "semantic"),
        ("I run a small bakery", "Runs a small bakery", 4, "semantic"),
        ("I teach math at a high school", "Teaches math at a high school", 4, "semantic"),
        (
            "I've been leading the ML platform team",
            "Has been leading the ML platform team",
            4,
            "semantic",
        ),
        ("I live in Berlin.", "Lives in Berlin", 4, "semantic"),
        ("I moved to Lisbon in 2019", "Moved to Lisbon in 2019", 4, "semantic"),
        ("I'm originally from Kenya", "Is originally from Kenya", 4, "semantic"),
        ("I'm 34 years old", "Is 34 years old", 4, "semantic"),
        ("I'm allergic to peanuts", "Is allergic to peanuts", 4, "semantic"),
        ("I am severely allergic to shellfish", "Is severely allergic to shellfish", 4, "semantic"),
        ("I'm vegetarian", "Is vegetarian", 4, "semantic"),
        ("I'm vegan.", "Is vegan", 4, "semantic"),
        ("I have diabetes", "Has diabetes", 4, "semantic"),
        ("I have a peanut allergy", "Has a peanut allergy", 4, "semantic"),
        ("I'm lactose intolerant", "Is lactose intolerant", 4, "semantic"),
        ("I don't eat pork", "Does not eat pork", 4, "semantic"),
        # general context: 3
        ("I love hiking.", "Loves hiking", 3, "semantic"),
        ("I really enjoy cooking Thai food", "Enjoys cooking Thai food", 3, "semantic"),
        ("I prefer bullet points", "Prefers bullet points", 3, "semantic"),
        ("I hate emojis", "Hates emojis", 3, "semantic"),
        ("I can't stand jazz", "Cannot stand jazz", 3, "semantic"),
        ("I don't like horror movies", "Does not like horror movies", 3, "semantic"),
        ("My favorite color is blue", "Favorite color is blue", 3, "semantic"),
        ("I'm a huge fan of Nolan films", "Is a huge fan of Nolan films", 3, "semantic"),
        ("I play the guitar", "Plays the guitar", 3, "semantic"),
        ("I use Python at work", "Uses Python at work", 3, "semantic"),
        ("I have two kids", "Has two kids", 3, "semantic"),
        ("My wife is a doctor", "User's wife is a doctor", 3, "semantic"),
        ("My daughter is called Lucía", "User's daughter is called Lucía", 3, "semantic"),
        ("My wife and I love hiking", "User and their wife love hiking", 3, "semantic"),
        ("I'm married", "Is married", 3, "semantic"),
        ("I don't have any kids", "Does not have any kids", 3, "semantic"),
        ("I have a dog named Max", "Has a dog named Max", 3, "semantic"),
        ("I also have 3 cats", "Has 3 cats", 3, "semantic"),
        ("My cat is called Mochi", "User's cat is called Mochi", 3, "semantic"),
        ("I'm a night owl", "Is a night owl", 3, "semantic"),
        # temporary: 2
        ("I'm working on a memory service", "Is working on a memory service", 2, "semantic"),
        ("I'm building a compiler in Rust", "Is building a compiler in Rust", 2, "semantic"),
        ("I'm learning Japanese", "Is learning Japanese", 2, "semantic"),
        # events
        ("I just got back from Japan", "Just got back from Japan", 2, "episodic"),
        ("I got married last year", "Got married last year", 3, "episodic"),
        ("Yesterday I went to the dentist", "Went to the dentist yesterday", 1, "episodic"),
        ("I went to the gym last night", "Went to the gym last night", 1, "episodic"),
    ],
)
def test_english_facts(message: str, text: str, importance: int, kind: Kind) -> None:
    assert only(message) == CandidateFact(text, importance, kind)


@pytest.mark.parametrize(
    ("message", "text", "importance", "kind"),
    [
        ("Me llamo Ana.", "Se llama Ana", 4, "semantic"),
        ("Mi nombre es Pedro", "Se llama Pedro", 4, "semantic"),
        ("Soy ingeniera de software en Acme.", "Es ingeniera de software en Acme", 4, "semantic"),
        (
            "Trabajo como enfermero en un hospital",
            "Trabaja como enfermero en un hospital",
            4,
            "semantic",
        ),
        ("Vivo en Madrid.", "Vive en Madrid", 4, "semantic"),
        ("Me mudé a Berlín el año pasado", "Se mudó a Berlín el año pasado", 4, "semantic"),
        ("Soy de Sevilla", "Es de Sevilla", 4, "semantic"),
        ("Tengo 40 años", "Tiene 40 años", 4, "semantic"),
        ("Soy alérgico a los cacahuetes.", "Es alérgico a los cacahuetes", 4, "semantic"),
        ("Soy vegetariana", "Es vegetariana", 4, "semantic"),
        ("Tengo diabetes", "Tiene diabetes", 4, "semantic"),
        ("No como carne", "No come carne", 4, "semantic"),
        ("Me gusta mucho el café.", "Le gusta mucho el café", 3, "semantic"),
        (
            "Me encantan las películas de terror",
            "Le encantan las películas de terror",
            3,
            "semantic",
        ),
        ("No me gusta el fútbol", "No le gusta el fútbol", 3, "semantic"),
        ("Prefiero respuestas cortas", "Prefiere respuestas cortas", 3, "semantic"),
        ("Odio los emojis", "Odia los emojis", 3, "semantic"),
        ("Toco la guitarra", "Toca la guitarra", 3, "semantic"),
        ("Tengo dos hijos", "Tiene dos hijos", 3, "semantic"),
        ("Mi hija se llama Lucía.", "Su hija se llama Lucía", 3, "semantic"),
        ("Estoy casada", "Está casada", 3, "semantic"),
        ("Tengo un perro que se llama Toby", "Tiene un perro que se llama Toby", 3, "semantic"),
        (
            "Estoy trabajando en un servicio de memoria",
            "Está trabajando en un servicio de memoria",
            2,
            "semantic",
        ),
        ("Estoy aprendiendo alemán", "Está aprendiendo alemán", 2, "semantic"),
        ("Acabo de volver de Japón", "Acaba de volver de Japón", 2, "episodic"),
        ("Ayer fui al médico", "Fue al médico ayer", 1, "episodic"),
    ],
)
def test_spanish_facts(message: str, text: str, importance: int, kind: Kind) -> None:
    assert only(message) == CandidateFact(text, importance, kind)


@pytest.mark.parametrize(
    "message",
    [
        # questions
        "Should I learn Rust?",
        "Do you like hiking?",
        "What do you do for a living",
        "Is it true that I'm allergic to peanuts?",
        "¿Te gusta el café?",
        "¿Dónde vives?",
        # hypotheticals and wishes
        "If I were rich I'd buy a boat",
        "I would love to live in Japan",
        "Maybe I'm a teacher at heart",
        "I wish I had a dog",
        "Si fuera rico compraría un barco",
        "Ojalá tuviera un perro",
        # opinions, states and small talk
        "I think you are right",
        "I'm tired",
        "I'm pretty tired",
        "I'm not sure",
        "I'm a bit confused",
        "I'm Canadian",
        "I love that!",
        "I like your answer",
        "I love it when you do that",
        "Thanks, that helps",
        "Hello!",
        "I see",
        # the user's task, not the user
        "I need a function that parses JSON",
        "I run the tests and they fail",
        "I build the image with docker",
        "I have a question about Python",
        "I have a problem with my code",
        "I have a list of dicts",
        "My code is broken",
        "I get an error when I import numpy",
        # anaphora: not self-contained
        "I love watching them play",
        "I love the peanut butter ones",
        # echoes of the other speaker
        "I love dogs too!",
        "",
    ],
)
def test_no_fact(message: str) -> None:
    assert extract_facts(message) == []


def test_several_facts_in_one_message_keep_their_order() -> None:
    message = "Hi! My name is Ana and I'm a senior engineer at Acme. I live in Berlin with my cat."
    assert [f.text for f in extract_facts(message)] == [
        "Name is Ana",
        "Works as a senior engineer at Acme",
        "Lives in Berlin with their cat",
    ]


def test_fillers_and_asides_are_trimmed() -> None:
    assert only("Oh, I love hiking because it clears my head.").text == "Loves hiking"
    assert only("Well, I live in Lyon, which is lovely").text == "Lives in Lyon"


def test_spanish_clauses_are_split_on_a_first_person_verb() -> None:
    assert [f.text for f in extract_facts("Me llamo Ana y vivo en Madrid.")] == [
        "Se llama Ana",
        "Vive en Madrid",
    ]


def test_duplicates_within_a_message_are_dropped() -> None:
    assert len(extract_facts("I love hiking. I love hiking!")) == 1


def test_extraction_gives_at_most_importance_four() -> None:
    message = "My name is Ana. I'm allergic to nuts. I love tea. I'm building an app."
    assert {f.importance for f in extract_facts(message)} <= {1, 2, 3, 4}


def test_labelled_facts_name_their_category() -> None:
    assert [c for c, _ in extract_labelled("I have a dog. I live in Rome.")] == ["pets", "location"]


def test_a_name_in_apposition_introduces_name_and_job() -> None:
    facts = extract_facts("Hi! I'm Prathamesh, a senior software engineer at TrueFoundry.")
    assert [f.text for f in facts] == [
        "Name is Prathamesh", "Works as a senior software engineer at TrueFoundry"]
    assert extract_facts("I'm tired, a long day.") == []


@pytest.mark.parametrize(
    ("message", "text"),
    [
        ("I prefer editing in short bursts, you know, 30 minutes at a time, can you help me "
         "plan my week?", "Prefers editing in short bursts"),
        ("I live in Lyon; how do I get to Geneva by train?", "Lives in Lyon"),
        ("I prefer Word over Google Docs due to its formatting, any tips for margins?",
         "Prefers Word over Google Docs"),
    ],
)
def test_what_a_sentence_states_before_it_asks_is_a_fact(message: str, text: str) -> None:
    assert only(message).text == text


def test_a_question_that_states_nothing_first_is_no_fact() -> None:
    assert extract_facts("Is it true that I'm allergic to peanuts, can you check?") == []
    assert extract_facts("Should I move to Lyon, what do you think?") == []
