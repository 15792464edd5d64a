"""End to end: what a TrueMem user is actually served, on LoCoMo, LongMemEval_S and BEAM.

``retrieval_quality.py`` stores every turn as a memory and searches the turns. The
product does something else: it stores the *facts extracted* from the user's
messages as memories, ranks them and the user's past messages with the hybrid
search, and packs the best of both into ``context_token_budget`` tokens. This
benchmark runs the path a user runs, through the public API, on a real store (a
temporary SQLite file per run, ``--postgres`` for a throw-away PostgreSQL, or
``--database-url``), with the default local embedder and the
built-in rule-based extraction:

* LoCoMo (``locomo_dev.json``): one TrueMem user per conversation. Each session is
  recorded in order with ``record_messages(user, "session_<n>", turns)``, speaker A
  as ``user`` and speaker B as ``assistant``, each turn dated with its session's
  date (``(role, content, said_at)``); then ``drain()`` runs the background
  jobs (extraction, message embeddings, maintenance, summaries). Each QA question
  goes through ``get_context(user, "question-<i>", question)``. An evidence turn is
  *served* when the context holds it as a recalled turn (``Context.recalled``),
  holds a memory extracted from it (``source_message_id`` in ``Context.memories``,
  ``Context.explicit`` or ``Context.critical``), or a synthesis built from it (in
  ``message_ids`` of ``Context.syntheses``; counted with the recalled turns).
  Evidence ids are parsed as in ``retrieval_quality.py``; unparseable ones count as
  not served. Reported per
  category and overall, with context tokens (``Context.tokens``: the whole prompt,
  question included) and ``get_context`` latency (wall time around the sync call,
  and ``Context.timings["total"]``).
* LongMemEval_S (``longmemeval_s_dev.json.gz``): one user per question; its haystack
  sessions recorded in order with their own roles, session ids and dates. Session-level
  ``recall_all`` (every answer session among the sessions the context draws from:
  recalled turns' sessions, the sessions of the messages its memories were
  extracted from, and its syntheses' sources' sessions) and NDCG@10 over the served
  order (explicit and critical facts, then retrieved facts, recalled turns and
  syntheses by their fused score: the order the budget packed them in). Eligible questions as in
  ``retrieval_quality.py`` (no ``_abs``, evidence in a user turn).
* BEAM (``--beam-dir DIR``, ``--only beam``; "Beyond a Million Tokens", chats of 100K
  to 10M tokens): one user per chat, one session per batch (``batch_<n>``), each
  message dated by its batch's ``time_anchor`` (the batch's own or its first
  message's; later messages keep that date), content cut to ``max_message_chars``.
  Every probing question that names ``source_chat_ids`` (a list, a dict of lists, or
  nested lists: every id they name) is asked in a fresh session; abstention questions
  name none and are out. A source message is served as an evidence turn is for
  LoCoMo (a recalled turn, a memory extracted from it, a synthesis built from it);
  ids the chat lacks count
  as not served. Reported per question type and per size: served %, context tokens,
  ``get_context`` latency, the full-history tokens (every message, ``role: content``
  per line: what sending everything would cost), and per chat the ingest cost
  (record and drain seconds, messages drained per second). Only the ``served`` row
  (defaults) runs. The figures go to ``end_to_end_beam.json`` (``--json PATH`` with
  ``--only beam``, else ``PATH``'s stem + ``_beam``). The data is not stored here and
  must stay out of the repository: fetch a git copy of the public repository
  ``mohammadtavakoli78/BEAM``, then ``python3 ../shared/data/beam_dev.py GIT_DIR
  OUT_DIR`` writes the 32 development chats (100K 1-10, 500K 1-18, 1M 3, 4, 6, 7)
  as ``OUT_DIR/<size>_<n>/{chat.json,probing_questions.json}``; pass ``--beam-dir
  OUT_DIR``. ``--sizes 100K,500K`` picks sizes, ``--limit N`` the first N chats of
  each.

Rows, side by side in the same run (LoCoMo and LongMemEval):

* ``served``: the defaults (``Settings()``: a 1,500-token budget);
* ``served, budget 750``: ``Settings(context_token_budget=750)``, a sensitivity row
  on the same store;
* ``served, second hop off``: ``Settings(weight_hop=0)``, the defaults without
  ``get_context``'s second hop (``search/hop.py``), on the same store (BEAM too);
* ``raw turns, hybrid@10``: the ceiling of ``retrieval_quality.py`` (every turn a
  memory, ``{speaker} said, "{text}"`` for LoCoMo, user turns for LongMemEval,
  bulk-inserted into ``memories`` for a separate user, TrueMem's hybrid search at
  k = 10); its tokens are the ten texts';
* ``full context``: every turn, the cost to beat (tokens of the transcript,
  ``speaker: text`` per line, with ``TiktokenCounter``).

The script has no randomness of its own (fixed user and session ids, bulk ids from
``uuid5``); TrueMem's own memory ids are random and only break exact ties.

    .venv/bin/python benchmarks/end_to_end.py --json e2e.json
    .venv/bin/python benchmarks/end_to_end.py --only locomo --limit 2 --set recall_k=30
    .venv/bin/python benchmarks/end_to_end.py --only locomo --limit 1 --postgres
    .venv/bin/python benchmarks/end_to_end.py --only beam --beam-dir ../beam_dev --sizes 100K
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import math
import statistics
import tempfile
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from _common import (
    LOCOMO_CATEGORIES,
    EvidenceCheck,
    bulk_engine,
    check_data,
    dataset_parser,
    evidence_summary,
    lme_eligible,
    lme_turns,
    load_locomo,
    load_longmemeval,
    loadavg,
    locomo_sessions,
    locomo_turns,
    machine_info,
    ndcg,
    parse_overrides,
    postgres_url,
    progress,
    write_results,
)
from sqlalchemy import func, select

from truemem_core import Context, Embedder, Settings, TiktokenCounter, TrueMem, default_embedder
from truemem_core.storage.schema import memories, messages

SERVED, MORE, HOP_OFF = "served", "served, budget 750", "served, second hop off"
CEILING, FULL = "raw turns, hybrid@10", "full context"
ROWS = (SERVED, HOP_OFF, MORE, CEILING, FULL)
MORE_RECALL = {"context_token_budget": 750}
NO_HOP = {"weight_hop": 0.0}
CEILING_K = 10
NDCG_K = 10
DRAIN_TIMEOUT = 3600.0
_IDS = uuid.UUID("6f1d0c52-8a9e-4a43-9f0e-0e2e5e1d7a11")  # namespace of bulk memory ids
BEAM_SIZES = ("100K", "500K", "1M", "10M")
K = TypeVar("K")


# -- store ------------------------------------------------------------------------------


class Bench:
    """The store: ``served`` and ``more`` answer the questions (different budgets);
    ``served`` also runs the ceiling's hybrid search; ``db`` bulk-loads the ceiling's
    turns and counts embedded messages."""

    def __init__(self, url: str, embedder: Embedder, tag: str, settings: Settings) -> None:
        self.embedder = embedder
        self.tag = tag
        self.settings = settings
        self.served = TrueMem(url, embedder=embedder, settings=self.settings)
        self.more = TrueMem(url, embedder=embedder, settings=self.settings.replace(**MORE_RECALL))
        self.no_hop = TrueMem(url, embedder=embedder, settings=self.settings.replace(**NO_HOP))
        self.served.list_memories("nobody")  # opens the store: migrations, embedder check
        self.more.list_memories("nobody")
        self.no_hop.list_memories("nobody")
        self.answering = ((SERVED, self.served), (HOP_OFF, self.no_hop), (MORE, self.more))
        self.db = bulk_engine(url)
        self.tokens = TiktokenCounter(self.settings.token_encoding)

    def close(self) -> None:
        self.db.dispose()
        self.served.close()
        self.more.close()
        self.no_hop.close()

    def ask(self, memory: TrueMem, user: str, session: str, question: str,
            ) -> tuple[Context, float]:
        began = time.perf_counter()
        context = memory.get_context(user, session, question)
        return context, (time.perf_counter() - began) * 1000

    def load_turns(self, user: str, items: Sequence[tuple[str, str, datetime]]) -> dict[str, str]:
        """Bulk-insert (unit, text, created_at) rows as one user's memories, as
        ``retrieval_quality.py`` does; returns memory id -> unit."""
        vectors = np.asarray(self.embedder.embed([text for _, text, _ in items]), np.float32)
        vectors /= np.where((n := np.linalg.norm(vectors, axis=1, keepdims=True)) == 0, 1, n)
        unit, rows = {}, []
        for i, ((key, text, created), vector) in enumerate(zip(items, vectors, strict=True)):
            memory_id = str(uuid.uuid5(_IDS, f"{user}:{i}"))
            unit[memory_id] = key
            rows.append({
                "id": memory_id, "user_id": user, "text": text, "importance": 3,
                "kind": "episodic", "source": "manual", "state": "active", "reinforcements": 0,
                "embedding": vector, "embedding_model": self.embedder.model_name,
                "source_message_id": None, "created_at": created, "updated_at": created})
        with self.db.begin() as conn:
            conn.execute(memories.insert(), rows)
        return unit

    def ceiling(self, user: str, unit: Mapping[str, str], question: str,
                ) -> tuple[list[str], int, float]:
        """Units of the top-k raw turns, their tokens, and the search's wall ms."""
        began = time.perf_counter()
        hits = self.served.search(user, question, k=CEILING_K)
        ms = (time.perf_counter() - began) * 1000
        return ([unit[h.memory.id] for h in hits],
                sum(self.tokens.count(h.memory.text) for h in hits), ms)

    def embedded_messages(self, user: str) -> int:
        with self.db.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(messages).where(
                messages.c.user_id == user, messages.c.embedding.is_not(None))).scalar_one())


