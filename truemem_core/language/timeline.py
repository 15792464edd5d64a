"""Questions about a sequence or an overview: "in what order did I…", "how has my plan
changed?", "summarise our conversations so far", "¿en qué orden…?", "resuma até agora".

Such a question is answered by what was said across the user's history, not by the
few turns that match it best (those cluster in one or two sessions): the context then
spreads its turns over time and lays them out in date order (``conversation.timeline``).
Pure regex work over the folded question (accents stripped), on the request path.
A pattern asks for a sequence word, a change verb after "how has/did", or an
overview; "in order to", "how do I change my password" and "what did I order" are
ordinary questions, and so is "walk me through how to…" (a how-to, not a history).
"""

from __future__ import annotations

import re

from truemem_core.language.text import fold, normalise

_CONVERSATIONS = r"(?:conversations?|sessions?|discussions?|chats?|talks?)"
_CONVERSAS = r"(?:conversas?|conversaciones|sess(?:oes|iones)|charlas|discuss?(?:oes|iones)|chats?)"

_PATTERNS = [
    # English: order and sequence
    r"\bin\s+(?:what|which)\s+order\b",
    r"\b(?:the|an?)\s+order\s+(?:in\s+which|that|i|we)\b",
    r"\bthe\s+order\s+of\b(?!\s+magnitude)",
    r"\bin\s+(?:chronological|date|time)\s+order\b",
    r"\bin\s+order\s*[?.!]*$",
    r"\b(?:sequence|chronolog\w*|timeline|time\s+line)\b",
    # English: change over time
    r"\bhow\s+(?:has|have|had)\b[^?.!]{0,80}?\b(?:changed|evolved|progressed|developed|"
    r"shifted|grown|improved|gone)\b",
    r"\bhow\s+did\b[^?.!]{0,80}?\b(?:change|evolve|progress|shift|grow)\b",
    r"\bhow\b[^?.!]{0,80}?\b(?:changed|evolved|progressed|developed|shifted|grew|improved)"
    r"\s+(?:over|since|through|across|during)\b",
    r"\b(?:evolution|progression)\b",
    # English: overview
    r"\b(?:summar(?:y|ies|i[sz]e|i[sz]ing)|recap|overview)\b",
    r"\b(?:so|thus)\s+far\b|\bup\s+(?:to|until)\s+now\b",
    r"\bover\s+(?:time|the\s+course\b|the\s+(?:past|last)\s+(?:few\s+)?(?:days|weeks|months|years))",
    rf"\b(?:across|throughout|over|during|in)\s+(?:all\s+)?(?:of\s+)?our\s+{_CONVERSATIONS}\b",
    # Spanish and Portuguese: order and sequence ("orden"/"ordem")
    r"\b(?:en|em)\s+(?:que|cual|qual)\s+orde[nm]\b",
    r"\borde[nm]\s+(?:en\s+(?:el\s+)?que|em\s+que|cronologic[oa])\b",
    r"\b(?:secuencia|sequencia|cronologi\w*|linea\s+de\s+tiempo|linha\s+do\s+tempo)\b",
    # change over time
    r"\bcomo\s+(?:ha|han|he|hemos|tem|teem|tenho|temos)\s+(?:\w+\s+)?"
    r"(?:cambiado|evolucionado|progresado|avanzado|mudado|evoluido|progredido|avancado)\b",
    r"\bcomo\b[^?.!]{0,80}?\b(?:cambio|evoluciono|progreso|avanzo|mudou|evoluiu|progrediu|"
    r"avancou)\b",
    r"\b(?:evolucion|evolucao|progresion|progressao)\b",
    # overview
    r"\b(?:resum(?:en|enes|ir|iendo|ido|a|as|o|os|ame|eme|ime|amos)|recapitula\w*)\b",
    r"\b(?:hasta\s+ahora|hasta\s+el\s+momento|ate\s+agora|ate\s+o\s+momento)\b",
    r"\b(?:con|com)\s+el\s+tiempo\b|\bcom\s+o\s+tempo\b|\ba\s+lo\s+largo\s+de\b|\bao\s+longo\s+d",
    rf"\b(?:en|em|durante)\s+(?:todas\s+)?(?:nuestras|nossas|as\s+nossas|las)\s+{_CONVERSAS}\b",
]
_ASKS = re.compile("|".join(f"(?:{p})" for p in _PATTERNS))
# The patterns that are phrases (no words of the question's own between their words):
# what ``topic_of`` leaves out.
_FRAMING = re.compile("|".join(f"(?:{p})" for p in _PATTERNS if "{0,80}" not in p))
_READ_CHARS = 2_000  # a question states what it asks early; a pasted text is not read whole


def asks_for_timeline(question: str) -> bool:
    """Whether ``question`` asks for an order, a timeline, a progression or an overview
    of what was said (English, Spanish, Portuguese)."""
    return bool(_ASKS.search(fold(normalise(question[:_READ_CHARS]))))


def topic_of(question: str) -> str:
    """``question`` without the words that ask for a sequence or an overview: what it is
    about, to search by ("in what order did I fix the boiler and the roof?" -> "did I
    fix the boiler and the roof?")."""
    folded = fold(question)
    kept, start = [], 0
    for match in _FRAMING.finditer(folded):
        kept.append(question[start:match.start()])
        start = match.end()
    kept.append(question[start:])
    topic = " ".join(" ".join(kept).split())
    return topic if re.search(r"\w", topic) else question  # nothing left: ask it all
