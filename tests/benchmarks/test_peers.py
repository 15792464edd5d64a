"""benchmarks/peers.py's command line: which peers it measures and in what order. The
peers themselves (mem0, LangGraph, LlamaIndex, ...) live in the script's own virtual
environment, not the project's, so their adapters run only in the benchmark itself."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from peers import parse_args


def test_langgraph_and_llamaindex_are_peers_measured_after_truemem_on_postgres() -> None:
    args = parse_args(["--systems", "llamaindex,langgraph,mem0,truemem-postgres"])
    # TrueMem on PostgreSQL first: it migrates the database the others share
    assert args.systems == ["truemem-postgres", "mem0", "langgraph", "llamaindex"]


def test_every_peer_is_measured_by_default() -> None:
    assert parse_args([]).systems == ["truemem-sqlite", "truemem-postgres", "mem0",
                                      "langchain", "langgraph", "llamaindex"]


def test_an_unknown_peer_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse_args(["--systems", "langmem"])
    assert "--systems takes some of" in capsys.readouterr().err
