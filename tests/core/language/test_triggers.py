"""Explicit memory requests: what counts as one, and the fact it yields."""

from __future__ import annotations

import pytest

from truemem_core.language import CandidateFact, detect_explicit


def texts(message: str) -> list[str]:
    return [fact.text for fact in detect_explicit(message)]


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("remember that I prefer bullet points", ["Prefers bullet points"]),
        ("don't forget I'm allergic to peanuts", ["Is allergic to peanuts"]),
        ("remember my name is Ana", ["Name is Ana"]),
        ("keep in mind that my daughter is called Lucía", ["User's daughter is called Lucía"]),
        ("Great, and remember that I hate emojis.", ["Hates emojis"]),
        ("REMEMBER THAT I'M VEGAN!!!", ["Is vegan"]),
        ("Please remember: I use Python 3.12", ["Uses Python 3.12"]),
        ("please remember that I live in Berlin", ["Lives in Berlin"]),
        ("Do not forget that I work at Acme.", ["Works at Acme"]),
        ("dont forget i have two cats", ["Has two cats"]),
        ("Don’t forget I’m left-handed", ["Is left-handed"]),
        ("Never forget that I'm diabetic", ["Is diabetic"]),
        ("Keep in mind I'm a beginner", ["Is a beginner"]),
        ("bear in mind that I don't eat pork", ["Does not eat pork"]),
        ("Please note that I'm left-handed.", ["Is left-handed"]),
        ("note that my birthday is May 5", ["Birthday is May 5"]),
        ("Make a note that I work nights.", ["Works nights"]),
        ("take note: my wife is called Sara", ["User's wife is called Sara"]),
        ("For future reference, I'm on a keto diet.", ["Is on a keto diet"]),
        ("for future reference I never drink coffee", ["Never drinks coffee"]),
        ("Could you remember that I like tea?", ["Likes tea"]),
        ("remember that I hate emojis, ok?", ["Hates emojis"]),
        ("I want you to remember that my wife is called Sara", ["User's wife is called Sara"]),
        ("Yesterday I went hiking. Remember that I live in Oslo.", ["Lives in Oslo"]),
        ("remember to call me Bob", ["Asked to remember to call them Bob"]),
        ("remember that the meeting is on Friday", ["The meeting is on Friday"]),
        ("Remember that I've been vegan for ten years", ["Has been vegan for ten years"]),
        ("Remember that I no longer live in Lisbon.", ["No longer lives in Lisbon"]),
        ("memorize this: I speak Dutch", []),  # "memorize this" needs "that" or a colon
        ("memorize that I speak Dutch", ["Speaks Dutch"]),
        ("save this to memory: I am colour blind", ["Is colour blind"]),
    ],
)
def test_english_requests(message: str, expected: list[str]) -> None:
    assert texts(message) == expected


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("recuerda que prefiero respuestas cortas", ["Prefiere respuestas cortas"]),
        ("Recuerda que soy vegano.", ["Es vegano"]),
        ("Acuérdate de que mi hija se llama Lucía.", ["Su hija se llama Lucía"]),
        ("acuerdate que vivo en Sevilla", ["Vive en Sevilla"]),
        ("no olvides que soy alérgico a los cacahuetes", ["Es alérgico a los cacahuetes"]),
        ("No te olvides de que tengo dos gatos", ["Tiene dos gatos"]),
        ("Genial, y recuerda que odio los emojis.", ["Odia los emojis"]),
        ("ten en cuenta que me gusta el café solo", ["Le gusta el café solo"]),
        ("Tenga en cuenta que trabajo de noche", ["Trabaja de noche"]),
        ("toma nota de que me llamo Pedro", ["Se llama Pedro"]),
        ("apunta que mi cumpleaños es el 3 de mayo", ["Su cumpleaños es el 3 de mayo"]),
        ("anota que uso Linux", ["Usa Linux"]),
        ("¿Puedes recordar que soy celíaco?", ["Es celíaco"]),
        ("Recuerda: nunca uso emojis", ["Nunca usa emojis"]),
        ("por favor, recuerda que no como carne", ["No come carne"]),
    ],
)
def test_spanish_requests(message: str, expected: list[str]) -> None:
    assert texts(message) == expected


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("lembre-se de que eu prefiro respostas curtas", ["Prefere respostas curtas"]),
        ("Lembra que moro em Lisboa", ["Mora em Lisboa"]),
        ("não esqueça que sou alérgico a amendoim", ["É alérgico a amendoim"]),
        ("Não se esqueça de que tenho dois filhos", ["Tem dois filhos"]),
        ("tenha em mente que minha filha se chama Lúcia", ["Sua filha se chama Lúcia"]),
        ("anote que trabalho na Acme", ["Trabalha na Acme"]),
        ("lembre-se que me chamo João", ["Se chama João"]),
        ("Lembre que gosto de café", ["Gosta de café"]),
    ],
)
def test_portuguese_requests(message: str, expected: list[str]) -> None:
    assert texts(message) == expected


