"""The promise: what one model learned about the user, the next model knows.

A user talks to a LangChain chain backed by model A; later to a LlamaIndex chat
engine backed by model B, on the same store (and the reverse). Model B's prompt
holds the facts learned while talking to model A.
"""

from __future__ import annotations

from fake_models import CapturingChatModel, CapturingLLM
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import Runnable
from llama_index.core.base.llms.types import MessageRole
from llama_index.core.chat_engine import SimpleChatEngine

from truemem_core import TrueMem
from truemem_integrations.langchain import with_truemem
from truemem_integrations.llama_index import TrueMemMemory

ALLERGY = "Remember that I'm allergic to shellfish"
JOB = "I work as a pilot at SkyAir"
LEARNED = ("- Is allergic to shellfish", "- Works as a pilot at SkyAir")


def _langchain_chain(
    memory: TrueMem, model: CapturingChatModel, session: str, name: str
) -> Runnable[dict[str, str], str]:
    prompt = ChatPromptTemplate.from_messages(
        [("system", f"You are model {name}."), ("human", "{question}")])
    model_with_memory = with_truemem(model, memory, user_id="ana", session_id=session)
    return prompt | model_with_memory | StrOutputParser()


def _llama_engine(
    memory: TrueMem, llm: CapturingLLM, session: str, name: str
) -> SimpleChatEngine:
    return SimpleChatEngine.from_defaults(
        llm=llm, memory=TrueMemMemory.from_defaults(memory, "ana", session),
        system_prompt=f"You are model {name}.")


def test_langchain_model_a_then_llama_index_model_b(memory: TrueMem) -> None:
    model_a = CapturingChatModel(replies=["Noted!", "Nice!"])
    chain = _langchain_chain(memory, model_a, "monday", "A")
    chain.invoke({"question": ALLERGY})
    chain.invoke({"question": JOB})
    memory.drain()

    model_b = CapturingLLM(replies=["Try the grilled fish, captain."])
    engine = _llama_engine(memory, model_b, "thursday", "B")
    assert str(engine.chat("What should I eat tonight?")) == "Try the grilled fish, captain."
    system = "\n".join(m.content or "" for m in model_b.prompts[-1]
                       if m.role == MessageRole.SYSTEM)
    assert "You are model B." in system
    for fact in LEARNED:
        assert fact in system
    assert all("model A" not in (m.content or "") for m in model_b.prompts[-1])


async def test_llama_index_model_a_then_langchain_model_b(memory: TrueMem) -> None:
    model_a = CapturingLLM(replies=["Noted!", "Nice!"])
    engine = _llama_engine(memory, model_a, "monday", "A")
    await engine.achat(ALLERGY)
    await engine.achat(JOB)
    await memory.adrain()

    model_b = CapturingChatModel(replies=["Try the grilled fish, captain."])
    chain = _langchain_chain(memory, model_b, "thursday", "B")
    answer = await chain.ainvoke({"question": "What should I eat tonight?"})
    assert answer == "Try the grilled fish, captain."
    system = str(model_b.prompts[-1][0].text)
    assert system.startswith("You are model B.")  # this chain's own prompt, then the memory
    for fact in LEARNED:
        assert fact in system
