"""Standing instructions: "Always include version numbers when I ask about
dependencies", "Never use emojis in your replies", "From now on, answer in French",
"Siempre respóndeme en español", "A partir de agora, responda em português".

An instruction the user gives for every later answer is an explicit instruction
(importance 5, critical: served in every context, §5 of the spec), whichever words
ask for it; "remember that…" is one way (``triggers``), a sentence that opens with
"always", "never" or "from now on" is another. Such a sentence counts when:

- it opens the sentence (after a filler: "Oh, and please always…"), in the user's own
  words (``quoting``: a pasted email's "Always forward invoices to…" is not theirs);
- the word after "always" / "never" / "from now on" can be a verb in the imperative: not
  a subject, an auxiliary or a past ("Always the same problem", "Never been to Paris",
  "never mind", "From now on, I'll…", "Siempre he querido…", "Sempre uso…");
- it speaks of the exchange: of the user or of the assistant ("I", "me", "my", "you",
  "your", and the Spanish and Portuguese forms), so a maxim quoted in passing
  ("Always test in production.") is not taken for an instruction;
- it is not a question.

The fact keeps the user's words, marked as asked ("Asked you to always include
version numbers when they ask about software dependencies"): stored memories reach
the model as what the user said, never as instructions of their own. Pure regex
work over the user's sentences, on the request path and in the extraction job.
"""

from __future__ import annotations

import re

from truemem_core.language import quoting
from truemem_core.language.perspective import Lang, third_person
from truemem_core.language.text import fold, normalise, sentence_spans, strip_edges

MOST_CHARS = 300  # a longer "instruction" is a paragraph of prose, not one standing order
READ_CHARS = 10_000  # instructions stand in a message's own text, not deep in a paste

_FILLER = re.compile(
    r"(?:(?:oh|and|also|ok|okay|so|but|btw|by\s+the\s+way|one\s+more\s+thing|please|pls|"
    r"plz|y|e|tambien|tambem|ademas|por\s+favor|pero|mas|bueno|vale|entao|olha)\b[\s,!:-]*)*")
_CLITIC = r"(?:(?:me|te|se|nos|le|les|lo|la|los|las)\s+)?"  # "nunca me respondas…"
_NEXT = r"[\s,]*(?:please\s+|por\s+favor\s+)?(?P<verb>[a-z][\w'-]*)"  # the word the verb is
_SAID: tuple[tuple[str, Lang], ...] = (
    (r"(?:always|never)\s+(?P<verb>[a-z][\w'-]*)", "en"),
    (rf"(?:from\s+now\s+on|going\s+forward){_NEXT}", "en"),
    (rf"(?:siempre|nunca|jamas)\s+{_CLITIC}(?P<verb>[a-z][\w'-]*)", "es"),
    (rf"(?:de\s+ahora\s+en\s+adelante|a\s+partir\s+de\s+ahora){_NEXT}", "es"),
    (rf"(?:sempre|nunca|jamais)\s+{_CLITIC}(?P<verb>[a-z][\w'-]*)", "pt"),
    (rf"(?:daqui\s+(?:em|para|pra)\s+(?:frente|diante)|a\s+partir\s+de\s+agora){_NEXT}", "pt"),
)
_OPENERS = [(re.compile(pattern), lang) for pattern, lang in _SAID]
# What cannot be an imperative there: a subject, an article, an auxiliary, an adverb,
# a past ("Never been to Paris", "Always wanted to…", "never mind", "Siempre he querido…"),
# or a request to remember ("Never forget that…" is ``triggers``' work).
_NOT_A_VERB = re.compile(
    r"(?:i|i'm|i've|i'd|i'll|we|we're|you|you're|he|she|it|it's|they|this|that|these|those|"
    r"there|the|a|an|my|your|our|their|his|her|its|been|be|being|was|were|is|are|am|had|has|"
    r"have|did|do|does|will|would|could|should|can|may|might|must|mind|again|ever|more|once|"
    r"before|after|enough|too|so|as|in|on|at|for|with|to|of|and|or|but|not|yes|no|really|"
    r"actually|just|quite|thought|knew|saw|went|got|made|said|felt|found|took|came|became|"
    r"heard|understood|seen|done|gone|known|forget|remember|olvides|olvide|esquecas|esqueca|"
    r"yo|tu|el|ella|nosotros|ellos|eu|voce|ele|nos|eles|um|uma|un|una|ha|han|hemos|habia|"
    r"fue|fui|era|es|son|esta|estoy|estaba|foi|sao|estou|tenho|tem|tinha|mais|antes|despues|"
    r"depois|nada|nadie|ninguem)"
    # English pasts in -ed; Spanish and Portuguese first persons and pasts
    r"|[a-z'-]{2,}[^e]ed|[a-z]+(?:o|amos|emos|imos|aba|aban|ado|ido|ei|ou)")
_EXCHANGE = {
    "en": re.compile(r"\b(?:i|i'm|i've|i'd|me|my|mine|you|your|yours|yourself)\b"),
    "es": re.compile(r"\b(?:yo|me|mi|mis|conmigo|tu|tus|te|ti|contigo|usted|\w+(?:ame|eme|ime))\b"),
    "pt": re.compile(r"\b(?:eu|me|mim|meu|minha|meus|minhas|comigo|voce|te|ti|seu|sua|"
                     r"\w+-me)\b"),
}
_WORDS = re.compile(r"always|never|now\s+on|forward|siempre|nunca|jam[aá]s|adelante|ahora|sempre|"
                    r"frente|diante|agora", re.IGNORECASE)
_ASKED: dict[Lang, str] = {"en": "Asked you to ", "es": "Pidió: ", "pt": "Pediu: "}


def directives(message: str) -> list[str]:
    """The standing instructions of ``message`` as facts, in order, each once."""
    if not worded(message[:READ_CHARS]):
        return []  # the common case on the request path: no such word at all
    reading = quoting.read(message[:READ_CHARS])
    return found(normalise(reading.text), fold(normalise(reading.masked())))


def worded(message: str) -> bool:
    """Whether ``message`` has a word an instruction opens with (a quick test first)."""
    return bool(_WORDS.search(message))


def found(text: str, folded: str) -> list[str]:
    """The standing instructions of a message read by ``quoting``: ``text`` normalised,
    ``folded`` the same with quotations masked, offsets alike."""
    facts: list[str] = []
    for start, end in sentence_spans(folded):
        sentence = folded[start:end].rstrip()
        if sentence.endswith("?") or end - start > MOST_CHARS:
            continue
        opened = _FILLER.match(sentence)
        lead = opened.end() if opened else 0
        opener = next(((m, lang) for pattern, lang in _OPENERS
                       if (m := pattern.match(sentence, lead))), None)
        if opener is None:
            continue
        match, lang = opener
        if _NOT_A_VERB.fullmatch(match["verb"]) or not _EXCHANGE[lang].search(sentence):
            continue
        fact = _fact(text[start + lead:end], lang)
        if fact and fact not in facts:
            facts.append(fact)
    return facts


def _fact(said: str, lang: Lang) -> str:
    """The instruction as asked: "Asked you to always include…" ("Pidió: siempre…")."""
    words = strip_edges(third_person(said, lang))
    if not re.search(r"[^\W\d_]", words):
        return ""
    if lang == "en" and not fold(words).startswith(("always ", "never ")):
        return "Asked: " + words[:1].lower() + words[1:]  # "from now on, answer…"
    return _ASKED[lang] + words[:1].lower() + words[1:]
