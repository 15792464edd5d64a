"""Whose words a question asks about: "What did I say about my boiler?", "Have I ever
worked with Jacobians?", "¿Cuándo empecé mi curso?", "Qual era o meu objetivo?".

A question in the first person (I, me, my; yo, me, mi; eu, me, meu) that does not also
speak of the assistant ("what did you suggest for my boiler?") asks about the user: its
evidence is what the user said, and ``search.recall`` weighs the assistant's past turns
by ``weight_other_speaker`` below the user's. The polite "can you…", "could you…", "do
you remember…" address the assistant without asking about it. In the public BEAM and
LongMemEval data the evidence of such questions is mostly the user's own turns; the
assistant's replies, long and about everything, otherwise outrank them on a long
history. Pure regex work, on the request path.
"""

from __future__ import annotations

import re

from truemem_core.language.text import fold, normalise

_READ_CHARS = 2_000  # a question says whom it is about early; a pasted text is not read
_POLITE = re.compile(
    r"\b(?:can|could|would|will)\s+you\b|\bdo\s+you\s+(?:remember|recall|know|think)\b|"
    r"\bthank\s+you\b|\b(?:puedes|podrias|puede|podria|pode|poderia|voce\s+pode)\b|"
    r"\b(?:te\s+acuerdas|recuerdas|voce\s+lembra|lembras)\b|\bgracias\b|\bobrigad[oa]\b")
_FIRST_PERSON = re.compile(
    r"\b(?:i|i'm|i've|i'd|i'll|me|my|mine|myself|yo|mi|mis|conmigo|eu|mim|meu|minha|meus|"
    r"minhas|comigo)\b")
_SECOND_PERSON = re.compile(
    r"\b(?:you|your|yours|you've|you'd|you're|tu|tus|ti|contigo|usted|ustedes|voce|voces|"
    r"teu|tua|teus|tuas)\b")


def asks_about_the_user(question: str) -> bool:
    """Whether ``question`` asks about what the user said or did, not the assistant."""
    folded = _POLITE.sub(" ", fold(normalise(question[:_READ_CHARS])))
    return bool(_FIRST_PERSON.search(folded)) and not _SECOND_PERSON.search(folded)
