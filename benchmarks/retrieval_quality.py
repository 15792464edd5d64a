"""Retrieval quality of TrueMem's search channels on LoCoMo and LongMemEval_S.

Data: ``../shared/data`` (see its README for schemas and published figures).

LoCoMo (``locomo_dev.json``): each conversation is one memory space; every turn
is one memory, ``{speaker} said, "{text}"``, created at its session's date. Each
QA question retrieves the top k (5, 10, 25, 50) and scores evidence recall: the
fraction of its evidence turn ids retrieved, averaged per category and overall.
Malformed evidence ids are split and parsed where possible ("D8:6; D9:17" is two
ids, "D:11:26" is D11:26); what cannot be parsed, or names no turn, counts as
not retrieved, and is reported.

LongMemEval_S (``longmemeval_s_dev.json.gz``): each question is one memory space
holding the user turns of its haystack sessions (keys = user turns); a session
ranks by its best turn. Reports session-level recall_all@5/@10 (every answer
session in the top k) and NDCG@5/@10, skipping abstention questions (``_abs``)
and those whose evidence is only in assistant turns, as the reference does.

Channels compared side by side: ``vector``, ``keyword`` (full text), ``trigram``,
``hybrid`` (TrueMem's default search), ``hybrid-no-adjacent`` (the same without
the adjacent channel, an ablation), plus a BM25 baseline (rank-bm25 over
lower-cased word tokens). All of them run through the public ``TrueMem.asearch``
on a real store (SQLite by default, or ``--database-url``), with the default
local embedder. Rows are bulk-inserted into the ``memories`` table of
``truemem_core.storage.schema`` (batched embeddings, one ``executemany`` per memory
space): ``add_memory`` would deduplicate similar turns.

    .venv/bin/python benchmarks/retrieval_quality.py --json retrieval.json
    .venv/bin/python benchmarks/retrieval_quality.py --only locomo --set weight_keyword=1.5
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import re
import tempfile
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
from _common import (
    LOCOMO_CATEGORIES,
    EvidenceCheck,
    Vector,
    bulk_async_engine,
    check_data,
    dataset_parser,
    evidence_summary,
    lme_eligible,
    lme_turns,
    load_locomo,
    load_longmemeval,
    locomo_turns,
    ndcg,
    normalize,
    parse_overrides,
    progress,
    write_results,
)
from sqlalchemy.ext.asyncio import AsyncEngine

from truemem_core import Embedder, Settings, TiktokenCounter, TrueMem, default_embedder
from truemem_core.storage.schema import memories

MODES = ("vector", "keyword", "trigram", "hybrid", "hybrid-no-adjacent", "bm25")
ABLATION = "hybrid-no-adjacent"  # hybrid with weight_adjacent=0
LOCOMO_KS = (5, 10, 25, 50)
LME_KS = (5, 10)
_BM25_TOKEN = re.compile(r"\w+")


# -- embeddings -------------------------------------------------------------------------


class CachedEmbedder:
    """An ``Embedder`` that embeds each distinct text once, in batches, optionally cached
    in an .npz file across runs. TrueMem's own search embeds through it too, so a question
    is embedded once for all modes."""

    def __init__(self, embedder: Embedder, cache: Path | None) -> None:
        self.embedder = embedder
        self.model_name = embedder.model_name
        self.dimension = embedder.dimension
        self.cache = cache
        self.vectors: dict[str, Vector] = {}
        if cache is not None and cache.exists():
            with np.load(cache) as stored:
                self.vectors = {key: stored[key] for key in stored.files}

    @staticmethod
    def key(text: str) -> str:
        return hashlib.sha1(text.encode()).hexdigest()

    def embed(self, texts: Sequence[str]) -> Vector:
        return np.stack(self.prepare(texts, "texts", quiet=True))

    def prepare(self, texts: Sequence[str], what: str, *, quiet: bool = False) -> list[Vector]:
        missing = list(dict.fromkeys(t for t in texts if self.key(t) not in self.vectors))
        began = time.perf_counter()
        for start in range(0, len(missing), 512):
            chunk = missing[start : start + 512]
            for text, vector in zip(chunk, normalize(self.embedder.embed(chunk)), strict=True):
                self.vectors[self.key(text)] = vector
            if not quiet:
                progress(f"  embedded {min(start + 512, len(missing))}/{len(missing)} {what}")
            if start % 4096 == 0:
                self.save()
        if missing and not quiet:
            rate = len(missing) / (time.perf_counter() - began)
            progress(f"  {len(missing)} {what} embedded ({rate:.0f}/s)")
            self.save()
        return [self.vectors[self.key(t)] for t in texts]

    def save(self) -> None:
        if self.cache is not None:
            np.savez(self.cache, **self.vectors)  # type: ignore[arg-type]


# -- store ----------------------------------------------------------------------------


@dataclass
class Bench:
    """The store under test: ``TrueMem`` searches it, ``db`` bulk-loads it."""

    memory: TrueMem
    plain: TrueMem  # the same store, searched with weight_adjacent=0
    db: AsyncEngine
    embedder: CachedEmbedder

    async def load(self, user: str, items: Sequence[tuple[str, str, datetime]]) -> Space:
        vectors = self.embedder.prepare([text for _, text, _ in items], "memories", quiet=True)
        return await load_space(self.db, self.embedder.model_name, user, items, vectors)


@dataclass
class Space:
    """One memory space (a user): memory id -> the unit it stands for, and its tokens."""

    user: str
    unit: dict[str, str] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)


_SPACES = 0  # memory spaces loaded so far (part of each memory id)


async def load_space(
    db: AsyncEngine, model: str, user: str, items: Sequence[tuple[str, str, datetime]],
    vectors: Sequence[Vector],
) -> Space:
    """Bulk-insert (unit id, text, created_at) rows as one user's memories."""
    space = Space(user)
    rows = []
    global _SPACES
    _SPACES += 1
    for position, ((unit, text, created), vector) in enumerate(zip(items, vectors, strict=True)):
        # deterministic ids: ties between equal scores break the same way in every run
        memory_id = f"{user[:8]}{_SPACES:05d}{position:07d}"
        space.unit[memory_id] = unit
        space.texts[memory_id] = text
        rows.append({
            "id": memory_id, "user_id": user, "text": text, "importance": 3,
            "kind": "episodic", "source": "manual", "state": "active", "reinforcements": 0,
            "embedding": vector, "embedding_model": model,
            "source_message_id": None, "created_at": created, "updated_at": created,
        })
    async with db.begin() as conn:
        await conn.execute(memories.insert(), rows)
    return space


