"""Episodic or semantic: which kind of memory a fact is, by rules (English and Spanish).

Episodic memories are things that happened: events, errors and their causes,
incidents and how they were solved, decisions and their context. Semantic
memories are what stays true: facts, preferences, knowledge. A caller can then
ask for one kind (a critic wants past errors, a researcher wants facts).

The rules aim at precision: a fact is episodic only on a clear sign of a
happening, and semantic otherwise. A wrong "episodic" hides a stable fact from
fact searches; a missed episode still turns up in an unfiltered search.
"""

from __future__ import annotations

import re
import unicodedata

from truemem_core.language.text import fold, normalise, words
from truemem_core.records import Kind

_WEEKDAYS = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_DIAS = r"(?:lunes|martes|miercoles|jueves|viernes|sabado|domingo)"
_MONTHS = (
    r"(?:january|february|march|april|may|june|july|august|september|october|november|"
    r"december|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec)"
)
_MESES = (
    r"(?:enero|febrero|marzo|abril|mayo|junio|julio|agosto|septiembre|setiembre|octubre|"
    r"noviembre|diciembre)"
)
_UNITS = r"(?:minutes?|hours?|days?|weeks?|months?|years?)"
_UNIDADES = r"(?:minutos?|horas?|dias?|semanas?|mes|meses|anos?)"
_COUNT = r"(?:\d+|a|an|a\s+few|a\s+couple(?:\s+of)?|one|two|three|four|five|six|several)"

# A particular moment, never a habit: "on Friday" but not "on Fridays" or "every Friday".
_TIME = re.compile(
    r"\b(?:yesterday|today|tonight|last\s+(?:night|week|weekend|month|year|summer|winter|"
    rf"spring|fall|autumn|{_WEEKDAYS})|this\s+(?:morning|afternoon|evening)|earlier\s+today|"
    rf"{_COUNT}\s+{_UNITS}\s+ago|on\s+{_WEEKDAYS}(?!s)|"
    rf"on\s+(?:the\s+)?\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTHS}|on\s+{_MONTHS}\s+\d{{1,2}}|"
    r"ayer|anoche|anteayer|antier|hoy|esta\s+(?:manana|tarde|noche)|"
    r"(?:la\s+semana|el\s+mes|el\s+ano|el\s+verano|el\s+invierno)\s+pasad[oa]|"
    r"(?<!desde\s)hace\s+(?:\d+|un|una|unos|unas|dos|tres|cuatro|cinco|varios|varias)\s+"
    rf"{_UNIDADES}|"
    rf"el\s+(?:pasado\s+)?{_DIAS}(?!s)|el\s+(?:pasado\s+)?\d{{1,2}}\s+de\s+{_MESES})\b"
    r"|\b\d{4}-\d{2}-\d{2}\b"
)

# Words of something that happened; unambiguous wherever they stand ("is broke" is not).
_HAPPENED = re.compile(
    r"\b(?:crashed|expired|went\s+down|timed\s+out|rolled\s+back|happened|"
    r"(?<!is\s)(?<!am\s)(?<!are\s)broke|(?<!is\s)(?<!are\s)caused|"
    r"occurred|was\s+caused|root\s+cause\s+was|were\s+lost|got\s+(?:hacked|deleted|corrupted)|"
    r"(?:was|were)\s+(?:down|hacked|breached|compromised|leaked|deleted|corrupted)|"
    r"there\s+was\s+an?\s+(?:outage|incident|error|bug|crash|failure|leak|breach)|"
    r"se\s+(?:ha\s+)?(?:cayo|caido|rompio|roto|colgo|colgado)|hubo|tuvimos|tuvieron|tuvo|"
    r"(?:ha|han|hemos|he)\s+(?:fallado|caducado|expirado|arreglado|solucionado|resuelto|"
    r"desplegado|migrado|revertido|perdido|borrado|roto)|"
    r"(?:migramos|desplegamos|arreglamos|solucionamos|resolvimos|revertimos|perdimos|"
    r"descubrimos|lanzamos|publicamos|borramos|reiniciamos|restauramos|actualizamos|"
    r"hizo|hicimos|puso|pusimos|dijo|dijimos|trajo|pudimos|fuimos))\b"
)

# Participles that are also adjectives ("a fixed salary", "failed logins are locked"):
# a happening only after a pronoun or an auxiliary, or when an object or a time follows.
_AMBIGUOUS = (
    r"(?:failed|fixed|resolved|solved|deployed|released|shipped|launched|migrated|upgraded|"
    r"downgraded|reverted|patched|restored|recovered|debugged|broken|deleted|lost)"
)
_AMBIGUOUS_AS_VERB = re.compile(
    rf"\b(?:i|we|he|she|they|it|was|were|got|has|have|had|been)\s+{_AMBIGUOUS}\b"
    rf"|\b{_AMBIGUOUS}(?=\s*$|\s*[,.;!]|\s+(?:after|because|when|during|due|since|twice|again|"
    r"yesterday|today|on|at|it|the|a|an|our|my|his|her|their|by)\b)"
)

