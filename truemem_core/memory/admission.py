"""Admission control: is a candidate memory worth storing? Pure scoring, no I/O.

Each candidate gets five factors in [0, 1]:

- novelty: is it new? From the highest cosine similarity to the user's stored
  memories. Dedup already merged everything at or above 0.85, so this mostly
  sorts the 0.6-0.85 band: paraphrases and near-restatements.
- specificity: is it concrete enough to be useful? Names, numbers and content
  words raise it; filler ("Likes things", "Is fine") and one-word texts lower it.
- reliability: how far to trust the source: explicit 1.0, manual 0.9,
  extracted 0.6.
- consistency: 1.0 unless it contradicts a stored fact without clearly
  superseding it (a clean update, "Lives in Berlin" after "Lives in Madrid",
  is consistent).
- relevance: given by the caller, e.g. similarity to the conversation.

The score is their weighted geometric mean, so a single factor near zero (pure
filler, a near-duplicate) sinks the candidate however good the rest is, which
a weighted average would hide. Below the threshold (0.3) it is rejected, and
``Admission`` says why. Explicit requests ("remember that…") bypass admission:
the user asked; they are still scored, for the record.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, fields

from truemem_core.language.text import fold, normalise, words
from truemem_core.records import Source

DEFAULT_THRESHOLD = 0.3
RELIABILITY: dict[Source, float] = {"explicit": 1.0, "manual": 0.9, "extracted": 0.6}
NOVELTY_FLOOR = 0.6  # at or below this similarity a candidate is fully novel
DUPLICATE_SIMILARITY = 0.85  # dedup merges from here: nothing new at all
CONTRADICTION_CONSISTENCY = 0.2
_EPSILON = 0.01  # a factor of 0 still leaves a finite (tiny) score

_STOP = words(
    """a an the is are was were be been being am has have had do does did to of in on at for
    with by from and or but as it its this that these those he she they i we you his her their
    my our your me him them user user's also very really just so too not no yes there here
    about some any all more most much many bit kind sort quite rather pretty likes like loves
    love enjoys enjoy prefers prefer wants want needs need gets get got goes go going makes make
    does doing thinks think feels feel seems seem says said knows know works work uses use
    el la los las un una unos unas de del al en con por para y o pero que es son era fue ser
    esta estan estar ha han he tiene tienen le les lo se su sus mi mis muy mas tambien si ya
    gusta gustan encanta encantan prefiere quiere necesita hace usa trabaja"""
)
_VAGUE = words(
    """thing things stuff something anything everything somewhat fine ok okay good nice cool
    great bad whatever sometimes often etc person people guy way ways lot lots interesting
    important fun cosa cosas algo bien bueno buena vale normal todo nada persona gente
    interesante importante divertido"""
)
_TOKEN = re.compile(r"[^\W_]+(?:[.'\-][^\W_]+)*")


@dataclass(frozen=True, slots=True)
class AdmissionFactors:
    novelty: float
    specificity: float
    reliability: float
    consistency: float
    relevance: float


@dataclass(frozen=True, slots=True)
class AdmissionWeights:
    novelty: float = 0.3
    specificity: float = 0.3
    reliability: float = 0.15
    consistency: float = 0.15
    relevance: float = 0.1

    def __post_init__(self) -> None:
        values = asdict(self).values()
        if any(not w >= 0 for w in values) or not any(values):
            raise ValueError("admission weights must be >= 0 and not all 0")


DEFAULT_WEIGHTS = AdmissionWeights()


@dataclass(frozen=True, slots=True)
class Admission:
    score: float
    admitted: bool
    factors: AdmissionFactors
    threshold: float = DEFAULT_THRESHOLD
    bypassed: bool = False  # explicit: admitted whatever the score

    def weakest(self) -> str:
        """The factor that pulled the score down most."""
        return min(fields(self.factors), key=lambda f: getattr(self.factors, f.name)).name

    def explain(self) -> str:
        """One line: the verdict, the score against the threshold, every factor."""
        parts = ", ".join(f"{k} {v:.2f}" for k, v in asdict(self.factors).items())
        if self.bypassed:
            return f"admitted (explicit, score {self.score:.2f}): {parts}"
        if self.admitted:
            return f"admitted ({self.score:.2f} >= {self.threshold:.2f}): {parts}"
        return (f"rejected ({self.score:.2f} < {self.threshold:.2f}), weakest "
                f"{self.weakest()}: {parts}")


def novelty(max_similarity: float) -> float:
    """1 up to ``NOVELTY_FLOOR``, falling linearly to 0 at ``DUPLICATE_SIMILARITY``."""
    if math.isnan(max_similarity):
        raise ValueError("max_similarity_to_stored is NaN")
    span = DUPLICATE_SIMILARITY - NOVELTY_FLOOR
    return min(1.0, max(0.0, (DUPLICATE_SIMILARITY - max_similarity) / span))


def specificity(text: str) -> float:
    """How concrete ``text`` is: content words, names and numbers up; filler down."""
    tokens = _TOKEN.findall(normalise(text))
    content = [t for t in tokens if fold(t).lower() not in _STOP | _VAGUE]
    if not content:
        return 0.0
    vague = sum(fold(t).lower() in _VAGUE for t in tokens)
    named = any(t[:1].isupper() for t in tokens[1:]) or any(
        sum(c.isupper() for c in t) >= 2 for t in tokens)  # "Berlin", "SSL", "PostgreSQL"
    score = 0.2 + 0.15 * min(len(content), 4) + 0.15 * named
    score += 0.1 * any(c.isdigit() for c in text) - 0.1 * vague
    if len(tokens) < 2:  # a single word rarely says anything about someone
        score *= 0.5
    return min(1.0, max(0.0, score))


def consistency(*, contradicts_stored: bool, supersedes_stored: bool = False) -> float:
    return CONTRADICTION_CONSISTENCY if contradicts_stored and not supersedes_stored else 1.0


def combine(factors: AdmissionFactors, weights: AdmissionWeights = DEFAULT_WEIGHTS) -> float:
    """Weighted geometric mean of the factors, in [0, 1]."""
    pairs = [(getattr(factors, f.name), getattr(weights, f.name)) for f in fields(factors)]
    total = sum(w for _, w in pairs)
    log = sum(w * math.log(max(_EPSILON, min(1.0, v))) for v, w in pairs) / total
    return min(1.0, math.exp(log))


def score_candidate(
    text: str,
    *,
    source: Source,
    max_similarity_to_stored: float,
    contradicts_stored: bool,
    supersedes_stored: bool = False,
    relevance: float = 0.5,
    weights: AdmissionWeights = DEFAULT_WEIGHTS,
    threshold: float = DEFAULT_THRESHOLD,
) -> Admission:
    """Score a candidate memory and decide whether to store it.

    ``max_similarity_to_stored`` is the highest cosine similarity to the user's
    memories (0 when there are none). ``contradicts_stored`` means a stored fact
    conflicts with it; ``supersedes_stored`` that the conflict is a clean update
    (``decision.decide`` found the old fact superseded or ended), which is consistent.
    """
    if source not in RELIABILITY:
        raise ValueError(f"unknown source {source!r}")
    if not 0.0 <= relevance <= 1.0:
        raise ValueError("relevance must be in [0, 1]")
    if not 0.0 <= threshold <= 1.0:
        raise ValueError("threshold must be in [0, 1]")
    factors = AdmissionFactors(
        novelty=novelty(max_similarity_to_stored),
        specificity=specificity(text),
        reliability=RELIABILITY[source],
        consistency=consistency(contradicts_stored=contradicts_stored,
                                supersedes_stored=supersedes_stored),
        relevance=relevance,
    )
    score = combine(factors, weights)
    bypassed = source == "explicit"
    return Admission(score, bypassed or score >= threshold, factors, threshold, bypassed)