def ingest(bench: Bench, user: str,
           sessions: Iterable[tuple[str, list[tuple[str, str, datetime]]]],
           ) -> tuple[list[int | None], float, float]:
    """Record each session in order, then drain: message ids (in order; None for a
    skipped blank turn), seconds."""
    began = time.perf_counter()
    ids: list[int | None] = []
    for session, turns in sessions:
        ids += bench.served.record_messages(user, session, turns)
    recorded = time.perf_counter()
    bench.served.drain(timeout=DRAIN_TIMEOUT)
    return ids, recorded - began, time.perf_counter() - recorded


def recorded_ids(ids: Sequence[int | None], keys: Iterable[K]) -> dict[int, K]:
    """Message id -> the dataset's id of the turn it recorded (blank turns have none)."""
    return {i: key for i, key in zip(ids, keys, strict=True) if i is not None}


def served_messages(context: Context) -> tuple[list[int], list[int]]:
    """Message ids the context serves: the source messages of its facts (explicit,
    critical, retrieved); and its recalled turns with the sources of its syntheses
    (a session synthesis draws on messages only: its ``memory_ids`` are empty)."""
    facts = [m.source_message_id for m in context.facts if m.source_message_id is not None]
    return facts, [*(t.message_id for t in context.recalled),
                   *(i for hit in context.syntheses for i in hit.synthesis.message_ids)]


