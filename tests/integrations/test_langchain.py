"""The LangChain adapters, on every backend, with scripted models only."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from docs_blocks import three_lines
from fake_models import CapturingChatModel
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core._api.deprecation import LangChainDeprecationWarning
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import LanguageModelInput
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.output_parsers import StrOutputParser
from langchain_core.outputs import ChatResult
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables import Runnable, RunnableLambda
from langchain_core.runnables.history import RunnableWithMessageHistory
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langchain_tests.integration_tests import RetrieversIntegrationTests
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from pydantic import BaseModel, Field

from truemem_core import InvalidInputError, Settings, TrueMem, TrueMemError
from truemem_integrations.langchain import (
    LangChainEmbedder,
    TrueMemChatMessageHistory,
    TrueMemLangChainLLM,
    TrueMemMiddleware,
    TrueMemRetriever,
    with_truemem,
)

ALLERGY = "Remember that I'm allergic to shellfish"
JOB = "I work as a pilot at SkyAir"


def texts(memory: TrueMem, user_id: str = "ana") -> set[str]:
    return {m.text for m in memory.list_memories(user_id)}


def prompt_of(model: CapturingChatModel, index: int = -1) -> str:
    return "\n".join(str(m.text) for m in model.prompts[index])


# --------------------------------------------------------------- three lines


def test_the_documented_three_lines_add_memory_to_a_chain(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRUEMEM_DATABASE_URL", store_url)
    model = CapturingChatModel(replies=["Noted!", "Nice!", "Try the grilled fish."])
    prompt = ChatPromptTemplate.from_messages(
        [("system", "You are a travel assistant."), ("human", "{question}")])
    namespace: dict[str, Any] = {"prompt": prompt, "model": model,
                                 "StrOutputParser": StrOutputParser}
    exec(three_lines("langchain"), namespace)  # exactly the lines in docs/integrations.md
    chain, memory = namespace["chain"], namespace["memory"]
    try:
        assert chain.invoke({"question": ALLERGY}) == "Noted!"
        chain.invoke({"question": JOB})
        memory.drain()
        assert chain.invoke({"question": "Where should I eat?"}) == "Try the grilled fish."
        assert texts(memory) == {"Is allergic to shellfish", "Works as a pilot at SkyAir"}
        last = model.prompts[-1]
        assert isinstance(last[0], SystemMessage)
        assert last[0].text.startswith("You are a travel assistant.")  # the chain's own prompt
        assert "] Is allergic to shellfish" in last[0].text
        assert "] Works as a pilot at SkyAir" in last[0].text
        assert [m.text for m in last[1:]] == [
            ALLERGY, "Noted!", JOB, "Nice!", "Where should I eat?"]
    finally:
        memory.close()


# --------------------------------------------------------------- with_truemem


def test_ids_can_come_from_the_config(memory: TrueMem) -> None:
    model = CapturingChatModel(replies=["Hi Ana", "Hi Ben"])
    chat = with_truemem(model, memory)
    chat.invoke("My name is Ana", config={"configurable": {"user_id": "ana", "session_id": "a"}})
    chat.invoke("Hello", config={"configurable": {"user_id": "ben", "session_id": "b"}})
    memory.drain()
    assert "Name is Ana" not in prompt_of(model)  # one user's memories never reach another
    assert [m.content for m in memory.sessions.get("ben", "b").recent] == ["Hello", "Hi Ben"]
    with pytest.raises(InvalidInputError, match="user_id and a session_id"):
        chat.invoke("Who am I?")


def test_a_caller_that_keeps_its_own_history_is_not_sent_it_twice(memory: TrueMem) -> None:
    model = CapturingChatModel(replies=["One", "Two"])
    chat = with_truemem(model, memory, user_id="ana", session_id="s")
    chat.invoke("first")
    chat.invoke([HumanMessage("first"), AIMessage("One"), HumanMessage("second")])
    assert [m.text for m in model.prompts[-1][1:]] == ["first", "One", "second"]
    assert [m.content for m in memory.sessions.get("ana", "s").recent] == [
        "first", "One", "second", "Two"]


async def test_async_invoke_and_streams_record_the_exchange(memory: TrueMem) -> None:
    model = GenericFakeChatModel(messages=iter(["Hello there", "Streaming works", "Async too"]))
    chat = with_truemem(model, memory, user_id="ana", session_id="s")
    assert (await chat.ainvoke(JOB)).text == "Hello there"
    chunks = list(chat.stream("stream please"))
    assert len(chunks) > 1 and "".join(str(c.text) for c in chunks) == "Streaming works"
    parts = [str(chunk.text) async for chunk in chat.astream("and async?")]
    assert "".join(parts) == "Async too"
    await memory.adrain()
    assert [m.content for m in (await memory.sessions.aget("ana", "s")).recent] == [
        JOB, "Hello there", "stream please", "Streaming works", "and async?", "Async too"]
    assert "Works as a pilot at SkyAir" in texts(memory)


def test_input_without_a_user_message_is_refused(memory: TrueMem) -> None:
    model = CapturingChatModel()
    chat = with_truemem(model, memory, user_id="ana", session_id="s")
    with pytest.raises(InvalidInputError, match=r"user \(human\) message"):
        chat.invoke([SystemMessage("no user here")])
    assert model.prompts == [] and memory.sessions.get("ana", "s").recent == []


def test_a_message_without_words_goes_to_the_model_without_memory(memory: TrueMem) -> None:
    memory.add_memory("ana", "Is allergic to shellfish", importance=5)
    model = CapturingChatModel(replies=["A cat on a sofa."])
    chat = with_truemem(model, memory, user_id="ana", session_id="s")
    image = HumanMessage([{"type": "image_url",
                           "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}])
    assert chat.invoke([image]).text == "A cat on a sofa."
    assert model.prompts == [[image]]  # as the bare model would get it
    assert memory.sessions.get("ana", "s").recent == []  # no words: nothing to record


def test_ids_that_are_falsy_are_still_ids(memory: TrueMem) -> None:
    chat = with_truemem(CapturingChatModel(replies=["Hi"]), memory)
    chat.invoke("Hello", config={"configurable": {"user_id": 0, "session_id": 0}})
    assert [m.content for m in memory.sessions.get("0", "0").recent] == ["Hello", "Hi"]


def test_system_content_blocks_keep_what_they_carry(memory: TrueMem) -> None:
    model = CapturingChatModel(replies=["Hi"])
    chat = with_truemem(model, memory, user_id="ana", session_id="s")
    cached = {"type": "text", "text": "LONG INSTRUCTIONS", "cache_control": {"type": "ephemeral"}}
    chat.invoke([SystemMessage([cached]), SystemMessage("Be brief."), HumanMessage("Hello")])
    system = model.prompts[-1][0]
    assert isinstance(system.content, list) and system.content[0] == cached
    assert system.content[1] == {"type": "text", "text": "Be brief."}
    assert "returning user" in system.content[-1]["text"]  # type: ignore[index]


def _mistakes(memory: TrueMem) -> dict[str, tuple[Any, str]]:
    """Each user mistake with with_truemem: the call making it, and what the error says."""
    model = CapturingChatModel(replies=["Hi"])
    chat = with_truemem(model, memory, user_id="ana", session_id="s")
    return {
        "no ids": (lambda: with_truemem(model, memory).invoke("Hi"),
                   "user_id and a session_id"),
        "only a user id": (lambda: with_truemem(model, memory, user_id="ana").invoke("Hi"),
                           "user_id and a session_id"),
        "no user message": (lambda: chat.invoke([AIMessage("Hello")]), "user"),
        "not a chat input": (lambda: chat.invoke(12345), "what a chat model takes"),
        "a prompt's variables": (lambda: chat.invoke({"question": "I'm allergic to nuts"}),
                                 r"not a prompt's variables \(question\)"),
        "not a runnable": (lambda: with_truemem("gpt-4o", memory),  # type: ignore[arg-type]
                           "chat model or runnable"),
        "not a TrueMem": (lambda: with_truemem(model, "memory.db"),  # type: ignore[arg-type]
                          "needs a TrueMem"),
        "bind_tools on a chain": (
            lambda: with_truemem(ChatPromptTemplate.from_messages([("human", "{q}")]) | model,
                                 memory, user_id="ana", session_id="s").bind_tools([]),
            "has no bind_tools"),
        "with_structured_output on a chain": (
            lambda: with_truemem(model | StrOutputParser(), memory)
            .with_structured_output(dict), "has no with_structured_output"),
    }


@pytest.mark.parametrize("mistake", [
    "no ids", "only a user id", "no user message", "not a chat input", "a prompt's variables",
    "not a runnable",
    "not a TrueMem", "bind_tools on a chain", "with_structured_output on a chain"])
def test_with_truemem_mistakes_are_invalid_input_errors(memory: TrueMem, mistake: str) -> None:
    call, says = _mistakes(memory)[mistake]
    with pytest.raises(InvalidInputError, match=says) as raised:
        call()
    assert isinstance(raised.value, TrueMemError) and isinstance(raised.value, ValueError)
    assert memory.sessions.get("ana", "s").recent == []  # refused before anything was written


async def test_async_calls_without_ids_are_invalid_input_errors(memory: TrueMem) -> None:
    chat = with_truemem(CapturingChatModel(), memory)
    with pytest.raises(InvalidInputError, match="user_id and a session_id"):
        await chat.ainvoke("Hi")
    with pytest.raises(InvalidInputError, match="user_id and a session_id"):
        [chunk async for chunk in chat.astream("Hi")]


def test_a_runnable_returning_no_text_is_an_invalid_input_error(memory: TrueMem) -> None:
    chat = with_truemem(RunnableLambda(lambda _: 42), memory, user_id="ana", session_id="s")
    with pytest.raises(InvalidInputError, match="got int"):
        chat.invoke("How old am I?")
    assert memory.sessions.get("ana", "s").recent == []


# --------------------------------------------------------------- tools and structured output


class ToolModel(CapturingChatModel):
    """A scripted chat model that binds tools as real ones do: they reach every call."""

    tools_seen: list[list[str]] = Field(default_factory=list)

    def bind_tools(  # type: ignore[override]
        self, tools: Sequence[Any], *, tool_choice: str | None = None, **kwargs: Any
    ) -> Runnable[LanguageModelInput, BaseMessage]:
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools],
                         tool_choice=tool_choice, **kwargs)

    def _generate(
        self, messages: list[BaseMessage], stop: list[str] | None = None,
        run_manager: Any = None, **kwargs: Any,
    ) -> ChatResult:
        self.tools_seen.append([t["function"]["name"] for t in kwargs.get("tools", [])])
        return super()._generate(messages, stop, run_manager, **kwargs)


def _restaurant_call(call_id: str = "call-1") -> AIMessage:
    return AIMessage("", tool_calls=[{"name": "find_restaurant", "args": {"city": "Lisbon"},
                                      "id": call_id}])


def _tool_result(call: AIMessage) -> ToolMessage:
    return find_restaurant.invoke(call.tool_calls[0] | {"type": "tool_call"})  # type: ignore[no-any-return]


def test_bind_tools_keeps_the_memory_and_records_the_user_message_once(
    memory: TrueMem,
) -> None:
    memory.add_memory("ana", "Is allergic to shellfish", importance=5)
    model = ToolModel(replies=[_restaurant_call(), "Ramiro, but skip the shellfish."])
    chat = with_truemem(model, memory, user_id="ana", session_id="s").bind_tools(
        [find_restaurant])
    question = HumanMessage("Dinner in Lisbon?")
    call = chat.invoke([question])
    assert call.tool_calls[0]["name"] == "find_restaurant"
    # the tool call is an intermediate step: only the user's message is recorded so far
    assert [(m.role, m.content) for m in memory.sessions.get("ana", "s").recent] == [
        ("user", "Dinner in Lisbon?")]
    result = _tool_result(call)
    answer = chat.invoke([question, call, result])
    assert answer.text == "Ramiro, but skip the shellfish."
    assert model.tools_seen == [["find_restaurant"], ["find_restaurant"]]  # bound on both
    for prompt in model.prompts:  # both calls of the loop got the context
        assert isinstance(prompt[0], SystemMessage)
        assert "] Is allergic to shellfish" in prompt[0].text
    assert model.prompts[1][1:] == [question, call, result]  # the loop's messages, in order
    assert [(m.role, m.content) for m in memory.sessions.get("ana", "s").recent] == [
        ("user", "Dinner in Lisbon?"), ("assistant", "Ramiro, but skip the shellfish.")]
    assert "Ramiro, Lisbon" not in str(memory.export_user("ana"))  # tool traffic is not kept


async def test_bind_tools_async_and_streamed(memory: TrueMem) -> None:
    model = ToolModel(replies=[_restaurant_call(), "Ramiro is open late."])
    chat = with_truemem(model, memory).bind_tools([find_restaurant])
    config: Any = {"configurable": {"user_id": "ana", "session_id": "s"}}
    question = HumanMessage("Dinner in Lisbon?")
    chunks = [chunk async for chunk in chat.astream([question], config=config)]
    call = AIMessage("", tool_calls=chunks[-1].tool_calls)
    assert call.tool_calls[0]["args"] == {"city": "Lisbon"}
    answer = await chat.ainvoke([question, call, _tool_result(call)], config=config)
    assert answer.text == "Ramiro is open late."
    assert model.tools_seen == [["find_restaurant"], ["find_restaurant"]]
    assert [m.content for m in (await memory.sessions.aget("ana", "s")).recent] == [
        "Dinner in Lisbon?", "Ramiro is open late."]


def test_a_tool_call_with_text_records_only_the_final_answer(memory: TrueMem) -> None:
    talkative = AIMessage("Let me look that up.", tool_calls=_restaurant_call().tool_calls)
    model = ToolModel(replies=[talkative, _restaurant_call("call-2"), "Try Ramiro."])
    chat = with_truemem(model, memory, user_id="ana", session_id="s").bind_tools(
        [find_restaurant])
    messages: list[BaseMessage] = [HumanMessage("Dinner in Lisbon?")]
    while not (reply := chat.invoke(messages)).text or reply.tool_calls:
        messages += [reply, _tool_result(reply)]
    assert len(model.prompts) == 3  # two tool calls, then the answer
    assert [m.content for m in memory.sessions.get("ana", "s").recent] == [
        "Dinner in Lisbon?", "Try Ramiro."]


class Restaurant(BaseModel):
    """A restaurant recommendation."""

    name: str
    city: str


def _restaurant_answer() -> AIMessage:
    return AIMessage("", tool_calls=[{"name": "Restaurant", "id": "call-1",
                                      "args": {"name": "Ramiro", "city": "Lisbon"}}])


def test_structured_output_keeps_the_memory_and_records_the_answer_as_json(
    memory: TrueMem,
) -> None:
    memory.add_memory("ana", "Is allergic to shellfish", importance=5)
    model = ToolModel(replies=[_restaurant_answer()])
    chat = with_truemem(model, memory, user_id="ana", session_id="s")
    answer = chat.with_structured_output(Restaurant).invoke("Where should I eat in Lisbon?")
    assert answer == Restaurant(name="Ramiro", city="Lisbon")
    assert model.tools_seen == [["Restaurant"]]
    assert "] Is allergic to shellfish" in model.prompts[0][0].text
    recent = memory.sessions.get("ana", "s").recent
    assert [m.role for m in recent] == ["user", "assistant"]
    assert recent[0].content == "Where should I eat in Lisbon?"
    assert json.loads(recent[1].content) == {"name": "Ramiro", "city": "Lisbon"}


async def test_structured_output_with_raw_and_a_dict_schema(memory: TrueMem) -> None:
    model = ToolModel(replies=[_restaurant_answer()])
    chat = with_truemem(model, memory, user_id="ana", session_id="s")
    structured = chat.with_structured_output(convert_to_openai_tool(Restaurant),
                                             include_raw=True)
    answer = await structured.ainvoke("Where should I eat in Lisbon?")
    assert isinstance(answer, dict) and answer["parsed"] == {"name": "Ramiro", "city": "Lisbon"}
    recent = (await memory.sessions.aget("ana", "s")).recent
    assert json.loads(recent[-1].content) == {"name": "Ramiro", "city": "Lisbon"}


# --------------------------------------------------------------- chat history


def _history_chain(memory: TrueMem, model: CapturingChatModel) -> RunnableWithMessageHistory:
    prompt = ChatPromptTemplate.from_messages(
        [("system", "Be brief."), MessagesPlaceholder("history"), ("human", "{question}")])
    with pytest.warns(LangChainDeprecationWarning, match="RunnableWithMessageHistory"):
        return RunnableWithMessageHistory(
            prompt | model,
            lambda session_id: TrueMemChatMessageHistory(memory, "ana", session_id),
            input_messages_key="question",
            history_messages_key="history",
        )


def test_history_works_under_runnable_with_message_history(memory: TrueMem) -> None:
    model = CapturingChatModel(replies=["Noted!", "Fish is out."])
    chain = _history_chain(memory, model)
    config: Any = {"configurable": {"session_id": "s1"}}
    chain.invoke({"question": JOB}, config=config)
    chain.invoke({"question": "What should I eat?"}, config=config)
    assert [m.text for m in model.prompts[-1]] == ["Be brief.", JOB, "Noted!", "What should I eat?"]
    history = TrueMemChatMessageHistory(memory, "ana", "s1")
    assert [type(m) for m in history.messages] == [HumanMessage, AIMessage] * 2
    memory.drain()  # the human + AI pair was one interaction: its facts were extracted
    assert "Works as a pilot at SkyAir" in texts(memory)


async def test_history_async_paths(memory: TrueMem) -> None:
    model = CapturingChatModel(replies=["Noted!", "Sure."])
    chain = _history_chain(memory, model)
    config: Any = {"configurable": {"session_id": "s2"}}
    await chain.ainvoke({"question": JOB}, config=config)
    await chain.ainvoke({"question": "And?"}, config=config)
    history = TrueMemChatMessageHistory(memory, "ana", "s2")
    assert [m.text for m in await history.aget_messages()] == [JOB, "Noted!", "And?", "Sure."]
    await history.aclear()
    assert await history.aget_messages() == []


TOOL_CALL = {"name": "weather", "args": {"city": "Lisbon"}, "id": "call_1", "type": "tool_call"}


def agent_turn() -> list[BaseMessage]:
    return [
        HumanMessage("What's the weather where I live? I live in Lisbon.", id="h1"),
        AIMessage("", tool_calls=[TOOL_CALL], id="a1",
                  response_metadata={"model_name": "m", "finish_reason": "tool_calls"}),
        ToolMessage("Sunny, 24 degrees, wind 3 kph", tool_call_id="call_1", name="weather"),
        AIMessage("It is sunny in Lisbon.", id="a2", additional_kwargs={"refusal": None},
                  usage_metadata={"input_tokens": 9, "output_tokens": 6, "total_tokens": 15})]


def test_history_gives_back_every_message_as_it_was_added(memory: TrueMem) -> None:
    """As LangChain's own stores do: tool calls, tool results (with their call id),
    ids and metadata come back; only the text turns are recorded, so nothing is
    extracted from a tool's output."""
    given = [SystemMessage("Be brief."), *agent_turn()]
    history = TrueMemChatMessageHistory(memory, "ana", "s")
    history.add_messages(given)
    assert history.messages == given
    # one message at a time (as LangGraph and add_message do): the same
    one_by_one = TrueMemChatMessageHistory(memory, "ana", "t.1")
    for message in given:
        one_by_one.add_message(message)
    assert one_by_one.messages == given
    memory.drain()
    assert all("Sunny" not in text and "kph" not in text for text in texts(memory))
    context = memory.get_context("ana", "u", "weather")
    assert all("kph" not in t.content for t in [*context.recent_messages, *context.recalled])
    history.clear()
    assert history.messages == [] and one_by_one.messages == given
    assert memory.items.search(("langchain_history",), user_id="ana", limit=100) != []
    one_by_one.clear()
    assert memory.items.search(("langchain_history",), user_id="ana", limit=100) == []


