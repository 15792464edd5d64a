"""The LlamaIndex adapters, on every backend, with scripted models only."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest
from docs_blocks import three_lines
from fake_models import CapturingLLM, HashEmbedding
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from llama_index.core.chat_engine import (
    CondensePlusContextChatEngine,
    ContextChatEngine,
    SimpleChatEngine,
)
from llama_index.core.llms import MockFunctionCallingLLM
from llama_index.core.memory import Memory
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from llama_index.core.tools import FunctionTool
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from truemem_core import InvalidInputError, TrueMem
from truemem_integrations.llama_index import (
    LlamaIndexEmbedder,
    LlamaIndexLLM,
    TrueMemMemory,
    TrueMemMemoryBlock,
)

ALLERGY = "Remember that I'm allergic to shellfish"
JOB = "I work as a pilot at SkyAir"
# LlamaIndex's workflow agents touch deprecated pydantic attributes when built (its bug).
AGENT_WARNINGS = pytest.mark.filterwarnings(
    "ignore::pydantic.warnings.PydanticDeprecationWarning")


def texts(memory: TrueMem, user_id: str = "ana") -> set[str]:
    return {m.text for m in memory.list_memories(user_id)}


def turns(memory: TrueMem, session_id: str, user_id: str = "ana") -> list[tuple[str, str]]:
    return [(m.role, m.content) for m in memory.sessions.get(user_id, session_id).recent]


def system_text(messages: Sequence[ChatMessage]) -> str:
    return "\n".join(m.content or "" for m in messages if m.role == MessageRole.SYSTEM)


class FixedRetriever(BaseRetriever):
    """A document retriever for the RAG engines: always the same passage."""

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return [NodeWithScore(node=TextNode(text="SkyAir crews get 20% off at Ramiro."),
                              score=1.0)]


# --------------------------------------------------------------- three lines


def test_the_documented_three_lines_add_memory_to_a_chat_engine(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRUEMEM_DATABASE_URL", store_url)
    llm = CapturingLLM(replies=["Noted!", "Nice!", "Try the grilled fish."])
    namespace: dict[str, Any] = {"llm": llm, "SimpleChatEngine": SimpleChatEngine}
    exec(three_lines("llama_index"), namespace)  # exactly the lines in docs/integrations.md
    chat_engine, memory = namespace["chat_engine"], namespace["memory"]
    store: TrueMem = memory.memory
    try:
        assert str(chat_engine.chat(ALLERGY)) == "Noted!"
        chat_engine.chat(JOB)
        store.drain()
        assert str(chat_engine.chat("Where should I eat?")) == "Try the grilled fish."
        assert texts(store) == {"Is allergic to shellfish", "Works as a pilot at SkyAir"}
        last = llm.prompts[-1]
        assert "] Is allergic to shellfish" in system_text(last)
        assert "] Works as a pilot at SkyAir" in system_text(last)
        assert [m.content for m in last if m.role != MessageRole.SYSTEM] == [
            ALLERGY, "Noted!", JOB, "Nice!", "Where should I eat?"]
    finally:
        store.close()


# --------------------------------------------------------------- the chat engines


@pytest.mark.parametrize("argument", ["token_limit", "chat_history", "llm"])
def test_chat_memory_buffer_arguments_are_refused_not_dropped(
    memory: TrueMem, argument: str
) -> None:
    with pytest.raises(InvalidInputError, match=f"takes no {argument}"):
        TrueMemMemory.from_defaults(memory, "ana", "s", **{argument: 3000})


async def test_simple_chat_engine_async(memory: TrueMem) -> None:
    llm = CapturingLLM(replies=["Noted!", "Fish is out."])
    engine = SimpleChatEngine.from_defaults(
        llm=llm, memory=TrueMemMemory.from_defaults(memory, "ana", "s"))
    await engine.achat(JOB)
    await memory.adrain()
    assert str(await engine.achat("Dinner?")) == "Fish is out."
    assert "] Works as a pilot at SkyAir" in system_text(llm.prompts[-1])
    assert turns(memory, "s")[-2:] == [("user", "Dinner?"), ("assistant", "Fish is out.")]


@pytest.mark.parametrize("engine_class", [ContextChatEngine, CondensePlusContextChatEngine])
def test_rag_chat_engines(memory: TrueMem, engine_class: Any) -> None:
    llm = CapturingLLM(replies=["Noted!"])
    memory.add_memory("ana", "Works as a pilot at SkyAir", importance=4)
    engine = engine_class.from_defaults(
        retriever=FixedRetriever(), llm=llm,
        memory=TrueMemMemory.from_defaults(memory, "ana", "rag"))
    engine.chat(ALLERGY)
    engine.chat("Any crew discounts for dinner?")
    answer = llm.prompts[-1]
    assert "20% off at Ramiro" in system_text(answer)  # the engine's own context
    assert "] Is allergic to shellfish" in system_text(answer)  # and TrueMem's
    assert "] Works as a pilot at SkyAir" in system_text(answer)
    recorded = turns(memory, "rag")
    assert [role for role, _ in recorded] == ["user", "assistant"] * 2
    assert [text for role, text in recorded if role == "user"] == [
        ALLERGY, "Any crew discounts for dinner?"]


@pytest.mark.parametrize("engine_class", [ContextChatEngine, CondensePlusContextChatEngine])
async def test_rag_chat_engines_async(memory: TrueMem, engine_class: Any) -> None:
    llm = CapturingLLM(replies=["Noted!"])
    engine = engine_class.from_defaults(
        retriever=FixedRetriever(), llm=llm,
        memory=TrueMemMemory.from_defaults(memory, "ana", "rag"))
    await engine.achat(ALLERGY)
    await engine.achat("Dinner?")
    assert "] Is allergic to shellfish" in system_text(llm.prompts[-1])
    assert len(turns(memory, "rag")) == 4


# --------------------------------------------------------------- agents


def _agent_llm(prompts: list[list[ChatMessage]]) -> MockFunctionCallingLLM:
    """Calls the tool once per user message, then answers."""

    def reply(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        prompts.append(list(messages))
        if messages[-1].role == MessageRole.TOOL:
            return ChatMessage(role="assistant", content="Ramiro, but skip the shellfish.")
        if kwargs.get("tools"):
            call = ToolCallBlock(tool_call_id="call-1", tool_name="find_restaurant",
                                 tool_kwargs={"city": "Lisbon"})
            return ChatMessage(role="assistant", blocks=[call])
        return ChatMessage(role="assistant", content="Noted!")

    return MockFunctionCallingLLM(response_generator=reply)


@AGENT_WARNINGS
async def test_function_agent_uses_and_feeds_the_memory(memory: TrueMem) -> None:
    prompts: list[list[ChatMessage]] = []

    def find_restaurant(city: str) -> str:
        """Find a restaurant in a city."""
        return f"Ramiro, {city}"

    memory.add_memory("ana", "Is allergic to shellfish", importance=5)
    agent = FunctionAgent(llm=_agent_llm(prompts), system_prompt="You are an agent.",
                          tools=[FunctionTool.from_defaults(find_restaurant)])
    session = TrueMemMemory.from_defaults(memory, "ana", "agent")
    response = await agent.run(user_msg="Dinner in Lisbon?", memory=session)
    assert str(response) == "Ramiro, but skip the shellfish."
    for prompt in prompts:  # both LLM calls of the tool loop got the context
        assert "] Is allergic to shellfish" in system_text(prompt)
    # The tool call and its result are not recorded: the exchange is.
    assert turns(memory, "agent") == [
        ("user", "Dinner in Lisbon?"), ("assistant", "Ramiro, but skip the shellfish.")]


# --------------------------------------------------------------- the memory itself


def test_a_user_message_waits_for_its_reply(memory: TrueMem) -> None:
    session = TrueMemMemory.from_defaults(memory, "ana", "s")
    said = ChatMessage(role="user", content=JOB)
    before = said.model_dump()
    session.put(said)
    assert turns(memory, "s") == []  # not recorded yet...
    assert session.get_all()[-1].content == JOB  # ...but part of the history
    assert "Works as a pilot" not in system_text(session.get())
    session.put(ChatMessage(role="assistant", content="Noted!"))
    assert turns(memory, "s") == [("user", JOB), ("assistant", "Noted!")]
    assert said.model_dump() == before  # the caller's message is untouched
    memory.drain()  # recorded as one interaction: extraction ran on it
    assert "] Works as a pilot at SkyAir" in system_text(session.get("What do I do?"))


def test_a_react_agents_trace_is_recorded_as_its_answer(memory: TrueMem) -> None:
    """ReActAgent puts its whole reasoning in memory as one assistant message."""
    session = TrueMemMemory.from_defaults(memory, "ana", "s")
    session.put(ChatMessage(role="user", content="Where should I eat in Porto?"))
    session.put(ChatMessage(role="assistant", content=(
        "Thought: I need to use a tool.\nAction: lookup\nAction Input: {'city': 'Porto'}\n"
        "Observation: TOOL-RESULT: Ramiro (seafood), Tasca (veg)\n"
        "Thought: I can answer without using any more tools.\nAnswer: Go to Tasca.")))
    session.put(ChatMessage(role="user", content="And thoughts on wine?"))
    session.put(ChatMessage(role="assistant", content="Thought: a vinho verde."))  # no trace
    assert turns(memory, "s") == [
        ("user", "Where should I eat in Porto?"), ("assistant", "Go to Tasca."),
        ("user", "And thoughts on wine?"), ("assistant", "Thought: a vinho verde.")]


def test_two_user_messages_in_a_row_record_the_first_alone(memory: TrueMem) -> None:
    session = TrueMemMemory.from_defaults(memory, "ana", "s")
    session.put_messages([ChatMessage(role="user", content="hello"),
                          ChatMessage(role="user", content="anyone?")])
    assert turns(memory, "s") == [("user", "hello")]
    session.put(ChatMessage(role="assistant", content="Yes!"))
    assert turns(memory, "s") == [("user", "hello"), ("user", "anyone?"), ("assistant", "Yes!")]


def test_sessions_and_users_never_mix(memory: TrueMem) -> None:
    ana = TrueMemMemory.from_defaults(memory, "ana", "s")
    ben = TrueMemMemory.from_defaults(memory, "ben", "s")
    ana.put(ChatMessage(role="user", content=ALLERGY))
    assert "Is allergic to shellfish" in system_text(ana.get())
    assert ben.get_all() == []
    assert "shellfish" not in system_text(ben.get("Shellfish?"))
    assert all(m.content != ALLERGY for m in ben.get("Shellfish?"))


def test_set_and_reset(memory: TrueMem) -> None:
    session = TrueMemMemory.from_defaults(memory, "ana", "s")
    session.put_messages([ChatMessage(role="user", content="one"),
                          ChatMessage(role="assistant", content="two")])
    session.set([ChatMessage(role="user", content="three"),
                 ChatMessage(role="assistant", content="four"),
                 ChatMessage(role="user", content="five")])
    assert [m.content for m in session.get_all()] == ["three", "four", "five"]
    session.reset()
    assert session.get_all() == []
    assert memory.sessions.get("ana", "s").recent == []


def test_reset_then_put_when_the_newest_messages_were_cleared(memory: TrueMem) -> None:
    # message ids are never reused (SQLite AUTOINCREMENT), so job keys cannot collide
    session = TrueMemMemory.from_defaults(memory, "ana", "s")
    session.put_messages([ChatMessage(role="user", content="one"),
                          ChatMessage(role="assistant", content="two")])
    session.reset()
    session.put_messages([ChatMessage(role="user", content="three"),
                          ChatMessage(role="assistant", content="four")])
    assert [m.content for m in session.get_all()] == ["three", "four"]


async def test_async_methods(memory: TrueMem) -> None:
    session = TrueMemMemory.from_defaults(memory, "ana", "s")
    await session.aput(ChatMessage(role="user", content=JOB))
    await session.aput_messages([ChatMessage(role="assistant", content="Noted!")])
    await memory.adrain()
    got = await session.aget(input="What is my job?")
    assert "] Works as a pilot at SkyAir" in system_text(got)
    assert [m.content for m in got[1:]] == [JOB, "Noted!"]
    await memory.arecord("ana", "other", "keeps", "the newest message ids in use")
    await session.aset([ChatMessage(role="user", content="x"),
                        ChatMessage(role="assistant", content="y")])
    assert [m.content for m in await session.aget_all()] == ["x", "y"]
    await session.areset()
    assert await session.aget_all() == []


# --------------------------------------------------------------- the memory block


@pytest.fixture
async def chat_store_engine() -> AsyncIterator[AsyncEngine]:
    """The engine of LlamaIndex's own short-term store (an in-memory SQLite)."""
    engine = create_async_engine("sqlite+aiosqlite:///:memory:")
    yield engine
    await engine.dispose()


