"""Episodic vs semantic classification, in English and Spanish."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from truemem_core.language.classify import classify_kind

EPISODIC_EN = [
    "Deployed v2 on Friday and it broke login",
    "Yesterday the SSL certificate expired",
    "The SSL certificate expired",
    "The server crashed during the backup",
    "The build failed after the upgrade",
    "The deploy script failed twice",
    "The login bug was fixed by rotating the keys",
    "We fixed the memory leak by pinning numpy",
    "The database went down for two hours",
    "The API timed out under load",
    "Rolled back the release because checkout broke",
    "The outage was caused by a bad DNS record",
    "There was an outage in the payment service",
    "Decided to migrate to Postgres because MySQL could not scale",
    "We decided to drop Python 3.9 support",
    "Chose React over Vue for the dashboard",
    "We went with Kafka for the event bus",
    "The decision was to keep the monolith",
    "Got promoted last month",
    "Met Ana at PyCon",
    "Visited Japan in 2019",
    "Had surgery in May",
    "Moved to Berlin",
    "Retired last year",
    "Went hiking three days ago",
    "Has a dentist appointment on Friday",
    "Started a new job on 3 March",
    "Released version 2.1 on 2024-03-15",
    "The account was hacked",
    "It broke the nightly export",
]
EPISODIC_ES = [
    "Decidimos migrar a Postgres porque MySQL no escalaba",
    "Ayer caducó el certificado SSL",
    "El certificado SSL caducó",
    "El servidor se cayó anoche",
    "Se cayó la base de datos durante la migración",
    "Hubo un incidente con el certificado SSL",
    "Tuvimos un error en producción",
    "Arreglamos el fallo del login reiniciando Redis",
    "El despliegue falló por un error de configuración",
    "Los servidores migraron a Kubernetes",
    "Se mudó a Berlín",
    "Optamos por Redis para la caché",
    "La decisión fue mantener el monolito",
    "Hemos revertido la versión 2.1",
    "Fue al médico la semana pasada",
    "Se casó hace dos años",
    "Empezó un trabajo nuevo el lunes",
    "Se ha roto el pipeline de CI",
]
SEMANTIC_EN = [
    "Prefers Python",
    "The web server runs nginx",
    "Uses PostgreSQL 14",
    "Lives in Berlin",
    "Works as a nurse",
    "Name is Ana",
    "Likes tea",
    "Speaks Spanish",
    "Is allergic to peanuts",
    "Prefers descriptive error messages",
    "Error handling uses Sentry",
    "Is interested in incident response",
    "Works on the deployment pipeline",
    "Has a fixed salary",
    "Failed login attempts lock the account",
    "Shared drives are backed up nightly",
    "Migraines are caused by stress",
    "Is broke",
    "Was born in 1990",
    "Birthday is on May 5",
    "Goes running every Monday",
    "Used to live in Madrid",
    "Worked at Google for five years",
    "Is retired",
    "Is married to Ana",
    "Has two cats",
    "Makes decisions quickly",
    "Knows how to fix bugs in C",
    "",
]
SEMANTIC_ES = [
    "Es alérgica a los cacahuetes",
    "Vive en Madrid",
    "Prefiere el vino tinto",
    "Usa PostgreSQL 14",
    "El servidor web usa nginx",
    "Trabaja como enfermera",
    "Le gusta el té",
    "Habla francés",
    "Va al gimnasio los lunes",
    "Vive en Madrid desde hace dos años",
    "Nació en Sevilla",
    "Su cumpleaños es el 5 de mayo",
    "Trabajó en Telefónica durante años",
    "Es vegetariana",
    "Tiene dos gatos",
    "Los errores se registran en Sentry",
]


@pytest.mark.parametrize("text", EPISODIC_EN + EPISODIC_ES)
def test_episodic(text: str) -> None:
    assert classify_kind(text) == "episodic"


@pytest.mark.parametrize("text", SEMANTIC_EN + SEMANTIC_ES)
def test_semantic(text: str) -> None:
    assert classify_kind(text) == "semantic"


@pytest.mark.parametrize("text", EPISODIC_EN + EPISODIC_ES + SEMANTIC_EN + SEMANTIC_ES)
def test_case_and_trailing_punctuation_do_not_matter(text: str) -> None:
    assert classify_kind(text.upper() + ".") == classify_kind(text)


def test_decomposed_accents_are_read_like_composed_ones() -> None:
    assert classify_kind("El certificado SSL caduco\u0301") == "episodic"


@settings(database=None, deadline=None)
@given(st.text(max_size=300))
def test_any_text_gets_a_kind(text: str) -> None:
    assert classify_kind(text) in ("semantic", "episodic")
