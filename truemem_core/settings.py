"""Every tunable of TrueMem, with its default and its environment variable.

``Settings()`` gives the defaults; ``Settings.from_env()`` reads ``TRUEMEM_<NAME>``
for each field (e.g. ``TRUEMEM_MEMORY_LIMIT=300``). The docs' configuration
reference is generated from this class, so it is the single source of truth.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Iterable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from truemem_core.errors import InvalidInputError

_FLAGS = {"true": True, "1": True, "yes": True, "on": True,
          "false": False, "0": False, "no": False, "off": False}


# Settings renamed since the last release, old name -> new: the old name, as a keyword or
# as its TRUEMEM_ variable, raises InvalidInputError naming the new one.
RENAMED = {"weight_neighbours": "weight_adjacent", "neighbour_seeds": "adjacent_seeds",
           "neighbour_span": "adjacent_span", "neighbour_window_s": "adjacent_window_s"}


def _refuse_renamed(names: Iterable[str], variable: bool = False) -> None:
    for old in names:
        if old in RENAMED:
            new = RENAMED[old]
            if variable:
                old, new = f"TRUEMEM_{old.upper()}", f"TRUEMEM_{new.upper()}"
            raise InvalidInputError(
                f"the {'variable' if variable else 'setting'} {old} is now named {new}")


def default_database_url() -> str:
    """The embedded default: a SQLite file in ``~/.truemem``."""
    return f"sqlite:///{Path.home() / '.truemem' / 'truemem.db'}"


@dataclass(frozen=True, slots=True)
class Settings:
    # -- long-term memory --
    memory_limit: int = 150
    """Soft limit of memories per user; pruning runs when an add crosses it."""
    protected_importance: int = 4
    """Pruning never touches memories with at least this importance."""
    dedup_threshold: float = 0.85
    """Cosine similarity at or above which a new memory merges into an existing one."""
    reinforcement_cap: int = 4
    """Reinforcement raises importance by one per restatement, up to this cap."""
    default_importance: int = 3
    """Importance of a manual memory when none is given."""
    admission_threshold: float = 0.3
    """Extracted facts scoring below this (novelty, specificity, ...) are not stored."""
    max_text_chars: int = 2000
    """Longest memory text accepted; longer input is rejected, never truncated."""
    max_message_chars: int = 100_000
    """Longest chat message accepted by ``record`` and ``get_context``."""
    max_id_chars: int = 255
    """Longest user or session id accepted."""
    # -- retrieval --
    search_k: int = 10
    """Memories returned by search and put in the context."""
    rrf_k: int = 60
    """Reciprocal Rank Fusion constant: rank ``r`` in a channel adds ``weight / (rrf_k + r)``."""
    rrf_depth: int = 10
    """Top hits of each channel that enter the fusion (the rest of k is filled by vector rank)."""
    weight_vector: float = 1.5
    """RRF weight of the vector (embedding similarity) channel."""
    weight_keyword: float = 1.0
    """RRF weight of the full-text keyword channel."""
    weight_trigram: float = 1.0
    """RRF weight of the trigram (fuzzy) channel."""
    weight_adjacent: float = 1.5
    """RRF weight of the adjacent channel: what was said right before/after the top hits."""
    weight_graph: float = 0.0
    """RRF weight of the graph channel: memories linked to the entities a query names (off by
    default: no gain measured on LoCoMo)."""
    weight_hop: float = 1.0
    """RRF weight of ``get_context``'s second hop: facts and past turns found by the
    question's words plus the names and distinctive words of its best results (0: off)."""
    adjacent_seeds: int = 3
    """Top fused hits whose adjacent rows (in time, or in their session) form that channel."""
    adjacent_span: int = 2
    """Adjacent rows taken on each side of a seed."""
    adjacent_window_s: float = 1800.0
    """Only memories recorded within this many seconds of a seed are adjacent to it (a
    message's adjacent rows are those of its session)."""
    trigram_threshold: float = 0.3
    """Least pg_trgm ``word_similarity`` of a query term for a trigram match."""
    recall_k: int = 20
    """Past messages ranked for the context by the hybrid search (the budget picks among
    them and the memories)."""
    context_token_budget: int = 1500
    """Tokens of retrieved facts and recalled turns in a context, packed best first
    (explicit and critical memories, in every context, are paid for first)."""
    recall_turn_tokens: int = 150
    """Longest a recalled turn may be in the context: a longer message is searched and
    served by its passages (see passage_tokens), one recorded before it had any is cut
    there ("…")."""
    passage_tokens: int = 100
    """Longest passage a long message is cut into (at sentence and paragraph breaks)
    when its background job embeds it; each is searched and served on its own. 0: long
    messages are not cut (recalled by their head), and the drain embeds a third of the
    tokens on a history of long replies."""
    exact_recall: bool = False
    """Conversation recall searches past messages and passages by meaning exactly,
    reading every one of the user's vectors from the database on each call, instead of
    by an HNSW index (PostgreSQL) or the user's vectors kept in memory (SQLite), whose
    cost does not grow with the history (docs/search.md)."""
    timeline_recall: bool = True
    """A question that asks for an order, a timeline, a progression or an overview ("in
    what order did I…", "summarise…", "how has … changed") ranks three times as many
    facts and turns by what it is about, serves them spread over the days they were said
    on, each turn cut to a quarter of ``recall_turn_tokens``, in one date-ordered list
    (same budget)."""
    latest_first: bool = True
    """Of several retrieved statements of the same thing said on different days, the
    latest is packed first and the earlier ones are marked "restated later"."""
    weight_other_speaker: float = 0.5
    """A question about the user ("what did I…", "have I ever…") ranks the assistant's past
    turns with their fused score times this, below the user's own (1.0: no preference)."""
    critical_limit: int = 10
    """Importance-5 memories put in every context whatever the query (newest first)."""
    # -- short-term memory --
    recent_messages: int = 20
    """Messages of the session kept verbatim in the context."""
    summary_token_threshold: int = 2000
    """Unsummarised tokens of a session that trigger a background summary."""
    # -- embeddings and tokens --
    embedding_threads: int = 2
    """onnxruntime intra-op threads of the built-in embedder."""
    int8_queries: bool = False
    """The built-in embedder embeds search queries with int8 arithmetic: a third less CPU
    per query, vectors at cosine ~0.99 to the exact ones; stored vectors stay exact."""
    token_encoding: str = "cl100k_base"
    """tiktoken encoding used to count tokens (bundled, offline)."""
    # -- background jobs --
    job_max_retries: int = 5
    """Retries of a failed background job (exponential backoff)."""
    job_min_backoff_ms: int = 500
    """First retry delay of a failed background job."""
    sweep_interval_s: float = 30.0
    """How often pending work is re-enqueued (recovers jobs lost while the broker was down)."""
    maintain_interval_s: float = 600.0
    """A user's memories are maintained (scores, states) by the first exchange recorded
    this many seconds or more after the last maintenance was queued; 0: every exchange."""

    def __new__(cls, *args: Any, **values: Any) -> Settings:
        _refuse_renamed(values)  # before the dataclass's own "unexpected keyword" TypeError
        return object.__new__(cls)

    def __post_init__(self) -> None:
        if not 0.0 < self.dedup_threshold <= 1.0:
            raise InvalidInputError("dedup_threshold must be in (0, 1]")
        for name in ("memory_limit", "search_k", "recent_messages", "max_text_chars",
                     "recall_k", "recall_turn_tokens"):
            if getattr(self, name) < 1:
                raise InvalidInputError(f"{name} must be at least 1")
        if self.critical_limit < 0 or self.context_token_budget < 0 or self.passage_tokens < 0:
            raise InvalidInputError(
                "critical_limit, context_token_budget and passage_tokens must be >= 0")
        if self.rrf_k < 0 or self.rrf_depth < 1:
            raise InvalidInputError("rrf_k must be at least 0 and rrf_depth at least 1")
        weights = self.channel_weights.values()
        if any(w < 0 for w in weights) or not any(weights) or self.weight_vector == 0:
            raise InvalidInputError("channel weights must be >= 0, with weight_vector > 0")
        if self.weight_hop < 0:
            raise InvalidInputError("weight_hop must be >= 0")
        if not 0 <= self.weight_other_speaker <= 1:
            raise InvalidInputError("weight_other_speaker must be between 0 and 1")
        if not 0.0 <= self.maintain_interval_s < float("inf"):
            raise InvalidInputError("maintain_interval_s must be a number of seconds >= 0")
        if self.adjacent_seeds < 0 or self.adjacent_span < 0 or self.adjacent_window_s < 0:
            raise InvalidInputError(
                "adjacent_seeds, adjacent_span and adjacent_window_s must be >= 0")
        if not 0.0 < self.trigram_threshold <= 1.0:
            raise InvalidInputError("trigram_threshold must be in (0, 1]")
        if not 1 <= self.protected_importance <= 5 or not 1 <= self.reinforcement_cap <= 5:
            raise InvalidInputError("protected_importance and reinforcement_cap are in 1-5")

    @property
    def channel_weights(self) -> dict[str, float]:
        """RRF weight of each search channel."""
        return {"vector": self.weight_vector, "keyword": self.weight_keyword,
                "trigram": self.weight_trigram, "adjacent": self.weight_adjacent,
                "graph": self.weight_graph}

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None, **overrides: Any) -> Settings:
        """Defaults, overridden by ``TRUEMEM_<FIELD>`` variables, then by ``overrides``."""
        env = os.environ if environ is None else environ
        _refuse_renamed((old for old in RENAMED if f"TRUEMEM_{old.upper()}" in env), variable=True)
        values: dict[str, Any] = {}
        for field in fields(cls):
            raw = env.get(f"TRUEMEM_{field.name.upper()}")
            if raw is not None:
                values[field.name] = cls.parse(field.name, raw, f"TRUEMEM_{field.name.upper()}")
        values.update(overrides)
        return cls(**values)

    @classmethod
    def parse(cls, name: str, raw: str, source: str | None = None) -> Any:
        """The text ``raw`` as the value of the field ``name``, typed as its default
        (a flag: ``true``/``false``, ``1``/``0``, ``yes``/``no``, ``on``/``off``)."""
        kinds: dict[str, type[Any]] = {field.name: type(field.default) for field in fields(cls)}
        _refuse_renamed([name])
        if name not in kinds:
            raise InvalidInputError(f"no setting is named {name!r}")
        kind = kinds[name]
        if kind is bool:
            flag = _FLAGS.get(raw.strip().lower())
            if flag is not None:
                return flag
        else:
            with contextlib.suppress(ValueError):
                return kind(raw)
        raise InvalidInputError(f"{source or name}={raw!r} is not a valid {kind.__name__}")

    def replace(self, **changes: Any) -> Settings:
        return dataclasses.replace(self, **changes)
