"""Which questions ask for a sequence or an overview (``language.timeline``): they get
turns spread over time in date order; every other question is served as before."""

from __future__ import annotations

import pytest

from truemem_core.language.timeline import asks_for_timeline, topic_of


@pytest.mark.parametrize("question", [
    "Can you list the order in which I brought up different aspects of my budget tracker?",
    "In what order did I try the three diets?",
    "List my trips in chronological order",
    "Give me a timeline of the kitchen renovation.",
    "How has my training plan changed since January?",
    "How did my opinion of the new manager evolve?",
    "Can you summarize how my writing has progressed?",
    "Give me a comprehensive summary of my project.",
    "What have we covered so far?",
    "What did I say about money across our conversations?",
    "Walk me through the order of the steps I took to fix the server.",
    "¿En qué orden mencioné los temas del viaje?",
    "¿Cómo ha cambiado mi plan de entrenamiento?",
    "Hazme un resumen de lo que hablamos hasta ahora.",
    "Em que ordem falei dos problemas do projeto?",
    "Como evoluiu a minha dieta ao longo das nossas conversas?",
    "Resuma o que conversamos até agora.",
])
def test_sequence_and_overview_questions_are_recognised(question: str) -> None:
    assert asks_for_timeline(question)


@pytest.mark.parametrize("question", [
    "What is my current weekly word count target?",
    "What did I order at the Thai place?",
    "I need a visa in order to travel, which one?",
    "How do I change my password?",
    "Can you walk me through how to set up a Python virtual environment?",
    "Can you update my resume with the new job?",
    "Where does my sister live?",
    "¿Dónde vive mi hermana?",
    "Qual é a minha cor favorita?",
])
def test_ordinary_questions_are_not(question: str) -> None:
    assert not asks_for_timeline(question)


def test_a_timeline_is_searched_by_what_it_is_about() -> None:
    assert topic_of("In what order did I fix the boiler and the roof?") == (
        "did I fix the boiler and the roof?")
    assert topic_of("¿Me haces un resumen de la mudanza hasta ahora?") == (
        "¿Me haces un de la mudanza ?")
    # "how has … changed" keeps its middle: that is the topic
    assert "my training plan" in topic_of("How has my training plan changed?")
    assert topic_of("Summary?") == "Summary?"  # nothing left: the question itself
