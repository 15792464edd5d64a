"""Memory tools for agents: a scripted tool-calling model calls each tool, through
LangChain's ``create_agent`` and LlamaIndex's ``FunctionAgent``, on both backends."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from fake_models import CapturingChatModel
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from llama_index.core.llms.mock import MockFunctionCallingLLM

from truemem_core import InvalidInputError, TrueMem
from truemem_integrations.langchain import TrueMemToolkit
from truemem_integrations.llama_index import memory_tools as llama_memory_tools

NAMES = ["save_memory", "search_memories", "update_memory", "delete_memory"]


def seeded(memory: TrueMem) -> tuple[str, str]:
    home = memory.add_memory("ana", "Lives in Lisbon").id
    pet = memory.add_memory("ana", "Has a dog called Rex").id
    memory.add_memory("bob", "Lives in Oslo")  # another user's: never touched
    return home, pet


def script(home: str, pet: str) -> list[tuple[str, dict[str, Any]]]:
    """The calls the scripted model makes, one a turn of the tool loop."""
    return [("save_memory", {"text": "Is allergic to peanuts", "importance": 5}),
            ("search_memories", {"query": "where does the user live"}),
            ("update_memory", {"memory_id": home, "text": "Lives in Porto"}),
            ("delete_memory", {"memory_id": pet}),
            ("delete_memory", {"memory_id": "no-such-id"})]


def check_outcome(memory: TrueMem, home: str, pet: str, answers: Sequence[str]) -> None:
    assert answers[0].startswith("Saved memory ") and answers[0].endswith(
        ": Is allergic to peanuts")
    assert f"- [{home}] Lives in Lisbon (importance 3)" in answers[1].splitlines()
    assert "Oslo" not in answers[1]
    assert answers[2] == f"Updated memory {home}: Lives in Porto"
    assert answers[3] == f"Deleted memory {pet}."
    assert answers[4] == "Error: no memory 'no-such-id' for user 'ana'"  # the model can retry
    assert sorted((m.text, m.importance) for m in memory.list_memories("ana")) == [
        ("Is allergic to peanuts", 5), ("Lives in Porto", 3)]
    assert [m.text for m in memory.list_memories("bob")] == ["Lives in Oslo"]


def test_tools_describe_themselves_for_a_model(memory: TrueMem) -> None:
    tools = TrueMemToolkit(memory=memory, user_id="ana").get_tools()
    assert [t.name for t in tools] == NAMES
    assert all(len(t.description) > 80 and "user" in t.description for t in tools)
    assert set(tools[0].args) == {"text", "importance"}
    assert set(tools[2].args) == {"memory_id", "text", "importance"}
    llama = llama_memory_tools(memory, "ana")
    assert [t.metadata.name for t in llama] == NAMES
    assert [t.metadata.description for t in llama] == [t.description for t in tools]
    with pytest.raises(InvalidInputError, match="user_id"):
        TrueMemToolkit(memory=memory, user_id="").get_tools()
    with pytest.raises(InvalidInputError, match="need a TrueMem"):
        llama_memory_tools("memory.db", "ana")  # type: ignore[arg-type]
    for k in (0, -1):  # refused when built, not at a call the model cannot fix
        with pytest.raises(InvalidInputError, match="k must be a positive int"):
            TrueMemToolkit(memory=memory, user_id="ana", k=k).get_tools()


def langchain_model(calls: list[tuple[str, dict[str, Any]]]) -> CapturingChatModel:
    replies: list[str | AIMessage] = [
        AIMessage("", tool_calls=[{"name": name, "args": args, "id": f"call-{n}"}])
        for n, (name, args) in enumerate(calls)]
    return CapturingChatModel(replies=[*replies, "Done."])


def tool_answers(messages: Sequence[Any]) -> list[str]:
    return [str(m.content) for m in messages if isinstance(m, ToolMessage)]


def test_a_langchain_agent_calls_each_tool(memory: TrueMem) -> None:
    home, pet = seeded(memory)
    agent = create_agent(langchain_model(script(home, pet)),
                         tools=TrueMemToolkit(memory=memory, user_id="ana").get_tools())
    result = agent.invoke({"messages": [HumanMessage("Please tidy up what you know.")]})
    assert result["messages"][-1].text == "Done."
    check_outcome(memory, home, pet, tool_answers(result["messages"]))


async def test_a_langchain_agent_calls_each_tool_async(memory: TrueMem) -> None:
    home, pet = seeded(memory)
    agent = create_agent(langchain_model(script(home, pet)),
                         tools=TrueMemToolkit(memory=memory, user_id="ana").get_tools())
    result = await agent.ainvoke({"messages": [HumanMessage("Please tidy up.")]})
    check_outcome(memory, home, pet, tool_answers(result["messages"]))


class ScriptedReplies:
    """A LlamaIndex response generator: one scripted tool call a turn, then an answer."""

    def __init__(self, calls: list[tuple[str, dict[str, Any]]]) -> None:
        self.calls = list(calls)

    def __call__(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        if not self.calls:
            return ChatMessage(role=MessageRole.ASSISTANT, content="Done.")
        name, args = self.calls.pop(0)
        return ChatMessage(role=MessageRole.ASSISTANT, blocks=[
            ToolCallBlock(tool_call_id=f"call-{len(self.calls)}", tool_name=name,
                          tool_kwargs=args)])


# LlamaIndex's workflow agents touch deprecated pydantic attributes when built (its bug).
@pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecationWarning")
async def test_a_llama_index_agent_calls_each_tool(memory: TrueMem) -> None:
    home, pet = seeded(memory)
    llm = MockFunctionCallingLLM(response_generator=ScriptedReplies(script(home, pet)))
    agent = FunctionAgent(tools=llama_memory_tools(memory, "ana"), llm=llm)
    handler = agent.run(user_msg="Please tidy up what you know.")
    answers = []
    async for event in handler.stream_events():
        if type(event).__name__ == "ToolCallResult":
            answers.append(str(event.tool_output.content))
    result = await handler
    assert "Done." in str(result)
    check_outcome(memory, home, pet, answers)
