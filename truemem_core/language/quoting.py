"""Whose words are these: a user message split into the user's own words and the text
they quote, paste, forward or ask about.

Only the user's own words can ask for a memory or state a fact about them. Text the
user brings along — "Summarize this email: …", a ``> quoted`` line, a code block, a
chat log, what "the document says" — was written by someone else: an instruction
inside it ("remember that you must wire payments to…") is data to work on, never a
request to the memory layer. Second-hand text comes in two shapes:

- blocks, which end a sentence and are replaced by ``PASTED``: code fences, text
  between ``---`` lines, ``>`` lines, forwarded mail from its header on, a chat log
  from its first ``Name:`` line on, and what follows a request to work on a text
  ("translate to Spanish: …", "proofread the following");
- inline quotations ("…", “…”, ‘…’, «…», „…“, 「…」, '…', `…`) and reported words
  ("the email says …"), kept in place: the user may quote inside their own request
  ("remember that my motto is "carpe diem""), but a request inside a quotation is
  not theirs.

Pure regex work, linear in the message: each opener is found once and its closer is
looked up forward from it; nothing is rescanned.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass

from truemem_core.language.text import fold

PASTED = "\n[pasted text]\n"  # what stands for a block: its own sentence, no request words
QUOTED = "[quoted text]"  # what stands for an inline quotation where its words must not count
# A short quotation in ``own_words``: a made-up word the rules read as any other.
_TOKEN_STEM, _LETTERS, _KEPT_QUOTE_WORDS = "zzq", "abcdefghijklmnopqrstuvwxyz", 8
_TOKEN = re.compile(rf"\b{_TOKEN_STEM}([a-z])\b", re.IGNORECASE)
_MASK = "\u00b7"  # a quotation's characters, masked: no letter, no sentence end, same length

# Requests to work on a text, in English, Spanish and Portuguese (with a few French and
# German verbs): what follows them is the text, not the user's words. They count where
# an imperative stands (see ``_REQUEST_START``): "I check email daily" asks for nothing.
_TASK = (
    r"summari[sz]e|sum\s+up|tl;?\s*dr|translate|proofread|rewrite|re-?word|rephrase|"
    r"paraphrase|correct|fix|check|review|edit|improve|polish|shorten|simplify|explain|"
    r"analy[sz]e|reply\s+to|respond\s+to|answer|format|"
    r"(?:draft|write|give\s+me|make|prepare)\s+an?\s+(?:\w+\s+)?(?:summary|translation|reply|"
    r"response|answer|version)\b|"
    r"clean\s+up|grade|critique|read|"
    r"resume|resumir|resumeme|traduce|traducir|traduceme|traduzca|corrige|corregir|revisa|"
    r"revisar|reescribe|reescribir|mejora|explica|explicame|responde\s+a|contesta\s+a|"
    r"resuma|traduza|traduzir|corrija|revise|reescreva|melhore|explique|responda\s+a|"
    r"traduis|traduire|relis|ubersetze|ubersetzen|fasse|korrigiere|uberprufe"
)
# "Here is the email:", "aquí tienes el texto": a text follows (when one is named).
_HERE = (
    r"here\s+(?:is|are)|here'?s|below\s+is|aqui\s+(?:tienes|tiene|esta|estan|va|vai)|segue|"
    r"voici|hier\s+ist"
)
# What a text can be, so that "proofread the following email?" marks what comes after
# the sentence even without a colon.
_TEXT_NOUN = (
    r"e-?mails?|mails?|messages?|texts?|documents?|docs?|letters?|notes?|paragraphs?|"
    r"passages?|articles?|posts?|comments?|reviews?|chats?|conversations?|threads?|"
    r"transcripts?|logs?|snippets?|code|scripts?|sentences?|tweets?|memos?|reports?|essays?|"
    r"pages?|files?|excerpts?|quotes?|prompts?|following|below|"
    r"correos?|mensajes?|textos?|documentos?|cartas?|notas?|parrafos?|articulos?|siguiente|"
    r"codigo|conversacion|mensagens?|paragrafos?|artigos?|seguinte|a\s+seguir|conversa"
)
# Reported words: "the email says …", "mi jefe dijo: …".
_SAYS = (
    r"says|said|writes|wrote|reads|states|stated|asks|asked|told\s+me|tells\s+me|"
    r"dice|decia|dijo|escribio|pone|diz|disse|escreveu"
)
_OPENERS = re.compile(
    r"(?P<fence>```|~~~)"
    r"|(?P<blockquote>(?:^|(?<=\n))[ \t]*>)"
    r"|(?P<forward>(?:^|(?<=\n))[ \t]*(?:-+\s*(?:forwarded\s+message|original\s+message|"
    r"mensaje\s+(?:reenviado|original)|mensagem\s+(?:encaminhada|original))\s*-*|"
    r"begin\s+forwarded\s+message\s*:|on\s[^\n]{4,120}\swrote\s*:|"
    r"(?:from|de|von)\s*:[^\n]*\n[ \t]*(?:sent|date|to|subject|enviado|fecha|para|asunto|"
    r"assunto|data|gesendet|an|betreff)\s*:))"
    r"|(?P<rule>-{3,}|={3,}|_{3,})"
    rf"|(?P<here>(?<![\w'])(?:{_HERE})\b)"
    rf"|(?P<task>(?<![\w'])(?:{_TASK})\b)"
    rf"|(?P<says>(?<![\w'])(?:{_SAYS})\b)"
    r"|(?P<quote>[\"“”‘«„「『`]|(?<![\w'])'(?=\w))"
)
_DELIMITED = ("fence", "rule", "quote", "blockquote")
_NOT_SPACE = re.compile(r"\S")
_CLOSERS = {'"': '"', "“": "”", "”": "”", "‘": "’", "«": "»", "„": "“", "「": "」", "『": "』",
            "`": "`"}
# The words that may stand before a task word at the start of a sentence.
_REQUEST_START = re.compile(
    r"(?:[\s,;!¡¿()\-–—]+|please|pls|plz|kindly|(?:can|could|would|will)\s+(?:you|u)|"
    r"help\s+me(?:\s+to)?|i\s+(?:need|want)\s+you\s+to|i'?d\s+like\s+you\s+to|now|ok|okay|"
    r"hey|hi|hello|and|also|then|just|quickly|first|por\s+favor|(?:me\s+)?(?:puedes|podrias)|"
    r"quiero\s+que|ayudame\s+a|(?:voce\s+)?(?:pode|poderia)|me\s+ajuda\s+a|oi|ola|hola|"
    r"peux-tu|pouvez-vous|kannst\s+du|bitte)*"
)
_CLAUSE_START = re.compile(r"[.!?:;\n。！？][^.!?:;\n。！？]*$")
# After a task word, the text starts at a colon or a line break within a few words...
_TASK_COLON = re.compile(r"[^\n:.?!]{0,80}?(?::|\n)")
# ...or after the sentence, when it names a text and ends soon after ("proofread the
# following?"); "read my notes and remember that…" runs on: no text follows it.
_TASK_NOUN = re.compile(
    rf"[^\n.?!:]{{0,80}}?\b(?:{_TEXT_NOUN})\b[^\n.?!:]{{0,40}}(?:[.?!:]+|(?=\n)|$)")
_SAYS_REPORT = re.compile(r"\s*(?:that\s*)?(?P<colon>:)?\s*(?=\w+\W+\w)")
_SENTENCE_END = re.compile(r"[.!?…。！？](?=\s|$)|\n")
# A chat log: lines that start with a speaker ("Bob:", "[10:32] Ana:", "User:").
_SPEAKER = re.compile(
    r"^[ \t]*(?:\[?\d{1,2}:\d{2}(?::\d{2})?\]?\s*)?(?:[A-Z][\w.-]{0,20}|user|assistant|"
    r"human|ai|bot|system)(?:\s[A-Z][\w.-]{0,20})?\s*:[ \t]*\S",
    re.MULTILINE,
)
# Labels that open a user's own line ("Note: I'm vegan"): not speakers.
_OWN_LABELS = re.compile(
    r"[ \t]*(?:note|remember|reminder|ps|p\.s|btw|update|fyi|edit|important|nota|recuerda|"
    r"lembre|ojo|also|and|context|question|pregunta|pergunta|re|subject|asunto|assunto)\s*:",
    re.IGNORECASE)
_APOSTROPHE_CLOSE = re.compile(r"(?<=[^\s'])'(?!\w)")
_APOSTROPHE_QUOTE_CHARS = 100  # a quotation in single quotes is short: "'Dune'", "'ok'"


@dataclass(frozen=True, slots=True)
class Reading:
    """A message with its blocks replaced by ``PASTED``; ``quotes`` are the ``(start, end)``
    offsets in ``text`` of its inline quotations' contents."""

    text: str
    quotes: tuple[tuple[int, int], ...]
    second_hand: bool  # a block was pasted, or words longer than a title quoted or reported

    def masked(self) -> str:
        """``text`` with each quotation's characters (not its spaces) masked: the same
        length and whitespace, so offsets found in it hold in ``text``."""
        return self._replaced(lambda _, quoted: re.sub(r"\S", _MASK, quoted))

    def own_words(self) -> str:
        """``text`` with each quotation replaced: what the user said. A short one (a title,
        a name: "my favourite song is "Seven Nation Army"") becomes a word that
        ``restore`` turns back into it, so a fact the user states about it keeps it; a
        longer one becomes ``QUOTED``."""
        def replace(n: int, quoted: str) -> str:
            short = n < len(_LETTERS) and len(quoted.split()) <= _KEPT_QUOTE_WORDS
            return f"{_TOKEN_STEM}{_LETTERS[n]}" if short else QUOTED
        return self._replaced(replace)

    def restore(self, own: str) -> str:
        """Text made from ``own_words()`` with its quotations' words put back."""
        def back(found: re.Match[str]) -> str:
            start, end = self.quotes[_LETTERS.index(found.group(1).lower())]
            return self.text[start:end]
        return _TOKEN.sub(back, own)

    def _replaced(self, replace: Callable[[int, str], str]) -> str:
        out, last = [], 0
        for n, (start, end) in enumerate(self.quotes):
            out += [self.text[last:start], replace(n, self.text[start:end])]
            last = end
        out.append(self.text[last:])
        return "".join(out)


