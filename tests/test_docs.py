"""Every Python block in README.md and docs/*.md runs, in order, one process per file.

A block that truly cannot run is marked ```` ```python no-test: <reason> ````; the
reason is required and shown as the skip reason.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from docs_blocks import DOC_FILES, ROOT, blocks, three_lines

# Runs the blocks of one file in one namespace, like a reader pasting them in order.
_RUNNER = """
import json, sys
namespace = {"__name__": "__main__"}
for block in json.load(open(sys.argv[1], encoding="utf-8")):
    exec(compile(block["code"], block["path"], "exec"), namespace)
"""

_WITH_CODE = [path for path in DOC_FILES if blocks(path)]


def test_docs_have_python_blocks() -> None:
    assert _WITH_CODE, "no Python blocks found in the docs"


@pytest.mark.parametrize(
    "path", _WITH_CODE, ids=[str(p.relative_to(ROOT)) for p in _WITH_CODE])
def test_doc_blocks_run(path: Path, tmp_path: Path) -> None:
    found = blocks(path)
    skipped = [b for b in found if b.skip_reason is not None]
    for block in skipped:
        assert block.skip_reason, f"{block.origin}: 'no-test' needs a reason ('no-test: why')"
    runnable = [b for b in found if b.skip_reason is None]
    script = tmp_path / "blocks.json"
    script.write_text(json.dumps([{"code": b.code(), "path": str(b.path)} for b in runnable]))
    env = {**os.environ, "TRUEMEM_DATABASE_URL": f"sqlite:///{tmp_path / 'truemem.db'}"}
    env.pop("TRUEMEM_REDIS_URL", None)
    done = subprocess.run(
        [sys.executable, "-c", _RUNNER, str(script)], cwd=tmp_path, env=env,
        capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode == 0, (
        f"{path.relative_to(ROOT)} failed\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}")
    # A block marked no-test is not run, and must not pass silently.
    assert not skipped, "untested doc blocks: " + "; ".join(
        f"{b.origin}: {b.skip_reason}" for b in skipped)


@pytest.mark.parametrize("name", ["langchain", "llama_index"])
def test_three_line_integrations_are_three_lines(name: str) -> None:
    assert len(three_lines(name).strip().splitlines()) <= 3
