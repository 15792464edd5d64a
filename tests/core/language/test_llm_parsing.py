"""LLM extraction and summaries: tolerant parsing, one retry, never garbage."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence

import pytest

from truemem_core.language import (
    EXTRACTION_PROMPT,
    LLM,
    SUMMARY_PROMPT,
    CandidateFact,
    ChatMessage,
    ExtractionParseError,
    build_extraction_messages,
    extract_with_llm,
    known_handle,
    parse_facts,
    summarize_with_llm,
)

VALID = '{"facts": [{"text": "Is allergic to peanuts", "importance": 4, "kind": "semantic"}]}'
PEANUTS = [CandidateFact("Is allergic to peanuts", 4, "semantic")]


class ScriptedLLM:
    """Answers with the queued strings in order and records every call."""

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.calls: list[list[ChatMessage]] = []

    async def acomplete(self, messages: Sequence[ChatMessage]) -> str:
        self.calls.append(list(messages))
        return self.answers.pop(0)


class FailingLLM:
    async def acomplete(self, messages: Sequence[ChatMessage]) -> str:
        raise ConnectionError("provider down")


def test_a_scripted_fake_is_an_llm() -> None:
    assert isinstance(ScriptedLLM(), LLM)


# ------------------------------------------------------------------ parse_facts
@pytest.mark.parametrize(
    "raw",
    [
        VALID,
        f"```json\n{VALID}\n```",
        f"```\n{VALID}\n```",
        f"Here are the facts I found:\n{VALID}\nLet me know if you need more.",
        '[{"text": "Is allergic to peanuts", "importance": 4, "kind": "semantic"}]',
        '{"facts": [{"text": "Is allergic to peanuts", "importance": 4, "kind": "semantic",},],}',
        '{"facts": [{"text": "  Is allergic to peanuts. ", "importance": "4"}]}',
        '{"memories": [{"text": "Is allergic to peanuts", "importance": 4}]}',
        '{"text": "Is allergic to peanuts", "importance": 4}',
        '{"facts": [{"text": "Is allergic to peanuts", "importance": 4.2, "kind": "SEMANTIC"}]}',
    ],
)
def test_tolerated_shapes(raw: str) -> None:
    assert parse_facts(raw) == PEANUTS


def test_truncated_output_keeps_the_complete_facts() -> None:
    raw = (
        '{"facts": [{"text": "Lives in Berlin", "importance": 4, "kind": "semantic"}, '
        '{"text": "Likes tea", "importance": 3, "kind": "semantic"}, {"text": "Has a d'
    )
    assert [f.text for f in parse_facts(raw)] == ["Lives in Berlin", "Likes tea"]


def test_truncated_inside_a_fact_drops_that_fact() -> None:
    raw = '```json\n{"facts": [{"text": "Lives in Berlin", "importance": 4}, {"text": "Likes'
    assert [f.text for f in parse_facts(raw)] == ["Lives in Berlin"]


def test_missing_closing_brace_after_the_list() -> None:
    assert parse_facts('{"facts": []') == []


@pytest.mark.parametrize("raw", ['{"facts": []}', "[]", '```json\n{"facts": []}\n```'])
def test_an_explicit_empty_list_is_valid(raw: str) -> None:
    assert parse_facts(raw) == []


@pytest.mark.parametrize(
    ("importance", "expected"),
    [(5, 4), (9, 4), (0, 1), (-3, 1), (2, 2), (2.6, 3), ("high", 3), (None, 3), (True, 3)],
)
def test_importance_is_clamped_to_one_to_four(importance: object, expected: int) -> None:
    raw = f'{{"facts": [{{"text": "Likes tea", "importance": {json.dumps(importance)}}}]}}'
    assert parse_facts(raw)[0].importance == expected


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("episodic", "episodic"),
        ("event", "semantic"),
        (None, "semantic"),
        (" Episodic ", "episodic"),
    ],
)
def test_unknown_kind_becomes_semantic(kind: object, expected: str) -> None:
    raw = f'[{{"text": "Went to Rome", "importance": 2, "kind": {json.dumps(kind)}}}]'
    assert parse_facts(raw)[0].kind == expected


def test_bad_items_are_dropped_and_duplicates_merged() -> None:
    raw = """{"facts": [
        {"text": "", "importance": 3},
        {"text": "   ", "importance": 3},
        {"text": 42, "importance": 3},
        {"importance": 3},
        "Likes tea",
        {"text": "likes   TEA", "importance": 4},
        {"text": "%s", "importance": 2},
        7
    ]}""" % ("x" * 400)
    assert parse_facts(raw) == [CandidateFact("Likes tea", 4, "semantic")]


@pytest.mark.parametrize(
    ("replaces", "expected"),
    [
        (["m2"], ("m2",)),
        ([" M2 ", "m1", "m2"], ("m2", "m1")),
        ([], ()),
        (None, ()),
        ("m2", ()),  # not a list
        ({"m2": True}, ()),
        (2, ()),
        ([2, None, "", ["m1"], {"id": "m1"}, "m3"], ("m3",)),
        (["not a handle at all", "42"], ("not a handle at all", "42")),  # the caller filters
    ],
)
def test_replaces_is_read_leniently(replaces: object, expected: tuple[str, ...]) -> None:
    raw = json.dumps({"facts": [{"text": "Works at Globex", "replaces": replaces}]})
    assert parse_facts(raw) == [CandidateFact("Works at Globex", 3, "semantic", expected)]


def test_replaces_defaults_to_nothing_and_merges_over_duplicates() -> None:
    assert parse_facts(VALID)[0].replaces == ()
    raw = """{"facts": [
        {"text": "Works at Globex", "importance": 4, "replaces": ["m1"]},
        {"text": "works at globex", "importance": 2, "replaces": ["m3", "m1"]},
        "Likes tea"
    ]}"""
    assert parse_facts(raw) == [
        CandidateFact("Works at Globex", 4, "semantic", ("m1", "m3")),
        CandidateFact("Likes tea", 3, "semantic"),
    ]


@pytest.mark.parametrize(
    "raw",
    [
        "",
        "   ",
        "I could not find any facts worth remembering.",
        '{"facts": [{"text": "Lives in Ber',
        '{"note": "nothing here"}',
        '"just a string"',
        "{not json at all}",
    ],
)
def test_nothing_parseable_raises(raw: str) -> None:
    with pytest.raises(ExtractionParseError):
        parse_facts(raw)


def test_parse_error_is_a_value_error() -> None:
    assert issubclass(ExtractionParseError, ValueError)


# ------------------------------------------------------------------ prompts
def test_extraction_messages_carry_the_exchange_and_known_facts() -> None:
    known = ["Lives in Berlin", "Works\nat  Acme"]
    messages = build_extraction_messages("I'm vegan", "Noted!", known)
    assert messages[0] == {"role": "system", "content": EXTRACTION_PROMPT}
    assert messages[1]["role"] == "user"
    for part in ("I'm vegan", "Noted!", "- m1: Lives in Berlin", "- m2: Works at Acme"):
        assert part in messages[1]["content"]
    assert [known_handle(n) for n in range(3)] == ["m1", "m2", "m3"]
    assert "(none)" in build_extraction_messages("a", "b")[1]["content"]


def test_the_extraction_prompt_explains_kinds_and_replacements() -> None:
    for part in ('"replaces": []', "episodic", "an error and its cause", "semantic",
                 "refinement", "addition", "handles"):
        assert part in EXTRACTION_PROMPT


def test_the_extraction_prompt_asks_for_json_only() -> None:
    assert '{"facts": [' in EXTRACTION_PROMPT
    assert "ONLY" in EXTRACTION_PROMPT
    assert '{"facts": []}' in EXTRACTION_PROMPT


# ------------------------------------------------------------------ extract_with_llm
async def test_valid_answer() -> None:
    llm = ScriptedLLM(VALID)
    assert await extract_with_llm(llm, "I'm allergic to peanuts", "Noted.") == PEANUTS
    assert len(llm.calls) == 1


async def test_fenced_answer() -> None:
    llm = ScriptedLLM(f"```json\n{VALID}\n```")
    assert await extract_with_llm(llm, "I'm allergic to peanuts", "Noted.") == PEANUTS


async def test_prose_wrapped_answer() -> None:
    llm = ScriptedLLM(f"Sure! Here is the JSON:\n{VALID}\nHope this helps.")
    assert await extract_with_llm(llm, "I'm allergic to peanuts", "Noted.") == PEANUTS


async def test_truncated_answer_keeps_complete_facts() -> None:
    llm = ScriptedLLM(VALID[:-2] + ', {"text": "Lik')
    assert await extract_with_llm(llm, "I'm allergic to peanuts", "Noted.") == PEANUTS
    assert len(llm.calls) == 1


async def test_malformed_then_valid_retries_once(caplog: pytest.LogCaptureFixture) -> None:
    llm = ScriptedLLM("Sorry, I cannot do that.", VALID)
    with caplog.at_level(logging.WARNING, logger="truemem.extraction"):
        assert await extract_with_llm(llm, "I'm allergic to peanuts", "Noted.") == PEANUTS
    assert len(llm.calls) == 2
    retry = llm.calls[1]
    assert retry[:2] == llm.calls[0]
    assert retry[2] == {"role": "assistant", "content": "Sorry, I cannot do that."}
    assert retry[3]["role"] == "user" and "JSON" in retry[3]["content"]
    [record] = caplog.records
    assert record.levelno == logging.WARNING
    assert "Sorry, I cannot do that." in record.getMessage()


async def test_malformed_twice_returns_nothing_and_logs(caplog: pytest.LogCaptureFixture) -> None:
    llm = ScriptedLLM("not json", "still {not json")
    with caplog.at_level(logging.WARNING, logger="truemem.extraction"):
        assert await extract_with_llm(llm, "I'm allergic to peanuts", "Noted.") == []
    assert len(llm.calls) == 2
    assert [r.levelno for r in caplog.records] == [logging.WARNING, logging.ERROR]
    assert "not json" in caplog.records[0].getMessage()
    assert "still {not json" in caplog.records[1].getMessage()


async def test_empty_answer_is_retried_without_an_empty_assistant_turn(
    caplog: pytest.LogCaptureFixture,
) -> None:
    llm = ScriptedLLM("", '{"facts": []}')
    with caplog.at_level(logging.WARNING, logger="truemem.extraction"):
        assert await extract_with_llm(llm, "hello", "Hi!") == []
    assert [m["role"] for m in llm.calls[1]] == ["system", "user", "user"]
    assert caplog.records[0].levelno == logging.WARNING


async def test_known_facts_reach_the_prompt() -> None:
    llm = ScriptedLLM('{"facts": [{"text": "Lives in Berlin", "replaces": ["m1"]}]}')
    facts = await extract_with_llm(llm, "I moved to Berlin", "Nice!", ["Lives in Madrid"])
    assert facts == [CandidateFact("Lives in Berlin", 3, "semantic", ("m1",))]
    assert "- m1: Lives in Madrid" in llm.calls[0][1]["content"]


async def test_an_empty_list_is_not_retried() -> None:
    llm = ScriptedLLM('{"facts": []}')
    assert await extract_with_llm(llm, "hello", "Hi!") == []
    assert len(llm.calls) == 1


async def test_llm_errors_propagate() -> None:
    with pytest.raises(ConnectionError):
        await extract_with_llm(FailingLLM(), "hello", "Hi!")


# ------------------------------------------------------------------ summaries
@pytest.mark.parametrize(
    "raw",
    [
        "The user is Ana, a vegan engineer in Berlin.",
        "Here is the updated summary: The user is Ana, a vegan engineer in Berlin.",
        "Sure! Here's the summary:\nThe user is Ana, a vegan engineer in Berlin.",
        "Summary: The user is Ana, a vegan engineer in Berlin.",
        "```\nThe user is Ana, a vegan engineer in Berlin.\n```",
        "The user is Ana, a vegan engineer in Berlin.\n\nLet me know if you need anything else!",
    ],
)
async def test_summary_is_cleaned(raw: str) -> None:
    llm = ScriptedLLM(raw)
    summary = await summarize_with_llm(llm, "The user is Ana.", [("user", "I'm vegan")])
    assert summary == "The user is Ana, a vegan engineer in Berlin."
    system, user = llm.calls[0]
    assert system == {"role": "system", "content": SUMMARY_PROMPT}
    assert "The user is Ana." in user["content"] and "User: I'm vegan" in user["content"]


@pytest.mark.parametrize("raw", ["", "   ", "```\n```", "Here is the summary:"])
async def test_empty_summary_raises(raw: str) -> None:
    with pytest.raises(ExtractionParseError):
        await summarize_with_llm(ScriptedLLM(raw), None, [("user", "hi")])
