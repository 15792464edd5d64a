"""Rewrite a first-person clause as a short third-person fact about the user.

    "I prefer bullet points"              -> "Prefers bullet points"
    "my daughter is called Lucía"         -> "User's daughter is called Lucía"
    "yesterday I went to the dentist"     -> "Went to the dentist yesterday"
    "prefiero respuestas cortas"          -> "Prefiere respuestas cortas"
    "moro em Lisboa com a minha mulher"   -> "Mora em Lisboa com a sua mulher"

English drops the subject ("Prefers…"), as memory lists usually do. Spanish and
Portuguese are pro-drop already, so only the verb and the possessives change.
Verbs come from small tables of common first-person forms; an unknown verb is
left as it is, which reads oddly but never says something false.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Literal

from truemem_core.language.text import capitalise, fold, strip_edges, words

Lang = Literal["en", "es", "pt"]

# ---------------------------------------------------------------- adverbials
# A leading time or habit phrase moves to the end: "Yesterday I went…" ->
# "Went … yesterday", so the fact still starts with its verb.
_EN_ADVERBIAL = re.compile(
    r"(?:yesterday|today|tonight|last\s+(?:night|week|weekend|month|year|summer|winter|spring|"
    r"fall|autumn|\w+day)|this\s+(?:morning|afternoon|evening|week|weekend|month|year|summer)|"
    r"earlier\s+today|recently|lately|nowadays|these\s+days|on\s+(?:the\s+)?weekends?|"
    r"on\s+\w+days|every\s+(?:day|morning|night|evening|week|weekend|summer|year|\w+day)|"
    r"in\s+my\s+(?:free|spare)\s+time|for\s+fun|for\s+a\s+living|"
    r"(?:a\s+(?:few|couple(?:\s+of)?)|\w+)\s+(?:days|weeks|months|years)\s+ago)"
    r"\s*,?\s+(?=(?:i|i'\w+|im|ive|my)\b)"
)
_ES_ADVERBIAL = re.compile(
    r"(?:ayer|hoy|anoche|esta\s+(?:manana|tarde|noche|semana)|"
    r"este\s+(?:fin\s+de\s+semana|mes|ano|verano)|la\s+semana\s+pasada|"
    r"el\s+(?:mes|ano|fin\s+de\s+semana|verano|invierno|lunes|martes|miercoles|jueves|viernes|"
    r"sabado|domingo)\s+pasado|hace\s+(?:\w+\s+)?(?:dias|semanas|meses|anos)|"
    r"los\s+(?:fines\s+de\s+semana|lunes|martes|miercoles|jueves|viernes|sabados|domingos)|"
    r"todos\s+los\s+(?:dias|lunes|martes|miercoles|jueves|viernes|sabados|domingos|veranos)|"
    r"en\s+mi\s+tiempo\s+libre|ultimamente|"
    r"ontem|hoje|semana\s+passada|no\s+(?:mes|ano|fim\s+de\s+semana)\s+passado|"
    r"nos\s+fins\s+de\s+semana|todos\s+os\s+dias|no\s+meu\s+tempo\s+livre)"
    r"\s*,?\s+"
)


def split_adverbial(clause: str, lang: Lang) -> tuple[str, str]:
    """``(adverbial, rest)``: a leading time/habit phrase and the clause after it."""
    pattern = _EN_ADVERBIAL if lang == "en" else _ES_ADVERBIAL
    match = pattern.match(fold(clause))
    if match is None:
        return "", clause
    return clause[: match.end()].strip(" ,"), clause[match.end() :]


# ---------------------------------------------------------------- English
_EN_SUBJECT: list[tuple[re.Pattern[str], str | None]] = [
    (re.compile(p), r)
    for p, r in [
        (r"(?:my\s+(\w+)\s+and\s+i|me\s+and\s+my\s+(\w+))\b", "User and their {0}"),
        (r"i\s*'?m\s+not\b|i\s+am\s+not\b|i\s+ain'?t\b", "is not"),
        (r"i\s*'?m\b|i\s+am\b", "is"),
        (r"i\s+haven'?t\b|i\s*'?ve\s+not\b|i\s+have\s+not\b", "has not"),
        (r"i\s*'?ve(?:\s+got)?\b|i\s+have(?:\s+got)?\b", "has"),
        (r"i\s+(?:do\s+not|don'?t)\b", "does not"),
        (r"i\s+(?:did\s+not|didn'?t)\b", "did not"),
        (r"i\s+(?:can\s*not|can'?t)\b", "cannot"),
        (r"i\s+(?:will\s+not|won'?t)\b", "will not"),
        (r"i\s*'ll\b|i\s+will\b", "will"),
        (r"i\s+(?:was\s+not|wasn'?t)\b", "was not"),
        (r"i\s+(?:would\s+not|wouldn'?t)\b", "would not"),
        (r"i\s*'d(?=\s+(?:been|had|gone|never|already)\b)", "had"),
        (r"i\s*'d\b|i\s+would\b", "would"),
        (r"i\s+(can|could|should|must|may|might|was|did|had|used\s+to)\b", "{0}"),
        (
            r"my\s+(?=(?:name|names|favou?rites?|fave|fav|hobby|hobbies|job|birthday|profession|"
            r"occupation|passion|goal|dream|current|project|email|phone|address|native|first|"
            r"last|full|nickname|pronouns|age|height|blood|zodiac|star)\b)",
            "",
        ),
        (r"my\b", "User's"),
        (r"i\b", None),  # "I" + verb: conjugated below
    ]
]
# Filler adverbs dropped right after the subject: "I really love X" -> "Loves X".
_EN_FILLER = re.compile(
    r"(?:\s+(?:also|really|actually|honestly|totally|truly|genuinely|personally|kinda|"
    r"definitely|literally|basically|seriously|kind\s+of|sort\s+of|too))+\b"
)
# Adverbs kept in front of the conjugated verb: "I never eat…" -> "Never eats…".
_EN_KEPT_ADVERBS = words(
    "just still never always usually often sometimes rarely mostly currently now only even "
    "recently already absolutely finally no longer"
)
_EN_PAST = words(
    "went got had was were made took saw came grew left met bought began became brought built "
    "caught chose did drank drove ate fell felt found flew forgot gave heard held kept knew "
    "lost paid ran rode said sold sent sang sat slept spent spoke stood swam taught thought "
    "told understood woke won wore wrote broke fought led lent meant rose shot shook stole "
    "struck swore threw tore wept used"
)
_EN_BASE_ED = words("need feed bleed breed speed seed shed weed succeed proceed exceed")
_EN_IRREGULAR_3SG = {"have": "has", "be": "is", "do": "does", "go": "goes", "am": "is"}
_EN_UNCHANGED = words("can could should must may might will would shall")
_EN_INNER: list[tuple[re.Pattern[str], str]] = [
    (re.compile(p, re.IGNORECASE), r)
    for p, r in [
        (r"\bi\s*'m\b|\bi\s+am\b", "they are"),
        (r"\bi\s+was\b", "they were"),
        (r"\bi\s*'ve\b", "they've"),
        (r"\bi\s*'d\b", "they'd"),
        (r"\bi\s*'ll\b", "they'll"),
        (r"\bi\b(?!\.)", "they"),
        (r"\bmyself\b", "themselves"),
        (r"\bmine\b", "theirs"),
        (r"\bmy\b", "their"),
        (r"\bme\b", "them"),
    ]
]


def conjugate_3sg(verb: str) -> str:
    """Third person singular of an English verb; past forms and modals stay as they are."""
    low = verb.lower()
    if low in _EN_IRREGULAR_3SG:
        return _EN_IRREGULAR_3SG[low]
    if low in _EN_UNCHANGED or low in _EN_PAST or (low.endswith("ed") and low not in _EN_BASE_ED):
        return verb
    if re.search(r"(?:s|sh|ch|x|z|o)$", low):
        return verb + "es"
    if re.search(r"[^aeiou]y$", low):
        return verb[:-1] + "ies"
    return verb + "s"


def _en_verb_phrase(rest: str) -> str:
    """``rest`` follows a bare "I": keep adverbs, conjugate the first verb."""
    words = rest.split(" ")
    for index, word in enumerate(words):
        if word.lower() in _EN_KEPT_ADVERBS:
            continue
        if re.fullmatch(r"[A-Za-z]+", word):
            words[index] = conjugate_3sg(word)
        break
    return " ".join(words)


def _en_inner(text: str) -> str:
    for pattern, replacement in _EN_INNER:
        text = pattern.sub(replacement, text)
    return text


def _en(clause: str) -> str:
    folded = fold(clause)
    for pattern, replacement in _EN_SUBJECT:
        match = pattern.match(folded)
        if match is None:
            continue
        rest = clause[match.end() :]
        filler = _EN_FILLER.match(fold(rest))
        rest = _en_inner(rest[filler.end() if filler else 0 :].strip())
        if replacement is None:
            return _en_verb_phrase(rest)
        groups = [
            clause[match.start(g) : match.end(g)] for g, v in enumerate(match.groups(), 1) if v
        ]
        head = replacement.format(*groups)
        return f"{head} {rest}".strip()
    return _en_inner(clause)


# ---------------------------------------------------------------- Spanish, Portuguese
def _table(spec: str) -> dict[str, str]:
    pairs = (item.split(":") for item in spec.split())
    return {fold(first): third for first, third in pairs}


_ES_VERBS = _table(
    "soy:es estoy:está tengo:tiene voy:va hago:hace puedo:puede quiero:quiere "
    "prefiero:prefiere vivo:vive como:come trabajo:trabaja uso:usa odio:odia necesito:necesita "
    "conozco:conoce juego:juega pienso:piensa creo:cree suelo:suele duermo:duerme bebo:bebe "
    "leo:lee escribo:escribe corro:corre hablo:habla estudio:estudia cocino:cocina toco:toca "
    "colecciono:colecciona adoro:adora amo:ama detesto:detesta disfruto:disfruta "
    "practico:practica vengo:viene salgo:sale digo:dice tomo:toma sigo:sigue mido:mide "
    "peso:pesa nado:nada viajo:viaja enseño:enseña dirijo:dirige llevo:lleva ando:anda "
    "busco:busca intento:intenta siento:siente considero:considera dedico:dedica llamo:llama "
    "mudo:muda doy:da veo:ve miro:mira escucho:escucha pinto:pinta dibujo:dibuja canto:canta "
    "bailo:baila escalo:escala entreno:entrena programo:programa manejo:maneja "
    "conduzco:conduce gano:gana sufro:sufre padezco:padece soporto:soporta aguanto:aguanta "
    "tolero:tolera evito:evita comparto:comparte cuido:cuida acabo:acaba empiezo:empieza "
    "quedo:queda he:ha fui:fue tuve:tuvo estuve:estuvo hice:hizo nací:nació crecí:creció "
    "viví:vivió estudié:estudió trabajé:trabajó empecé:empezó volví:volvió mudé:mudó "
    "casé:casó gradué:graduó jubilé:jubiló divorcié:divorció conocí:conoció perdí:perdió "
    "compré:compró adopté:adoptó regresé:regresó viajé:viajó visité:visitó terminé:terminó "
    "dejé:dejó pude:pudo quise:quiso dije:dijo vine:vino puse:puso supe:supo"
)
_PT_VERBS = _table(
    "sou:é estou:está tenho:tem vou:vai faço:faz posso:pode quero:quer prefiro:prefere "
    "moro:mora vivo:vive trabalho:trabalha uso:usa odeio:odeia preciso:precisa "
    "conheço:conhece sei:sabe jogo:joga penso:pensa acho:acha costumo:costuma durmo:dorme "
    "como:come bebo:bebe leio:lê escrevo:escreve corro:corre falo:fala estudo:estuda "
    "cozinho:cozinha "
    "toco:toca coleciono:coleciona adoro:adora amo:ama detesto:detesta curto:curte "
    "gosto:gosta pratico:pratica venho:vem saio:sai digo:diz tomo:toma sigo:segue "
    "peso:pesa nado:nada viajo:viaja ensino:ensina dirijo:dirige levo:leva ando:anda "
    "procuro:procura tento:tenta sinto:sente considero:considera dedico:dedica chamo:chama "
    "mudo:muda dou:dá vejo:vê assisto:assiste escuto:escuta ouço:ouve pinto:pinta "
    "desenho:desenha canto:canta danço:dança treino:treina programo:programa sofro:sofre "
    "evito:evita cuido:cuida acabo:acaba interesso:interessa comecei:começou fui:foi "
    "tive:teve estive:esteve fiz:fez nasci:nasceu cresci:cresceu vivi:viveu morei:morou "
    "estudei:estudou trabalhei:trabalhou voltei:voltou mudei:mudou casei:casou "
    "formei:formou aposentei:aposentou conheci:conheceu perdi:perdeu comprei:comprou "
    "adotei:adotou viajei:viajou visitei:visitou terminei:terminou vim:veio dei:deu vi:viu"
)
# Spanish verbs that already agree with their object: "me gusta" -> "le gusta".
_ES_GUSTAR = words(
    "gusta gustan encanta encantan interesa interesan apasiona apasionan fascina fascinan "
    "chifla chiflan flipa flipan molesta molestan aburre aburren preocupa preocupan importa "
    "importan duele duelen cae caen divierte divierten emociona emocionan relaja relajan "
    "agrada agradan horroriza horrorizan da dan cuesta cuestan sienta sientan"
)
_POSSESSIVES = {
    "es": _table("mi:su mis:sus mío:suyo mía:suya míos:suyos mías:suyas me:le"),
    "pt": _table("meu:seu minha:sua meus:seus minhas:suas me:lhe"),
}
_PRONOUN = {"es": "yo", "pt": "eu"}
# Words that may precede the verb and stay: "no como…", "siempre uso…", "solo bebo…".
_NEGATION = words("no nao nunca ya ja siempre sempre todavia ainda solo so casi normalmente aun")
_DROPPED = frozenset({"tambien", "tambem", "realmente", "ademas"})
_CONJUNCTIONS = frozenset({"y", "e", "pero", "mas", "porque", "aunque", "embora"})
_TOKEN = re.compile(r"\w+|[^\w\s]+|\s+")


def _keep_case(original: str, replacement: str) -> str:
    return capitalise(replacement) if original[:1].isupper() else replacement


def is_first_person_verb(word: str, lang: Lang) -> bool:
    """Whether ``word`` is a known first-person verb form (Spanish or Portuguese)."""
    return lang != "en" and _romance_verb(word, lang, after_pronoun=False) is not None


def _romance_verb(
    word: str, lang: Lang, *, after_pronoun: bool, negated: bool = False
) -> str | None:
    """Third person of a first-person verb, or None when ``word`` is not one.

    Regular endings are trusted only after "yo"/"eu"; "como" ("as" or "I eat")
    only after a pronoun or a negation.
    """
    table = _ES_VERBS if lang == "es" else _PT_VERBS
    low = fold(word)
    if word.lower() == "sé" and lang == "es":
        return "sabe"
    if low == "se" or (low == "como" and not (after_pronoun or negated)):
        return None
    if low in table:
        return table[low]
    if after_pronoun and lang == "es" and len(low) > 2:
        for first, third in (("o", "a"), ("é", "ó"), ("í", "ió")):
            if word.lower().endswith(first):
                return word[: -len(first)] + third
    if after_pronoun and lang == "pt" and len(low) > 2:
        for first, third in (("o", "a"), ("ei", "ou")):
            if low.endswith(first):
                return word[: -len(first)] + third
    return None


def _romance(clause: str, lang: Lang) -> str:
    tokens = _TOKEN.findall(clause)
    words = [i for i, tok in enumerate(tokens) if tok[0].isalnum() or tok[0] == "_"]
    possessives = _POSSESSIVES[lang]
    lead = True  # still before the first verb of the clause
    after_pronoun = negated = False
    verb_next = False  # a conjunction or "yo" announces a verb
    for position, index in enumerate(words):
        word = tokens[index]
        low = fold(word)
        nxt = tokens[words[position + 1]] if position + 1 < len(words) else ""
        if lead and low == _PRONOUN[lang]:
            tokens[index] = ""
            after_pronoun = True
            continue
        if lead and low in _DROPPED:
            tokens[index] = ""
            continue
        if lead and low in _NEGATION:
            negated = negated or low in {"no", "nao"}  # "no como carne": "como" is a verb
            continue
        if low == "me" and (lead or verb_next):
            if lang == "es" and fold(nxt) in _ES_GUSTAR:
                tokens[index] = _keep_case(word, "le")
            elif _romance_verb(nxt, lang, after_pronoun=True) is not None:
                tokens[index] = _keep_case(word, "se")
            else:
                tokens[index] = _keep_case(word, possessives["me"])
            verb_next = True
            continue
        if lead or verb_next:
            third = _romance_verb(
                word, lang, after_pronoun=after_pronoun or verb_next, negated=negated
            )
            if third is not None:
                tokens[index] = _keep_case(word, third)
                if lang == "pt" and "".join(tokens[index + 1 : index + 3]) == "-me":
                    tokens[index + 2] = "se"  # "chamo-me" -> "chama-se"
                lead = verb_next = after_pronoun = negated = False
                continue
        if low in possessives:
            tokens[index] = _keep_case(word, possessives[low])
        lead = after_pronoun = negated = False
        verb_next = low in _CONJUNCTIONS
    return re.sub(r"\s{2,}", " ", "".join(tokens)).strip()


# ---------------------------------------------------------------- entry point
_CONVERTERS: Mapping[Lang, Callable[[str], str]] = {
    "en": _en,
    "es": lambda clause: _romance(clause, "es"),
    "pt": lambda clause: _romance(clause, "pt"),
}


def third_person(clause: str, lang: Lang) -> str:
    """The clause as a fact about the user, starting with a capital, no final period."""
    adverbial, rest = split_adverbial(strip_edges(clause), lang)
    fact = _CONVERTERS[lang](strip_edges(rest))
    if adverbial:
        fact = f"{fact} {_CONVERTERS[lang](adverbial[:1].lower() + adverbial[1:])}"
    return capitalise(strip_edges(fact))