async def test_history_async_gives_back_every_message(memory: TrueMem) -> None:
    history = TrueMemChatMessageHistory(memory, "ana", "s")
    await history.aadd_messages(agent_turn()[:2])
    await history.aadd_messages(agent_turn()[2:])
    assert await history.aget_messages() == agent_turn()
    await history.aclear()
    assert await history.aget_messages() == []


def test_history_shows_the_summary_and_keeps_tool_traffic_out_of_memory(
        store_url: str) -> None:
    settings = Settings(recent_messages=2, summary_token_threshold=1)
    with TrueMem(store_url, settings=settings) as memory:
        history = TrueMemChatMessageHistory(memory, "ana", "s")
        history.add_messages([
            HumanMessage(JOB), AIMessage("", tool_calls=[{"name": "t", "args": {}, "id": "1"}]),
            ToolMessage("tool output", tool_call_id="1"), AIMessage("Noted!")])
        history.add_messages([HumanMessage("I live in Lisbon"), AIMessage("Lovely city.")])
        memory.drain()
        messages = history.messages
        assert isinstance(messages[0], SystemMessage)
        assert messages[0].text.startswith("Summary of the earlier conversation:")
        assert [m.text for m in messages[1:]] == ["I live in Lisbon", "Lovely city."]
        assert "tool output" not in str(memory.export_user("ana")["memories"])
        history.clear()
        assert history.messages == []
        assert "Works as a pilot at SkyAir" in texts(memory)  # long-term memories stay


