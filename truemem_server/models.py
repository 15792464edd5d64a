"""The JSON bodies of the API (pydantic), and how core records become them.

Every user id shown is the caller's (``shown_user``): the tenant never appears; every
message id is shown through the store's permutation (``message_ids``), never as stored.
Responses are built with ``model_construct`` from the core's typed records (no copy,
no second validation: serving a context must cost little beside computing it).
Texts are checked by the core against its ``Settings`` limits; ids here against
the width of their columns.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal, cast

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, StrictInt

from truemem_core import (
    Action,
    Context,
    Feedback,
    Kind,
    Memory,
    MemoryEvent,
    Message,
    RecalledTurn,
    Recorded,
    Role,
    ScoredMemory,
    ScoredSynthesis,
    SearchFilters,
    SessionInfo,
    SessionState,
    Source,
    State,
    Synthesis,
)
from truemem_server.auth import shown_user
from truemem_server.keys import MAX_USER_CHARS
from truemem_server.message_ids import MessageIds

UserId = Annotated[str, Field(min_length=1, max_length=MAX_USER_CHARS,
                              description="the end user's id in your tenant (no '/')")]
SessionId = Annotated[str, Field(min_length=1, max_length=255)]
Mode = Literal["hybrid", "vector", "keyword", "trigram"]


def _fields(record: Any, model: type[BaseModel], **changes: Any) -> dict[str, Any]:
    """A record's attributes by the model's field names (no copy, no conversion)."""
    return {name: getattr(record, name) for name in model.model_fields} | changes


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid")


# -- requests ---------------------------------------------------------------------


class ContextRequest(_Closed):
    user_id: UserId
    session_id: SessionId
    message: str = Field(description="the user's new message")


class RecordRequest(_Closed):
    user_id: UserId
    session_id: SessionId
    user_message: str
    assistant_message: str


# what a caller may say of a fact it sends: "extracted" names a message it came from,
# which only TrueMem's own extraction knows (an import keeps the source it exported)
Claimed = Literal["explicit", "manual"]


class NewMemory(_Closed):
    text: str
    importance: StrictInt | None = Field(None, ge=1, le=5)
    kind: Kind | None = None
    source: Claimed = Field("manual", description=(
        "manual (default), or explicit: the user asked for it to be remembered. "
        "extracted is TrueMem's own, for a fact taken from a recorded message"))


class MemoryChange(_Closed):
    text: str | None = None
    importance: StrictInt | None = Field(None, ge=1, le=5)


class FeedbackRequest(_Closed):
    verdict: Feedback


class SearchRequest(_Closed):
    user_id: UserId
    query: str
    k: StrictInt | None = Field(None, ge=1, le=1000, description="default: Settings.search_k")
    mode: Mode = "hybrid"
    kind: list[Kind] | None = None
    min_importance: StrictInt | None = Field(None, ge=1, le=5)
    state: list[State] | None = Field(None, description="default: active and ephemeral")
    created_after: AwareDatetime | None = Field(None, description="inclusive")
    created_before: AwareDatetime | None = Field(None, description="exclusive")
    include_archived: bool = False
    as_of: AwareDatetime | None = Field(None, description="what was recorded then")
    valid_at: AwareDatetime | None = Field(None, description="what was true then")

    def filters(self) -> SearchFilters:
        """The filters as ``TrueMem.search`` takes them: its ``SearchFilters``, by name."""
        return cast(SearchFilters, self.model_dump(include=set(SearchFilters.__annotations__)))


# -- responses ----------------------------------------------------------------------


class MemoryOut(BaseModel):
    id: str
    user_id: str
    text: str
    importance: int
    kind: Kind
    source: Source
    state: State
    reinforcements: int
    created_at: datetime
    updated_at: datetime
    source_message_id: int | None
    valid_from: datetime | None = Field(
        description="when the fact became true: when it was said (created_at: when stored)")
    valid_to: datetime | None
    superseded_by: str | None

    @classmethod
    def of(cls, memory: Memory, ids: MessageIds) -> MemoryOut:
        return cls.model_construct(**_fields(
            memory, cls, user_id=shown_user(memory.user_id),
            source_message_id=ids.optional(memory.source_message_id)))


class ScoredMemoryOut(BaseModel):
    memory: MemoryOut
    score: float
    channels: dict[str, float] = Field(description="each channel's score for this memory")
    ranks: dict[str, int] = Field(description="its 1-based rank in each channel")
    explanation: str = Field(description="one line: the fused score, then each channel")

    @classmethod
    def of(cls, hit: ScoredMemory, ids: MessageIds) -> ScoredMemoryOut:
        return cls.model_construct(memory=MemoryOut.of(hit.memory, ids), score=hit.score,
                                   channels=hit.channels, ranks=hit.ranks,
                                   explanation=hit.explain())


class MemoryEventOut(BaseModel):
    memory_id: str
    action: Action
    created_at: datetime
    reason: str | None
    old_text: str | None
    new_text: str | None
    old_importance: int | None
    new_importance: int | None

    @classmethod
    def of(cls, event: MemoryEvent) -> MemoryEventOut:
        return cls.model_construct(**_fields(event, cls))


class MessageOut(BaseModel):
    id: int
    role: str
    content: str
    tokens: int
    created_at: datetime
    summarized: bool

    @classmethod
    def of(cls, message: Message, ids: MessageIds) -> MessageOut:
        return cls.model_construct(**_fields(message, cls, id=ids.shown(message.id)))


class RecalledTurnOut(BaseModel):
    message_id: int
    session_id: str
    role: str
    content: str
    created_at: datetime
    score: float
    tokens: int
    channels: dict[str, float]
    ranks: dict[str, int]
    passages: tuple[int, ...] = ()

    @classmethod
    def of(cls, turn: RecalledTurn, ids: MessageIds) -> RecalledTurnOut:
        return cls.model_construct(**_fields(turn, cls, message_id=ids.shown(turn.message_id)))


class SynthesisOut(BaseModel):
    id: str
    kind: str = Field(description='what it summarises: "session", a stretch of one past '
                      "session")
    key: str = Field(description="which one: the session's id")
    part: int = Field(description="which stretch of the session: 0 for its first five user "
                      "messages, 1 for the next five…")
    text: str
    message_ids: list[int] = Field(
        description="the messages whose content made it into the text (its sources)")
    memory_ids: list[str]
    first_at: datetime | None = Field(description="when the first of its sources was said")
    last_at: datetime | None = Field(description="when the last of its sources was said")
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, synthesis: Synthesis, ids: MessageIds) -> SynthesisOut:
        return cls.model_construct(**_fields(synthesis, cls,
                                             message_ids=ids.many(synthesis.message_ids)))


class ScoredSynthesisOut(BaseModel):
    synthesis: SynthesisOut
    score: float
    channels: dict[str, float]
    ranks: dict[str, int]

    @classmethod
    def of(cls, hit: ScoredSynthesis, ids: MessageIds) -> ScoredSynthesisOut:
        return cls.model_construct(synthesis=SynthesisOut.of(hit.synthesis, ids),
                                   score=hit.score, channels=hit.channels, ranks=hit.ranks)


class ChatMessageOut(BaseModel):
    role: Role
    content: str


class ContextOut(BaseModel):
    user_id: str
    session_id: str
    message: str
    summary: str | None
    recent_messages: list[MessageOut]
    memories: list[ScoredMemoryOut]
    explicit: list[MemoryOut]
    critical: list[MemoryOut]
    recalled: list[RecalledTurnOut]
    syntheses: list[ScoredSynthesisOut] = Field(
        description="summaries of earlier sessions served, best first")
    facts: list[MemoryOut] = Field(description="explicit, critical, then retrieved; no repeats")
    system_prompt: str
    messages: list[ChatMessageOut] = Field(
        description="the context rendered for a chat model: system prompt, recent messages, "
        "then the new message")
    tokens: int
    budget_spent: int
    timings: dict[str, float]

    @classmethod
    def of(cls, context: Context, ids: MessageIds) -> ContextOut:
        rendered = context.to_messages()  # rendered once: the system prompt is its first
        shown = {m.id: MemoryOut.of(m, ids) for m in [
            *context.explicit, *context.critical, *(hit.memory for hit in context.memories)]}
        return cls.model_construct(
            user_id=shown_user(context.user_id), session_id=context.session_id,
            message=context.message, summary=context.summary,
            recent_messages=[MessageOut.of(m, ids) for m in context.recent_messages],
            memories=[ScoredMemoryOut.of(hit, ids) for hit in context.memories],
            explicit=[shown[m.id] for m in context.explicit],
            critical=[shown[m.id] for m in context.critical],
            recalled=[RecalledTurnOut.of(t, ids) for t in context.recalled],
            syntheses=[ScoredSynthesisOut.of(hit, ids) for hit in context.syntheses],
            facts=[shown[m.id] for m in context.facts],
            system_prompt=rendered[0]["content"],
            messages=[ChatMessageOut.model_construct(role=m["role"], content=m["content"])
                      for m in rendered],
            tokens=context.tokens, budget_spent=context.budget_spent, timings=context.timings)


class RecordedOut(BaseModel):
    user_message_id: int
    assistant_message_id: int | None  # None: the reply had no visible character
    jobs: list[str]

    @classmethod
    def of(cls, recorded: Recorded, ids: MessageIds) -> RecordedOut:
        return cls.model_construct(user_message_id=ids.shown(recorded.user_message_id),
                                   assistant_message_id=ids.optional(recorded.assistant_message_id),
                                   jobs=[ids.job(key) for key in recorded.jobs])


class SessionOut(BaseModel):
    user_id: str
    session_id: str
    summary: str | None
    summarized_through: int | None
    recent: list[MessageOut]

    @classmethod
    def of(cls, user_id: str, session_id: str, state: SessionState, ids: MessageIds
           ) -> SessionOut:
        return cls.model_construct(
            user_id=user_id, session_id=session_id, summary=state.summary,
            summarized_through=ids.optional(state.summarized_through),
            recent=[MessageOut.of(m, ids) for m in state.recent])


class SessionInfoOut(BaseModel):
    session_id: str
    messages: int = Field(description="how many messages it holds (summarised ones too)")
    started_at: datetime
    last_at: datetime = Field(description="when its latest message was said")
    summary: str | None

    @classmethod
    def of(cls, info: SessionInfo) -> SessionInfoOut:
        return cls.model_construct(**_fields(info, cls))


class ErasedOut(BaseModel):
    user_id: str
    memories_removed: int


def shown_export(data: dict[str, Any], ids: MessageIds) -> dict[str, Any]:
    """An export with the caller's user ids (the document's and each memory's) and shown
    message ids (messages', and where memories and graph facts cite them)."""
    def memory(item: dict[str, Any]) -> dict[str, Any]:
        cited = {"source_message_id": ids.optional(item.get("source_message_id"))}
        return {**item, **cited, **(
            {"user_id": shown_user(item["user_id"])} if "user_id" in item else {})}

    sessions = [{**chat, "messages": [{**m, "id": ids.optional(m.get("id"))}
                                      for m in chat.get("messages", [])]}
                for chat in data.get("sessions", [])]
    graph = dict(data.get("graph") or {})
    if "observations" in graph:
        graph["observations"] = [
            {**o, "source_message_id": ids.optional(o.get("source_message_id"))}
            for o in graph["observations"]]
    if "relations" in graph:
        graph["relations"] = [
            {**r, "evidence_message_ids": ids.many(r.get("evidence_message_ids") or [])}
            for r in graph["relations"]]
    return {**data, "user_id": shown_user(str(data.get("user_id", ""))),
            "memories": [memory(item) for item in data.get("memories", [])],
            "sessions": sessions, **({"graph": graph} if "graph" in data else {}),
            **({"syntheses": [{**item, "message_ids": ids.many(item.get("message_ids") or [])}
                              for item in data["syntheses"]]} if "syntheses" in data else {})}
