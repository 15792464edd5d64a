"""Reading language: what a message says about its user. Pure functions, no I/O, with
two exceptions: the LLM calls, through the ``LLM`` protocol, and ``offload``, which
manages a helper child process that reads long texts with the same functions.

- ``detect_explicit``: "remember that…" requests (request path, importance 5)
- ``extract_facts``: rule-based facts from a user message (no LLM configured)
- ``quoting``: the user's own words of a message, apart from what it quotes or pastes
- ``summarize_extractive``: running summary without an LLM
- ``extract_with_llm`` / ``summarize_with_llm``: the same with any :class:`LLM`
- ``classify``: episodic or semantic; ``claims`` / ``contradiction``: which stored
  fact a new one supersedes; ``gist``: a fact's content words and polarity, which
  dedup's decision compares
- ``asks_for_timeline``: a question about an order, a progression or an overview;
  ``topic_of``: what such a question is about
- ``asks_about_the_user``: a question about what the user said or did (``speaker``)
"""

from truemem_core.language import quoting
from truemem_core.language.llm import (
    EXTRACTION_PROMPT,
    LLM,
    SUMMARY_PROMPT,
    ChatMessage,
    ExtractionParseError,
    build_extraction_messages,
    build_summary_messages,
    clean_summary,
    extract_with_llm,
    known_handle,
    parse_facts,
    summarize_with_llm,
)
from truemem_core.language.rule_extractor import extract_facts, extract_labelled
from truemem_core.language.speaker import asks_about_the_user
from truemem_core.language.summarize import summarize_extractive
from truemem_core.language.timeline import asks_for_timeline, topic_of
from truemem_core.language.triggers import detect_explicit
from truemem_core.language.types import CandidateFact, Kind

__all__ = [
    "EXTRACTION_PROMPT",
    "LLM",
    "SUMMARY_PROMPT",
    "CandidateFact",
    "ChatMessage",
    "ExtractionParseError",
    "Kind",
    "asks_about_the_user",
    "asks_for_timeline",
    "build_extraction_messages",
    "build_summary_messages",
    "clean_summary",
    "detect_explicit",
    "extract_facts",
    "extract_labelled",
    "extract_with_llm",
    "known_handle",
    "parse_facts",
    "quoting",
    "summarize_extractive",
    "summarize_with_llm",
    "topic_of",
]