async def retrieve(
    bench: Bench, space: Space, question: str, mode: str, k: int,
    bm25: Callable[[str, int], list[str]],
) -> list[str]:
    """The units of the top-k memories for the question, best first."""
    if mode == "bm25":
        ids = bm25(question, k)
    else:
        store, mode = (bench.plain, "hybrid") if mode == ABLATION else (bench.memory, mode)
        hits = await store.asearch(space.user, question, k=k, mode=mode)  # type: ignore[arg-type]
        ids = [hit.memory.id for hit in hits]
    return [space.unit[i] for i in ids]


def bm25_index(space: Space) -> Callable[[str, int], list[str]]:
    """The naive lexical baseline: rank-bm25 (Okapi) over lower-cased word tokens."""
    from rank_bm25 import BM25Okapi

    ids = list(space.texts)
    index = BM25Okapi([_BM25_TOKEN.findall(space.texts[i].lower()) for i in ids])

    def search(query: str, k: int) -> list[str]:
        scores = index.get_scores(_BM25_TOKEN.findall(query.lower()))
        top = np.argsort(-scores, kind="stable")[:k]
        return [ids[i] for i in top]

    return search


# -- LoCoMo ----------------------------------------------------------------------------


async def run_locomo(
    bench: Bench, data: list[dict[str, Any]], modes: Sequence[str], tokens: TiktokenCounter,
) -> dict[str, Any]:
    run = uuid.uuid4().hex[:8]  # user ids unique to this run
    kmax = max(LOCOMO_KS)
    recall: dict[str, dict[int, dict[str, list[float]]]] = {
        m: {k: defaultdict(list) for k in LOCOMO_KS} for m in modes}
    context: dict[str, dict[int, list[int]]] = {m: {k: [] for k in LOCOMO_KS} for m in modes}
    check = EvidenceCheck()
    bench.embedder.prepare(
        [t for s in data for _, t, _ in locomo_turns(s["conversation"])], "turns")
    bench.embedder.prepare([str(qa["question"]) for s in data for qa in s["qa"]], "questions")
    for sample in data:
        turns = locomo_turns(sample["conversation"])
        progress(f"LoCoMo {sample['sample_id']}: {len(turns)} turns, {len(sample['qa'])} questions")
        space = await bench.load(f"{run}-{sample['sample_id']}", turns)
        known = {unit for unit, _, _ in turns}
        texts = {unit: text for unit, text, _ in turns}
        bm25 = bm25_index(space)
        questions = [str(qa["question"]) for qa in sample["qa"]]
        for qa, question in zip(sample["qa"], questions, strict=True):
            evidence, total = check.parse(qa["evidence"], known)
            if total == 0:
                continue
            category = LOCOMO_CATEGORIES[int(qa["category"])]
            for mode in modes:
                found = await retrieve(bench, space, question, mode, kmax, bm25)
                for k in LOCOMO_KS:
                    top = found[:k]
                    score = len(set(evidence) & set(top)) / total
                    recall[mode][k][category].append(score)
                    recall[mode][k]["overall"].append(score)
                    context[mode][k].append(sum(tokens.count(texts[u]) for u in top))
    return {
        "recall": {m: {k: {c: 100 * float(np.mean(v)) for c, v in by.items()}
                       for k, by in ks.items()} for m, ks in recall.items()},
        "questions": {c: len(v) for c, v in recall[modes[0]][LOCOMO_KS[0]].items()},
        "context_tokens": {m: {k: float(np.mean(v)) for k, v in ks.items()}
                           for m, ks in context.items()},
        **check.result(),
    }