def served_order(context: Context) -> list[int]:
    """Every message id the context serves, in served order: explicit and critical facts
    first, then retrieved facts, recalled turns and syntheses (each its sources, in
    order) by fused score (the packing order)."""
    standing = [m.source_message_id for m in [*context.explicit, *context.critical]]
    ranked = sorted([*((hit.score, [hit.memory.source_message_id]) for hit in context.memories),
                     *((turn.score, [turn.message_id]) for turn in context.recalled),
                     *((hit.score, hit.synthesis.message_ids) for hit in context.syntheses)],
                    key=lambda item: -item[0])
    return [i for i in [*standing, *(i for _, ids in ranked for i in ids)] if i is not None]


def memory_census(memory: TrueMem, user: str) -> dict[str, Any]:
    everything = memory.list_memories(user, include_archived=True)
    return {"memories": len(everything),
            "active": sum(m.state != "archived" for m in everything),
            "by_source": dict(Counter(m.source for m in everything)),
            "sources": {m.source_message_id for m in everything
                        if m.source_message_id is not None and m.state != "archived"}}


def stats(values: Sequence[float]) -> dict[str, float]:
    if not values:
        return {"mean": float("nan"), "p50": float("nan"), "p95": float("nan")}
    array = np.asarray(values, dtype=np.float64)
    return {"mean": float(array.mean()), "p50": float(np.percentile(array, 50)),
            "p95": float(np.percentile(array, 95))}


# -- LoCoMo ----------------------------------------------------------------------------


class Tally:
    """Per-row recall by category, tokens and latencies."""

    def __init__(self) -> None:
        self.recall: dict[str, dict[str, list[float]]] = {r: defaultdict(list) for r in ROWS}
        self.tokens: dict[str, list[float]] = {r: [] for r in ROWS}
        self.wall: dict[str, list[float]] = {r: [] for r in ROWS}
        self.total: dict[str, list[float]] = {r: [] for r in ROWS}

    def add(self, row: str, categories: Sequence[str], score: float, tokens: int,
            wall: float | None = None, total: float | None = None) -> None:
        for category in categories:
            self.recall[row][category].append(score)
        self.tokens[row].append(tokens)
        if wall is not None:
            self.wall[row].append(wall)
        if total is not None:
            self.total[row].append(total)

    def result(self, scale: float) -> dict[str, Any]:
        return {row: {
            "recall": {c: scale * float(np.mean(v)) for c, v in self.recall[row].items()},
            "tokens": stats(self.tokens[row]),
            "get_context_wall_ms": stats(self.wall[row]),
            "get_context_total_ms": stats(self.total[row]),
        } for row in ROWS}


