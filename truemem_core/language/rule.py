"""What one extraction rule is: a pattern, the kind of fact it finds, how to word it."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from truemem_core.language.perspective import Lang
from truemem_core.language.types import Kind

# Words a matched clause as a fact; None means "not a fact after all, try the next rule".
Render = Callable[[str, re.Match[str]], str | None]


@dataclass(frozen=True, slots=True)
class Rule:
    category: str  # "job", "pets"…: for benchmarks and debugging, never stored
    importance: int
    lang: Lang
    pattern: re.Pattern[str]  # matched at the start of the folded clause
    kind: Kind = "semantic"
    render: Render | None = None  # default: the whole clause in the third person


def group(
    category: str,
    importance: int,
    lang: Lang,
    patterns: Sequence[str],
    *,
    kind: Kind = "semantic",
    render: Render | None = None,
) -> list[Rule]:
    """Rules sharing everything but their pattern, in order."""
    return [Rule(category, importance, lang, re.compile(p), kind, render) for p in patterns]