# -- LongMemEval_S ---------------------------------------------------------------------------


async def run_longmemeval(
    bench: Bench, data: list[dict[str, Any]], modes: Sequence[str],
) -> dict[str, Any]:
    run = uuid.uuid4().hex[:8]
    eligible = [q for q in data if lme_eligible(q)]
    progress(f"LongMemEval_S: {len(eligible)} of {len(data)} questions eligible")
    all_turns = {q["question_id"]: lme_turns(q) for q in eligible}
    bench.embedder.prepare(
        [t for turns in all_turns.values() for _, t, _ in turns], "user turns")
    bench.embedder.prepare([str(q["question"]) for q in eligible], "questions")
    metrics: dict[str, dict[str, list[float]]] = {m: defaultdict(list) for m in modes}
    for n, question in enumerate(eligible, start=1):
        turns = all_turns[question["question_id"]]
        space = await bench.load(f"{run}-{question['question_id']}", turns)
        bm25 = bm25_index(space)
        relevant = set(question["answer_session_ids"])
        text = str(question["question"])
        for mode in modes:
            units = await retrieve(bench, space, text, mode, len(turns), bm25)
            sessions = list(dict.fromkeys(units))
            for k in LME_KS:
                metrics[mode][f"recall_all@{k}"].append(float(relevant <= set(sessions[:k])))
                metrics[mode][f"ndcg@{k}"].append(ndcg(sessions, relevant, k))
        if n % 5 == 0:
            progress(f"  {n}/{len(eligible)} questions")
    return {
        "questions": len(eligible),
        "metrics": {m: {name: float(np.mean(v)) for name, v in by.items()}
                    for m, by in metrics.items()},
    }