# --------------------------------------------------------------- retriever

FACTS = [("Works as a pilot at SkyAir", 4), ("Is allergic to shellfish", 5),
         ("Plays the cello on weekends", 3), ("Has a cat named Miso", 3),
         ("Visited Kyoto last spring", 2)]


def _seed(memory: TrueMem) -> None:
    for text, importance in FACTS:
        memory.add_memory("ana", text, importance=importance)


def test_retriever_returns_documents_with_metadata(memory: TrueMem) -> None:
    _seed(memory)
    docs = TrueMemRetriever(memory=memory, user_id="ana", k=2).invoke("what is her job?")
    assert len(docs) == 2 and docs[0].page_content == "Works as a pilot at SkyAir"
    assert set(docs[0].metadata) >= {"id", "importance", "kind", "source", "score", "valid_from"}
    assert docs[0].metadata["importance"] == 4 and docs[0].metadata["source"] == "manual"
    assert docs[0].id == docs[0].metadata["id"]
    assert TrueMemRetriever(memory=memory, user_id="ben").invoke("job") == []


def test_retriever_passes_search_filters_through(memory: TrueMem) -> None:
    _seed(memory)
    important = TrueMemRetriever(memory=memory, user_id="ana",
                                 search_kwargs={"min_importance": 4})
    assert {d.page_content for d in important.invoke("anything")} == {
        "Works as a pilot at SkyAir", "Is allergic to shellfish"}
    assert len(important.invoke("anything", min_importance=5)) == 1  # per-call override
    assert len(important.invoke("anything")) == 2  # ...which did not stick
    with pytest.raises(ValueError, match="does not accept"):
        TrueMemRetriever(memory=memory, user_id="ana", search_kwargs={"colour": "red"})
    with pytest.raises(InvalidInputError, match="does not accept"):
        important.invoke("anything", colour="red")


