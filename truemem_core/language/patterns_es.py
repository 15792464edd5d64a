"""Spanish extraction rules, most specific first (the first rule that fits wins).

Spanish drops the subject, so a clause is recognised by its first-person
verb ("vivo en…", "tengo dos hijos") or its pronoun ("me gusta…", "mi hija…").
"""

from __future__ import annotations

import re

from truemem_core.language import lexicon as lx
from truemem_core.language.rule import Rule, group
from truemem_core.language.text import capitalise, fold, strip_edges


def _render_name(clause: str, match: re.Match[str]) -> str | None:
    words = clause[match.start("name") : match.end("name")].split()
    kept = [w for i, w in enumerate(words) if i == 0 or w[:1].isupper()]
    if not kept or fold(kept[0]) in lx.NOT_NAMES:
        return None
    return "Se llama " + " ".join(capitalise(strip_edges(w)) for w in kept[:3])


_YO = r"(?:yo\s+)?"
_AM = _YO + r"(?:soy|estoy)(?:\s+(?:muy|bastante|super|totalmente))?"
_LIKE = (
    r"(?:a\s+mi\s+)?(?:no\s+)?me\s+(?:gusta|gustan|encanta|encantan|interesa|interesan|"
    r"apasiona|apasionan|fascina|fascinan|chifla|chiflan|flipa|flipan|molesta|molestan|"
    r"aburre|aburren)(?:\s+(?:mucho|muchisimo|bastante))?\s+"
)
VAGUE = (
    r"(?!(?:eso|esto|esa|ese|este|esta|lo\s+que|tu|tus|cuando|como|hablar\s+contigo|la\s+idea|"
    r"todo|nada|mucho|algo)\b)"
)
_NAME = r"(?P<name>[\w'-]+(?:\s+[\w'-]+){0,2})\s*$"

