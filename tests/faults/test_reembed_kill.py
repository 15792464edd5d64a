"""``truemem reembed`` killed with SIGKILL midway, then run again, on both backends.

Before, it walked the memories only (past messages kept the old model's vectors while
the store named the new one) and recomputed every vector on each run. The scenario
is ``benchmarks/reembed_fault.py``'s, which ``benchmarks/faults.py`` counts too.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType


def _scenario() -> ModuleType:
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "reembed_fault.py"
    spec = importlib.util.spec_from_file_location("reembed_fault", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_a_reembed_killed_midway_finishes_when_run_again(store_url: str) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}  # this checkout's code
    outcome = _scenario().kill_mid_reembed(store_url, env=env)
    assert 0 < outcome.done_at_kill < outcome.vectors, outcome  # killed midway
    assert not outcome.switched_early, outcome  # the store still named the old model
    assert outcome.recomputed == outcome.vectors - outcome.done_at_kill, outcome
    assert (outcome.stale, outcome.wrong, outcome.lost) == (0, 0, 0), outcome