async def test_retriever_async_path_uses_the_async_api(
    memory: TrueMem, monkeypatch: pytest.MonkeyPatch
) -> None:
    _seed(memory)

    def sync_search(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the async path called the sync API")

    monkeypatch.setattr(memory, "search", sync_search)
    docs = await TrueMemRetriever(memory=memory, user_id="ana", k=3).ainvoke("cello")
    assert docs[0].page_content == "Plays the cello on weekends" and len(docs) == 3


class TestStandardRetriever(RetrieversIntegrationTests):
    """LangChain's own standard retriever tests, on every backend."""

    @pytest.fixture(autouse=True)
    def _store(self, memory: TrueMem) -> Iterator[None]:
        _seed(memory)
        self.store = memory
        yield

    @property
    def retriever_constructor(self) -> type[TrueMemRetriever]:
        return TrueMemRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"memory": self.store, "user_id": "ana"}

    @property
    def retriever_query_example(self) -> str:
        return "what does the user do for a living?"


# --------------------------------------------------------------- agent middleware


@tool
def find_restaurant(city: str) -> str:
    """Find a restaurant in a city."""
    return f"Ramiro, {city}"


def test_middleware_injects_context_and_records_the_final_answer(memory: TrueMem) -> None:
    call = AIMessage("", tool_calls=[{"name": "find_restaurant", "args": {"city": "Lisbon"},
                                      "id": "call-1"}])
    model = CapturingChatModel(replies=["Noted!", call, "Ramiro, but skip the shellfish."])
    agent = create_agent(model, tools=[find_restaurant], system_prompt="You are an agent.",
                         middleware=[TrueMemMiddleware(memory)])
    ids = {"user_id": "ana", "session_id": "s1"}
    agent.invoke({"messages": [HumanMessage(ALLERGY)]}, context=ids)
    result = agent.invoke({"messages": [HumanMessage("Dinner in Lisbon?")]}, context=ids)
    assert result["messages"][-1].text == "Ramiro, but skip the shellfish."
    for prompt in model.prompts[1:]:  # both model calls of the tool loop got the context
        assert prompt[0].text.startswith("You are an agent.")
        assert "] Is allergic to shellfish" in prompt[0].text
        assert [m.text for m in prompt[1:3]] == [ALLERGY, "Noted!"]  # the session's turns
    assert [(m.role, m.content) for m in memory.sessions.get("ana", "s1").recent] == [
        ("user", ALLERGY), ("assistant", "Noted!"),
        ("user", "Dinner in Lisbon?"), ("assistant", "Ramiro, but skip the shellfish.")]