def run_locomo(bench: Bench, data: list[dict[str, Any]]) -> dict[str, Any]:
    tally = Tally()
    conversations = []
    check = EvidenceCheck()
    counts: Counter[str] = Counter()
    channel = Counter[str]()  # how served evidence turns were served (default row)
    for sample in data:
        conv = sample["conversation"]
        user = f"{bench.tag}locomo-{sample['sample_id']}"
        sessions = locomo_sessions(conv)
        turns = [t for _, _, session in sessions for t in session]
        n_questions = len(sample["qa"])
        progress(f"LoCoMo {sample['sample_id']}: {len(sessions)} sessions, {len(turns)} turns, "
                 f"{n_questions} questions: recording")
        recorded = [(f"session_{n}", [("user" if t["speaker"] == conv["speaker_a"]
                                       else "assistant", t["text"], date) for t in session])
                    for n, date, session in sessions if session]
        ids, record_s, drain_s = ingest(bench, user, recorded)
        dia = recorded_ids(ids, (t["dia_id"] for t in turns))
        census = memory_census(bench.served, user)
        embedded = bench.embedded_messages(user)
        progress(f"  recorded in {record_s:.1f} s, drained in {drain_s:.1f} s: "
                 f"{census['memories']} memories ({census['active']} live), "
                 f"{embedded}/{len(ids)} turns embedded")
        unit = bench.load_turns(f"{user}-turns", locomo_turns(conv))
        transcript = "\n".join(f'{t["speaker"]}: {t["text"]}' for t in turns)
        full_tokens = bench.tokens.count(transcript)
        known = set(dia.values())
        extracted_from = {dia[i] for i in census["sources"]}
        evidence_turns: set[str] = set()
        mine: dict[str, list[float]] = {r: [] for r in ROWS}  # this conversation's recall
        began = time.perf_counter()
        for n, qa in enumerate(sample["qa"], start=1):
            evidence, total = check.parse(qa["evidence"], known)
            if total == 0:
                continue
            evidence_turns |= set(evidence)
            categories = (LOCOMO_CATEGORIES[int(qa["category"])], "overall")
            question = str(qa["question"])
            for row, memory in bench.answering:
                context, wall = bench.ask(memory, user, f"question-{n}", question)
                facts, recalled = served_messages(context)
                by_fact = {dia[i] for i in facts if i in dia}
                by_recall = {dia[i] for i in recalled if i in dia}
                served = set(evidence) & (by_fact | by_recall)
                tally.add(row, categories, len(served) / total, context.tokens, wall,
                          context.timings.get("total"))
                mine[row].append(len(served) / total)
                if row == SERVED:
                    counts["evidence"] += len(evidence)
                    for turn in evidence:
                        channel[{(True, True): "both", (True, False): "memory",
                                 (False, True): "recalled turn", (False, False): "none"}[
                            (turn in by_fact, turn in by_recall)]] += 1
                    counts["contexts with a memory"] += bool(context.memories)
                    counts["contexts with a recalled turn"] += bool(context.recalled)
                    counts["questions"] += 1
            top, tokens, wall = bench.ceiling(f"{user}-turns", unit, question)
            tally.add(CEILING, categories, len(set(evidence) & set(top)) / total, tokens, wall)
            mine[CEILING].append(len(set(evidence) & set(top)) / total)
            tally.add(FULL, categories, len(set(evidence) & known) / total,
                      full_tokens + bench.tokens.count(question))
            if n % 50 == 0:
                progress(f"  {n}/{n_questions} questions")
        progress(f"  questions in {time.perf_counter() - began:.1f} s; overall recall "
                 + ", ".join(f"{r} {100 * np.mean(v):.1f}" for r, v in mine.items() if v))
        conversations.append({
            "sample_id": sample["sample_id"], "sessions": len(sessions), "turns": len(turns),
            "questions": n_questions, "record_s": round(record_s, 1),
            "drain_s": round(drain_s, 1), "memories": census["memories"],
            "live_memories": census["active"], "memories_by_source": census["by_source"],
            "turns_embedded": embedded, "turns_with_a_memory": len(extracted_from),
            "evidence_turns": len(evidence_turns),  # distinct, parsed, naming a turn
            "evidence_turns_with_a_memory": len(evidence_turns & extracted_from),
            "full_context_tokens": full_tokens,
            "overall_recall": {r: 100 * float(np.mean(v)) for r, v in mine.items() if v},
        })
    return {**tally.result(100.0), "questions": {
        c: len(v) for c, v in tally.recall[SERVED].items()},
        "conversations": conversations, "served_evidence_by": dict(channel),
        "counts": dict(counts), **check.result()}


# -- LongMemEval_S ---------------------------------------------------------------------------


