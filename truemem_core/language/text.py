"""Text helpers shared by the rule-based extractors: folding and sentence splitting."""

from __future__ import annotations

import re
import unicodedata

_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "`": "'", "\u00b4": "'"})
_SPACES = re.compile(r"[ \t\f\v\u00a0]+")
# A sentence ends at . ! ? or … followed by space (closing quotes allowed), at a
# full-width 。！？ (Chinese and Japanese put no space after them), or at a newline.
_BOUNDARY = re.compile(
    r"(?<=[.!?…])[\"')\]»”]*[ \t]+|(?<=[。！？])[」』）”]*[ \t]*|[ \t]*\n[\s]*")
# Abbreviations whose period does not end a sentence.
_ABBREVIATION = re.compile(
    r"(?:^|\s)(?:mr|mrs|ms|dr|prof|sr|sra|srta|st|jr|vs|e\.g|i\.e|approx|p\.ej|ud|uds)\.$",
    re.IGNORECASE,
)
_ABBREVIATION_END = 16  # characters: the longest abbreviation and the space before it


def normalise(text: str) -> str:
    """Straight apostrophes, single spaces, Unix newlines: what every pattern assumes."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").translate(_APOSTROPHES)
    return _SPACES.sub(" ", text).strip()


def fold(text: str) -> str:
    """Lower-case and strip accents *without changing the length*.

    Patterns match on the folded text and slice the original at the same offsets,
    so "Acuérdate" and "acuerdate" match alike and the fact keeps its accents.
    """
    if text.isascii():  # nothing to strip: a C loop instead of a Python one
        return text.lower()
    return "".join(unicodedata.normalize("NFD", ch)[0].lower()[0] for ch in text)


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` offsets of the sentences of ``text``, terminal punctuation included."""
    spans: list[tuple[int, int]] = []
    start = 0
    for boundary in _BOUNDARY.finditer(text):
        piece = text[start : boundary.start()]
        if _ends_with_abbreviation(piece) and "\n" not in boundary.group():
            continue
        spans.append((start, boundary.start()))
        start = boundary.end()
    spans.append((start, len(text)))
    return [(s, e) for s, e in spans if text[s:e].strip()]


def _ends_with_abbreviation(piece: str) -> bool:
    # Only the end is read: "Dr. Dr. Dr. …" must not rescan a growing piece each time.
    end = piece if len(piece) <= _ABBREVIATION_END else "x" + piece[-_ABBREVIATION_END:]
    return bool(_ABBREVIATION.search(end))


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text`` (normalise it first), stripped, punctuation kept."""
    return [text[s:e].strip() for s, e in sentence_spans(text)]


_EDGES = re.compile(r"^[\s\"'«“(\-–—,:;¿¡]+|[\s\"'»”)\-–—,:;.!?…]+$")


_PAIRS = {'"': '"', "”": "“", "»": "«"}  # a closing quote and its opening one


def strip_edges(text: str) -> str:
    """Remove surrounding quotes, dashes and trailing punctuation; a closing quote that
    closes a quotation inside the text stays ('Favourite novel is "Dune"')."""
    stripped = _EDGES.sub("", text.strip())
    tail = text.strip()[len(stripped):].lstrip(" ")  # what was cut at the end, if anything
    if tail[:1] in _PAIRS and _open_quotation(stripped, tail[0]):
        return stripped + tail[0]
    return stripped


def _open_quotation(text: str, closer: str) -> bool:
    opener = _PAIRS[closer]
    if opener == closer:
        return text.count(closer) % 2 == 1
    return text.count(opener) > text.count(closer)


def capitalise(text: str) -> str:
    """Upper-case the first letter only (``str.capitalize`` would lower the rest)."""
    return text[:1].upper() + text[1:]


def words(text: str) -> frozenset[str]:
    """A closed word list written as one space-separated string."""
    return frozenset(text.split())
