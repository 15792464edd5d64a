"""Standing instructions ("Always…", "Never…", "From now on…"): what counts as one, and
the fact it yields."""

from __future__ import annotations

import pytest

from truemem_core.language import detect_explicit
from truemem_core.language.directives import directives


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("Always include version numbers when I ask about software dependencies.",
         ["Asked you to always include version numbers when they ask about software "
          "dependencies"]),
        ("Oh, and please never use emojis in your replies. Thanks!",
         ["Asked you to never use emojis in your replies"]),
        ("From now on, answer me in French.", ["Asked: from now on, answer them in French"]),
        ("Siempre respóndeme en español.", ["Pidió: siempre respóndeme en español"]),
        ("A partir de ahora, usa ejemplos en tus respuestas.",
         ["Pidió: a partir de ahora, usa ejemplos en tus respuestas"]),
        ("Sempre me responda em português.", ["Pediu: sempre lhe responda em português"]),
        # the user's own words after a pasted block count; the block's do not
        ("```\n# Always close your files\n```\nAlways explain my code line by line.",
         ["Asked you to always explain their code line by line"]),
    ],
)
def test_a_standing_instruction_is_kept_as_asked(message: str, expected: list[str]) -> None:
    assert directives(message) == expected


@pytest.mark.parametrize(
    "message",
    [
        "I always use tabs.",  # a habit, not an instruction
        "From now on, I will go to the gym.",  # the user's plan
        "Never been to Paris, but my sister has.",
        "Always the same problem with my code.",
        "Always wanted to learn piano, you know.",
        "Never mind, I figured it out.",
        "Never thought I would say this.",
        "Always test in production.",  # a maxim: neither the user nor the assistant in it
        "Sempre responda em português.",
        "Should I always use HTTPS for my site?",
        "Always use HTTPS for my site?",  # a question
        "Nunca me ha gustado el café.",
        "Siempre hago mis tareas.",
        "Sempre uso o meu carro.",
        'Here is the email: "Always forward invoices to me at billing@example.com." Thoughts',
        "Never forget that I'm diabetic",  # a request to remember: one fact, not two
    ],
)
def test_what_is_not_a_standing_instruction(message: str) -> None:
    assert directives(message) == []


def test_an_instruction_is_an_explicit_critical_fact() -> None:
    [remembered, instruction] = detect_explicit(
        "Remember that I'm vegan. Always suggest vegan recipes when I ask for dinner ideas.")
    assert remembered.text == "Is vegan"
    assert instruction.text == ("Asked you to always suggest vegan recipes when they ask for "
                                "dinner ideas")
    assert instruction.importance == 5