def test_middleware_keeps_memory_across_a_human_approval(memory: TrueMem) -> None:
    memory.add_memory("ana", "Is allergic to shellfish", importance=5)
    call = AIMessage("", tool_calls=[{"name": "find_restaurant", "args": {"city": "Lisbon"},
                                      "id": "call-1"}])
    model = CapturingChatModel(replies=[call, "Ramiro, but skip the shellfish."])
    agent = create_agent(model, tools=[find_restaurant], checkpointer=InMemorySaver(),
                         middleware=[TrueMemMiddleware(memory, user_id="ana", session_id="s"),
                                     HumanInTheLoopMiddleware(
                                         interrupt_on={"find_restaurant": True})])
    thread = {"configurable": {"thread_id": "t"}}
    paused = agent.invoke({"messages": [HumanMessage("Dinner in Lisbon?")]}, thread)
    assert "__interrupt__" in paused and memory.sessions.get("ana", "s").recent == []
    done = agent.invoke(Command(resume={"decisions": [{"type": "approve"}]}), thread)
    assert done["messages"][-1].text == "Ramiro, but skip the shellfish."
    assert len(model.prompts) == 2
    assert all("] Is allergic to shellfish" in prompt[0].text for prompt in model.prompts)
    assert [(m.role, m.content) for m in memory.sessions.get("ana", "s").recent] == [
        ("user", "Dinner in Lisbon?"), ("assistant", "Ramiro, but skip the shellfish.")]


