"""`python3 run.py sizes` (tools/sizes.py) lists what outgrows a reader, and only that."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))

import sizes


def _function(name: str, lines: int) -> str:
    return f"def {name}():\n" + "    x = 1\n" * (lines - 1)


def test_the_report_lists_the_bodies_over_their_limits(tmp_path: Path) -> None:
    core = tmp_path / "truemem_core"
    (core / "storage" / "migrations").mkdir(parents=True)
    (core / "long.py").write_text(_function("fits", 60) + _function("too_long", 61))
    big_class = "class Big:\n" + "    x = 1\n" * 300
    (core / "big.py").write_text(big_class + "class Fits:\n" + "    x = 1\n" * 299)
    (core / "storage" / "migrations" / "frozen.py").write_text(_function("old", 200))

    assert sizes.offenders(tmp_path) == [
        (301, "truemem_core/big.py:1 class Big (limit 300)"),
        (61, "truemem_core/long.py:61 def too_long (limit 60)"),
    ]


def test_the_report_prints_and_never_fails(capsys: pytest.CaptureFixture[str]) -> None:
    assert sizes.main() == 0
    last = capsys.readouterr().out.splitlines()[-1]
    assert last.endswith(" over the limits (classes 300 lines, functions 60)")
