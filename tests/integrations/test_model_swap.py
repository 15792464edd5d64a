"""The promise: what one model learned about the user, the next model knows.

A user talks to a LangChain chain backed by model A; later to a LlamaIndex chat
engine backed by model B, on the same store (and the reverse). Model B's prompt
holds the facts learned while talking to model A.
"""

from __future__ import annotations

from fake_models import CapturingChatModel, CapturingLLM
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import Runnable
from llama_index.core.base.llms.types import MessageRole
from llama_index.core.chat_engine import SimpleChatEngine

from truemem_core import Settings, TrueMem
from truemem_core.embeddings import TiktokenCounter
from truemem_integrations.langchain import with_truemem
from truemem_integrations.llama_index import TrueMemMemory

ALLERGY = "Remember that I'm allergic to shellfish"
JOB = "I work as a pilot at SkyAir"
LEARNED = ("] Is allergic to shellfish", "] Works as a pilot at SkyAir")  # dated lines


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


def _strict_roles(roles: list[str]) -> None:
    """What Anthropic's and Gemini's chat APIs take: system messages only first (their
    clients join them into one), then a user turn (OpenAI's takes more)."""
    lead = next((n for n, role in enumerate(roles) if role != "system"), len(roles))
    assert "system" not in roles[lead:], roles
    assert roles[lead:] and roles[lead] == "user", roles


def _greeted_session(memory: TrueMem, session: str) -> None:
    """A session an assistant's greeting opened, with an instruction recorded midway."""
    memory.record_messages("ana", session, [
        ("assistant", "Ahoy! I'm Captain Byte. What can I do for ye?"),
        ("user", "Tell me a joke."),
        ("assistant", "Why did the pirate buy a laptop? For the C-drive."),
        ("system", "Answer in metric units."),
    ])


def test_a_greeting_and_a_recorded_instruction_reach_any_model(memory: TrueMem) -> None:
    """Swapping GPT for Claude keeps working: a session that starts with the assistant's
    greeting, or holds a system message, is rendered as a list strict APIs take, with
    those words in the system prompt."""
    _greeted_session(memory, "s")
    context = memory.get_context("ana", "s", "How far is a nautical mile?")
    rendered = context.to_messages()
    _strict_roles([m["role"] for m in rendered])
    assert [m["content"] for m in rendered[1:]] == [
        "Tell me a joke.", "Why did the pirate buy a laptop? For the C-drive.",
        "How far is a nautical mile?"]
    system = rendered[0]["content"]
    assert ("Earlier in this conversation:\n"
            "- assistant: Ahoy! I'm Captain Byte. What can I do for ye?") in system
    assert "Instructions given in this conversation:\n- Answer in metric units." in system
    assert len(context.recent_messages) == 4  # the session as stored, unchanged
    _strict_roles([m["role"] for m in context.to_messages(include_message=False)] + ["user"])

    model = CapturingChatModel(replies=["1,852 metres."])
    _langchain_chain(memory, model, "s", "A").invoke({"question": "And a league?"})
    _strict_roles([{"system": "system", "human": "user"}.get(m.type, m.type)
                   for m in model.prompts[-1]])
    assert "Captain Byte" in str(model.prompts[-1][0].text)

    llm = CapturingLLM(replies=["About 5.6 km."])
    _greeted_session(memory, "t")
    _llama_engine(memory, llm, "t", "B").chat("And a fathom?")
    _strict_roles([m.role.value for m in llm.prompts[-1]])
    assert "Answer in metric units." in "\n".join(
        str(m.content) for m in llm.prompts[-1] if m.role == MessageRole.SYSTEM)


def test_a_window_cut_mid_exchange_starts_with_the_user(store_url: str) -> None:
    with TrueMem(store_url, settings=Settings(recent_messages=3)) as memory:
        for n in range(2):
            memory.record("ana", "s", f"question {n}", f"answer {n}")
        context = memory.get_context("ana", "s", "next")
        assert [m.content for m in context.recent_messages] == [
            "answer 0", "question 1", "answer 1"]
        assert [m["content"] for m in context.to_messages()[1:]] == [
            "question 1", "answer 1", "next"]
        assert "- assistant: answer 0" in context.to_system_prompt()
        counter = TiktokenCounter(memory.settings.token_encoding)
        assert context.tokens == sum(counter.count(m["content"]) for m in context.to_messages())


def test_a_caller_keeping_its_own_history_is_not_sent_a_turn_twice(store_url: str) -> None:
    """The window moved an assistant turn into the system prompt; a caller that sends its
    own history gets neither TrueMem's turns nor that part of the prompt."""
    with TrueMem(store_url, settings=Settings(recent_messages=3)) as memory:
        model = CapturingChatModel(replies=["Answer one.", "Answer two.", "Answer three."])
        chat = with_truemem(model, memory, user_id="ana", session_id="s")
        history: list[BaseMessage] = []
        for question in ("Question one?", "Question two?", "Question three?"):
            history.append(HumanMessage(question))
            history.append(chat.invoke(history))
        sent = model.prompts[-1]
        assert "Earlier in this conversation" not in str(sent[0].text)
        assert [str(m.text) for m in sent[1:]] == [
            "Question one?", "Answer one.", "Question two?", "Answer two.", "Question three?"]
        fresh = CapturingChatModel(replies=["Hello again."])  # no history of its own
        with_truemem(fresh, memory, user_id="ana", session_id="s").invoke("And now?")
        assert "- assistant: Answer one." not in str(fresh.prompts[-1][0].text)
        assert "Earlier in this conversation:\n- assistant: Answer two." in str(
            fresh.prompts[-1][0].text)
        _strict_roles([{"system": "system", "human": "user"}.get(m.type, m.type)
                       for m in fresh.prompts[-1]])