async def test_memory_block_reads_and_is_fed_by_memory(
    memory: TrueMem, chat_store_engine: AsyncEngine
) -> None:
    memory.add_memory("ana", "Is allergic to shellfish", importance=5)
    block = TrueMemMemoryBlock(memory=memory, user_id="ana", session_id="block")
    li_memory = Memory.from_defaults(session_id="li", memory_blocks=[block], token_limit=60,
                                     async_engine=chat_store_engine)
    got = await li_memory.aget(input="What can I eat?")
    assert "] Is allergic to shellfish" in system_text(got)
    said = ChatMessage(role="user", content=JOB)
    exchange = [said, ChatMessage(role="assistant", content="Noted, captain!")]
    for n in range(4):  # enough to push the first turns out of the short-term queue
        await li_memory.aput_messages([*exchange, ChatMessage(role="user", content=f"Q{n}"),
                                       ChatMessage(role="assistant", content=f"A{n}")])
    assert said.additional_kwargs == {}  # not tagged with the session
    flushed = turns(memory, "block")
    assert flushed[:2] == [("user", JOB), ("assistant", "Noted, captain!")]
    await memory.adrain()
    assert "Works as a pilot at SkyAir" in texts(memory)


# --------------------------------------------------------------- models for the core


def test_any_llm_extracts_for_the_core(store_url: str) -> None:
    facts = json.dumps({"facts": [{"text": "Flies Airbus A320s", "importance": 4}]})
    extractor = CapturingLLM(replies=[facts])
    with TrueMem(store_url, llm=LlamaIndexLLM(extractor)) as memory:
        memory.record("ana", "s", "These days I fly the A320.", "Great aircraft!")
        memory.drain()
        assert texts(memory) == {"Flies Airbus A320s"}
    system, exchange = extractor.prompts[0]
    assert system.role == MessageRole.SYSTEM and "These days I fly the A320." in (
        exchange.content or "")


def test_any_embedding_model_embeds_for_the_core(store_url: str) -> None:
    embedder = LlamaIndexEmbedder(HashEmbedding())
    assert embedder.model_name == "HashEmbedding:hash-16"
    assert embedder.dimension == 16
    with TrueMem(store_url, embedder=embedder) as memory:
        memory.add_memory("ana", "Plays the cello on weekends")
        memory.add_memory("ana", "Has a cat named Miso")
        hits = memory.search("ana", "Has a cat named Miso", mode="vector", k=1)
        assert hits[0].memory.text == "Has a cat named Miso"