RULES: list[Rule] = [
    *group(
        "name",
        4,
        "es",
        [_YO + r"me\s+llamo\s+" + _NAME, r"mi\s+nombre\s+es\s+" + _NAME],
        render=_render_name,
    ),
    *group("age", 4, "es", [_YO + r"tengo\s+\d{1,2}\s+anos\b"]),
    *group(
        "health",
        4,
        "es",
        [
            _AM + r"\s+(?:un\s+|una\s+)?(?:poco\s+)?" + lx.DIET_ES + r"\b",
            _YO + r"(?:tengo|padezco|sufro)\s+(?:de\s+)?(?:una\s+|un\s+)?" + lx.HEALTH_ES + r"\b",
            _YO + r"no\s+(?:puedo\s+)?(?:como|comer|bebo|beber|tomo|tomar)\s+\w+",
            r"estoy\s+embarazada\b|sigo\s+una\s+dieta\b",
        ],
    ),
    *group(
        "job",
        4,
        "es",
        [
            _YO + r"trabajo\s+(?:como|en|para|de|desde\s+casa|con|por\s+mi\s+cuenta)\b",
            _AM + r"\s+(?:un\s+|una\s+)?(?:[\w-]+\s+){0,2}?" + lx.JOBS_ES + r"\b",
            r"(?:estoy\s+)?(?:jubilad[oa]|en\s+paro|desemplead[oa])\b|me\s+dedico\s+a\b",
            r"doy\s+clases\s+de\b|mi\s+(?:trabajo|profesion|empleo|oficio)\s+es\b",
            r"(?:dirijo|tengo|llevo|gestiono)\s+(?:una?|mi\s+propi[oa])\s+(?:\w+\s+){0,2}?"
            r"(?:empresa|negocio|tienda|restaurante|panaderia|startup|equipo|bar|cafeteria|"
            r"clinica|consulta|granja)\b",
        ],
    ),
    *group("education", 3, "es", [_YO + r"(?:estudio|estoy\s+estudiando)\s+\w+"]),
    *group("location", 3, "es", [_YO + r"vivo\s+con\b", r"creci\s+en\b"]),
    *group(
        "location",
        4,
        "es",
        [
            _YO + r"(?:vivo|resido)\s+(?:en|cerca|a\s+las\s+afueras|al\s+lado|sol[oa])\b",
            r"estoy\s+viviendo\s+en\b",
            r"(?:me\s+mude|me\s+he\s+mudado|me\s+voy\s+a\s+mudar|me\s+mudo)\s+a\b",
            _YO + r"soy\s+de\s+(?!(?:los|las)\s+que\b)\w+|naci\s+en\b",
        ],
    ),
    *group(
        "family",
        3,
        "es",
        [
            _YO + r"tengo\s+" + lx.NUMBER_ES + r"\s+(?:\w+\s+)?" + lx.FAMILY_ES + r"\b",
            _YO + r"no\s+tengo\s+" + lx.FAMILY_ES + r"\b",
            r"mis?\s+" + lx.FAMILY_ES + r"\s+(?:\w+\s+)?(?:es|son|era|se\s+llama|trabaja|vive|"
            r"tiene|estudia|esta|le\s+gusta|juega)\b",
            r"(?:estoy|soy)\s+(?:casad[oa]|solter[oa]|divorciad[oa]|viud[oa]|comprometid[oa]|"
            r"separad[oa])\b",
            r"soy\s+(?:madre|padre|mama|papa|abuel[oa]|hij[oa]\s+unic[oa])\b",
        ],
    ),
    *group(
        "pets",
        3,
        "es",
        [
            _YO + r"tengo\s+" + lx.NUMBER_ES + r"\s+(?:\w+\s+)?" + lx.PETS_ES + r"\b",
            r"mis?\s+" + lx.PETS_ES + r"\s+(?:\w+\s+)?(?:es|son|se\s+llama|tiene)\b",
        ],
    ),
    *group(
        "preference",
        3,
        "es",
        [
            _LIKE + VAGUE,
            _YO + r"(?:prefiero|adoro|amo|odio|detesto|disfruto|aborrezco|no\s+soporto|"
            r"no\s+aguanto)\s+" + VAGUE,
            r"soy\s+(?:un\s+|una\s+)?(?:gran\s+|muy\s+)?(?:fan|aficionad[oa]|amante|"
            r"apasionad[oa]|fanatic[oa])\s+(?:de|del|a|al)\b",
            r"mis?\s+(?:\w+\s+){1,2}(?:favorit[oa]s?|preferid[oa]s?)\s+(?:es|son)\b",
            r"mi\s+(?:pasatiempo|hobby|aficion|pasion)\s+(?:favorito\s+)?es\b",
        ],
    ),
    *group(
        "hobby",
        3,
        "es",
        [
            _YO + r"(?:juego|toco|colecciono|pinto|bailo|canto|nado|corro|escalo|cocino|horneo|"
            r"leo|escribo|viajo|practico|entreno|hablo)\s+\w+",
            _YO + r"hago\s+(?:yoga|deporte|ejercicio|senderismo|surf|escalada|pilates|crossfit|"
            r"punto|ganchillo)\b",
            _YO + r"voy\s+(?:al\s+gimnasio|a\s+correr|a\s+nadar|de\s+pesca|a\s+la\s+iglesia)\b",
        ],
    ),
    *group(
        "project",
        2,
        "es",
        [
            _YO + r"estoy\s+(?:trabajando\s+en|construyendo|desarrollando|escribiendo|creando|"
            r"disenando|programando|preparando|planeando|planificando|organizando|aprendiendo|"
            r"estudiando\s+para|entrenando\s+para|ahorrando\s+para|montando|renovando)\s+" + VAGUE,
            r"mi\s+proyecto\s+(?:actual\s+)?es\b",
        ],
    ),
    *group(
        "event",
        3,
        "es",
        [
            r"(?:me\s+(?:gradue|case|jubile|divorcie)|tuve\s+(?:un\s+bebe|gemelos)|"
            r"consegui\s+(?:un\s+)?(?:nuevo\s+)?trabajo|empece\s+(?:un\s+nuevo\s+trabajo|"
            r"a\s+trabajar)|adopte)\b",
        ],
        kind="episodic",
    ),
    *group(
        "event",
        2,
        "es",
        [
            r"(?:acabo\s+de|recien)\s+(?:volver|regresar|llegar)\s+de\b",
            r"(?:volvi|regrese)\s+de\b|(?:visite|viaje\s+a)\b",
        ],
        kind="episodic",
    ),
]
MINOR_EVENT = Rule(
    "event",
    1,
    "es",
    re.compile(r"(?:fui|tuve|estuve|hice|vi|comi|compre|visite|jugue|cene|sali|conoci)\b"),
    "episodic",
)
TIME = re.compile(r"ayer|anoche|hoy|esta\s+manana|la\s+semana\s+pasada|el\s+\w+\s+pasado|hace\s+")