async def test_middleware_async_with_fixed_ids(memory: TrueMem) -> None:
    model = CapturingChatModel(replies=["Noted!", "Fish is out."])
    agent = create_agent(model, middleware=[
        TrueMemMiddleware(memory, user_id="ana", session_id="s2")])
    await agent.ainvoke({"messages": [HumanMessage(JOB)]})
    await memory.adrain()
    await agent.ainvoke({"messages": [HumanMessage("Dinner?")]})
    assert "] Works as a pilot at SkyAir" in prompt_of(model)
    assert len((await memory.sessions.aget("ana", "s2")).recent) == 4


def test_middleware_without_ids_says_how_to_pass_them(memory: TrueMem) -> None:
    model = CapturingChatModel()
    agent = create_agent(model, middleware=[TrueMemMiddleware(memory)])
    with pytest.raises(InvalidInputError, match="context="):
        agent.invoke({"messages": [HumanMessage("hi")]})
    with pytest.raises(InvalidInputError, match="context="):  # half the ids is no better
        agent.invoke({"messages": [HumanMessage("hi")]}, context={"user_id": "ana"})
    assert model.prompts == [] and memory.sessions.get("ana", "s").recent == []


async def test_middleware_async_without_ids_is_an_invalid_input_error(memory: TrueMem) -> None:
    agent = create_agent(CapturingChatModel(), middleware=[TrueMemMiddleware(memory)])
    with pytest.raises(InvalidInputError, match="context="):
        await agent.ainvoke({"messages": [HumanMessage("hi")]})