_DECISION = re.compile(
    r"\b(?:decided|chose|opted|agreed\s+to|settled\s+on|went\s+with|(?:the\s+)?decision\s+"
    r"(?:to|was)|decidi|decidio|decidimos|decidieron|se\s+decidio|elegi|eligio|elegimos|"
    r"eligieron|opte|opto|optamos|optaron|acordamos|acordaron|nos\s+decantamos|"
    r"(?:la\s+)?decision\s+(?:de|fue))\b"
)

# A past that describes a lasting state, not an event: "Was born in 1990", "Used to
# live in Madrid", "Nació en Sevilla". Dates around these are not episodes either.
_LASTING = re.compile(
    r"\b(?:born|birthday|anniversary|grew\s+up|used\s+to|nacio|nacimiento|nacieron|"
    r"cumpleanos|aniversario|crecio|se\s+crio|solia|solian)\b"
)

# English: a past-tense verb opening the clause ("Deployed v2", "We met Ana").
_SUBJECT = r"(?:(?:i|we|he|she|they|you|the\s+user|user)\s+)?"
_ADVERB = r"(?:(?:just|recently|finally|already|then|also|accidentally|first)\s+)*"
_IRREGULAR = (
    r"(?:went|got|had|made|took|saw|came|met|bought|ate|drank|ran|won|lost|found|gave|left|"
    r"flew|drove|wrote|broke|caught|fell|began|chose|sold|sent|built|quit|forgot|told|said|"
    r"paid|brought|became|did|hit|rode|swam|sang|threw|wore|woke|slept|shot|stole|tore)"
)
_LEADING_PAST = re.compile(rf"^{_SUBJECT}{_ADVERB}(?P<verb>{_IRREGULAR}|[a-z]{{2,}}ed)\b")
# "-ed" words that describe how things are, not what happened.
_STATIVE = words(
    """interested married based called named located related excited obsessed tired bored
    scared worried concerned involved engaged divorced retired widowed experienced skilled
    qualified certified trained educated employed unemployed used supposed allowed required
    limited focused dedicated committed attached devoted pleased satisfied annoyed frustrated
    disappointed confused stressed vaccinated licensed registered subscribed inclined opposed
    biased advanced talented gifted organized organised detailed motivated determined
    prepared hundred sacred naked wicked worked lived studied stayed owned loved liked hated
    wanted preferred enjoyed believed seemed remained belonged attended spent played tended
    needed"""
)

# ...unless a present verb follows within two words: "Shared drives are backed up".
_PRESENT_AFTER = re.compile(
    r"\s+(?:\w+\s+){0,2}(?:is|are|get|gets|go|goes|stay|stays|lock|locks|must|should|can|will)\b"
)

# Spanish preterite by its ending: "-ó" (on the accented text), "-aron" / "-ieron".
_PRETERITE_O = re.compile(r"\b\w{2,}ó\b")
_PRETERITE_PLURAL = re.compile(r"\b\w{2,}(?:aron|ieron)\b")
# Spanish preterites of lasting states (where someone lived, worked, studied).
_ESTADOS = words(
    """nació creció vivió trabajó estudió estuvo nacieron crecieron vivieron trabajaron
    estudiaron estuvieron quisieron"""
)


def _clauses(text: str) -> list[str]:
    return [c.strip() for c in re.split(r"[.;!?]+(?:\s+|$)|\n", text) if c.strip()]


def _leading_past(folded: str) -> bool:
    for clause in _clauses(folded):
        match = _LEADING_PAST.match(clause)
        if match is None or match["verb"].endswith("eed") or match["verb"] in _STATIVE:
            continue
        if not _PRESENT_AFTER.match(clause, match.end()):
            return True
    return False


def _spanish_preterite(lowered: str) -> bool:
    found = _PRETERITE_O.findall(lowered) + _PRETERITE_PLURAL.findall(lowered)
    return any(word not in _ESTADOS for word in found)


def classify_kind(text: str) -> Kind:
    """``"episodic"`` for a clear happening, else ``"semantic"``.

    >>> classify_kind("Yesterday the SSL certificate expired")
    'episodic'
    >>> classify_kind("Es alérgica a los cacahuetes")
    'semantic'
    """
    lowered = unicodedata.normalize("NFC", normalise(text)).lower()
    folded = fold(lowered)
    if _HAPPENED.search(folded) or _DECISION.search(folded):
        return "episodic"
    if _AMBIGUOUS_AS_VERB.search(folded):
        return "episodic"
    if _LASTING.search(folded):
        return "semantic"
    if _TIME.search(folded) or _leading_past(folded) or _spanish_preterite(lowered):
        return "episodic"
    return "semantic"
