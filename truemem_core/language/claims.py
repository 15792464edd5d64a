"""What a short fact claims, as (subject, attribute, value) triples, by rules (EN + ES).

Only attributes that hold one value at a time are parsed: where the subject
lives, its job and employer, its name, the version of a named tool, a
preference within a known category ("tea" and "coffee" are both drinks), a
favourite X, and what a thing uses or runs within a known category. Facts
that add up ("Likes tea", "Has a dog", "Speaks French") yield no claim, so
they can never replace one another. Negated facts yield none either.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from truemem_core.language import lexicon as lx
from truemem_core.language.text import fold, normalise, words


@dataclass(frozen=True, slots=True)
class Claim:
    subject: str  # "user" for the user, else the folded noun phrase ("web server")
    attribute: str  # "location", "job", "version:postgresql", "uses:database"…
    value: str  # folded, as compared
    exclusive: bool = True  # False: true alongside other values ("Uses Rust" about a user)

    def __str__(self) -> str:
        return f"{self.attribute} of {self.subject} = {self.value}"


# Tools, drinks, themes… in categories that one subject picks one of at a time.
_CATEGORIES = {
    "database": "postgresql mysql mariadb sqlite mongodb oracle mssql sql_server cassandra "
    "dynamodb cockroachdb",
    "web server": "nginx apache httpd caddy iis lighttpd traefik",
    "cache": "redis memcached valkey",
    "language": "python rust go java javascript typescript ruby php kotlin swift c++ c# scala "
    "elixir haskell perl julia",
    "editor": "vim neovim emacs vscode vs_code visual_studio_code pycharm intellij sublime "
    "sublime_text nano helix zed",
    "os": "linux windows macos ubuntu debian fedora arch_linux centos",
    "cloud": "aws azure gcp google_cloud heroku digitalocean hetzner",
    "orchestrator": "kubernetes nomad docker_swarm ecs",
    "frontend": "react vue angular svelte",
    "browser": "firefox chrome safari brave",
    "drink": "tea coffee te cafe mate beer cerveza wine water agua",
    "theme": "dark_mode light_mode modo_oscuro modo_claro",
}
_CATEGORY_OF = {
    item.replace("_", " "): name for name, items in _CATEGORIES.items() for item in items.split()
}
_ALIASES = {"postgres": "postgresql", "golang": "go", "k8s": "kubernetes", "node.js": "node",
            "nodejs": "node", "colour": "color", "favourite": "favorite"}

_ADVERBS = (
    r"(?:(?:now|currently|recently|just|actually|also|still|finally|ahora|actualmente|ya|"
    r"tambien|todavia)\s+){0,3}"
)
# A subject is a short noun phrase; the bound also keeps matching linear on long texts.
_SUBJECT = r"^(?P<subject>(?:\S+\s+){0,8}?)" + _ADVERBS
# Negated or past facts say what no longer holds: they claim nothing current.
_NOT_CURRENT = re.compile(
    r"\b(?:not|no|never|no\s+longer|nunca|tampoco|ni|used\s+to|formerly|previously|solia)\b|n't\b"
)
_CHANGE = re.compile(
    r"\b(?:now|switched|migrated|moved|upgraded|downgraded|instead|ahora|migro|migrado|migrada|"
    r"cambio|paso|actualizado|actualizo)\b"
)
_USER = words("i we he she they user me yo el ella usuario usuaria nosotros my his her mi su")
# A time leading the fact is not its subject: "Yesterday moved to Berlin".
_LEADING_TIME = re.compile(
    r"^(?:(?:yesterday|today|recently|lately|finally|then|last\s+\w+|this\s+\w+|in\s+\d{4}|"
    r"ayer|hoy|recientemente|luego|finalmente|en\s+\d{4}|(?:el|la)\s+\w+\s+pasad[oa])[\s,]*)+"
)
_DETERMINERS = re.compile(r"^(?:(?:the|our|my|a|an|el|la|los|las|un|una|nuestro|nuestra|mi|su)"
                          r"\s+)+")
_CONNECTORS = words("de del la las los upon am on of")
_ABBREVIATIONS = words("st mt ft dr mr mrs ms sr sra co inc ltd corp")
# Where an object ends: a qualifier, a reason or a time follows.
_OBJECT_END = re.compile(
    r"\s+(?:for|because|since|on|in|at|from|last|after|before|when|over|to|than|rather|instead|"
    r"para|porque|desde|en|hace|ayer|tras|cuando|sobre|antes|a)\b|\s*(?:[,;(]|\.(?:\s|$))|$"
)
_VERSION = re.compile(
    r"(?P<tool>[^\W\d][\w.+#-]*(?:\s+[^\W\d][\w.+#-]*){0,2}?)\s+v?(?P<version>\d+(?:\.\d+)*)"
    r"(?!\s*(?:years?|months?|weeks?|days?|hours?|anos?|meses|semanas|dias|horas|ago|%))\b"
)

_USES = (
    r"(?:uses?|is\s+using|runs?\s+on|runs?|is\s+running|is\s+on|is\s+hosted\s+on|is\s+powered\s+by|"
    r"(?:has\s+|was\s+|have\s+been\s+|has\s+been\s+)?(?:moved|migrated|upgraded|downgraded|"
    r"switched|updated)\s+to|usa|usamos|utiliza|utilizamos|ejecuta|corre\s+en|corre|funciona\s+con|"
    r"(?:se\s+)?(?:migro|actualizo|paso|cambio)\s+a|"
    r"(?:migramos|actualizamos|pasamos|cambiamos)\s+a|(?:fue|ha\s+sido|han\s+sido)\s+"
    r"(?:migrad[oa]s?|actualizad[oa]s?)\s+a)\s+"
)
_RULES = {
    "location": re.compile(
        _SUBJECT + r"(?:lives?\s+in|resides\s+in|"
        r"is\s+(?:now\s+|currently\s+)?(?:based|living)\s+in|"
        r"(?:has\s+)?(?:moved|relocated)\s+to|vive\s+en|esta\s+viviendo\s+en|reside\s+en|"
        r"se\s+(?:ha\s+)?(?:mudado|mudo|trasladado|traslado)\s+a)\s+"
    ),
    "employer": re.compile(
        _SUBJECT + r"(?:works\s+(?:as\s+.+?\s+)?(?:at|for)|is\s+employed\s+(?:at|by)|"
        r"trabaja\s+(?:(?:como|de)\s+.+?\s+)?(?:en|para))\s+"
    ),
    "job": re.compile(_SUBJECT + r"(?:works\s+as|trabaja\s+(?:como|de))\s+(?:an?\s+|una?\s+)?"),
    "name": re.compile(
        _SUBJECT + r"(?:name\s+is|is\s+(?:called|named)|se\s+llama|(?:su\s+)?nombre\s+es)\s+"
    ),
    "nickname": re.compile(
        _SUBJECT + r"(?:prefers\s+to\s+be\s+called|goes\s+by|prefiere\s+que\s+(?:le|la|lo)\s+"
        r"llamen)\s+"
    ),
}
_IS_JOB = re.compile(
    _SUBJECT + rf"(?:is\s+an?\s+(?P<en>(?:[\w-]+\s+){{0,2}}?{lx.JOBS_EN})|"
    rf"es\s+(?:una?\s+)?(?P<es>{lx.JOBS_ES}))"
    r"(?=\s*[,.]?\s*$|\s+(?:at|in|for|with|since|en|para|desde|con)\b)"
)
_NOT_WORK_ES = words("estudiante jubilado jubilada")
_USES_RULE = re.compile(_SUBJECT + _USES)
_PREFERS = re.compile(_SUBJECT + r"(?:prefers|prefiere)\s+")
_GERUND = re.compile(r"^(?:drinking|using|coding\s+in|writing|programming\s+in|working\s+in|"
                     r"tomar|beber|usar|programar\s+en)\s+")
_FAVOURITE = re.compile(
    _SUBJECT + r"(?:(?:favou?rite|preferred)\s+(?P<en>[\w ]+?)\s+is|"
    r"(?P<es>[\w ]+?)\s+(?:favorit[oa]|preferid[oa])\s+es)\s+"
)


def _clean(value: str) -> str:
    value = " ".join(re.sub(r"[^\w.+#' -]", " ", value).split()).strip(" .'")
    return _ALIASES.get(value, value)


def _subject(raw: str) -> str:
    text = _LEADING_TIME.sub("", raw.strip()).removesuffix("'s").strip()
    if not text or text in _USER:
        return "user"
    text = _DETERMINERS.sub("", text)  # "The user", "the web server"
    return "user" if text in _USER else _clean(text)


def _proper(clean: str, start: int) -> str | None:
    """The capitalised name at ``start``: "New York", "St. Mary's", "Berlin, Germany"."""
    tokens = clean[start:].split()
    kept: list[str] = []
    for i, token in enumerate(tokens):
        bare = token.strip(",.;:!?()\"")
        following = tokens[i + 1] if i + 1 < len(tokens) else ""
        if bare[:1].isupper():
            kept.append(bare)
        elif kept and fold(bare) in _CONNECTORS and following[:1].isupper():
            kept.append(bare)
            continue
        else:
            if re.fullmatch(r"v?\d[\d.]*", bare):  # "Moved to PostgreSQL 16": a tool
                return None
            break
        ends_sentence = token.endswith(".") and fold(bare) not in _ABBREVIATIONS
        if ends_sentence or token[-1] in ";:!?)":
            break
    return _clean(fold(" ".join(kept))) or None


def _object(folded: str, start: int) -> tuple[str, str]:
    """The object at ``start`` and what qualifies it ("for scripting")."""
    end = _OBJECT_END.search(folded, start)
    stop = end.start() if end else len(folded)
    rest = folded[stop:].strip(" ,;.")
    qualifier = rest if re.match(r"(?:for|when|in|at|on|para|cuando|en)\b", rest) else ""
    return folded[start:stop].strip(), qualifier


def _category(value: str) -> str | None:
    value = _ALIASES.get(value, value)
    return _CATEGORY_OF.get(value) or _CATEGORY_OF.get(value.rsplit(" ", 1)[-1])


def _simple(folded: str, clean: str) -> list[Claim]:
    found = []
    for attribute, pattern in _RULES.items():
        match = pattern.match(folded)
        if match is None:
            continue
        if attribute == "job":
            value: str | None = _clean(_object(folded, match.end())[0])
        else:
            value = _proper(clean, match.end())
        if value and not (attribute == "location" and _category(value)):
            found.append(Claim(_subject(match["subject"]), attribute, value))
    job = _IS_JOB.match(folded)
    if job:
        title = _clean(job["en"] or job["es"])
        if title.rsplit(" ", 1)[-1] not in lx.NOT_WORK_EN | _NOT_WORK_ES:
            found.append(Claim(_subject(job["subject"]), "job", title))
    return found


def _uses(folded: str, clean: str) -> list[Claim]:
    match = _USES_RULE.match(folded)
    if match is None:
        return []
    subject = _subject(match["subject"])
    exclusive = subject != "user" or bool(_CHANGE.search(folded))
    found = []
    obj, _ = _object(folded, match.end())
    for piece in re.split(r",|\s+(?:and|y|plus|with|con)\s+|\s*&\s*", obj):
        item = _DETERMINERS.sub("", piece.strip())
        start = folded.find(item, match.end())
        version = _VERSION.match(item)
        tool = _clean(version["tool"] if version else item)
        if version and (clean[start : start + 1].isupper() or _category(tool)):
            found.append(Claim(subject, f"version:{tool}", version["version"]))
        category = _category(tool)
        if category:
            found.append(Claim(subject, f"uses:{category}", tool, exclusive))
    return found


def _preference(folded: str) -> list[Claim]:
    found = []
    prefers = _PREFERS.match(folded)
    if prefers:
        obj, qualifier = _object(folded, prefers.end())
        value = _clean(_GERUND.sub("", _DETERMINERS.sub("", obj)))
        category = _category(value)
        if category:
            attribute = f"preference:{category}" + (f"|{qualifier}" if qualifier else "")
            found.append(Claim(_subject(prefers["subject"]), attribute, value))
    favourite = _FAVOURITE.match(folded)
    if favourite:
        what = _clean(_DETERMINERS.sub("", favourite["en"] or favourite["es"]))
        value = _clean(_DETERMINERS.sub("", _object(folded, favourite.end())[0]))
        if value:
            attribute = f"favorite:{_ALIASES.get(what, what)}"
            found.append(Claim(_subject(favourite["subject"]), attribute, value))
    return found


def parse_claims(text: str) -> list[Claim]:
    """The single-valued claims ``text`` makes; ``[]`` for additive, negated or past facts."""
    clean = normalise(text)
    folded = fold(clean)
    if _NOT_CURRENT.search(folded):
        return []
    return [*_simple(folded, clean), *_uses(folded, clean), *_preference(folded)]