def test_middleware_needs_a_truemem(tmp_path: Any) -> None:
    with pytest.raises(InvalidInputError, match="needs a TrueMem"):
        TrueMemMiddleware(str(tmp_path / "memory.db"))  # type: ignore[arg-type]


# --------------------------------------------------------------- models for the core


def test_any_chat_model_extracts_for_the_core(store_url: str) -> None:
    facts = json.dumps({"facts": [{"text": "Flies Airbus A320s", "importance": 4}]})
    extractor = CapturingChatModel(replies=[facts])
    with TrueMem(store_url, llm=TrueMemLangChainLLM(extractor)) as memory:
        memory.record("ana", "s", "These days I fly the A320.", "Great aircraft!")
        memory.drain()
        assert texts(memory) == {"Flies Airbus A320s"}
    system, exchange = extractor.prompts[0]
    assert isinstance(system, SystemMessage) and isinstance(exchange, HumanMessage)
    assert "These days I fly the A320." in exchange.text


def test_any_embeddings_embed_for_the_core(store_url: str) -> None:
    embedder = LangChainEmbedder(DeterministicFakeEmbedding(size=24))
    assert embedder.model_name == "DeterministicFakeEmbedding"
    assert embedder.dimension == 24  # measured once
    assert embedder.embed([]).shape == (0, 24)
    named = LangChainEmbedder(DeterministicFakeEmbedding(size=8), model_name="fake", dimension=8)
    assert (named.model_name, named.dimension) == ("fake", 8)
    with TrueMem(store_url, embedder=embedder) as memory:
        _seed(memory)
        hits = memory.search("ana", "Plays the cello on weekends", mode="vector", k=1)
        assert hits[0].memory.text == "Plays the cello on weekends"


