"""The Python code blocks of the docs, as the docs tests run them."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC_FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

_FENCE = re.compile(r"^(?P<fence>`{3,}|~{3,})\s*(?P<info>.*)$")
_MARKER = re.compile(r"^<!--\s*three-lines:\s*(?P<name>[\w-]+)\s*-->\s*$")
_NO_TEST = re.compile(r"^python\s+no-test(?::\s*(?P<reason>.*))?$")


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # 1-based line of the block's first code line
    source: str
    skip_reason: str | None = None  # "```python no-test: <reason>"
    marker: str | None = None  # "<!-- three-lines: <name> -->" just above the block

    @property
    def origin(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"

    def code(self) -> str:
        """The source padded so that tracebacks show the Markdown file's line numbers."""
        return "\n" * (self.line - 1) + self.source


def blocks(path: Path) -> list[Block]:
    """Every fenced code block whose info string starts with ``python``."""
    found: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    index, marker = 0, None
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if opening is None:
            marked = _MARKER.match(lines[index])
            if marked:
                marker = marked["name"]
            elif lines[index].strip():
                marker = None
            index += 1
            continue
        fence, info = opening["fence"], opening["info"].strip()
        end = index + 1
        while end < len(lines) and lines[end].strip() != fence:
            end += 1
        if info.split(maxsplit=1)[:1] == ["python"]:
            skipped = _NO_TEST.match(info)
            found.append(Block(
                path, index + 2, "\n".join(lines[index + 1:end]) + "\n",
                skip_reason=None if skipped is None else (skipped["reason"] or "").strip(),
                marker=marker,
            ))
        index, marker = end + 1, None
    return found


def three_lines(name: str) -> str:
    """The documented "add memory in three lines" block called ``name``."""
    for path in DOC_FILES:
        for block in blocks(path):
            if block.marker == name:
                return block.source
    raise LookupError(f"no <!-- three-lines: {name} --> block in the docs")
