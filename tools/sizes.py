"""The classes and functions that outgrow a reader: a report, not a gate.

    python3 run.py sizes          (or: python3 tools/sizes.py)

Lists every class over 300 lines and every function over 60 in the three packages
(migrations aside: they are frozen history), longest first, and always exits 0.
A long body is worth a look, not always a split: one table of cases or one
straight sequence of steps can read better whole. Standard library only.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("truemem_core", "truemem_integrations", "truemem_server")
MAX_CLASS_LINES = 300
MAX_FUNCTION_LINES = 60


def modules(root: Path = ROOT) -> Iterator[Path]:
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            if "migrations" not in path.parts:
                yield path


def offenders(root: Path = ROOT) -> list[tuple[int, str]]:
    """(lines, "path:line kind name (limit)") of each body over its limit, longest first."""
    found = []
    for path in modules(root):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                kind, limit = "class", MAX_CLASS_LINES
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                kind, limit = "def", MAX_FUNCTION_LINES
            else:
                continue
            size = (node.end_lineno or node.lineno) - node.lineno + 1
            if size > limit:
                where = f"{path.relative_to(root)}:{node.lineno}"
                found.append((size, f"{where} {kind} {node.name} (limit {limit})"))
    return sorted(found, key=lambda item: (-item[0], item[1]))


def main() -> int:
    found = offenders()
    for size, what in found:
        print(f"{size:5d} lines  {what}")
    print(f"{len(found)} over the limits (classes {MAX_CLASS_LINES} lines, "
          f"functions {MAX_FUNCTION_LINES})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