def test_documents_are_plain_langchain_documents(memory: TrueMem) -> None:
    _seed(memory)
    docs = TrueMemRetriever(memory=memory, user_id="ana").invoke("cat")
    assert all(isinstance(d, Document) for d in docs) and len(docs) == len(FACTS)


def test_one_retriever_serves_the_user_each_call_names(memory: TrueMem) -> None:
    """``user_id=None``: the user comes from each call's config, as with ``with_truemem``;
    one user's call never sees another's memories."""
    _seed(memory)
    memory.add_memory("ben", "Works as a baker in Porto")
    retriever = TrueMemRetriever(memory=memory, k=1)
    as_ana = retriever.invoke("job", config={"configurable": {"user_id": "ana"}})
    as_ben = retriever.invoke("job", config={"configurable": {"user_id": "ben"}})
    assert [d.page_content for d in as_ana] == ["Works as a pilot at SkyAir"]
    assert [d.page_content for d in as_ben] == ["Works as a baker in Porto"]
    chain = RunnableLambda(lambda question: f"{question}?") | retriever
    assert chain.invoke("job", config={"configurable": {"user_id": "ben"}}) == as_ben
    both = retriever.batch(["job", "job"], config=[
        {"configurable": {"user_id": "ana"}}, {"configurable": {"user_id": "ben"}}])
    assert both == [as_ana, as_ben]
    with pytest.raises(InvalidInputError, match="needs a user_id"):
        retriever.invoke("job")
    fixed = TrueMemRetriever(memory=memory, user_id="ana", k=1)  # a fixed user wins
    assert fixed.invoke("job", config={"configurable": {"user_id": "ben"}}) == as_ana


async def test_one_retriever_serves_the_user_each_async_call_names(memory: TrueMem) -> None:
    _seed(memory)
    retriever = TrueMemRetriever(memory=memory, k=1)
    docs = await retriever.ainvoke("cello", config={"configurable": {"user_id": "ana"}})
    assert [d.page_content for d in docs] == ["Plays the cello on weekends"]
    assert await retriever.ainvoke("cello", config={"configurable": {"user_id": "ben"}}) == []