@pytest.mark.parametrize(
    "message",
    [
        "I remember when I was a kid",
        "do you remember the movie?",
        "Do you remember that I like tea?",
        "Did you remember to save the file?",
        "Remember the movie we saw?",
        "Remember that movie we watched.",
        "Remember that one time in Paris?",
        "I'll remember that",
        "I don't forget things easily",
        "I can never remember my password",
        "You never remember anything!",
        "He told me to keep in mind the budget.",
        "Note that this function returns None.",
        "I need to remember to buy milk",
        "remember that!",
        "don't forget it",
        "keep that in mind",
        "remember the milk",
        "I wrote a note that says hello",
        "The remembering is hard",
        "Recuerdo que cuando era niño jugaba al fútbol",
        "¿Recuerdas la película?",
        "¿Recuerda que le dije que era vegano?",
        "Mi madre recuerda que yo era travieso.",
        "El informe apunta que las ventas bajaron.",
        "No recuerdo su nombre",
        "Eu lembro que era feliz",
        "Você lembra do filme?",
        "Ela lembra que eu morava no Porto",
        "",
    ],
)
def test_not_a_request(message: str) -> None:
    assert detect_explicit(message) == []


def test_several_requests_in_one_message() -> None:
    message = "Please remember: I use Python 3.12. Also, don't forget that I live in Berlin."
    assert texts(message) == ["Uses Python 3.12", "Lives in Berlin"]


def test_two_triggers_in_one_sentence() -> None:
    message = "remember that I'm vegan and don't forget my son is called Leo"
    assert texts(message) == ["Is vegan", "User's son is called Leo"]


def test_one_request_with_several_facts() -> None:
    assert texts("remember that I'm vegan and I live in Madrid") == ["Is vegan", "Lives in Madrid"]
    assert texts("ten en cuenta que vivo en Madrid y trabajo en Acme") == [
        "Vive en Madrid",
        "Trabaja en Acme",
    ]


def test_duplicate_requests_give_one_fact() -> None:
    assert texts("Remember that I'm vegan. Again: remember that I'm vegan!") == ["Is vegan"]


def test_explicit_facts_are_critical_and_semantic() -> None:
    assert detect_explicit("remember that I prefer bullet points") == [
        CandidateFact("Prefers bullet points", 5, "semantic")
    ]


def test_a_long_message_is_read_at_its_start_and_its_end() -> None:
    pasted = "x " * 20_000
    found = detect_explicit(
        f"Remember that I am vegan. {pasted}. Remember that I live in Madrid.")
    assert [fact.text for fact in found] == ["Is vegan", "Lives in Madrid"]


def test_a_pasted_document_is_not_a_fact_to_remember() -> None:
    document = "y" * 3_000
    found = detect_explicit(f"Remember that {document}. Remember that I live in Madrid.")
    assert [fact.text for fact in found] == ["Lives in Madrid"]


def test_a_flood_of_triggers_yields_a_bounded_number_of_facts() -> None:
    message = " ".join(f"Remember that I own {n} cats." for n in range(500))
    assert len(detect_explicit(message)) == 20