def interleave(questions: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The questions in turn by type (the first of each type, then the second...), so
    that the first N of them are a fair sample: the file is sorted by type."""
    by_type: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for q in questions:
        by_type[q["question_type"]].append(q)
    order = sorted(by_type)
    return [by_type[t][i] for i in range(max(map(len, by_type.values()), default=0))
            for t in order if i < len(by_type[t])]


def run_longmemeval(bench: Bench, data: list[dict[str, Any]], limit: int | None,
                    ) -> dict[str, Any]:
    eligible = interleave([q for q in data if lme_eligible(q)])
    progress(f"LongMemEval_S: {len(eligible)} of {len(data)} questions eligible"
             + (f", first {limit} (types interleaved)" if limit else ""))
    eligible = eligible[:limit] if limit else eligible
    metrics: dict[str, dict[str, list[float]]] = {r: defaultdict(list) for r in ROWS}
    by_type: dict[str, dict[str, list[float]]] = {r: defaultdict(list) for r in ROWS}
    wall: dict[str, list[float]] = {r: [] for r in ROWS}
    total: dict[str, list[float]] = {r: [] for r in ROWS}
    census_rows = []
    cap = bench.settings.max_message_chars
    truncated = 0
    for n, q in enumerate(eligible, start=1):
        user = f"{bench.tag}lme-{q['question_id']}"
        recorded, owner = [], []
        for session_id, date, session in zip(q["haystack_session_ids"], q["haystack_dates"],
                                             q["haystack_sessions"], strict=True):
            said_at = datetime.strptime(date, "%Y/%m/%d (%a) %H:%M").replace(tzinfo=UTC)
            turns = [(t["role"], t["content"].strip()[:cap], said_at) for t in session
                     if t["content"].strip()]
            truncated += sum(len(t["content"].strip()) > cap for t in session)
            if turns:
                recorded.append((session_id, turns))
                owner += [session_id] * len(turns)
        ids, record_s, drain_s = ingest(bench, user, recorded)
        session_of = recorded_ids(ids, owner)
        census = memory_census(bench.served, user)
        census_rows.append({"question_id": q["question_id"], "messages": len(ids),
                            "memories": census["memories"], "live_memories": census["active"],
                            "record_s": round(record_s, 1), "drain_s": round(drain_s, 1)})
        unit = bench.load_turns(f"{user}-turns", lme_turns(q))
        relevant = set(q["answer_session_ids"])
        text = str(q["question"])
        ranked: dict[str, list[str]] = {}
        tokens: dict[str, int] = {}
        for row, memory in bench.answering:
            context, ms = bench.ask(memory, user, "question", text)
            ranked[row] = list(dict.fromkeys(session_of[i] for i in served_order(context)
                                             if i in session_of))
            tokens[row] = context.tokens
            wall[row].append(ms)
            total[row].append(context.timings.get("total", float("nan")))
            metrics[row]["memories served"].append(len(context.facts))
            metrics[row]["turns recalled"].append(len(context.recalled))
        top, tokens[CEILING], ms = bench.ceiling(f"{user}-turns", unit, text)
        ranked[CEILING] = list(dict.fromkeys(top))
        wall[CEILING].append(ms)
        ranked[FULL] = list(dict.fromkeys(owner))  # every session (no order: NDCG not shown)
        tokens[FULL] = bench.tokens.count("\n".join(
            f"{role}: {content}" for _, turns in recorded for role, content, _ in turns)
            + "\n" + text)
        for row in ROWS:
            hit = float(relevant <= set(ranked[row]))
            metrics[row]["recall_all"].append(hit)
            metrics[row][f"ndcg@{NDCG_K}"].append(ndcg(ranked[row], relevant, NDCG_K))
            metrics[row]["sessions served"].append(len(ranked[row]))
            metrics[row]["tokens"].append(tokens[row])
            by_type[row][q["question_type"]].append(hit)
        progress(f"  {n}/{len(eligible)} {q['question_id']}: {len(ids)} messages, "
                 f"{census['memories']} memories, record {record_s:.1f} s, "
                 f"drain {drain_s:.1f} s; served recall_all "
                 f"{metrics[SERVED]['recall_all'][-1]:.0f}")
    return {
        "questions": len(eligible),
        "rows": {row: {
            "recall_all": float(np.mean(metrics[row]["recall_all"])),
            f"ndcg@{NDCG_K}": float(np.mean(metrics[row][f"ndcg@{NDCG_K}"])),
            "sessions_served": float(np.mean(metrics[row]["sessions served"])),
            "memories_served": float(np.mean(metrics[row]["memories served"] or [0])),
            "turns_recalled": float(np.mean(metrics[row]["turns recalled"] or [0])),
            "tokens": stats(metrics[row]["tokens"]),
            "get_context_wall_ms": stats(wall[row]),
            "get_context_total_ms": stats([t for t in total[row] if not math.isnan(t)]),
            "recall_all_by_type": {t: float(np.mean(v)) for t, v in sorted(by_type[row].items())},
        } for row in ROWS},
        "per_question": census_rows,
        "messages_truncated": truncated,
    }


# -- BEAM ------------------------------------------------------------------------------


BeamTurn = tuple[int, str, str, datetime]  # BEAM message id, role, content, said_at


def beam_date(anchor: str) -> datetime:
    """A BEAM ``time_anchor`` ("March-15-2024") as midnight UTC that day."""
    return datetime.strptime(anchor, "%B-%d-%Y").replace(tzinfo=UTC)


def beam_batches(chat: Sequence[Mapping[str, Any]]) -> list[tuple[str, list[BeamTurn]]]:
    """One session per batch (``batch_<n>``), each message dated by the latest
    ``time_anchor`` before it: the batch's own, or the one its first message carries
    (later messages keep that date; a batch with none keeps the previous batch's)."""
    sessions = []
    said_at: datetime | None = None
    for batch in chat:
        if batch.get("time_anchor"):
            said_at = beam_date(batch["time_anchor"])
        turns: list[BeamTurn] = []
        for group in batch["turns"]:
            for message in group if isinstance(group, list) else [group]:
                if message.get("time_anchor"):
                    said_at = beam_date(message["time_anchor"])
                if said_at is None:
                    raise ValueError(f"BEAM batch {batch['batch_number']}: message "
                                     f"{message['id']} comes before any time_anchor")
                turns.append((int(message["id"]), message["role"], message["content"], said_at))
        sessions.append((f"batch_{batch['batch_number']}", turns))
    return sessions


def beam_sources(raw: Any) -> list[int]:
    """The message ids a question's ``source_chat_ids`` name, in order and once each:
    a list, a dict of lists, or lists nested in either (event ordering groups them)."""
    if raw is None:
        return []
    if isinstance(raw, int) and not isinstance(raw, bool):
        return [raw]
    values = raw.values() if isinstance(raw, Mapping) else raw
    return list(dict.fromkeys(i for value in values for i in beam_sources(value)))


def beam_questions(probing: Mapping[str, Sequence[Mapping[str, Any]]],
                   ) -> list[tuple[str, str, list[int]]]:
    """(question type, question, source message ids) of every probing question that
    names its sources; abstention questions name none and are left out."""
    return [(kind, str(q["question"]), sources) for kind, questions in probing.items()
            for q in questions if (sources := beam_sources(q.get("source_chat_ids")))]


def beam_chats(folder: Path, sizes: Sequence[str], limit: int | None) -> list[Path]:
    """The chat folders ``<size>_<n>`` of ``folder`` in size then number order; the first
    ``limit`` of each size."""
    chats = []
    for size in sizes:
        mine = sorted((p for p in folder.glob(f"{size}_*") if (p / "chat.json").exists()),
                      key=lambda p: int(p.name.rpartition("_")[2]))
        chats += mine[:limit] if limit else mine
    return chats


def run_beam(bench: Bench, chats: Sequence[Path]) -> dict[str, Any]:
    tallies: dict[str, Tally] = defaultdict(Tally)  # per size, and "all"
    rows = []
    channel = Counter[str]()
    sources = Counter[str]()
    cap = bench.settings.max_message_chars
    for path in chats:
        size = path.name.rpartition("_")[0]
        batches = beam_batches(json.loads((path / "chat.json").read_text()))
        questions = beam_questions(json.loads((path / "probing_questions.json").read_text()))
        turns = [t for _, batch in batches for t in batch]
        user = f"{bench.tag}beam-{path.name}"
        progress(f"BEAM {path.name}: {len(batches)} batches, {len(turns)} messages, "
                 f"{sum(len(c) for _, _, c, _ in turns):,} characters, "
                 f"{len(questions)} questions: recording")
        ids, record_s, drain_s = ingest(bench, user, [
            (session, [(role, content[:cap], said_at) for _, role, content, said_at in batch])
            for session, batch in batches])
        beam_of = recorded_ids(ids, (t[0] for t in turns))
        census = memory_census(bench.served, user)
        embedded = bench.embedded_messages(user)
        full_tokens = bench.tokens.count("\n".join(f"{r}: {c}" for _, r, c, _ in turns))
        progress(f"  recorded in {record_s:.1f} s, drained in {drain_s:.1f} s "
                 f"({len(beam_of) / max(drain_s, 1e-9):.1f} messages/s): "
                 f"{census['memories']} memories, {embedded}/{len(beam_of)} embedded; "
                 f"full history {full_tokens:,} tokens")
        known = set(beam_of.values())
        mine: list[float] = []
        for n, (kind, question, named) in enumerate(questions, start=1):
            for row, memory in ((HOP_OFF, bench.no_hop), (SERVED, bench.served)):
                context, wall = bench.ask(memory, user, f"question-{n}", question)
                facts, recalled = served_messages(context)
                by_fact = {beam_of[i] for i in facts if i in beam_of}
                by_recall = {beam_of[i] for i in recalled if i in beam_of}
                served = set(named) & (by_fact | by_recall)
                score = len(served) / len(named)
                for tally in (tallies[size], tallies["all"]):
                    tally.add(row, (kind, "overall"), score, context.tokens, wall,
                              context.timings.get("total"))
            mine.append(score)  # the last row's: the defaults
            for tally in (tallies[size], tallies["all"]):
                tally.add(FULL, (kind, "overall"), len(set(named) & known) / len(named),
                          full_tokens + bench.tokens.count(question))
            sources["named"] += len(named)
            sources["not in the chat"] += len(set(named) - known)
            for source in named:
                channel[{(True, True): "both", (True, False): "memory",
                         (False, True): "recalled turn", (False, False): "none"}[
                    (source in by_fact, source in by_recall)]] += 1
        progress(f"  served {100 * np.mean(mine):.1f} % of the source messages")
        rows.append({
            "chat": path.name, "size": size, "batches": len(batches), "messages": len(turns),
            "recorded": len(beam_of), "characters": sum(len(t[2]) for t in turns),
            "truncated": sum(len(t[2]) > cap for t in turns),
            "record_s": round(record_s, 1), "drain_s": round(drain_s, 1),
            "messages_per_s_drained": round(len(beam_of) / max(drain_s, 1e-9), 1),
            "memories": census["memories"], "live_memories": census["active"],
            "memories_by_source": census["by_source"], "messages_embedded": embedded,
            "full_history_tokens": full_tokens, "questions": len(questions),
            "served": 100 * float(np.mean(mine)) if mine else float("nan"),
        })
    return {
        "sizes": {size: {**{row: tally.result(100.0)[row] for row in (SERVED, HOP_OFF, FULL)},
                         "questions": {c: len(v) for c, v in tally.recall[SERVED].items()}}
                  for size, tally in tallies.items()},
        "chats": rows, "served_sources_by": dict(channel), "sources": dict(sources),
    }


# -- report --------------------------------------------------------------------------


def _ms(s: Mapping[str, float]) -> str:
    return "-" if math.isnan(s["p50"]) else f"{s['p50']:.0f} / {s['p95']:.0f}"


def locomo_report(result: Mapping[str, Any]) -> str:
    names = [*LOCOMO_CATEGORIES.values(), "overall"]
    counts = result["questions"]
    out = ["\nLoCoMo evidence recall of the served context (%)\n",
           "| row | " + " | ".join(f"{c} ({counts.get(c, 0)})" for c in names)
           + " | tokens mean / p95 | get_context ms p50 / p95 (wall) | timings total p50 / p95 |",
           "|---" * (len(names) + 4) + "|"]
    for row in ROWS:
        r = result[row]
        out.append(f"| {row} | " + " | ".join(f"{r['recall'].get(c, 0.0):.1f}" for c in names)
                   + f" | {r['tokens']['mean']:.0f} / {r['tokens']['p95']:.0f}"
                   + f" | {_ms(r['get_context_wall_ms'])} | {_ms(r['get_context_total_ms'])} |")
    out.append(f"\n(the {CEILING} latency is its search call's)\n")
    out += ["| conversation | turns | questions | memories (live) | by source "
            "| turns embedded | turns with a memory | evidence turns with a memory "
            "| record s | drain s | overall recall: served / budget 750 / hybrid@10 |",
            "|---" * 11 + "|"]
    for c in result["conversations"]:
        sources = ", ".join(f"{k} {v}" for k, v in sorted(c["memories_by_source"].items()))
        out.append(f"| {c['sample_id']} | {c['turns']} | {c['questions']} | {c['memories']} "
                   f"({c['live_memories']}) | {sources or '-'} | {c['turns_embedded']} "
                   f"| {c['turns_with_a_memory']} | {c['evidence_turns_with_a_memory']}"
                   f"/{c['evidence_turns']} | {c['record_s']} | {c['drain_s']} | "
                   + " / ".join(f"{c['overall_recall'].get(r, float('nan')):.1f}"
                                for r in (SERVED, MORE, CEILING)) + " |")
    by = result["served_evidence_by"]
    counts2 = result["counts"]
    out.append(f"\nEvidence turns (per question, {counts2.get('evidence', 0)} in all) in the "
               f"{SERVED} context: as a recalled turn only {by.get('recalled turn', 0)}, "
               f"as a memory only {by.get('memory', 0)}, both {by.get('both', 0)}, "
               f"not served {by.get('none', 0)}. Contexts with at least one memory: "
               f"{counts2.get('contexts with a memory', 0)}/{counts2.get('questions', 0)}, "
               f"with a recalled turn: {counts2.get('contexts with a recalled turn', 0)}.")
    out.append(evidence_summary(result))
    return "\n".join(out)


def lme_report(result: Mapping[str, Any]) -> str:
    rows = result["rows"]
    out = [f"\nLongMemEval_S, session level ({result['questions']} questions)\n",
           f"| row | recall_all | ndcg@{NDCG_K} | sessions served | memories | recalled turns "
           "| tokens mean / p95 | get_context ms p50 / p95 (wall) | timings total p50 / p95 |",
           "|---" * 10 + "|"]
    for row in ROWS:
        r = rows[row]
        served = row in (SERVED, HOP_OFF, MORE)
        out.append(f"| {row} | {r['recall_all']:.3f} "
                   + (f"| {r[f'ndcg@{NDCG_K}']:.3f} " if row != FULL else "| - ")
                   + f"| {r['sessions_served']:.1f} "
                   + (f"| {r['memories_served']:.1f} | {r['turns_recalled']:.1f} "
                      if served else "| - | - ")
                   + f"| {r['tokens']['mean']:.0f} / {r['tokens']['p95']:.0f} "
                   + f"| {_ms(r['get_context_wall_ms'])} | {_ms(r['get_context_total_ms'])} |")
    types = sorted(rows[SERVED]["recall_all_by_type"])
    out += ["\nrecall_all by question type\n", "| row | " + " | ".join(types) + " |",
            "|---" * (len(types) + 1) + "|"]
    for row in ROWS:
        by = rows[row]["recall_all_by_type"]
        out.append(f"| {row} | " + " | ".join(f"{by[t]:.2f}" for t in types) + " |")
    memories_made = [q["memories"] for q in result["per_question"]]
    out.append(f"\nMemories per question's user: mean {np.mean(memories_made):.1f}, "
               f"max {max(memories_made)}; messages truncated to max_message_chars: "
               f"{result['messages_truncated']}")
    return "\n".join(out)


def beam_report(result: Mapping[str, Any]) -> str:
    sizes = result["sizes"]
    types = sorted({t for s in sizes.values() for t in s["questions"]} - {"overall"})
    names = [*types, "overall"]
    out = [f"\nBEAM: source messages served by the context (%), {SERVED} and {HOP_OFF} "
           "(questions per type in brackets)\n",
           "| size | row | " + " | ".join(names) + " | tokens mean / p95 "
           "| get_context ms p50 / p95 (wall) | timings total p50 / p95 "
           "| full history tokens mean |", "|---" * (len(names) + 6) + "|"]
    shown = [s for s in BEAM_SIZES if s in sizes]
    for size, row in itertools.product([*shown, "all"] if len(shown) > 1 else shown,
                                       (SERVED, HOP_OFF)):
        r, counts = sizes[size][row], sizes[size]["questions"]
        out.append(f"| {size} | {row} | " + " | ".join(
            f"{r['recall'].get(c, float('nan')):.1f} ({counts.get(c, 0)})" for c in names)
            + f" | {r['tokens']['mean']:.0f} / {r['tokens']['p95']:.0f}"
            + f" | {_ms(r['get_context_wall_ms'])} | {_ms(r['get_context_total_ms'])}"
            + f" | {sizes[size][FULL]['tokens']['mean']:,.0f} |")
    out += ["\n| chat | batches | messages | characters | truncated | record s | drain s "
            "| messages/s drained | memories (live) | embedded | full history tokens "
            "| questions | served % |", "|---" * 13 + "|"]
    for c in result["chats"]:
        out.append(f"| {c['chat']} | {c['batches']} | {c['messages']} | {c['characters']:,} "
                   f"| {c['truncated']} | {c['record_s']} | {c['drain_s']} "
                   f"| {c['messages_per_s_drained']} | {c['memories']} ({c['live_memories']}) "
                   f"| {c['messages_embedded']} | {c['full_history_tokens']:,} "
                   f"| {c['questions']} | {c['served']:.1f} |")
    rates = [c["messages_per_s_drained"] for c in result["chats"]]
    if rates:  # the chat of middling pace: the first pays for loading the model
        out.append(f"\nmessages/s drained, median chat: {statistics.median(rates):.1f}")
    by, named = result["served_sources_by"], result["sources"]
    out.append(f"\nSource messages (per question, {named.get('named', 0)} in all, "
               f"{named.get('not in the chat', 0)} not in the chat) in the context: as a "
               f"recalled turn only {by.get('recalled turn', 0)}, as a memory only "
               f"{by.get('memory', 0)}, both {by.get('both', 0)}, not served "
               f"{by.get('none', 0)}.")
    return "\n".join(out)


def run(args: argparse.Namespace) -> dict[str, Any]:
    info = machine_info()
    settings = Settings(**parse_overrides(args.set))
    embedder = default_embedder(settings.embedding_threads, int8_queries=settings.int8_queries)
    began = time.perf_counter()
    with contextlib.ExitStack() as stack:
        if args.postgres:
            url = stack.enter_context(postgres_url(args.database_url))
        else:
            tmp = stack.enter_context(tempfile.TemporaryDirectory())
            url = args.database_url or str(Path(tmp) / "end_to_end.db")
        # a shared store may hold an earlier run: its users get a fresh prefix
        tag = f"{uuid.uuid4().hex[:8]}-" if args.database_url else ""
        bench = Bench(url, embedder, tag, settings)
        result: dict[str, Any] = {
            "machine": info, "database": bench.db.dialect.name,
            "embedder": embedder.model_name, "limit": args.limit,
            "settings": {SERVED: {n: getattr(bench.settings, n) for n in (
                "context_token_budget", "recall_k", "search_k", "memory_limit",
                "critical_limit", "weight_hop")}, MORE: MORE_RECALL, HOP_OFF: NO_HOP},
        }
        try:
            if args.only in (None, "locomo"):
                data = load_locomo(args.data)
                data = data[: args.limit] if args.limit else data
                result["locomo"] = run_locomo(bench, data)
                print(locomo_report(result["locomo"]), flush=True)
            if args.only in (None, "longmemeval"):
                data = load_longmemeval(args.data)
                result["longmemeval"] = run_longmemeval(bench, data, args.limit)
                print(lme_report(result["longmemeval"]), flush=True)
            if args.beam_dir is not None and args.only in (None, "beam"):
                chats = beam_chats(args.beam_dir, args.sizes, args.limit)
                result["beam"] = run_beam(bench, chats)
                print(beam_report(result["beam"]), flush=True)
        finally:
            bench.close()
    result["seconds"] = round(time.perf_counter() - began, 1)
    result["loadavg_at_end"] = loadavg()
    print(f"\nmachine: {info['cores']} cores, {info['cpu']}; Python {info['python']}, "
          f"SQLite {info['sqlite']}; {info['date']}; load average at start "
          f"{info['loadavg_at_start']}, at end {result['loadavg_at_end']}\n"
          f"store: {result['database']}; embedder: {result['embedder']}; "
          f"wall time {result['seconds']} s", flush=True)
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = dataset_parser(__doc__.split("\n\n")[0], ("locomo", "longmemeval", "beam"))
    parser.add_argument("--limit", type=int, metavar="N",
                        help="a quick run: the first N conversations / eligible questions "
                        "(questions interleaved by type) / BEAM chats of each size")
    parser.add_argument("--beam-dir", type=Path, metavar="DIR",
                        help="BEAM chats extracted by ../shared/data/beam_dev.py "
                        "(DIR/<size>_<n>/); BEAM runs only when this is given")
    parser.add_argument("--sizes", default=",".join(BEAM_SIZES[:3]), metavar="LIST",
                        help="BEAM sizes to run, e.g. 100K,500K (default: %(default)s)")
    parser.add_argument("--database-url", help="store to use (default: a temporary SQLite file)")
    parser.add_argument("--postgres", action="store_true",
                        help="PostgreSQL: --database-url, or a throw-away server")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="override a Settings field (both served rows), e.g. recall_k=30")
    args = parser.parse_args(argv)
    if args.limit is not None and args.limit < 1:
        parser.error("--limit must be at least 1")
    args.sizes = [s.strip() for s in args.sizes.split(",") if s.strip()]
    if unknown := set(args.sizes) - set(BEAM_SIZES):
        parser.error(f"--sizes: unknown {sorted(unknown)}; sizes are {', '.join(BEAM_SIZES)}")
    if args.only == "beam" and args.beam_dir is None:
        parser.error("--only beam needs --beam-dir DIR (see the docstring)")
    if args.beam_dir is not None and not beam_chats(args.beam_dir, args.sizes, 1):
        parser.error(f"no BEAM chats of sizes {args.sizes} in {args.beam_dir}")
    if args.only != "beam":
        check_data(parser, args.data)
    result = run(args)
    progress(f"done in {result['seconds']} s")
    # BEAM's figures have their own file: end_to_end.json stays LoCoMo and LongMemEval's
    beam = result.pop("beam", None)
    if beam is not None:
        path = args.json if args.only == "beam" else (
            args.json and args.json.with_name(f"{args.json.stem}_beam{args.json.suffix}"))
        write_results("end_to_end_beam", {**result, "beam": beam, "sizes": args.sizes}, path)
    if args.only != "beam":
        write_results("end_to_end", result, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
