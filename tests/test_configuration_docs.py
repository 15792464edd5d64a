"""docs/configuration.md documents every setting, with its variable and default."""

from __future__ import annotations

import ast
from dataclasses import fields
from pathlib import Path

from truemem_core import Settings

ROOT = Path(__file__).resolve().parents[1]


def documented_settings() -> list[tuple[str, str]]:
    """(field name, its attribute docstring) in the order of settings.py."""
    tree = ast.parse((ROOT / "truemem_core" / "settings.py").read_text(encoding="utf-8"))
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Settings")
    found, body = [], cls.body
    for node, after in zip(body, [*body[1:], None], strict=True):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            doc = ""
            if isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant):
                doc = " ".join(str(after.value.value).split())
            found.append((node.target.id, doc))
    return found


def table_row(name: str, doc: str) -> str:
    default = {f.name: f.default for f in fields(Settings)}[name]
    return f"| `{name}` | `TRUEMEM_{name.upper()}` | `{default}` | {doc} |"


def test_every_setting_is_documented_with_its_default() -> None:
    text = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    settings = documented_settings()
    assert [name for name, _ in settings] == [f.name for f in fields(Settings)]
    missing = [table_row(n, d) for n, d in settings if table_row(n, d) not in text]
    assert not missing, "docs/configuration.md lacks (or has stale) rows:\n" + "\n".join(missing)


if __name__ == "__main__":  # print the table, to paste into docs/configuration.md
    for name, doc in documented_settings():
        print(table_row(name, doc))
