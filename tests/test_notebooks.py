"""The quick-start notebooks run, offline, in a kernel of this very interpreter."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
KERNEL = "truemem-tests"


@pytest.fixture(scope="module")
def kernel_name(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A kernel spec running ``sys.executable``, so a fresh venv needs no registration."""
    jupyter = tmp_path_factory.mktemp("jupyter")
    spec = jupyter / "kernels" / KERNEL
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "TrueMem tests", "language": "python",
    }))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("JUPYTER_PATH", str(jupyter))
        patch.setenv("JUPYTER_PLATFORM_DIRS", "1")
        patch.delenv("TRUEMEM_DATABASE_URL", raising=False)
        patch.delenv("TRUEMEM_REDIS_URL", raising=False)
        yield KERNEL


def test_there_are_notebooks() -> None:
    assert {p.name for p in NOTEBOOKS} >= {
        "langchain_quickstart.ipynb", "llama_index_quickstart.ipynb"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_is_committed_without_outputs(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, path.name


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs(path: Path, kernel_name: str, tmp_path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(notebook, kernel_name=kernel_name, timeout=300,
                            resources={"metadata": {"path": str(tmp_path)}})
    client.execute()  # raises CellExecutionError, with the cell and its traceback
    printed = "".join(
        output.get("text", "") for cell in notebook.cells if cell.cell_type == "code"
        for output in cell.outputs)
    assert "Is allergic to shellfish" in printed
    assert "Works as a pilot at SkyAir" in printed
