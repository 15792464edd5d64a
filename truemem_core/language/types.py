"""The value every extractor returns: a candidate fact about the user."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["semantic", "episodic"]


@dataclass(frozen=True, slots=True)
class CandidateFact:
    """A short third-person fact about the user, not yet stored.

    ``importance`` follows the 1-5 scale of SPEC §5: 5 is reserved for explicit
    requests, automatic extraction gives 1-4. ``kind`` is ``"semantic"`` for a
    stable fact and ``"episodic"`` for an event. ``replaces`` holds the prompt
    handles ("m2") of the known facts an LLM judged this one to make untrue.
    ``graph`` is the JSON of the entities and relations an LLM read in the fact,
    as it gave them (``graph.extraction`` reads it strictly when the fact is
    stored); None when it gave none (the graph rules read the fact's text instead).
    """

    text: str
    importance: int
    kind: Kind
    replaces: tuple[str, ...] = ()
    graph: str | None = None
