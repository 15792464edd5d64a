"""``truemem import`` killed with SIGKILL midway and run again, and two runs of one file
at once, as real processes on both backends: each ends as one uninterrupted import
(same memories, creation times, states, history, items). The scenarios live in
``benchmarks/import_faults.py``, which the long fault runs call too."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))

from import_faults import concurrent_imports, kill_mid_import


def test_an_import_killed_midway_and_run_again_is_one_whole_import(
        store_url: str, tmp_path: Path) -> None:
    differences, committed = kill_mid_import(store_url, tmp_path, records=160, batch_size=4)
    assert committed > 0  # (and the import was still running: else it raises)
    assert differences == 0


def test_two_imports_of_one_file_at_once_import_it_once(
        store_url: str, tmp_path: Path) -> None:
    differences, failed = concurrent_imports(store_url, tmp_path, records=80, batch_size=4)
    assert failed == []  # both exit 0 and print no error nor warning
    assert differences == 0
