"""Whose words a question asks about (``language.speaker``)."""

from __future__ import annotations

import pytest

from truemem_core.language import asks_about_the_user


@pytest.mark.parametrize(
    ("question", "about_the_user"),
    [
        ("Have I ever worked on partial derivatives?", True),
        ("What did I say about my boiler?", True),
        ("Can you list the order in which I brought up my projects?", True),  # polite "you"
        ("Do you remember my sister's name?", True),
        ("¿Cuándo empecé mi curso de alemán?", True),
        ("Qual era o meu objetivo de leitura?", True),
        ("What did you suggest for my boiler?", False),  # asks about the assistant's words
        ("What did Caroline research?", False),  # about someone else
        ("What is the capital of France?", False),
    ],
)
def test_a_first_person_question_asks_about_the_user(question: str, about_the_user: bool) -> None:
    assert asks_about_the_user(question) is about_the_user