# -- report --------------------------------------------------------------------------


def locomo_tables(result: Mapping[str, Any], modes: Sequence[str]) -> str:
    names = [*LOCOMO_CATEGORIES.values(), "overall"]
    counts = result["questions"]
    out = []
    for k in LOCOMO_KS:
        out.append(f"\nLoCoMo evidence recall@{k} (%)\n")
        out.append("| mode | " + " | ".join(f"{c} ({counts.get(c, 0)})" for c in names)
                   + " | context tokens |")
        out.append("|---" * (len(names) + 2) + "|")
        for m in modes:
            row = result["recall"][m][k]
            out.append(f"| {m} | " + " | ".join(f"{row.get(c, 0.0):.1f}" for c in names)
                       + f" | {result['context_tokens'][m][k]:.0f} |")
    out.append("\n" + evidence_summary(result))
    return "\n".join(out)


def lme_table(result: Mapping[str, Any], modes: Sequence[str]) -> str:
    names = [f"recall_all@{k}" for k in LME_KS] + [f"ndcg@{k}" for k in LME_KS]
    out = [f"\nLongMemEval_S, session level ({result['questions']} questions)\n",
           "| mode | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    for m in modes:
        row = result["metrics"][m]
        out.append(f"| {m} | " + " | ".join(f"{row[n]:.3f}" for n in names) + " |")
    return "\n".join(out)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    settings = Settings(**parse_overrides(args.set))
    modes = [m for m in MODES if m in args.modes.split(",")]
    embedder = CachedEmbedder(default_embedder(settings.embedding_threads), args.embedding_cache)
    with tempfile.TemporaryDirectory() as tmp:
        url = args.database_url or str(Path(tmp) / "retrieval.db")
        memory = TrueMem(url, embedder=embedder, settings=settings)
        plain = TrueMem(url, embedder=embedder, settings=settings.replace(weight_adjacent=0.0))
        db = bulk_async_engine(url)
        try:
            await memory.alist_memories("nobody")  # opens the store: migrations, embedder check
            await plain.alist_memories("nobody")
            bench = Bench(memory, plain, db, embedder)
            result: dict[str, Any] = {
                "database": db.dialect.name, "embedder": embedder.model_name,
                "settings": {name: getattr(settings, name) for name in (
                    "rrf_k", "rrf_depth", "weight_vector", "weight_keyword", "weight_trigram",
                    "weight_adjacent", "adjacent_seeds", "adjacent_span", "adjacent_window_s",
                    "trigram_threshold")},
            }
            began = time.perf_counter()
            if args.only in (None, "locomo"):
                data = load_locomo(args.data)
                result["locomo"] = await run_locomo(bench, data, modes,
                                                    TiktokenCounter(settings.token_encoding))
                print(locomo_tables(result["locomo"], modes), flush=True)
            if args.only in (None, "longmemeval"):
                data = load_longmemeval(args.data)
                result["longmemeval"] = await run_longmemeval(bench, data, modes)
                print(lme_table(result["longmemeval"], modes), flush=True)
            result["seconds"] = round(time.perf_counter() - began, 1)
        finally:
            await db.dispose()
            await memory.aclose()
            await plain.aclose()
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = dataset_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--modes", default=",".join(MODES),
                        help=f"comma-separated, among {', '.join(MODES)}")
    parser.add_argument("--database-url", help="store to use (default: a temporary SQLite file)")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="override a Settings field, e.g. --set weight_keyword=1.5")
    parser.add_argument("--embedding-cache", type=Path, metavar="NPZ",
                        help="reuse embeddings across runs (created if missing)")
    args = parser.parse_args(argv)
    check_data(parser, args.data)
    result = asyncio.run(run(args))
    progress(f"done in {result['seconds']} s")
    write_results("retrieval_quality", result, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
