"""Which entity a short phrase names, and its type (pure; English).

Precision first: a phrase names an entity only when its form says what it is
("project Atlas", "db-01", "PostgreSQL 16", "Acme Labs") or, for a capitalised
name, when the verb it follows types it ("works at *Globex*" is an
organisation, "lives in *Lyon*" a place). Anything else names nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from truemem_core.graph import rules_lexicon as lx
from truemem_core.language.text import fold, strip_edges

USER = "user"
"""The entity a fact without a subject is about ("Lives in Berlin": the user)."""

_WORD = r"[A-Z][\w.+#'&-]*"
PROPER = rf"{_WORD}(?:\s+(?:{_WORD}|v?\d[\w.]*|of|de|and|&))*?"
_PROPER = re.compile(rf"{PROPER}")
_HOST = re.compile(
    r"(?=[a-z0-9-]*\d)[a-z][a-z0-9]*(?:-[a-z0-9]+)+|[a-z0-9-]+(?:\.[a-z0-9-]+)*"
    r"\.(?:com|net|org|io|dev|internal|local|lan|cloud)"
)
_PROJECT = re.compile(rf"(?i:project)\s+(?P<a>{PROPER})|(?P<b>{PROPER})\s+(?i:project)")
_SERVER = re.compile(rf"(?i:server|host|machine|vm|box)\s+(?P<n>{_HOST.pattern}|{PROPER})")
_TOOL = re.compile(
    r"(?P<tool>" + "|".join(re.escape(s) for s in sorted(lx.TOOLS, key=len, reverse=True))
    + r")(?:\s+v?(?P<version>\d+(?:\.\d+)*))?"
)
_DETERMINER = re.compile(r"^(?:(?:the|a|an|our|my|their|its|his|her|your|this|that)\s+)+",
                         re.IGNORECASE)
_USER_WORDS = frozenset({"i", "we", "user", "the user", "my team", "our team", "me"})
_MAX_WORDS = 5


@dataclass(frozen=True, slots=True)
class Mention:
    """A named entity: its name as written (a tool in its canonical spelling) and type."""

    name: str
    type: str
    aliases: tuple[str, ...] = ()


def is_user(phrase: str) -> bool:
    """Whether a subject phrase is the user ("", "I", "We", "The user")."""
    return fold(strip_edges(phrase)) in _USER_WORDS | {""}


def strong(phrase: str) -> Mention | None:
    """An entity the phrase's own form types: project, server, tool, organisation."""
    text = _DETERMINER.sub("", strip_edges(phrase))
    if not text or len(text.split()) > _MAX_WORDS:
        return None
    if project := _PROJECT.fullmatch(text):
        name = project["a"] or project["b"]
        return Mention(name, "project", (f"project {name}",))
    if server := _SERVER.fullmatch(text):
        return Mention(server["n"], "server")
    if _HOST.fullmatch(text):
        return Mention(text, "server")
    return tool(text) or _organisation(text)


def tool(text: str) -> Mention | None:
    """ "postgres 16" -> PostgreSQL 16; a common word ("rust") only when capitalised."""
    found = _TOOL.fullmatch(fold(text))
    if found is None or (found["tool"] in lx.COMMON_WORDS and not text[:1].isupper()):
        return None
    name = lx.TOOLS[found["tool"]]
    return Mention(f"{name} {found['version']}" if found["version"] else name, "tool")


def _organisation(text: str) -> Mention | None:
    if _proper(text) and fold(text.split()[-1]) in lx.ORG_SUFFIXES and len(text.split()) > 1:
        return Mention(text, "organisation")
    return None


def _proper(text: str) -> bool:
    return bool(_PROPER.fullmatch(text)) and fold(text.split()[0]) not in lx.NOT_NAMES


def mention(phrase: str, slot: str | None) -> Mention | None:
    """The entity ``phrase`` names in a slot typed ``slot`` (None: the verb says nothing).

    A person, place or organisation slot takes a capitalised name whatever a tool
    lexicon says ("Ruby works at Acme": Ruby is a person); a tool slot takes a known
    tool or a capitalised name; an untyped slot only what :func:`strong` types.
    """
    text = _DETERMINER.sub("", strip_edges(phrase))
    if not text or len(text.split()) > _MAX_WORDS:
        return None
    if slot in ("person", "place", "organisation", "project"):
        found = strong(text)
        if found is not None and found.type in ("project", "server", "organisation"):
            return found if slot in ("organisation", "project") else None
        if slot == "place" and found is not None:
            return None  # "moved to Kubernetes": a tool, not a place
        return Mention(text, slot) if _proper(text) else None
    found = strong(text)
    if found is not None:
        return found
    if slot is not None and _proper(text):
        return Mention(text, slot)
    return None


def versioned(new: str, old: Mention | None) -> str:
    """ "from PostgreSQL 14 to 16": a bare version takes the old tool's name."""
    if old is not None and old.type == "tool" and re.fullmatch(r"v?\d+(?:\.\d+)*", new.strip()):
        base = old.name.rsplit(" ", 1)[0] if re.search(r"\s\d", old.name) else old.name
        return f"{base} {new.strip().lstrip('v')}"
    return new