def read(message: str) -> Reading:
    """The user's own words of ``message``, and where it quotes or pastes."""
    return _Reader(message.replace("\r\n", "\n").replace("\r", "\n")).read()


class _Reader:
    """One left-to-right pass: each opener found once, its closer looked up forward."""

    def __init__(self, text: str) -> None:
        self.text, self.folded = text, fold(text)  # fold keeps offsets: "Resúmeme" matches
        self.out: list[str] = []
        self.quotes: list[tuple[int, int]] = []
        self.length = self.last = 0  # of what ``out`` holds; how far ``text`` is copied
        self.second_hand = False
        self.apostrophes: list[int] | None = None  # where a single quotation can close

    def read(self) -> Reading:
        text, folded = self.text, self.folded
        log = _chat_log_start(text)
        limit = len(text) if log is None else log
        pos = 0
        while (found := _OPENERS.search(folded, pos, limit)) is not None:
            kind, start, end = found.lastgroup, found.start(), found.end()
            if kind in ("fence", "rule"):
                closer = re.compile(re.escape(found.group()[:3]) + ("+" if kind == "rule" else ""))
                closed = closer.search(folded, end, limit)
                pos = closed.end() if closed else limit
                self._block(start, pos)
            elif kind == "blockquote":
                pos = _line_end(text, end, limit)
                self._block(start, pos)
            elif kind == "forward":
                pos = limit
                self._block(start, pos)
            elif kind in ("task", "here"):
                pos = self._task(kind, start, end, limit)
            elif kind == "says":
                pos = self._says(end, limit)
            else:
                pos = self._quote(found.group(), end, limit)
        if log is not None:
            self._block(log, len(text))
        self.out.append(text[self.last:])
        return Reading("".join(self.out), tuple(self.quotes), self.second_hand)

    def _task(self, kind: str | None, start: int, end: int, limit: int) -> int:
        """After "summarize this email:" the rest is the email, unless it is delimited
        (a quotation or a fence, then read as such)."""
        clause = _CLAUSE_START.search(self.folded, max(0, start - 80), start)
        before = self.folded[clause.start() + 1 if clause else max(0, start - 80) : start]
        if (clause is None and start > 80) or not _REQUEST_START.fullmatch(before):
            return end  # not a request: "I check email every morning"
        colon = None if kind == "here" else _TASK_COLON.match(self.folded, end, limit)
        named = colon or _TASK_NOUN.match(self.folded, end, limit)
        if named is None:
            return end
        body = _NOT_SPACE.search(self.folded, named.end(), limit)
        opener = body and _OPENERS.match(self.folded, body.start(), limit)
        if body is None or (opener and opener.lastgroup in _DELIMITED):
            return named.end()  # nothing after it, or the text is delimited
        self._block(body.start(), limit)
        return limit

    def _says(self, end: int, limit: int) -> int:
        """ "The email says: …" to the end, "the email says (that) …" to the sentence's
        end: inline, so a request the user makes around it keeps its words."""
        report = _SAYS_REPORT.match(self.folded, end, limit)
        if report is None:
            return end  # "she said yes."
        body = report.end()
        opener = _OPENERS.match(self.folded, body, limit)
        if opener is not None and opener.lastgroup in _DELIMITED:
            return body  # a quotation or a block: read as such
        stop = limit if report.group("colon") else _sentence_end(self.folded, body, limit)
        self._inline(body, stop, reported=True)
        return stop

    def _quote(self, opener: str, end: int, limit: int) -> int:
        if opener == "'":
            if self.apostrophes is None:  # found once: a message of "'a 'b 'c…" stays linear
                self.apostrophes = [m.start() for m in _APOSTROPHE_CLOSE.finditer(self.folded)]
            at = bisect_left(self.apostrophes, end)
            if at == len(self.apostrophes) or self.apostrophes[at] >= min(
                    limit, end + _APOSTROPHE_QUOTE_CHARS):
                return end  # an apostrophe: "'cause", "'90s"
            close_at = self.apostrophes[at]
        else:
            found = self.folded.find(_CLOSERS[opener], end, limit)
            close_at = limit if found < 0 else found  # an unclosed quotation runs to the end
        self._inline(end, close_at)
        return min(close_at + 1, limit)

    def _inline(self, start: int, end: int, *, reported: bool = False) -> None:
        """A quotation, or words reported ("the email says…"): a short quotation (a title,
        a name) is part of what the user states, not second-hand text."""
        self._copy(start)
        self.quotes.append((self.length, self.length + end - start))
        self._copy(end)
        self.second_hand |= reported or len(self.text[start:end].split()) > _KEPT_QUOTE_WORDS

    def _block(self, start: int, end: int) -> None:
        self._copy(start)
        self.out.append(PASTED)
        self.length += len(PASTED)
        self.last, self.second_hand = end, True

    def _copy(self, upto: int) -> None:
        self.out.append(self.text[self.last:upto])
        self.length += upto - self.last
        self.last = upto


def _line_end(text: str, start: int, limit: int) -> int:
    at = text.find("\n", start, limit)
    return limit if at < 0 else at


def _sentence_end(text: str, start: int, limit: int) -> int:
    found = _SENTENCE_END.search(text, start, limit)
    return found.end() if found else limit


def _chat_log_start(text: str) -> int | None:
    """Where a pasted chat log begins: the first of two or more speaker lines."""
    speakers = [m for m in _SPEAKER.finditer(text) if not _OWN_LABELS.match(m.group())]
    return speakers[0].start() if len(speakers) >= 2 else None
